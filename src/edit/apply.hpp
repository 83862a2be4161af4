// Applying a reply's edits to copies of the sources (never the user's tree): every claimed edit
// is either applied or recorded as not applied with the reason (a hallucination in the paper's
// terms); edits are located in the original text, so line numbers mean what the prompt showed.
#pragma once

#include "prompt/reply.hpp"

#include <map>
#include <set>
#include <string>
#include <vector>

namespace optimas::edit {

struct EditOutcome {
  std::size_t index = 0; // position in the reply's edits
  bool applied = false;
  std::string reason; // why it was not applied
  std::string file;   // the file it targets (file name as in the prompt)
  int first_line = 0; // lines of the original it replaces
  int last_line = 0;
  std::vector<std::string> unknown_evidence; // cited IDs the prompt did not have
  std::size_t known_evidence = 0;            // cited IDs it had
  std::vector<std::string> cited;            // the IDs it had, as cited
  bool unknown_file = false;                 // `file` is not one of the sources (the guardrail "file")
  std::string kernel;                        // the kernel the edit names (the guardrail "kernel")
};

struct Application {
  std::map<std::string, std::string> original; // file name -> text
  std::map<std::string, std::string> result;   // file name -> text after the applied edits
  std::vector<EditOutcome> outcomes;
  std::size_t applied() const;
  std::size_t not_applied() const { return outcomes.size() - applied(); }
};

// `sources` maps file names (as shown in prompts) to their text; an edit names one of them
// exactly (not a path that ends in one: `/tmp/x/main.cu` is not `main.cu`).
Application apply_edits(const std::map<std::string, std::string>& sources, const prompt::Reply& reply,
                        const std::set<std::string>& known_evidence);

// A unified diff of two texts (3 lines of context).
std::string unified_diff(const std::string& before, const std::string& after, const std::string& name);

} // namespace optimas::edit
