// Placeholder: see llm/backend.hpp. Implemented by the backends work.
