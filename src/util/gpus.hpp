// The GPUs of this machine that work may be spread over: the local launcher's cells
// (launch/local.cpp) and the tuning stage's measurements (loop/slots.cpp), one at a time on each.
#pragma once

#include <string>
#include <vector>

namespace optimas::util {

// $CUDA_VISIBLE_DEVICES's ids where it is set, else one id per GPU `nvidia-smi -L` lists, else none.
std::vector<std::string> found_gpus();

// The ids of a comma-separated list ("0,2"); UsageError naming `what` for an empty one.
std::vector<std::string> gpu_ids(const std::string& list, const std::string& what);

// The GPU ids `option` names: "auto" or "all" ($CUDA_VISIBLE_DEVICES where set, else the GPUs
// `nvidia-smi -L` lists; empty where neither names one), a count N (the first N of those), or ids
// "0,2" (one GPU by id: CUDA_VISIBLE_DEVICES). UsageError naming `what` (the option, as the user wrote it) for an empty
// id or a count above what is there.
std::vector<std::string> visible_gpus(const std::string& option, const std::string& what);

} // namespace optimas::util
