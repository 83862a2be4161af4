// Placeholder until the anthropic backend lands: see llm/backend.hpp.
#include "llm/backend.hpp"

#include "util/error.hpp"

namespace optimas::llm {
std::unique_ptr<Backend> make_anthropic(const BackendConfig&) { throw Error("the anthropic backend is not built yet"); }
} // namespace optimas::llm
