// The profile model as JSON (schema "optimas.profile/1", documented in docs/profile-json.md).
#pragma once

#include "profile/hot_kernels.hpp"
#include "profile/profile.hpp"

#include <nlohmann/json.hpp>

namespace optimas::profile {

struct JsonOptions {
  bool metrics = false;                               // every metric of every launch (large)
  bool instructions = false;                          // per-SASS-instruction samples
  double alpha = config::default_of<double>("alpha"); // which kernels hot_kernels lists
};

nlohmann::json to_json(const Profile& profile, const JsonOptions& options = {});
nlohmann::json to_json(const HotKernels& hot);

} // namespace optimas::profile
