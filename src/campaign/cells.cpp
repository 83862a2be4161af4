#include "campaign/cells.hpp"

#include "util/names.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <cctype>
#include <filesystem>

namespace optimas::campaign {

std::vector<Cell> expand_cells(const CampaignFile& f) {
  std::vector<Cell> cells;
  for (const auto& app : f.applications)
    for (const auto& subset : f.diagnostics)
      for (const auto& backend : f.backends)
        for (int rounds : f.rounds)
          for (int candidates : f.candidates)
            for (int seed = 1; seed <= f.repeats; ++seed) {
              std::string search = f.rounds.size() > 1 ? fmt::format("-r{}", rounds) : "";
              if (f.candidates.size() > 1) search += fmt::format("-k{}", candidates);
              cells.push_back({fmt::format("{}-{}-{}{}-s{}", app.name, subset.id, backend.name, search, seed), &app,
                               &subset, &backend, rounds, candidates, seed});
            }
  return cells;
}

std::string campaign_dir(const CampaignFile& f) {
  return (std::filesystem::path(f.runs_dir) / "campaigns" / f.id).string();
}

std::string manual_dir(const CampaignFile& f, const Cell& c) {
  return util::path_in(std::filesystem::path(campaign_dir(f)) / "manual", c.id).string();
}

std::vector<std::string> run_arguments(const CampaignFile& f, const Cell& c) {
  std::vector<std::string> args = {"run",
                                   "--app",
                                   c.app->path,
                                   "--runs-dir",
                                   f.runs_dir,
                                   "--campaign",
                                   f.id,
                                   "--cell",
                                   c.id,
                                   "--seed",
                                   std::to_string(c.seed),
                                   "--diagnostics",
                                   c.diagnostics->setting,
                                   "--model",
                                   c.backend->model,
                                   "--rounds",
                                   std::to_string(c.rounds),
                                   "--candidates",
                                   std::to_string(c.candidates)};
  for (const auto& [key, value] : c.backend->options) {
    args.push_back("--option");
    args.push_back(key + "=" + value);
  }
  // The manual backend's prompts and replies: a folder per cell, beside the campaign's state.
  if (c.backend->model == "manual") {
    args.push_back("--work-dir");
    args.push_back(manual_dir(f, c));
  }
  if (!c.app->configs.empty()) {
    args.push_back("--measure-configs");
    args.push_back(util::join(c.app->configs, ","));
  }
  args.insert(args.end(), f.run_options.begin(), f.run_options.end());
  return args;
}

std::string shell_line(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    bool plain = !a.empty();
    for (char ch : a)
      plain = plain && (std::isalnum(static_cast<unsigned char>(ch)) ||
                        std::string_view("-_./=,:+@%").find(ch) != std::string_view::npos);
    std::string quoted = "'";
    for (char ch : a) quoted += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    out += (out.empty() ? "" : " ") + (plain ? a : quoted + "'");
  }
  return out;
}

} // namespace optimas::campaign
