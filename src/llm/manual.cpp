// Placeholder until the manual backend lands.
#include "llm/backend.hpp"

#include "util/error.hpp"

namespace optimas::llm {
std::unique_ptr<Backend> make_manual(const BackendConfig&) { throw Error("the manual backend is not built yet"); }
} // namespace optimas::llm
