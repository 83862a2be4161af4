#include "tune/space.hpp"

#include "util/error.hpp"

#include <fmt/format.h>

namespace optimas::tune {

Space::Space(const config::TuneSettings& settings, std::string config_path)
    : m_settings(settings), m_path(std::move(config_path)) {
  if (m_settings.params.empty()) return;
  // The grid is at most config::k_max_grid points (the loader checks), so it is enumerated once.
  Point p(dimensions(), 0);
  for (;;) {
    if (check(p)) m_allowed.push_back(p);
    std::size_t d = dimensions();
    while (d > 0) {
      --d;
      if (++p[d] < values(d)) break;
      p[d] = 0;
      if (d == 0) return;
    }
  }
}

bool Space::check(const Point& p) const {
  std::map<std::string, std::int64_t> macros;
  for (std::size_t d = 0; d < dimensions(); ++d)
    if (m_settings.params[d].kind == config::TuneParam::Kind::macro)
      macros[m_settings.params[d].name] = std::stoll(m_settings.params[d].values[p[d]]);
  for (const auto& c : m_settings.constraints) {
    try {
      if (c.expr.evaluate(macros) == 0) return false;
    } catch (const util::ExprError& e) {
      throw UsageError(fmt::format("{}:{}: constraint \"{}\" cannot be evaluated at {}: {}", m_path, c.line,
                                   c.expr.text(), label(p), e.what()));
    }
  }
  return true;
}

bool Space::allowed(const Point& p) const {
  if (p.size() != dimensions()) return false;
  for (std::size_t d = 0; d < dimensions(); ++d)
    if (p[d] >= values(d)) return false;
  return check(p);
}

std::string Space::label(const Point& p) const {
  std::string out;
  for (std::size_t d = 0; d < dimensions(); ++d) {
    const auto& v = m_settings.params[d].values[p[d]];
    out += fmt::format("{}{}={}", out.empty() ? "" : " ", m_settings.params[d].name, v.empty() ? "none" : v);
  }
  return out;
}

nlohmann::json Space::values_json(const Point& p) const {
  nlohmann::json out = nlohmann::json::object();
  for (std::size_t d = 0; d < dimensions(); ++d) {
    const auto& param = m_settings.params[d];
    if (param.kind == config::TuneParam::Kind::macro)
      out[param.name] = std::stoll(param.values[p[d]]);
    else
      out[param.name] = param.values[p[d]];
  }
  return out;
}

std::string Space::flags(const Point& p) const {
  std::string out;
  for (std::size_t d = 0; d < dimensions(); ++d) {
    const auto& param = m_settings.params[d];
    std::string word = param.kind == config::TuneParam::Kind::macro
                           ? fmt::format("-D{}={}", param.name, param.values[p[d]])
                           : param.values[p[d]];
    if (!word.empty()) out += (out.empty() ? "" : " ") + word;
  }
  return out;
}

std::map<std::string, std::string> Space::build_env(const Point& p, const std::string& inherited) const {
  std::string mine = flags(p);
  return {{"NVCC_APPEND_FLAGS", inherited.empty() ? mine : inherited + " " + mine}, {"OPTIMAS_TUNE_FLAGS", mine}};
}

} // namespace optimas::tune
