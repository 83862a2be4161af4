// Diagnostics as JSON: schema "optimas.diagnostics/1" (docs/diagnostics.schema.json).
#pragma once

#include "analysis/diagnostics.hpp"

#include <nlohmann/json.hpp>

namespace optimas::analysis {

nlohmann::json to_json(const Diagnostics& diagnostics);

} // namespace optimas::analysis
