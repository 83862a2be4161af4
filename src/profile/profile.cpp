#include "profile/profile.hpp"

#include "util/strings.hpp"

namespace optimas::profile {

const Metric* Launch::metric(const std::string& name) const {
  auto it = metrics.find(name);
  return it == metrics.end() ? nullptr : &it->second;
}

double Launch::value(const std::string& name) const {
  const Metric* m = metric(name);
  return m ? m->value : k_nan;
}

std::uint64_t KernelSource::total_samples() const {
  std::uint64_t total = 0;
  if (!instructions.empty()) {
    for (const auto& i : instructions) total += i.samples.all;
  } else {
    for (const auto& l : lines) total += l.samples.all;
  }
  return total;
}

std::string kernel_base_name(std::string_view demangled) {
  std::string_view s = util::trim(demangled);
  // The parameter list is the last top-level "(...)".
  if (!s.empty() && s.back() == ')') {
    int depth = 0;
    for (std::size_t i = s.size(); i-- > 0;) {
      if (s[i] == ')')
        ++depth;
      else if (s[i] == '(' && --depth == 0) {
        s = s.substr(0, i);
        break;
      }
    }
  }
  // A return type precedes the name at template depth 0: "void foo<int>".
  int depth = 0;
  std::size_t name_start = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<')
      ++depth;
    else if (s[i] == '>')
      --depth;
    else if (s[i] == ' ' && depth == 0)
      name_start = i + 1;
  }
  return std::string(util::trim(s.substr(name_start)));
}

std::string kernel_function_name(std::string_view kernel) {
  return std::string(kernel.substr(0, kernel.find('<')));
}

} // namespace optimas::profile
