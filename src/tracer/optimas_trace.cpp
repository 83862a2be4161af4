// liboptimas-trace: a kernel tracer that CUDA loads into the program through
// CUDA_INJECTION64_PATH. It records every kernel launch with CUPTI's Activity API
// (CONCURRENT_KERNEL, which does not serialise kernels) and streams the records to
// $OPTIMAS_TRACE_DIR/trace-<pid>.tsv as CUPTI hands over its buffers; at exit (return from
// main or exit()) it flushes what is left and writes the end line that marks the file whole.
// The format is docs/trace-format.md; profile/trace.cpp reads it.
//
// A measurement run may end after its kernels (measure.end_after_kernels): with
// OPTIMAS_TRACE_END_AFTER=N and OPTIMAS_TRACE_END_KERNELS (mangled names, space-separated), a
// thread of its own asks CUPTI for completed records every few milliseconds, and once N launches
// of those kernels have completed it writes the end line, marked as an early end, and ends the
// process (exit status 0), so the host work after the kernels is not paid.
//
// It links nothing of the engine and carries its own C++ runtime (-static-libstdc++), so it
// loads into any program. It never throws into the program: a CUPTI error disables tracing
// and says so on stderr once. With OPTIMAS_TRACE_STATS=1 it prints, at exit, where its own
// time went (bench/trace_overhead_split.sh reads that line).
//
// What it costs the program is measured by bench/trace_overhead.sh and split by
// bench/trace_overhead_split.sh, which builds this file with the knobs below changed
// (docs/profiling-cost.md has the figures).
#include <cupti.h>

#include <cxxabi.h>
#include <time.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <unordered_map>
#include <unordered_set>

// Activity buffer size in KiB. CUPTI hands a buffer over when it is full (its worker thread
// then writes it out while the program runs) or at the exit flush.
#ifndef OPTIMAS_TRACE_BUFFER_KB
#define OPTIMAS_TRACE_BUFFER_KB 8192
#endif
// CUPTI's worker-thread flush period in ms; 0 keeps CUPTI's own heuristics.
#ifndef OPTIMAS_TRACE_FLUSH_MS
#define OPTIMAS_TRACE_FLUSH_MS 0
#endif
// 1: CUPTI keeps its timestamp records in pinned host memory instead of device memory.
#ifndef OPTIMAS_TRACE_PINNED
#define OPTIMAS_TRACE_PINNED 0
#endif
// CUPTI's device buffer for timestamps, in KiB, and how many it allocates up front; 0 keeps
// CUPTI's defaults (about 3 MB, 3 buffers).
#ifndef OPTIMAS_TRACE_DEVICE_BUFFER_KB
#define OPTIMAS_TRACE_DEVICE_BUFFER_KB 0
#endif
#ifndef OPTIMAS_TRACE_DEVICE_BUFFERS
#define OPTIMAS_TRACE_DEVICE_BUFFERS 0
#endif
// 1: CUPTI's KERNEL activity (which serialises kernels) instead of CONCURRENT_KERNEL.
#ifndef OPTIMAS_TRACE_SERIAL
#define OPTIMAS_TRACE_SERIAL 0
#endif
// For splitting the cost only: 0 injects and does nothing, 1 also loads CUPTI and registers
// the buffer callbacks, 2 also enables kernel records but writes none, 3 is the tracer.
#ifndef OPTIMAS_TRACE_STAGE
#define OPTIMAS_TRACE_STAGE 3
#endif

namespace {

constexpr std::size_t k_buffer_bytes = std::size_t{OPTIMAS_TRACE_BUFFER_KB} << 10;
constexpr std::size_t k_buffer_align = 8;
constexpr int k_format_version = 2;
// How often the early-end thread asks CUPTI for completed records.
constexpr int k_end_poll_ms = 5;

std::mutex g_mutex; // the file and the name tables; CUPTI may complete buffers on any thread
std::FILE* g_file = nullptr;
std::string g_path;
std::unordered_map<std::string, std::uint32_t> g_names;       // mangled name -> id
std::unordered_map<const char*, std::uint32_t> g_name_ptrs;   // CUPTI shares one string per kernel
std::uint64_t g_launches = 0;
std::uint64_t g_dropped = 0;
std::atomic<bool> g_enabled{false};
std::atomic<bool> g_finished{false};

// The early end: after g_end_after completed launches of the kernels in g_end_kernels.
std::uint64_t g_end_after = 0;
std::unordered_set<std::string> g_end_kernels;
std::unordered_map<const char*, bool> g_counted_ptrs; // CUPTI's name pointer -> in g_end_kernels
std::uint64_t g_end_seen = 0;
std::atomic<bool> g_end_reached{false};
std::atomic<bool> g_end_written{false}; // the early end's lines are written; _exit follows

// OPTIMAS_TRACE_STATS: the tracer's own time in ns, and when (the wall clock, so that a
// benchmark can place them between the program's start and end) it was called and finished.
bool g_stats = false;
std::uint64_t g_at_init = 0, g_init_ns = 0, g_write_ns = 0, g_at_exit = 0, g_exit_ns = 0, g_buffers = 0;

std::uint64_t now_ns() {
  timespec t{};
  clock_gettime(CLOCK_REALTIME, &t);
  return static_cast<std::uint64_t>(t.tv_sec) * 1000000000u + static_cast<std::uint64_t>(t.tv_nsec);
}

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
  if (auto hit = g_name_ptrs.find(mangled); hit != g_name_ptrs.end()) return hit->second;
  std::string key = mangled ? mangled : "";
  auto [it, inserted] = g_names.emplace(key, static_cast<std::uint32_t>(g_names.size()));
  if (inserted) {
    int status = 0;
    char* demangled = abi::__cxa_demangle(key.c_str(), nullptr, nullptr, &status);
    std::fprintf(g_file, "K\t%u\t%s\t%s\n", it->second, field(key.c_str()).c_str(),
                 field(status == 0 && demangled ? demangled : key.c_str()).c_str());
    std::free(demangled);
  }
  g_name_ptrs.emplace(mangled, it->second);
  return it->second;
}

// One L line, formatted by hand: a trace holds one per launch, and printf's parsing of the
// format costs more than the record's handling otherwise.
class Line {
public:
  Line() { buf_[0] = 'L'; }
  Line& tab(std::uint64_t v) {
    *p_++ = '\t';
    p_ = std::to_chars(p_, end_, v).ptr;
    return *this;
  }
  Line& tab_signed(std::int64_t v) {
    *p_++ = '\t';
    p_ = std::to_chars(p_, end_, v).ptr;
    return *this;
  }
  void write(std::FILE* f) {
    *p_++ = '\n';
    fwrite_unlocked(buf_, 1, static_cast<std::size_t>(p_ - buf_), f);
  }

private:
  char buf_[16 * 24];
  char* p_ = buf_ + 1; // after the 'L'
  char* end_ = buf_ + sizeof buf_ - 1;
};

void write_kernel(const CUpti_ActivityKernel10& k) {
  std::uint32_t id = name_id(k.name);
  Line line;
  line.tab(id).tab(k.deviceId).tab(k.contextId).tab(k.streamId);
  line.tab_signed(k.gridX).tab_signed(k.gridY).tab_signed(k.gridZ);
  line.tab_signed(k.blockX).tab_signed(k.blockY).tab_signed(k.blockZ);
  line.tab_signed(k.staticSharedMemory).tab_signed(k.dynamicSharedMemory).tab(k.registersPerThread);
  line.tab(k.start).tab(k.end).write(g_file);
  ++g_launches;
  if (g_end_after == 0) return;
  auto [it, inserted] = g_counted_ptrs.emplace(k.name, false);
  if (inserted) it->second = k.name && g_end_kernels.count(k.name);
  if (it->second && ++g_end_seen >= g_end_after) g_end_reached = true;
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
    std::uint64_t t0 = g_stats ? now_ns() : 0;
    if (g_file && OPTIMAS_TRACE_STAGE >= 3) {
      CUpti_Activity* record = nullptr;
      while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) {
        if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL || record->kind == CUPTI_ACTIVITY_KIND_KERNEL)
          write_kernel(*reinterpret_cast<const CUpti_ActivityKernel10*>(record));
      }
      size_t dropped = 0;
      if (cuptiActivityGetNumDroppedRecords(nullptr, 0, &dropped) == CUPTI_SUCCESS) g_dropped += dropped;
    }
    if (g_stats) {
      g_write_ns += now_ns() - t0;
      ++g_buffers;
    }
  }
  std::free(buffer);
}

// The end line (and before it, for an early end, the X line); g_mutex held.
void close_trace(bool early) {
  if (!g_file) return;
  std::uint64_t now = 0;
  cuptiGetTimestamp(&now);
  if (early) std::fprintf(g_file, "X\t%llu\n", static_cast<unsigned long long>(g_end_seen));
  std::fprintf(g_file, "E\t%llu\t%llu\t%llu\n", static_cast<unsigned long long>(g_launches),
               static_cast<unsigned long long>(g_dropped), static_cast<unsigned long long>(now));
  if (std::fclose(g_file) != 0)
    std::fprintf(stderr, "optimas-trace: closing the trace failed: %s\n", std::strerror(errno));
  g_file = nullptr;
}

// The early-end thread: CUPTI hands over completed records when asked (a periodic flush would
// return only full buffers), and the process ends once enough launches were seen. It calls no
// CUPTI function from inside CUPTI's callbacks.
void watch_for_end() {
  while (!g_finished) {
    std::this_thread::sleep_for(std::chrono::milliseconds(k_end_poll_ms));
    cuptiActivityFlushAll(0);
    if (!g_end_reached) continue;
    if (g_finished.exchange(true)) return; // the program is ending by itself
    {
      std::lock_guard<std::mutex> lock(g_mutex);
      close_trace(true);
    }
    g_end_written = true;
    _exit(0);
  }
}

// Runs at exit() and after main returns. CUPTI delivers the last buffers from inside the flush.
void finish() {
  if (g_finished.exchange(true)) {
    // The early end is under way on its thread: the process must not end before its lines are
    // written (that thread then ends it).
    while (g_end_after > 0 && !g_end_written) std::this_thread::sleep_for(std::chrono::milliseconds(1));
    return;
  }
  if (g_stats) g_at_exit = now_ns();
  if (g_enabled) {
    cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
    std::lock_guard<std::mutex> lock(g_mutex);
    close_trace(false);
  }
  if (g_stats) {
    g_exit_ns = now_ns() - g_at_exit;
    std::fprintf(stderr,
                 "optimas-trace: stats: launches %llu, buffers %llu, init %.3f ms, writing %.3f ms, exit flush %.3f ms "
                 "(writing included); called at %.6f s, exit at %.6f s\n",
                 static_cast<unsigned long long>(g_launches), static_cast<unsigned long long>(g_buffers),
                 g_init_ns / 1e6, g_write_ns / 1e6, g_exit_ns / 1e6, g_at_init / 1e9, g_at_exit / 1e9);
  }
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

void start() {
  const char* stats = std::getenv("OPTIMAS_TRACE_STATS");
  g_stats = stats && *stats && std::strcmp(stats, "0") != 0;
  if (g_stats) g_at_init = now_ns();
  if (OPTIMAS_TRACE_STAGE < 1 || !open_trace()) {
    if (g_stats) std::atexit(finish);
    return;
  }
  g_enabled = true;
  if (OPTIMAS_TRACE_PINNED) {
    std::uint8_t pinned = 1;
    std::size_t size = sizeof pinned;
    if (auto r = cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_MEM_ALLOCATION_TYPE_HOST_PINNED, &size, &pinned);
        r != CUPTI_SUCCESS)
      return fail("cuptiActivitySetAttribute(HOST_PINNED)", r);
  }
  if (OPTIMAS_TRACE_DEVICE_BUFFER_KB > 0) {
    std::size_t bytes = std::size_t{OPTIMAS_TRACE_DEVICE_BUFFER_KB} << 10, size = sizeof bytes;
    if (auto r = cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_SIZE, &size, &bytes); r != CUPTI_SUCCESS)
      return fail("cuptiActivitySetAttribute(DEVICE_BUFFER_SIZE)", r);
  }
  if (OPTIMAS_TRACE_DEVICE_BUFFERS > 0) {
    std::size_t count = OPTIMAS_TRACE_DEVICE_BUFFERS, size = sizeof count;
    if (auto r = cuptiActivitySetAttribute(CUPTI_ACTIVITY_ATTR_DEVICE_BUFFER_PRE_ALLOCATE_VALUE, &size, &count);
        r != CUPTI_SUCCESS)
      return fail("cuptiActivitySetAttribute(DEVICE_BUFFER_PRE_ALLOCATE_VALUE)", r);
  }
  if (auto r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed); r != CUPTI_SUCCESS)
    return fail("cuptiActivityRegisterCallbacks", r);
  if (OPTIMAS_TRACE_FLUSH_MS > 0) cuptiActivityFlushPeriod(OPTIMAS_TRACE_FLUSH_MS);
  if (OPTIMAS_TRACE_STAGE >= 2)
    if (auto r = cuptiActivityEnable(OPTIMAS_TRACE_SERIAL ? CUPTI_ACTIVITY_KIND_KERNEL : CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
        r != CUPTI_SUCCESS)
      return fail("cuptiActivityEnable", r);
  std::atexit(finish);
  if (const char* n = std::getenv("OPTIMAS_TRACE_END_AFTER"); n && *n) {
    g_end_after = std::strtoull(n, nullptr, 10);
    const char* names = std::getenv("OPTIMAS_TRACE_END_KERNELS");
    for (const char* p = names ? names : ""; *p;) {
      const char* stop = std::strchr(p, ' ');
      std::size_t len = stop ? static_cast<std::size_t>(stop - p) : std::strlen(p);
      if (len) g_end_kernels.emplace(p, len);
      p += len + (stop ? 1 : 0);
    }
    if (g_end_after > 0 && !g_end_kernels.empty())
      std::thread(watch_for_end).detach();
    else
      g_end_after = 0;
  }
  if (g_stats) g_init_ns = now_ns() - g_at_init;
}

} // namespace

// CUDA calls this once, from the first driver call of the process, when CUDA_INJECTION64_PATH
// names this library. A non-zero return means success.
extern "C" __attribute__((visibility("default"))) int InitializeInjection(void) {
  static std::once_flag once;
  std::call_once(once, start);
  return 1;
}
