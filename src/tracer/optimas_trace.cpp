// liboptimas-trace: a kernel tracer that CUDA loads into the program through
// CUDA_INJECTION64_PATH. It records every kernel launch with CUPTI's Activity API
// (CONCURRENT_KERNEL, which does not serialise kernels) and streams the records to
// $OPTIMAS_TRACE_DIR/trace-<pid>.tsv as CUPTI hands over its buffers; at exit (return from
// main or exit()) it flushes what is left and writes the end line that marks the file whole.
// The format is docs/trace-format.md; profile/trace.cpp reads it.
//
// It links nothing of the engine and carries its own C++ runtime (-static-libstdc++), so it
// loads into any program. It never throws into the program: a CUPTI error disables tracing
// and says so on stderr once.
#include <cupti.h>

#include <cxxabi.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>

namespace {

constexpr std::size_t k_buffer_bytes = 8u << 20; // CUPTI's own default is 8 MB as well
constexpr std::size_t k_buffer_align = 8;
constexpr int k_format_version = 1;

std::mutex g_mutex; // the file and the name table; CUPTI may complete buffers on any thread
std::FILE* g_file = nullptr;
std::string g_path;
std::unordered_map<std::string, std::uint32_t> g_names;
std::uint64_t g_launches = 0;
std::uint64_t g_dropped = 0;
std::atomic<bool> g_enabled{false};
std::atomic<bool> g_finished{false};

void say(const char* what) { std::fprintf(stderr, "optimas-trace: %s\n", what); }

// No trace rather than a partial one: the file goes, and the message says why.
void fail(const char* call, CUptiResult r) {
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  std::fprintf(stderr, "optimas-trace: %s failed (%s); no kernel trace is written\n", call, text ? text : "?");
  g_enabled = false;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (g_file) std::fclose(g_file);
  g_file = nullptr;
  std::remove(g_path.c_str());
}

// Tabs and newlines would break the line format; kernel names never hold them, but a
// name is the program's data, so they are replaced rather than trusted.
std::string field(const char* s) {
  std::string out = s ? s : "";
  for (char& c : out)
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  return out;
}

std::uint32_t name_id(const char* mangled) {
  std::string key = mangled ? mangled : "";
  auto [it, inserted] = g_names.emplace(key, static_cast<std::uint32_t>(g_names.size()));
  if (inserted) {
    int status = 0;
    char* demangled = abi::__cxa_demangle(key.c_str(), nullptr, nullptr, &status);
    std::fprintf(g_file, "K\t%u\t%s\t%s\n", it->second, field(key.c_str()).c_str(),
                 field(status == 0 && demangled ? demangled : key.c_str()).c_str());
    std::free(demangled);
  }
  return it->second;
}

void write_kernel(const CUpti_ActivityKernel10& k) {
  std::uint32_t id = name_id(k.name);
  std::fprintf(g_file, "L\t%u\t%u\t%u\t%u\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t%u\t%llu\t%llu\n", id, k.deviceId,
               k.contextId, k.streamId, k.gridX, k.gridY, k.gridZ, k.blockX, k.blockY, k.blockZ,
               k.staticSharedMemory, k.dynamicSharedMemory, static_cast<unsigned>(k.registersPerThread),
               static_cast<unsigned long long>(k.start), static_cast<unsigned long long>(k.end));
  ++g_launches;
}

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  void* p = nullptr;
  if (posix_memalign(&p, k_buffer_align, k_buffer_bytes) != 0) p = nullptr;
  *buffer = static_cast<uint8_t*>(p);
  *size = p ? k_buffer_bytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  {
    std::lock_guard<std::mutex> lock(g_mutex);
    if (g_file) {
      CUpti_Activity* record = nullptr;
      while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
        if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL)
          write_kernel(*reinterpret_cast<const CUpti_ActivityKernel10*>(record));
      }
      size_t dropped = 0;
      if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS) g_dropped += dropped;
    }
  }
  std::free(buffer);
}

// Runs at exit() and after main returns. CUPTI delivers the last buffers from inside the flush.
void finish() {
  if (!g_enabled || g_finished.exchange(true)) return;
  cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_file) return;
  std::fprintf(g_file, "E\t%llu\t%llu\n", static_cast<unsigned long long>(g_launches),
               static_cast<unsigned long long>(g_dropped));
  if (std::fclose(g_file) != 0) std::fprintf(stderr, "optimas-trace: closing the trace failed: %s\n", std::strerror(errno));
  g_file = nullptr;
}

bool open_trace() {
  const char* dir = std::getenv("OPTIMAS_TRACE_DIR");
  if (!dir || !*dir) {
    say("OPTIMAS_TRACE_DIR is not set; no kernel trace is written");
    return false;
  }
  g_path = std::string(dir) + "/trace-" + std::to_string(getpid()) + ".tsv";
  g_file = std::fopen(g_path.c_str(), "w");
  if (!g_file) {
    std::fprintf(stderr, "optimas-trace: cannot write %s: %s\n", g_path.c_str(), std::strerror(errno));
    return false;
  }
  // Records arrive in buffers of thousands; a large stdio buffer keeps the writes few.
  std::setvbuf(g_file, nullptr, _IOFBF, 1u << 20);
  std::uint64_t now = 0;
  cuptiGetTimestamp(&now);
  std::fprintf(g_file, "# optimas-trace %d\nP\t%ld\t%llu\n", k_format_version, static_cast<long>(getpid()),
               static_cast<unsigned long long>(now));
  return true;
}

} // namespace

// CUDA calls this once, from the first driver call of the process, when CUDA_INJECTION64_PATH
// names this library. A non-zero return means success.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  static std::once_flag once;
  std::call_once(once, [] {
    if (!open_trace()) return;
    g_enabled = true;
    if (auto r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed); r != CUPTI_SUCCESS)
      return fail("cuptiActivityRegisterCallbacks", r);
    if (auto r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL); r != CUPTI_SUCCESS)
      return fail("cuptiActivityEnable(CONCURRENT_KERNEL)", r);
    std::atexit(finish);
  });
  return 1;
}
