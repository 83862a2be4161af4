// The CSV reader and the number parsers every page reader feeds its fields to.
#include "util/csv.hpp"
#include "util/error.hpp"
#include "util/numbers.hpp"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace optimas;
  try {
    auto reader = util::CsvReader::from_string(std::string(reinterpret_cast<const char*>(data), size), "fuzz.csv");
    std::size_t last_line = 0;
    while (reader.next()) {
      if (reader.line() < last_line) __builtin_trap(); // lines never go back
      last_line = reader.line();
      for (auto field : reader.fields()) {
        util::parse_number(field);
        util::parse_dim3(field);
      }
      if (reader.size() >= 2)
        if (auto v = util::parse_number(reader[0])) util::to_base_unit(*v, reader[1]);
    }
  } catch (const Error&) {
  }
  return 0;
}
