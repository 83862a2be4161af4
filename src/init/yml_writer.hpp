// A Proposal as optimas.yml text: every key with the reason init chose it as a comment above it,
// TODO comments for what it could not decide, and suggested configs commented out until the user
// confirms them.
#pragma once

#include "init/proposal.hpp"

#include <string>

namespace optimas::init {

// `header`: the file's first comment (who wrote it, when, for which folder).
std::string write_yml(const Proposal& p, const std::string& header);

} // namespace optimas::init
