#include "util/gpus.hpp"

#include "util/error.hpp"
#include "util/process.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <cstdlib>

namespace optimas::util {

std::vector<std::string> found_gpus() {
  const char* env = std::getenv("CUDA_VISIBLE_DEVICES");
  std::vector<std::string> out;
  if (env && *env) {
    for (auto& id : split(env, ','))
      if (std::string t(trim(id)); !t.empty()) out.push_back(t);
    return out;
  }
  if (!find_executable("nvidia-smi")) return out;
  ProcessSpec spec;
  spec.argv = {"nvidia-smi", "-L"};
  spec.timeout_s = 30;
  auto r = run_process(spec);
  int count = 0;
  for (auto line : split(r.out, '\n')) count += line.rfind("GPU ", 0) == 0;
  for (int i = 0; i < count; ++i) out.push_back(std::to_string(i));
  return out;
}

std::vector<std::string> gpu_ids(const std::string& list, const std::string& what) {
  std::vector<std::string> out;
  for (auto& id : split(list, ',')) {
    std::string t(trim(id));
    if (t.empty()) throw UsageError(fmt::format("{}: \"{}\" has an empty GPU id", what, list));
    out.push_back(t);
  }
  return out;
}

std::vector<std::string> visible_gpus(const std::string& option, const std::string& what) {
  if (option == "auto" || option == "all") return found_gpus();
  if (!option.empty() && option.find_first_not_of("0123456789") == std::string::npos) {
    auto found = found_gpus();
    const auto n = std::stoul(option.substr(0, 6));
    if (n > found.size())
      throw UsageError(fmt::format("{}: {} GPU(s) asked for, {} found ({})", what, n, found.size(),
                                   found.empty() ? "no CUDA_VISIBLE_DEVICES, no nvidia-smi" : join(found, ",")));
    found.resize(n);
    return found;
  }
  return gpu_ids(option, what);
}

} // namespace optimas::util
