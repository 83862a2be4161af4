// How an application builds, read from its folder: a Makefile (its arch and flag variables), a
// CMake project (built out of tree in build/), or loose .cu files (one nvcc line). Nothing is
// run here; init/init.cpp confirms the guess by building a copy.
#pragma once

#include "init/proposal.hpp"

#include <string>
#include <vector>

namespace optimas::init {

// `arch` is the GPU's compute capability without the dot ("90"), empty when no GPU is known.
// The command builds with -lineinfo (the profiler's source lines) and for `arch` where the build
// allows. Throws Error when the folder has no Makefile, CMakeLists.txt or .cu file.
BuildGuess detect_build(const std::string& dir, const std::string& arch);

// What a failed build's log shows of causes init knows, each a TODO line: an architecture this
// nvcc no longer has, runtime calls CUDA 13 removed (which old suites still use: the program
// needs a source edit).
std::vector<std::string> build_failure_causes(const std::string& log);

// The compute capability of the first GPU ("90"), from nvidia-smi; empty when there is none.
std::string gpu_arch();

} // namespace optimas::init
