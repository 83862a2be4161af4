#include "llm/pricing.hpp"

#include "config/yaml_reader.hpp"

#include "util/error.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <cmath>

namespace optimas::embedded {
std::string_view prices_yml();
}

namespace optimas::llm {

namespace {

std::size_t line_of(const YAML::Node& node) {
  return node.Mark().line >= 0 ? node.Mark().line + 1 : 0;
}

Price read_price(const YAML::Node& node, const std::string& source, const std::string& where) {
  if (!node.IsMap())
    throw ParseError(source, line_of(node), fmt::format("{}: expected {{input: <USD>, output: <USD>}}", where));
  Price p;
  bool has_input = false, has_output = false;
  for (const auto& kv : node) {
    auto field = kv.first.as<std::string>();
    double value = 0;
    try {
      value = kv.second.as<double>();
    } catch (const YAML::Exception&) {
      throw ParseError(source, line_of(kv.second),
                       fmt::format("{}.{}: not a number of US dollars per million tokens", where, field));
    }
    if (!std::isfinite(value) || value < 0)
      throw ParseError(source, line_of(kv.second), fmt::format("{}.{}: a price cannot be negative", where, field));
    if (field == "input") {
      p.input_per_mtok = value;
      has_input = true;
    } else if (field == "output") {
      p.output_per_mtok = value;
      has_output = true;
    } else {
      throw ParseError(source, line_of(kv.first),
                       fmt::format("{}: unknown field \"{}\" (known: input, output)", where, field));
    }
  }
  if (!has_input || !has_output)
    throw ParseError(source, line_of(node), fmt::format("{}: needs both input and output prices", where));
  return p;
}

} // namespace

PriceTable PriceTable::from_yaml(std::string_view text, const std::string& source) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(text));
  } catch (const YAML::ParserException& e) {
    throw ParseError(source, e.mark.line + 1, config::parse_message(e));
  }
  PriceTable table;
  if (root.IsNull()) return table;
  if (!root.IsMap()) throw ParseError(source, line_of(root), "expected a map of providers");
  for (const auto& provider_node : root) {
    auto provider = provider_node.first.as<std::string>();
    const auto& body = provider_node.second;
    if (!body.IsMap())
      throw ParseError(source, line_of(body), fmt::format("{}: expected `models:` and/or `default:`", provider));
    ProviderPrices& prices = table.m_providers[provider];
    for (const auto& kv : body) {
      auto field = kv.first.as<std::string>();
      if (field == "default") {
        prices.fallback = read_price(kv.second, source, provider + ".default");
      } else if (field == "models") {
        if (kv.second.IsNull()) continue;
        if (!kv.second.IsMap())
          throw ParseError(source, line_of(kv.second),
                           fmt::format("{}.models: expected a map of model names", provider));
        for (const auto& model : kv.second) {
          auto name = model.first.as<std::string>();
          prices.models[name] = read_price(model.second, source, provider + ".models." + name);
        }
      } else {
        throw ParseError(source, line_of(kv.first),
                         fmt::format("{}: unknown field \"{}\" (known: models, default)", provider, field));
      }
    }
  }
  return table;
}

const PriceTable& PriceTable::builtin() {
  static const PriceTable k_table = from_yaml(embedded::prices_yml(), "data/prices.yml (built in)");
  return k_table;
}

PriceTable PriceTable::with_overrides(const std::string& user_file) {
  PriceTable table = builtin();
  table.merge(from_yaml(util::read_file(user_file), user_file));
  return table;
}

void PriceTable::merge(const PriceTable& other) {
  for (const auto& [provider, prices] : other.m_providers) {
    ProviderPrices& mine = m_providers[provider];
    for (const auto& [model, p] : prices.models) mine.models[model] = p;
    if (prices.fallback) mine.fallback = prices.fallback;
  }
}

std::optional<Price> PriceTable::find(std::string_view provider, std::string_view model) const {
  auto p = m_providers.find(provider);
  if (p == m_providers.end()) return std::nullopt;
  if (auto m = p->second.models.find(model); m != p->second.models.end()) return m->second;
  return p->second.fallback;
}

void price(Usage& usage, std::string_view provider, std::string_view model, const PriceTable& table) {
  auto p = table.find(provider, model);
  usage.cost_known = p.has_value();
  usage.cost_usd = p ? (static_cast<double>(usage.input_tokens) * p->input_per_mtok +
                        static_cast<double>(usage.output_tokens) * p->output_per_mtok) /
                           1e6
                     : 0;
}

void UsageTotals::add(const Usage& usage) {
  ++calls;
  input_tokens += usage.input_tokens;
  output_tokens += usage.output_tokens;
  cost_usd += usage.cost_usd;
  cost_known = cost_known && usage.cost_known;
}

void UsageTotals::add(const Response& response) {
  if (response.from_cache) {
    ++cached_calls;
    return;
  }
  add(response.usage);
}

} // namespace optimas::llm
