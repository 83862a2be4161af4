#include "prompt/builder.hpp"

#include "cuda/source.hpp"
#include "prompt/reply.hpp"

#include "util/error.hpp"
#include "util/log.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <filesystem>
#include <map>
#include <set>

namespace optimas::embedded {
std::string_view prompt_template_md();
}

namespace optimas::prompt {

namespace fs = std::filesystem;

std::string default_template() {
  return std::string(embedded::prompt_template_md());
}

std::string prompt_kind(const PromptOptions& o) {
  return o.code_only ? "code only" : analysis::sources_label(o.sources);
}

namespace {

struct KernelCode {
  std::string name;
  std::string file; // as shown to the model: the file name
  std::string text; // numbered code of the kernel and the device functions it calls
};

unsigned kind_bit(const std::string& kind) {
  if (kind == "pc") return analysis::k_pc;
  if (kind == "ia") return analysis::k_ia;
  return analysis::k_roofline;
}

// Finds the kernel in the application's sources and gathers what the model needs to see:
// the kernel and the __device__ functions it calls (transitively), with line numbers.
KernelCode kernel_code(const std::vector<cuda::SourceFile>& files, const std::string& kernel) {
  std::string base = kernel.substr(0, kernel.find('<'));
  for (const auto& f : files) {
    const cuda::Function* k = f.kernel(base);
    if (!k) continue;
    KernelCode out;
    out.name = kernel;
    out.file = fs::path(f.path).filename().string();
    std::vector<std::pair<const cuda::SourceFile*, const cuda::Function*>> shown = {{&f, k}};
    std::set<std::string> seen = {k->name};
    for (std::size_t i = 0; i < shown.size(); ++i) {
      const auto* fn = shown[i].second;
      std::string_view body(shown[i].first->text.data() + fn->body_begin, fn->end - fn->body_begin);
      for (const auto& id : cuda::identifiers_in(body)) {
        if (seen.count(id)) continue;
        for (const auto& g : files)
          if (const auto* callee = g.function(id); callee && !callee->kernel) {
            shown.push_back({&g, callee});
            seen.insert(id);
            break;
          }
      }
    }
    for (const auto& [file, fn] : shown) {
      out.text +=
          fmt::format("{} lines {}-{}{}:\n```cuda\n{}```\n", fs::path(file->path).filename().string(), fn->first_line,
                      fn->last_line, fn->kernel ? "" : fmt::format(" (__device__ {}, called by {})", fn->name, base),
                      file->numbered(fn->first_line, fn->last_line));
    }
    return out;
  }
  throw Error(fmt::format("kernel \"{}\" was not found in the application's sources ({}); is `sources:` in "
                          "optimas.yml complete?",
                          kernel, files.empty() ? "none listed" : fs::path(files.front().path).filename().string()));
}

std::string fill(std::string text, const std::map<std::string, std::string>& values) {
  for (const auto& [key, value] : values) {
    std::string token = "{{" + key + "}}";
    for (std::size_t pos = 0; (pos = text.find(token, pos)) != std::string::npos; pos += value.size())
      text.replace(pos, token.size(), value);
  }
  return text;
}

} // namespace

std::vector<Prompt> build_prompts(const config::AppConfig& app, const analysis::Diagnostics& d,
                                  const PromptOptions& o) {
  std::string tmpl = o.template_text.empty() ? default_template() : o.template_text;
  const std::string k_split = "=== USER ===";
  auto split = tmpl.find(k_split);
  if (split == std::string::npos)
    throw UsageError("the prompt template needs a line \"=== USER ===\" between the system and user parts");
  std::string system_tmpl = std::string(util::trim(tmpl.substr(0, split))) + "\n";
  std::string user_tmpl = std::string(util::trim(tmpl.substr(split + k_split.size()))) + "\n";

  std::vector<cuda::SourceFile> files;
  for (const auto& s : app.sources) files.push_back(cuda::load_source((fs::path(app.dir) / s).string()));
  std::vector<KernelCode> kernels;
  for (const auto& k : d.kernels) kernels.push_back(kernel_code(files, k.time.kernel));

  // One unit per kernel and diagnostic source, so that chunking can regroup them.
  struct Unit {
    std::size_t kernel;
    unsigned source;
    std::vector<const analysis::Evidence*> items;
  };
  std::vector<Unit> units;
  for (std::size_t ki = 0; ki < d.kernels.size(); ++ki)
    for (unsigned s : {analysis::k_roofline, analysis::k_pc, analysis::k_ia}) {
      if (o.code_only || !(o.sources & s)) continue;
      Unit u{ki, s, {}};
      for (const auto& e : d.evidence)
        if (e.kernel == d.kernels[ki].time.kernel && kind_bit(e.kind) == s) u.items.push_back(&e);
      if (!u.items.empty()) units.push_back(std::move(u));
    }

  auto render = [&](const std::string& label, const std::vector<std::size_t>& ks, const std::vector<const Unit*>& us) {
    Prompt p;
    p.label = label;
    std::string kernel_text, summary;
    for (auto ki : ks) {
      const auto& kd = d.kernels[ki];
      kernel_text += fmt::format("### {} ({:.1f}% of GPU time) in {}\n{}\n", kd.time.kernel, 100 * kd.time.share,
                                 kernels[ki].file, kernels[ki].text);
      summary += (summary.empty() ? "" : ", ") + fmt::format("{} {:.1f}%", kd.time.kernel, 100 * kd.time.share);
      p.kernels.push_back(kd.time.kernel);
    }
    std::string diag;
    if (o.code_only) {
      diag = "None: this is the code-only baseline. Evidence arrays may be empty.\n";
    } else {
      for (const Unit* u : us) {
        const char* what = u->source == analysis::k_roofline ? "Roofline"
                           : u->source == analysis::k_pc
                               ? "PC sampling (hot source lines and their dominant stall)"
                               : "Hardware counters that explain runtime across runs (ensemble OMP)";
        diag += fmt::format("{} — {}:\n", d.kernels[u->kernel].time.kernel, what);
        for (const auto* e : u->items) {
          diag += fmt::format("[{}] {}\n", e->id, e->text);
          p.evidence_ids.push_back(e->id);
        }
        if (u->source == analysis::k_ia && d.kernels[u->kernel].counters &&
            !d.kernels[u->kernel].counters->caveat.empty())
          diag += "(Caveat: " + d.kernels[u->kernel].counters->caveat + ")\n";
        diag += "\n";
      }
      if (diag.empty()) diag = "No evidence of the selected kinds was found for these kernels.\n";
    }
    std::map<std::string, std::string> values = {
        {"gpu", o.gpu},
        {"app", app.name},
        {"description", app.description.empty() ? "(no description)" : app.description},
        {"kernel_summary", summary},
        {"kernels", kernel_text},
        {"sources_label", o.code_only ? "none: code-only baseline" : prompt_kind(o)},
        {"diagnostics", diag},
        {"schema", reply_schema().dump(2)}};
    p.system = fill(system_tmpl, values);
    p.user = fill(user_tmpl, values);
    return p;
  };

  std::vector<std::size_t> all_kernels;
  for (std::size_t i = 0; i < d.kernels.size(); ++i) all_kernels.push_back(i);
  std::vector<const Unit*> all_units;
  for (const auto& u : units) all_units.push_back(&u);
  Prompt whole = render("all hot kernels", all_kernels, all_units);
  if (whole.tokens() <= o.token_budget || (d.kernels.size() <= 1 && all_units.size() <= 1)) {
    if (whole.tokens() > o.token_budget)
      log::warn("the prompt needs about {} tokens, over the budget of {}", whole.tokens(), o.token_budget);
    return {whole};
  }
  // Too large: one prompt per kernel, and per diagnostic source for a kernel still too large.
  std::vector<Prompt> out;
  for (std::size_t ki = 0; ki < d.kernels.size(); ++ki) {
    std::vector<const Unit*> mine;
    for (const auto* u : all_units)
      if (u->kernel == ki) mine.push_back(u);
    Prompt p = render(d.kernels[ki].time.kernel, {ki}, mine);
    if (p.tokens() <= o.token_budget || mine.size() <= 1) {
      if (p.tokens() > o.token_budget)
        log::warn("the prompt for {} needs about {} tokens, over the budget of {}", d.kernels[ki].time.kernel,
                  p.tokens(), o.token_budget);
      out.push_back(std::move(p));
      continue;
    }
    for (const auto* u : mine) {
      std::string label = fmt::format("{} / {}", d.kernels[ki].time.kernel, analysis::sources_label(u->source));
      Prompt q = render(label, {ki}, {u});
      if (q.tokens() > o.token_budget)
        log::warn("the prompt \"{}\" needs about {} tokens, over the budget of {}", label, q.tokens(), o.token_budget);
      out.push_back(std::move(q));
    }
  }
  return out;
}

} // namespace optimas::prompt
