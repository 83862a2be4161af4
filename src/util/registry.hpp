// A registry of named extensions, each declared by one spec (a name, its options, a factory
// `make`): the model backends (llm/registry.cpp) and the campaign launchers
// (launch/registry.cpp) are each one list of such specs. Adding one is its file and one line in
// that list; the checks here find a line that cannot be used the first time a test runs.
#pragma once

#include "util/option_spec.hpp"

#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace optimas::util {

// Spec has `std::string name`, `std::vector<OptionSpec> options` and a callable `make`.
template <typename Spec> class Registry {
public:
  // Throws std::logic_error for a line that cannot be used (no name, a name or an option given
  // twice, an unnamed option, no factory): a programming mistake. `kind` names the specs in the
  // messages ("backend", "launcher").
  Registry(std::vector<Spec> specs, std::string kind) : m_specs(std::move(specs)), m_kind(std::move(kind)) {
    std::set<std::string> seen;
    for (const auto& s : m_specs) {
      if (s.name.empty()) throw std::logic_error("a " + m_kind + " has no name");
      if (!seen.insert(s.name).second) throw std::logic_error(m_kind + " \"" + s.name + "\" is registered twice");
      if (!s.make) throw std::logic_error(m_kind + " \"" + s.name + "\" has no factory");
      std::set<std::string> options;
      for (const auto& o : s.options)
        if (o.name.empty() || !options.insert(o.name).second)
          throw std::logic_error(m_kind + " \"" + s.name + "\" declares option \"" + o.name + "\" twice or unnamed");
    }
  }

  const std::vector<Spec>& specs() const { return m_specs; }
  const std::string& kind() const { return m_kind; }

  const Spec* find(std::string_view name) const {
    for (const auto& s : m_specs)
      if (s.name == name) return &s;
    return nullptr;
  }

  std::vector<std::string> names() const {
    std::vector<std::string> names;
    for (const auto& s : m_specs) names.push_back(s.name);
    return names;
  }

private:
  std::vector<Spec> m_specs;
  std::string m_kind;
};

} // namespace optimas::util
