// Keeps API keys out of everything the model layer writes: failure messages, raw bodies, logs
// and cache entries all pass through redact() before anyone can see them.
#pragma once

#include <string>
#include <string_view>

namespace optimas::llm {

inline constexpr std::string_view k_redacted = "[REDACTED]";

// Replaces, in `text`, the value of every key variable named in the backend registry
// (BackendSpec::key_env) and of every environment variable whose name ends in _API_KEY,
// _TOKEN or _SECRET, with "[REDACTED]". The environment is read at each call, so a key set
// after start-up is still caught.
std::string redact(std::string_view text);

} // namespace optimas::llm
