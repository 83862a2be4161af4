// Placeholder until the gemini backend lands: see llm/backend.hpp.
#include "llm/backend.hpp"

#include "util/error.hpp"

namespace optimas::llm {
std::unique_ptr<Backend> make_gemini(const BackendConfig&) { throw Error("the gemini backend is not built yet"); }
} // namespace optimas::llm
