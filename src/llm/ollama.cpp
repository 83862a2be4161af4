// Placeholder until the ollama backend lands: see llm/backend.hpp.
#include "llm/backend.hpp"

#include "util/error.hpp"

namespace optimas::llm {
std::unique_ptr<Backend> make_ollama(const BackendConfig&) { throw Error("the ollama backend is not built yet"); }
} // namespace optimas::llm
