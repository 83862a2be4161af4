// A process of its own on a run store, for test_run_store's concurrency test: the test starts
// several at once, as a campaign's cells are, and closes their stdin to let them go (writers)
// or to stop them (the reader).
//
//   store_writer write ROOT NAME N   waits for EOF on stdin, then makes runs NAME-0 .. NAME-(N-1):
//                                    each created, its run.json written and indexed running,
//                                    then rewritten and indexed finished (as the loop does);
//                                    prints "longest S" (the slowest index_run, in seconds)
//   store_writer read ROOT           lists the runs until EOF on stdin; fails if a listing fails
//                                    or ever shows fewer runs than the one before
//
// Exit 0 when every operation succeeded; 1 with the error on stderr otherwise.
#include "store/run_store.hpp"

#include <nlohmann/json.hpp>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <string>

using nlohmann::json;
using namespace optimas;

namespace {

json run_doc(const std::string& id, const char* status) {
  json samples = json::array();
  for (int r = 0; r < 5; ++r) samples.push_back({{"kernel_ms", 10.0 + r}, {"wall_s", 0.1}});
  json variant = {{"key", "i1a1"},
                  {"iteration", 1},
                  {"attempt", 1},
                  {"status", "accepted"},
                  {"measurement", {{"verdict", "faster"}, {"speedup", 1.2}, {"ci", {1.1, 1.3}},
                                   {"configs", {{"default", {{"base", samples}, {"variant", samples}}}}}}},
                  {"ear", {{"evidence_coverage", 1.0}, {"localisation", 0.5}}}};
  return {{"schema", store::k_run_schema}, {"id", id},          {"app", "shmem"},
          {"backend", "builtin"},          {"status", status},  {"started", "2026-12-01T00:00:00Z"},
          {"speedup", 1.2},                {"ci", {1.1, 1.3}}, {"variants", json::array({variant})}};
}

// Blocks until the test closes our stdin (all writers start together).
void wait_for_eof() {
  char c;
  while (::read(0, &c, 1) > 0) {
  }
}

bool stdin_closed() {
  pollfd p{0, POLLIN, 0};
  if (::poll(&p, 1, 0) <= 0) return false;
  char c;
  return ::read(0, &c, 1) <= 0;
}

int write_runs(const std::string& root, const std::string& name, int n) {
  wait_for_eof();
  store::RunStore store(root);
  double longest = 0;
  for (int i = 0; i < n; ++i) {
    std::string id = name + "-" + std::to_string(i);
    std::string dir = store.create_run(id);
    for (const char* status : {"running", "finished"}) {
      json run = run_doc(id, status);
      store::write_json_atomic(dir + "/run.json", run);
      auto start = std::chrono::steady_clock::now();
      store.index_run(run);
      longest = std::max(longest, std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    }
  }
  std::printf("longest %.3f\n", longest);
  return 0;
}

int read_runs(const std::string& root) {
  store::RunStore store(root);
  std::size_t last = 0, reads = 0;
  while (!stdin_closed()) {
    std::size_t now = store.list_runs().size();
    ++reads;
    if (now < last) {
      std::fprintf(stderr, "store_writer: a listing showed %zu runs after one showed %zu\n", now, last);
      return 1;
    }
    last = now;
  }
  std::printf("reads %zu last %zu\n", reads, last);
  return 0;
}

} // namespace

int main(int argc, char** argv) {
  try {
    std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "write" && argc == 5) return write_runs(argv[2], argv[3], std::stoi(argv[4]));
    if (mode == "read" && argc == 3) return read_runs(argv[2]);
    std::fprintf(stderr, "usage: store_writer write ROOT NAME N | read ROOT\n");
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "store_writer: %s\n", e.what());
    return 1;
  }
}
