#include "init/build_detect.hpp"

#include "evaluate/sandbox.hpp"
#include "util/error.hpp"
#include "util/strings.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <iterator>
#include <map>
#include <regex>
#include <set>
#include <sstream>

namespace fs = std::filesystem;

namespace optimas::init {
namespace {

// nvcc reads NVCC_APPEND_FLAGS after its command line, so the flags reach every nvcc call of any
// build, and the last -arch wins over one the build hard-codes. The variable's own value (a
// tuning point's flags) is kept.
std::string append_flags_prefix(const std::string& flags) {
  return fmt::format("NVCC_APPEND_FLAGS=\"$NVCC_APPEND_FLAGS {}\" ", flags);
}

// Relative paths in build files or sources that climb out of the folder (../../common/make.config).
std::vector<std::string> climbing_paths(const std::string& text) {
  static const std::regex up(R"((?:^|[\s"'(=:<,]|-[IL])((?:\.\./)+[A-Za-z0-9_./+-]*))");
  std::set<std::string> seen;
  std::vector<std::string> found;
  for (std::sregex_iterator it(text.begin(), text.end(), up), end; it != end; ++it) {
    std::string p = (*it)[1];
    while (p.size() > 1 && p.back() == '/') p.pop_back();
    if (seen.insert(p).second) found.push_back(p);
  }
  return found;
}

// The climbing #include "../x.h" lines of the folder's own sources.
std::vector<std::string> climbing_includes(const fs::path& dir) {
  static const std::regex include(R"re(#\s*include\s*"((?:\.\./)+[^"]*)")re");
  std::set<std::string> seen;
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(dir)) {
    std::string ext = e.path().extension().string();
    if (!e.is_regular_file() || (ext != ".cu" && ext != ".cuh" && ext != ".h" && ext != ".hpp" && ext != ".cpp"))
      continue;
    std::string text = util::read_file(e.path().string());
    for (std::sregex_iterator it(text.begin(), text.end(), include), end; it != end; ++it)
      if (seen.insert((*it)[1]).second) found.push_back((*it)[1]);
  }
  return found;
}

// Compiler flags that let a copy of the folder see what the build reaches outside it: -I for each
// folder it names (../../../Common), and -I for the folder itself, through which a quoted
// "../common/x.h" resolves to the original.
std::vector<std::string> reach_flags(const fs::path& dir, const std::vector<std::string>& outside) {
  std::vector<std::string> flags;
  if (outside.empty()) return flags;
  for (const auto& p : outside) {
    fs::path abs = (dir / p).lexically_normal();
    if (fs::is_directory(abs)) flags.push_back("-I" + abs.string());
  }
  flags.push_back("-I" + dir.lexically_normal().string());
  return flags;
}

void merge(std::vector<std::string>& into, const std::vector<std::string>& more) {
  for (const auto& m : more)
    if (std::find(into.begin(), into.end(), m) == into.end()) into.push_back(m);
}

struct Makefile {
  std::string text;
  std::map<std::string, std::string> vars;
  std::vector<std::pair<std::string, std::string>> rules;  // target -> prerequisites, in file order
  std::map<std::string, std::vector<std::string>> recipes; // target -> its recipe lines
  std::set<std::string> phony;
  std::vector<std::string> included; // what its include lines name, variables expanded
  std::set<std::string> read;        // the files read (at most 16; each once)
};

std::string expand(const Makefile& m, std::string s, int depth = 0) {
  static const std::regex ref(R"(\$[({]([A-Za-z_][A-Za-z0-9_]*)[)}])");
  if (depth > 8) return s;
  std::string out;
  std::smatch g;
  bool any = false;
  while (std::regex_search(s, g, ref)) {
    auto it = m.vars.find(g[1]);
    out += g.prefix().str() + (it == m.vars.end() ? "" : it->second);
    s = g.suffix().str();
    any = true;
  }
  out += s;
  return any ? expand(m, out, depth + 1) : out;
}

// Reads the makefile at `path` into `m`. An include line (`include`, `-include`, `sinclude`) reads
// the files it names where it stands, as make does: their variables, rules and recipes join m's,
// and their text m.text (so that an nvcc call or a climbing path in an included common.mk counts).
// Names are expanded with the variables set so far and read relative to `dir`, the folder make
// runs in; a file that is not there is only listed in m.included, and none is read twice.
void read_into(Makefile& m, const fs::path& dir, const fs::path& path) {
  if (!m.read.insert(path.lexically_normal().string()).second || m.read.size() > 16) return;
  const std::string text = util::read_file(path.string());
  m.text += (m.text.empty() ? "" : "\n") + text;
  static const std::regex assign(R"(^(?:override\s+|export\s+)?([A-Za-z_][A-Za-z0-9_]*)\s*(\?=|::=|:=|\+=|=)\s*(.*)$)");
  static const std::regex rule(R"(^([^\s:=#][^:=#]*?)\s*::?\s*([^=]*)$)");
  static const std::regex include(R"(^(?:-include|sinclude|include)\s+(.+)$)");
  std::string current;
  for (auto line : util::split(text, '\n')) {
    std::string l(line);
    if (!l.empty() && l.back() == '\r') l.pop_back();
    if (!l.empty() && l[0] == '\t') {
      if (!current.empty()) m.recipes[current].push_back(l.substr(1));
      continue;
    }
    std::string s(util::trim(l.substr(0, l.find('#'))));
    std::smatch g;
    if (std::regex_match(s, g, include)) {
      current.clear();
      const std::string names = expand(m, g[1].str());
      for (auto name : util::split(names, ' ')) {
        if (name.empty()) continue;
        m.included.emplace_back(name);
        fs::path file = fs::path(name).is_absolute() ? fs::path(name) : dir / name;
        std::error_code ec;
        if (fs::is_regular_file(file, ec)) read_into(m, dir, file);
      }
    } else if (std::regex_match(s, g, assign)) {
      std::string value(util::trim(g[3].str()));
      if (g[2] == "+=")
        m.vars[g[1]] += (m.vars[g[1]].empty() ? "" : " ") + value;
      else if (g[2] != "?=" || !m.vars.count(g[1]))
        m.vars[g[1]] = value;
      current.clear();
    } else if (std::regex_match(s, g, rule)) {
      current.clear();
      const std::string targets = g[1].str(), prerequisites = g[2].str();
      for (auto t : util::split(targets, ' ')) {
        if (t.empty()) continue;
        if (t == ".PHONY") {
          for (auto p : util::split(prerequisites, ' '))
            if (!p.empty()) m.phony.insert(std::string(p));
          continue;
        }
        m.rules.emplace_back(std::string(t), std::string(util::trim(prerequisites)));
        if (current.empty()) current = std::string(t);
      }
    } else if (!s.empty()) {
      current.clear();
    }
  }
}

Makefile read_makefile(const fs::path& dir, const std::string& name) {
  Makefile m;
  read_into(m, dir, dir / name);
  return m;
}

bool is_goal_word(const std::string& t) {
  static const std::set<std::string> words = {"all",   "release", "default", "build",
                                              "debug", "install", "clean",   "test"};
  return words.count(t) > 0;
}

// The program the default goal makes: the first rule's target when it names a file, else the
// `-o X` of its recipe, else its first prerequisite that is not a goal word.
std::string make_binary(const Makefile& m) {
  for (const auto& [target, prereqs] : m.rules) {
    std::string t = expand(m, target);
    if (t.empty() || t[0] == '.' || t.find('%') != std::string::npos) continue;
    if (!is_goal_word(t) && !m.phony.count(target)) return t;
    static const std::regex dash_o(R"((?:^|\s)-o\s*(\S+))");
    for (const auto& line : m.recipes.count(target) ? m.recipes.at(target) : std::vector<std::string>{}) {
      std::string e = expand(m, line);
      std::smatch g;
      if (std::regex_search(e, g, dash_o) && g[1].str().find(".o") == std::string::npos) return g[1];
    }
    const std::string expanded = expand(m, prereqs);
    for (auto p : util::split(expanded, ' ')) {
      std::string ps(p);
      if (!ps.empty() && !is_goal_word(ps) && ps.find('.') == std::string::npos) return ps;
    }
    return {};
  }
  return {};
}

std::string retarget_arch(const std::string& value, const std::string& arch) {
  static const std::regex sm(R"(sm_[0-9]+a?)"), compute(R"(compute_[0-9]+a?)"), numbers(R"(^[0-9]+(\s+[0-9]+)*$)");
  if (value.find('$') != std::string::npos) return {};
  if (std::regex_match(value, numbers)) return arch;
  std::string v = std::regex_replace(value, sm, "sm_" + arch);
  v = std::regex_replace(v, compute, "compute_" + arch);
  return v == value && value.find("sm_" + arch) == std::string::npos ? std::string() : v;
}

BuildGuess make_build(const fs::path& dir, const std::string& makefile, const std::string& arch) {
  Makefile m = read_makefile(dir, makefile);
  BuildGuess b;
  b.kind = "make";
  std::string command =
      makefile == "Makefile" || makefile == "makefile" || makefile == "GNUmakefile" ? "make" : "make -f " + makefile;
  std::vector<std::string> added, reasons;
  b.outside = climbing_paths(m.text);
  merge(b.outside, climbing_includes(dir));
  std::string make_include; // make's own -I, for `make clean` too
  if (std::any_of(m.included.begin(), m.included.end(), [](const std::string& p) { return p.rfind("../", 0) == 0; })) {
    // make looks for an include it does not find in the folder in its -I folders: the original.
    make_include = " -I " + util::shell_quote(dir.lexically_normal().string());
    command += make_include;
    reasons.push_back("the Makefile includes a file outside its folder: make -I finds it beside the original");
  }
  bool lineinfo = util::contains(m.text, "-lineinfo") || util::contains(m.text, "--generate-line-info");
  // A Makefile that never calls nvcc (a host program) gets no nvcc flags.
  bool nvcc = util::contains(util::to_lower(m.text), "nvcc");
  std::string arch_var;
  for (const char* v : {"SMS", "ARCH", "GPU_ARCH", "CUDA_ARCH", "NVCC_ARCH", "SM_ARCH", "SM", "CUDA_ARCH_FLAGS"})
    if (m.vars.count(v) && !arch.empty()) {
      if (std::string nv = retarget_arch(m.vars.at(v), arch); !nv.empty()) {
        arch_var = v;
        command += fmt::format(" {}={}", v, util::shell_quote(nv));
        reasons.push_back(fmt::format("{}={} builds for this GPU (the Makefile says {})", v, nv, m.vars.at(v)));
        break;
      }
    }
  std::vector<std::string> appended;
  if (!lineinfo && nvcc) appended.push_back("-lineinfo");
  if (arch_var.empty() && !arch.empty() && nvcc) appended.push_back("-arch=sm_" + arch);
  if (nvcc) merge(appended, reach_flags(dir, b.outside));
  if (!appended.empty()) {
    std::string flags = util::join(appended, " ");
    command = append_flags_prefix(flags) + command;
    reasons.push_back(fmt::format("nvcc appends {} to every compile (NVCC_APPEND_FLAGS){}", flags,
                                  lineinfo ? "" : ": -lineinfo gives the profiler its source lines"));
  } else if (lineinfo) {
    reasons.push_back("the Makefile already builds with -lineinfo");
  }
  if (!nvcc)
    reasons.push_back("it never names nvcc: no CUDA flags added");
  else if (arch.empty())
    reasons.push_back("no GPU here: the Makefile's own architecture is kept");
  b.command = {command, fmt::format("{} found; {}", makefile, util::join(reasons, "; "))};

  auto clean = m.recipes.find("clean");
  if (clean != m.recipes.end()) {
    bool forced = !clean->second.empty();
    for (const auto& line : clean->second) {
      std::string l(util::trim(line));
      forced = forced && (l.rfind("rm -f", 0) == 0 || l.rfind("rm -rf", 0) == 0 || l.rfind("-rm", 0) == 0 ||
                          l.rfind("$(RM)", 0) == 0 || l.rfind("@rm -f", 0) == 0 || l.rfind("@rm -rf", 0) == 0);
    }
    std::string clean_command =
        (makefile == "Makefile" || makefile == "makefile" || makefile == "GNUmakefile" ? std::string("make")
                                                                                       : "make -f " + makefile) +
        make_include + " clean";
    if (forced)
      b.clean = {clean_command, "the Makefile's clean target, before every build of a scratch copy"};
    else
      b.clean = {"", "",
                 fmt::format("the Makefile's clean target fails when there is nothing to remove (`{}`); "
                             "left out, a scratch copy holds no objects anyway",
                             clean->second.empty() ? "" : std::string(util::trim(clean->second[0])))};
  }
  std::string binary = make_binary(m);
  b.binary = binary.empty() ? Decision{"", "", "the program the Makefile builds (build.binary)"}
                            : Decision{binary, "the default goal's program"};
  return b;
}

BuildGuess cmake_build(const fs::path& dir, const std::string& arch) {
  std::string text = util::read_file((dir / "CMakeLists.txt").string());
  BuildGuess b;
  b.kind = "cmake";
  std::string configure = "cmake -S . -B build -DCMAKE_BUILD_TYPE=Release";
  std::vector<std::string> reasons = {"CMakeLists.txt found: configured and built out of tree, in build/"};
  b.outside = climbing_paths(text);
  merge(b.outside, climbing_includes(dir));
  std::vector<std::string> reach = reach_flags(dir, b.outside), cuda_flags = reach;
  if (!util::contains(text, "lineinfo")) {
    cuda_flags.insert(cuda_flags.begin(), "-lineinfo");
    reasons.push_back("-lineinfo gives the profiler its source lines");
  } else {
    reasons.push_back("the project already builds with -lineinfo");
  }
  // A list the project sets itself (not one it sets only where none is given: init gives this
  // GPU's) is compiled one architecture after another: nvcc --threads 0 compiles them side by
  // side (the same code for each; a run builds every variant with it).
  static const std::regex arch_list(R"(set\s*\(\s*CMAKE_CUDA_ARCHITECTURES\s+([^)$]*)\))");
  const bool ours = !arch.empty() && util::contains(text, "NOT DEFINED CMAKE_CUDA_ARCHITECTURES");
  if (std::smatch a; !ours && std::regex_search(text, a, arch_list) && !util::contains(text, "--threads")) {
    std::istringstream words(a[1].str());
    const auto archs = std::distance(std::istream_iterator<std::string>(words), std::istream_iterator<std::string>());
    if (archs > 1) {
      cuda_flags.push_back("--threads 0");
      reasons.push_back(fmt::format("--threads 0: nvcc compiles the {} architectures CMakeLists.txt lists in parallel",
                                    archs));
    }
  }
  if (!cuda_flags.empty()) configure += " -DCMAKE_CUDA_FLAGS=" + util::shell_quote(util::join(cuda_flags, " "));
  if (!reach.empty()) {
    configure += " -DCMAKE_CXX_FLAGS=" + util::shell_quote(util::join(reach, " "));
    reasons.push_back("the -I flags let a copy of the folder find what CMakeLists.txt names outside it");
  }
  if (!arch.empty()) {
    if (util::contains(text, "set(CMAKE_CUDA_ARCHITECTURES") &&
        !util::contains(text, "NOT DEFINED CMAKE_CUDA_ARCHITECTURES"))
      reasons.push_back("CMakeLists.txt sets CMAKE_CUDA_ARCHITECTURES itself (kept)");
    else {
      configure += " -DCMAKE_CUDA_ARCHITECTURES=" + arch;
      reasons.push_back(fmt::format("CMAKE_CUDA_ARCHITECTURES={}: this GPU", arch));
    }
  }
  b.command = {configure + " && cmake --build build", util::join(reasons, "; ")};
  b.dir = {"build", "the out-of-tree build folder (never copied into a scratch build)"};
  static const std::regex exe(R"(add_executable\s*\(\s*([A-Za-z0-9_.+-]+))");
  std::smatch g;
  if (std::regex_search(text, g, exe))
    b.binary = {"build/" + g[1].str(), "CMakeLists.txt's first add_executable"};
  else
    b.binary = {"", "", "the program CMake builds (build.binary): CMakeLists.txt has no add_executable"};
  return b;
}

std::vector<std::string> top_level(const fs::path& dir, const std::vector<std::string>& extensions) {
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() &&
        std::find(extensions.begin(), extensions.end(), e.path().extension().string()) != extensions.end())
      files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  return files;
}

BuildGuess nvcc_build(const fs::path& dir, const std::string& arch) {
  std::vector<std::string> files = top_level(dir, {".cu", ".cpp", ".cc", ".cxx"});
  static const std::regex main_fn(R"(\bint\s+main\s*\()");
  std::map<std::string, std::string> text;
  std::string all;
  for (const auto& f : files) all += (text[f] = util::read_file((dir / f).string()));
  // A file another one #includes is compiled there, not on its own.
  std::vector<std::string> compiled;
  for (const auto& f : files) {
    bool included = false;
    for (const auto& [g, t] : text) included = included || (g != f && util::contains(t, "#include \"" + f + "\""));
    if (!included) compiled.push_back(f);
  }
  int mains = 0;
  for (const auto& f : compiled) mains += std::regex_search(text[f], main_fn) ? 1 : 0;
  BuildGuess b;
  b.kind = "nvcc";
  std::string name = dir.filename().string();
  static const std::regex ok_name(R"([A-Za-z0-9_.-]+)");
  if (!std::regex_match(name, ok_name) || name == "." || name == "..") name = "app";
  std::vector<std::string> libraries;
  for (const auto& [header, lib] : std::vector<std::pair<std::string, std::string>>{{"cublas", "-lcublas"},
                                                                                    {"cufft", "-lcufft"},
                                                                                    {"curand.h", "-lcurand"},
                                                                                    {"cusparse", "-lcusparse"},
                                                                                    {"cusolver", "-lcusolver"}})
    if (util::contains(all, "#include <" + header)) libraries.push_back(lib);
  std::string arch_flag = arch.empty() ? "-arch=native" : "-arch=sm_" + arch;
  b.outside = climbing_paths(all);
  std::vector<std::string> reach = reach_flags(dir, b.outside);
  for (auto& r : reach) r = util::shell_quote(r);
  if (!reach.empty()) arch_flag += " " + util::join(reach, " ");
  std::string command = fmt::format("nvcc -O3 {} -lineinfo -o {} {}", arch_flag, name, util::join(compiled, " "));
  if (!libraries.empty()) command += " " + util::join(libraries, " ");
  std::string why = fmt::format("no Makefile or CMakeLists.txt: one nvcc line over the files no other file includes; "
                                "-lineinfo gives the profiler its source lines; {}",
                                arch.empty() ? "-arch=native builds for the GPU of the machine that builds"
                                             : "-arch=sm_" + arch + ": this GPU");
  b.command = {command, why};
  if (mains != 1) b.command.todo = fmt::format("{} of the files compiled define main(): check the file list", mains);
  b.binary = {name, "the program the nvcc line writes"};
  return b;
}

} // namespace

std::vector<std::string> build_failure_causes(const std::string& log) {
  std::vector<std::string> causes;
  // nvcc says "Unsupported gpu architecture 'sm_13'" for -arch, and "Value 'compute_20' is
  // not defined for option 'gpu-code'" for the long options (Rodinia's cfd).
  static const std::regex arch(
      R"(Unsupported gpu architecture|Value '(sm|compute)_[0-9]+a?' is not defined for option)");
  if (std::regex_search(log, arch))
    causes.push_back("the build names a GPU architecture this nvcc does not support: set the build's arch");
  for (const auto& [gone, now] : std::vector<std::pair<std::string, std::string>>{
           {"cudaThreadSynchronize", "cudaDeviceSynchronize"},
           {"cudaThreadExit", "cudaDeviceReset"},
           {"deviceOverlap", "asyncEngineCount"},
           {"cudaThreadSetCacheConfig", "cudaDeviceSetCacheConfig"},
           {"clockRate", "cudaDeviceGetAttribute with cudaDevAttrClockRate"},
           {"memoryClockRate", "cudaDeviceGetAttribute with cudaDevAttrMemoryClockRate"},
           {"cudaBindTexture", "a texture object (cudaCreateTextureObject)"},
           {"cudaBindTexture2D", "a texture object (cudaCreateTextureObject)"}})
    if (util::contains(log, "\"" + gone + "\" is undefined") || util::contains(log, "no member \"" + gone + "\""))
      causes.push_back(fmt::format(
          "{} is gone from this CUDA: the sources need {} in its place (init changes no source)", gone, now));
  return causes;
}

BuildGuess detect_build(const std::string& dir_name, const std::string& arch) {
  fs::path dir(dir_name);
  std::string makefile;
  for (const char* f : {"GNUmakefile", "makefile", "Makefile"})
    if (fs::is_regular_file(dir / f)) {
      makefile = f;
      break;
    }
  bool cmake = fs::is_regular_file(dir / "CMakeLists.txt");
  // A Makefile CMake generated in the source folder is CMake's, not the project's.
  if (!makefile.empty() && cmake && util::contains(util::read_file((dir / makefile).string()), "CMake generated"))
    makefile.clear();
  BuildGuess b;
  if (!makefile.empty()) {
    b = make_build(dir, makefile, arch);
    if (cmake) b.command.why += "; CMakeLists.txt exists too (the Makefile was preferred)";
  } else if (cmake) {
    b = cmake_build(dir, arch);
  } else if (!top_level(dir, {".cu"}).empty()) {
    b = nvcc_build(dir, arch);
  } else {
    throw Error(fmt::format("{}: no Makefile, CMakeLists.txt or .cu file: init cannot tell how the program builds "
                            "(run it in the folder that holds the build files)",
                            dir_name));
  }
  return b;
}

std::string gpu_arch() {
  std::string cc = evaluate::gpu_query("compute_cap");
  static const std::regex form(R"(([0-9]+)\.([0-9]+))");
  std::smatch g;
  return std::regex_match(cc, g, form) ? g[1].str() + g[2].str() : std::string();
}

} // namespace optimas::init
