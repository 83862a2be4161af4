// The tuning space of an application's tune: block: every parameter's values as a grid, the
// points the constraints allow, and how a point reaches the build (docs/tuning.md): its macros
// as -DNAME=value and its flags, in NVCC_APPEND_FLAGS (which nvcc appends to every command
// line it is given) and OPTIMAS_TUNE_FLAGS (for builds that do not call nvcc).
#pragma once

#include "config/tune_config.hpp"

#include <nlohmann/json.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace optimas::tune {

// A point: for each parameter, the index of its value.
using Point = std::vector<std::size_t>;

class Space {
public:
  // UsageError when a constraint cannot be evaluated on some point (a division by zero): the
  // message names the file and the constraint's line.
  Space(const config::TuneSettings& settings, std::string config_path);

  std::size_t dimensions() const { return m_settings.params.size(); }
  std::size_t values(std::size_t dim) const { return m_settings.params[dim].values.size(); }
  const config::TuneSettings& settings() const { return m_settings; }

  bool allowed(const Point& p) const;
  // Every allowed point, in grid order (the last parameter varies fastest).
  const std::vector<Point>& allowed_points() const { return m_allowed; }

  // "TPB=128 UNROLL=4 dlcm=-Xptxas -dlcm=ca" (a flag parameter with "" reads dlcm=none).
  std::string label(const Point& p) const;
  // {"TPB": 128, "dlcm": "-Xptxas -dlcm=ca"}.
  nlohmann::json values_json(const Point& p) const;
  // What the build is given: "-DTPB=128 -DUNROLL=4 -Xptxas -dlcm=ca".
  std::string flags(const Point& p) const;
  // The build's environment for the point: NVCC_APPEND_FLAGS (after `inherited`, the value this
  // process has, if any) and OPTIMAS_TUNE_FLAGS.
  std::map<std::string, std::string> build_env(const Point& p, const std::string& inherited) const;

private:
  bool check(const Point& p) const; // the constraints, evaluated; throws as the constructor says
  config::TuneSettings m_settings;
  std::string m_path;
  std::vector<Point> m_allowed;
};

} // namespace optimas::tune
