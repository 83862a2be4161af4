// The application folder as a run saw it, and the copies it is built from: the snapshot (without
// build outputs), scratch copies that never survive half-made, and the fingerprint of what a build
// produced.
#pragma once

#include "config/app_config.hpp"

#include <map>
#include <string>
#include <utility>
#include <vector>

namespace optimas::evaluate {

// A run's source snapshot: the application folder as it was when the run started, without
// anything a build makes. Baseline and variants are built from copies of it, never from a tree
// holding object files: a copied object file looks as new as the edited source beside it, and
// make would skip the compile.
struct Snapshot {
  std::map<std::string, std::string> files; // relative path -> SHA-256
  std::vector<std::string> left_out;        // build outputs found in the folder and not copied
};

// A folder of an application folder that holds Optimas' own files, never the application's: the
// run store, profiles, variants, the manual backend's prompts and replies.
bool optimas_folder(const std::string& name);

// Copies the application folder into `to` (created), leaving out version-control folders,
// Optimas' own folders, the binary, the output files, build.dir, and build outputs (object
// files, CMake caches). On failure (a full disk) `to` is removed and the Error says why.
Snapshot snapshot_application(const config::AppConfig& app, const std::string& to);

// Copies a folder's regular files into `to` (created): a scratch copy of a snapshot. On
// failure `to` is removed, so no half copy is left behind, and the Error says why.
void copy_tree(const std::string& from, const std::string& to);

// Writes `files` (path relative to `to` -> text) under `to`, making folders as needed: a
// variant's or the probe's sources over a scratch copy.
void write_tree(const std::string& to, const std::map<std::string, std::string>& files);

// A folder removed when this goes out of scope, unless kept: a copy that fails half-way (a full
// disk) leaves nothing behind to keep the disk full or to be taken for a complete copy.
class ScratchFolder {
public:
  explicit ScratchFolder(std::string path) : m_path(std::move(path)) {}
  ~ScratchFolder();
  ScratchFolder(const ScratchFolder&) = delete;
  ScratchFolder& operator=(const ScratchFolder&) = delete;
  void keep() { m_keep = true; }

private:
  std::string m_path;
  bool m_keep = false;
};

// What a build produced, as one hash: the binary (or, with none declared, every file the build
// added to `dir` that is not in the snapshot), with the temporary-file names nvcc writes into its
// objects (tmpxft_...) blanked, so that two builds of the same code give the same fingerprint.
std::string build_fingerprint(const config::AppConfig& app, const std::string& dir, const Snapshot& snapshot);

} // namespace optimas::evaluate
