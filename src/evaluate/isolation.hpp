// How far a program Optimas builds or runs (the baseline, a variant, the probe) is kept from
// everything else the user owns. A variant's code comes from a model or a rule and runs as the
// user: without walls it could append to the application's sources, write into $HOME or /tmp,
// or reach the network.
//
//   bwrap    bubblewrap (Debian's `bubblewrap`, Flatpak's sandbox): the whole file system read
//            only, the program's own folders (its scratch copy, its output's and trace's folders)
//            writable, /dev with the GPU's device files as it is, a private /tmp, no network.
//   unshare  the same walls from util-linux's unshare (a user, mount and network namespace of
//            its own), where bwrap is missing.
//   watch    no walls (a machine that allows no user namespaces, as some clusters): the
//            application folder and the run store are stamped before and after every variant
//            run, and a change fails the variant and is reported (loop/execute.cpp).
//
// docs/sandbox.md says what each level stops.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace optimas::evaluate {

enum class Isolation { bwrap, unshare, watch };

const char* isolation_name(Isolation level);
// "auto", "bwrap", "unshare" or "watch" (the --sandbox option's values); nullopt for another.
std::optional<Isolation> parse_isolation(const std::string& text, bool& automatic);
// Whether this machine allows `level` (each probed once per process: a program behind its
// walls writes its own folder); watch always.
bool allows(Isolation level);
// The strongest level this machine allows: bwrap, else unshare, else watch.
Isolation strongest_isolation();
// What a level stops, in a sentence (progress lines, run.json).
std::string isolation_summary(Isolation level);

// Where a program sees a folder at another path (the variant pipeline's build lanes): `from`
// is bound at `as`, whose parent is an empty tmpfs of its own.
struct Seen {
  std::string from, as;
};

// `argv` as it runs at `level` in `cwd`, where only `writable` (absolute folders) and a private
// /tmp may be written; `readable` (absolute files or folders, the kernel tracer) are seen
// read-only where the private /tmp would hide them, each with its whole folder right below /tmp
// (what `..` reaches from it); with `seen`, `seen.from` appears at `seen.as`
// (also at the watch level, which needs a mount namespace for that alone). At the watch level
// without `seen`, `argv` as is.
std::vector<std::string> isolated_argv(Isolation level, const std::vector<std::string>& writable,
                                       const std::vector<std::string>& readable, const std::string& cwd,
                                       const Seen* seen, const std::vector<std::string>& argv);

} // namespace optimas::evaluate
