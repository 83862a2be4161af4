#include "profile/profile.hpp"

#include "util/strings.hpp"

#include <cxxabi.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdlib>
#include <memory>

namespace optimas::profile {

const Metric* Launch::metric(const std::string& name) const {
  auto it = metrics.find(name);
  return it == metrics.end() ? nullptr : &it->second;
}

double Launch::value(const std::string& name) const {
  const Metric* m = metric(name);
  return m ? m->value : k_nan;
}

void Samples::add(const Samples& o) {
  all += o.all;
  not_issued += o.not_issued;
  for (std::size_t i = 0; i < k_stall_count; ++i) {
    stalls[i] += o.stalls[i];
    stalls_not_issued[i] += o.stalls_not_issued[i];
  }
}

void InstructionCounters::add(const InstructionCounters& o) {
  executed += o.executed;
  thread_executed += o.thread_executed;
  divergent_branches += o.divergent_branches;
  global_requests += o.global_requests;
  global_sectors += o.global_sectors;
  global_sectors_ideal += o.global_sectors_ideal;
  global_sectors_excessive += o.global_sectors_excessive;
  shared_wavefronts += o.shared_wavefronts;
  shared_wavefronts_ideal += o.shared_wavefronts_ideal;
  shared_wavefronts_excessive += o.shared_wavefronts_excessive;
  shared_conflict_ways = std::max(shared_conflict_ways, o.shared_conflict_ways);
  if (!access_bits) access_bits = o.access_bits;
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

namespace {

// Where the parameter list starts: the last top-level "(" of a name that ends with ")".
std::size_t parameters_start(std::string_view s) {
  if (s.empty() || s.back() != ')') return std::string_view::npos;
  int depth = 0;
  for (std::size_t i = s.size(); i-- > 0;) {
    if (s[i] == ')')
      ++depth;
    else if (s[i] == '(' && --depth == 0)
      return i;
  }
  return std::string_view::npos;
}

bool identifier_char(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// Drops the casts NVIDIA's demangler writes before integer template arguments: "(int)64" -> "64",
// "(unsigned long)4096" -> "4096". A cast is a parenthesised type name right after "<", "," or a
// space and right before a number.
std::string drop_literal_casts(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '(' && (i == 0 || s[i - 1] == '<' || s[i - 1] == ',' || s[i - 1] == ' ')) {
      std::size_t close = s.find(')', i);
      bool type_name = close != std::string_view::npos && close > i + 1;
      for (std::size_t j = i + 1; type_name && j < close; ++j)
        type_name = identifier_char(s[j]) || s[j] == ' ' || s[j] == ':';
      std::size_t v = close + 1;
      if (type_name && v < s.size() && s[v] == '-') ++v;
      if (type_name && v < s.size() && std::isdigit(static_cast<unsigned char>(s[v]))) {
        i = close;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

// One spelling for what demanglers write differently: no casts, no integer suffixes ("4096ul"),
// true/false as 1/0, no const ("const int *" and "int const*"), no whitespace.
std::string canonical(std::string_view s) {
  std::string cast_free = drop_literal_casts(s);
  std::string out;
  std::string_view t = cast_free;
  for (std::size_t i = 0; i < t.size();) {
    if (identifier_char(t[i]) && (i == 0 || !identifier_char(t[i - 1]))) {
      std::size_t end = i;
      while (end < t.size() && identifier_char(t[end])) ++end;
      std::string_view word = t.substr(i, end - i);
      std::size_t digits = 0;
      while (digits < word.size() && std::isdigit(static_cast<unsigned char>(word[digits]))) ++digits;
      bool suffix_only = digits > 0 && word.find_first_not_of("uUlL", digits) == std::string_view::npos;
      std::string_view kept = suffix_only ? word.substr(0, digits) : word;
      if (word == "true")
        kept = "1";
      else if (word == "false")
        kept = "0";
      else if (word == "const")
        kept = {}; // its place differs between demanglers
      out += kept;
      i = end;
      continue;
    }
    if (!std::isspace(static_cast<unsigned char>(t[i]))) out += t[i];
    ++i;
  }
  return out;
}

} // namespace

std::string demangle_static_kernel(std::string_view mangled) {
  // "__nv_static_" N "__", then N characters (a hash, the file's name and another hash), then
  // the kernel's own mangled name.
  constexpr std::string_view prefix = "__nv_static_";
  if (mangled.substr(0, prefix.size()) != prefix) return {};
  std::string_view rest = mangled.substr(prefix.size());
  std::size_t n = 0;
  auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), n);
  if (ec != std::errc() || end == rest.data()) return {};
  rest.remove_prefix(static_cast<std::size_t>(end - rest.data()));
  if (rest.substr(0, 2) != "__" || rest.size() - 2 < n) return {};
  std::string inner(rest.substr(2 + n));
  if (inner.rfind("_Z", 0) != 0) return {};
  int status = 0;
  std::unique_ptr<char, void (*)(void*)> out(abi::__cxa_demangle(inner.c_str(), nullptr, nullptr, &status), std::free);
  return status == 0 && out ? std::string(out.get()) : std::string();
}

std::string kernel_base_name(std::string_view demangled) {
  std::string_view s = util::trim(demangled);
  if (auto p = parameters_start(s); p != std::string_view::npos) s = s.substr(0, p);
  // A return type precedes the name outside template arguments and parentheses: "void foo<int>",
  // "void (anonymous namespace)::k".
  int depth = 0;
  std::size_t name_start = 0;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '<' || s[i] == '(')
      ++depth;
    else if (s[i] == '>' || s[i] == ')')
      --depth;
    else if (s[i] == ' ' && depth == 0)
      name_start = i + 1;
  }
  return std::string(util::trim(s.substr(name_start)));
}

std::string kernel_function_name(std::string_view kernel) {
  return std::string(kernel.substr(0, kernel.find('<')));
}

std::string_view kernel_parameters(std::string_view demangled) {
  std::string_view s = util::trim(demangled);
  auto p = parameters_start(s);
  return p == std::string_view::npos ? std::string_view() : s.substr(p);
}

std::string kernel_name_key(std::string_view demangled) {
  return canonical(kernel_base_name(demangled));
}

std::string kernel_signature_key(std::string_view demangled) {
  return kernel_name_key(demangled) + canonical(kernel_parameters(demangled));
}

} // namespace optimas::profile
