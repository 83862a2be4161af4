#include "tune/cache.hpp"

#include "store/journal.hpp"
#include "util/error.hpp"
#include "util/hash.hpp"
#include "util/json_text.hpp"
#include "util/log.hpp"
#include "util/strings.hpp"

namespace optimas::tune {

namespace fs = std::filesystem;
using nlohmann::json;

PointCache::PointCache(fs::path dir) : m_dir(std::move(dir)) {}

std::string PointCache::key(const json& context, const std::string& label) {
  return util::sha256_hex(context.dump() + "\n" + label);
}

fs::path PointCache::path_for(const std::string& key) const {
  return m_dir / key.substr(0, 2) / (key + ".json");
}

std::optional<json> PointCache::get(const std::string& key, const std::string& label) const {
  fs::path p = path_for(key);
  std::error_code ec;
  if (!fs::exists(p, ec)) return std::nullopt;
  try {
    json doc = util::parse_json(util::read_file(p.string()));
    if (doc.value("point", "") != label || !doc.contains("result") || !doc["result"].is_object()) {
      log::warn("{}: not the tuning result of {}; measuring it again", p.string(), label);
      return std::nullopt;
    }
    return doc["result"];
  } catch (const std::exception& e) {
    log::warn("{}: a damaged tuning cache entry ({}); measuring the point again", p.string(), plain_message(e));
    return std::nullopt;
  }
}

std::optional<std::string> PointCache::put(const std::string& key, const std::string& label, const json& result) const {
  try {
    fs::path p = path_for(key);
    fs::create_directories(p.parent_path());
    store::write_json_atomic(p.string(), {{"point", label}, {"result", result}});
    return std::nullopt;
  } catch (const std::exception& e) {
    return std::string(plain_message(e));
  }
}

} // namespace optimas::tune
