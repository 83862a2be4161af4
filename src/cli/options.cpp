#include "cli/options.hpp"

#include "util/log.hpp"

#include <cerrno>
#include <climits>
#include <cstdlib>

namespace optimas::cli {

using config::Kind;

namespace {

// The flags without CLI11's negation mark: a flag row's meaning is "the opposite of the default".
std::string plain_flags(const config::Option& row) {
  std::string out;
  for (char c : row.flags)
    if (c != '!') out += c;
  return out;
}

// The text of a value as the row's kind, or null when it is not one (CLI11 then says so itself).
nlohmann::json typed(const config::Option& row, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  switch (row.kind) {
  case Kind::integer: {
    // Decimal digits only: CLI11 itself would read 010 as 8 and 0x10 as 16, past the check's back.
    std::size_t digits = text.find_first_not_of("+-") == 1 ? 1 : 0;
    if (text.size() > digits + 1 && text[digits] == '0') return nullptr;
    long long v = std::strtoll(text.c_str(), &end, 10);
    if (text.empty() || *end != '\0') return nullptr;
    // Past long long's range: as far out of any row's range as the number itself.
    if (errno == ERANGE) return text[0] == '-' ? nlohmann::json(LLONG_MIN) : nlohmann::json(ULLONG_MAX);
    return v;
  }
  case Kind::real: {
    double v = std::strtod(text.c_str(), &end);
    if (text.empty() || *end != '\0') return nullptr;
    return v;
  }
  default:
    return text;
  }
}

CLI::Option* finish(CLI::Option* opt, const config::Option& row) {
  if (!row.env.empty()) opt->envname(row.env);
  // An integer row is checked against its range even where it has no check of its own.
  if (row.check || row.kind == Kind::integer) opt->check(validator(row));
  return opt;
}

template <typename T> CLI::Option* bind(CLI::App* cmd, std::string_view name, T& target) {
  const auto& row = config::option(name);
  if (!row.default_value.is_null()) target = row.default_value.get<T>();
  CLI::Option* opt = finish(cmd->add_option(row.flags, target, row.help), row);
  if (!row.default_value.is_null()) opt->capture_default_str();
  if (row.kind == Kind::names) opt->delimiter(',');
  return opt;
}

} // namespace

CLI::Validator validator(const config::Option& row) {
  const config::Option* r = &row;
  return CLI::Validator(
      [r](std::string& text) {
        nlohmann::json v = typed(*r, text);
        // A number that is not one is said in the row's words too (CLI11 would read 1e9 or 0x10).
        if (v.is_null()) return r->kind == Kind::integer ? config::check(r->name, text) : std::string();
        return config::check(r->name, v);
      },
      "", row.name);
}

CLI::Option* add_option(CLI::App* cmd, std::string_view name, std::string& target) {
  return bind(cmd, name, target);
}
CLI::Option* add_option(CLI::App* cmd, std::string_view name, int& target) {
  return bind(cmd, name, target);
}
CLI::Option* add_option(CLI::App* cmd, std::string_view name, double& target) {
  return bind(cmd, name, target);
}
CLI::Option* add_option(CLI::App* cmd, std::string_view name, std::size_t& target) {
  return bind(cmd, name, target);
}
CLI::Option* add_option(CLI::App* cmd, std::string_view name, std::vector<std::string>& target) {
  return bind(cmd, name, target);
}

CLI::Option* add_flag(CLI::App* cmd, std::string_view name, bool& target) {
  const auto& row = config::option(name);
  bool given = !row.default_value.get<bool>();
  target = !given;
  return finish(cmd->add_flag_function(
                    plain_flags(row), [&target, given](std::int64_t) { target = given; }, row.help),
                row);
}

CLI::Option* add_override(CLI::App* cmd, std::string_view name, loop::Overrides& o) {
  const auto& row = config::option(name);
  const std::string key = row.name;
  switch (row.kind) {
  case Kind::flag: {
    bool given = !row.default_value.get<bool>();
    return finish(cmd->add_flag_function(
                      plain_flags(row), [&o, key, given](std::int64_t) { o[key] = given; }, row.help),
                  row);
  }
  case Kind::integer:
    return finish(cmd->add_option_function<long long>(
                      row.flags, [&o, key](const long long& v) { o[key] = v; }, row.help),
                  row);
  case Kind::real:
    return finish(cmd->add_option_function<double>(
                      row.flags, [&o, key](const double& v) { o[key] = v; }, row.help),
                  row);
  case Kind::text:
    return finish(cmd->add_option_function<std::string>(
                      row.flags, [&o, key](const std::string& v) { o[key] = v; }, row.help),
                  row);
  case Kind::list:
  case Kind::names: {
    auto* opt = cmd->add_option_function<std::vector<std::string>>(
        row.flags, [&o, key](const std::vector<std::string>& v) { o[key] = v; }, row.help);
    if (row.kind == Kind::names) opt->delimiter(',');
    return finish(opt, row);
  }
  }
  return nullptr;
}

CLI::Option* add_deprecated_alias(CLI::App* cmd, const std::string& old_flags, std::string_view name,
                                  std::string& target) {
  const auto& row = config::option(name);
  std::string now = row.flags.substr(row.flags.rfind(',') == std::string::npos ? 0 : row.flags.rfind(',') + 1);
  return cmd
      ->add_option_function<std::string>(
          old_flags,
          [&target, old_flags, now](const std::string& v) {
            log::warn("{} is deprecated: use {}", old_flags, now);
            target = v;
          },
          "Deprecated: use " + now)
      ->group("");
}

} // namespace optimas::cli
