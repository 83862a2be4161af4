// Placeholder until the openai backend lands: see llm/backend.hpp.
#include "llm/backend.hpp"

#include "util/error.hpp"

namespace optimas::llm {
std::unique_ptr<Backend> make_openai(const BackendConfig&) { throw Error("the openai backend is not built yet"); }
std::unique_ptr<Backend> make_openai_compatible(const BackendConfig&) { throw Error("the openai backend is not built yet"); }
} // namespace optimas::llm
