// What model calls cost: a price table (USD per million tokens, per provider and model) read
// from YAML, and per-run totals. Prices change; the built-in table (data/prices.yml) is a
// starting point that a user file overrides.
#pragma once

#include "llm/backend.hpp"

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>

namespace optimas::llm {

struct Price {
  double input_per_mtok = 0;  // USD per million input tokens
  double output_per_mtok = 0; // USD per million output tokens
};

class PriceTable {
public:
  // Parses the prices.yml layout; throws ParseError naming `source` and the line.
  static PriceTable from_yaml(std::string_view text, const std::string& source);
  // The table built into the binary from data/prices.yml.
  static const PriceTable& builtin();
  // The built-in table with a user's file laid over it (entry by entry); throws Error when
  // the file cannot be read, ParseError when it is malformed.
  static PriceTable with_overrides(const std::string& user_file);

  // Entries of `other` replace this table's (an exact model, or a provider's default).
  void merge(const PriceTable& other);

  // The exact model's price, else the provider's default, else nullopt.
  std::optional<Price> find(std::string_view provider, std::string_view model) const;

private:
  struct ProviderPrices {
    std::map<std::string, Price, std::less<>> models;
    std::optional<Price> fallback;
  };
  std::map<std::string, ProviderPrices, std::less<>> m_providers;
};

// Fills usage.cost_usd and cost_known from the table; an unknown model leaves cost_known false
// and cost_usd 0.
void price(Usage& usage, std::string_view provider, std::string_view model, const PriceTable& table);

// The totals of one run: the sum of its calls. A replayed (cached) call costs nothing this run
// and is counted apart.
struct UsageTotals {
  int calls = 0;        // calls that reached the model
  int cached_calls = 0; // answers replayed from the cache
  std::uint64_t input_tokens = 0;
  std::uint64_t output_tokens = 0;
  double cost_usd = 0;
  bool cost_known = true; // false once any call had an unknown price

  void add(const Usage& usage);
  void add(const Response& response);
};

} // namespace optimas::llm
