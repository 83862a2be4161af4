// liboptimas-trace: a kernel tracer that CUDA loads into the program through
// CUDA_INJECTION64_PATH. It records every kernel launch with CUPTI's Activity API
// (CONCURRENT_KERNEL, which does not serialise kernels) and streams the records to
// $OPTIMAS_TRACE_DIR/trace-<pid>.tsv as CUPTI hands over its buffers; at exit (return from
// main or exit()) it flushes what is left and writes the end line that marks the file whole.
// The format is docs/trace-format.md; profile/trace.cpp reads it.
//
// Beside the kernels it records the application's timeline (format 3): CUPTI's MEMCPY, MEMSET
// and SYNCHRONIZATION activities, and RUNTIME records of only the runtime calls that may block
// the host (k_blocking_calls; cuptiActivityEnableRuntimeApi enables them one by one, so the
// launches and other calls of the program are not recorded). Where CUPTI refuses one of them,
// the file is a format-2 kernel trace and says so on stderr.
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
#include <cupti_runtime_cbid.h>

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
// 0: kernels only (a format-2 trace), for measuring what the timeline's records cost.
#ifndef OPTIMAS_TRACE_TIMELINE
#define OPTIMAS_TRACE_TIMELINE 1
#endif
// For splitting the cost only: 0 injects and does nothing, 1 also loads CUPTI and registers
// the buffer callbacks, 2 also enables kernel records but writes none, 3 is the tracer.
#ifndef OPTIMAS_TRACE_STAGE
#define OPTIMAS_TRACE_STAGE 3
#endif

namespace {

constexpr std::size_t k_buffer_bytes = std::size_t{OPTIMAS_TRACE_BUFFER_KB} << 10;
constexpr std::size_t k_buffer_align = 8;
// Format 3 has the timeline's lines; a trace without them (OPTIMAS_TRACE_TIMELINE 0, or CUPTI
// refused one of their activities) is written as format 2.
constexpr int k_format_timeline = 3, k_format_kernels = 2;
// How often the early-end thread asks CUPTI for completed records.
constexpr int k_end_poll_ms = 5;

std::mutex g_mutex; // the file and the name tables; CUPTI may complete buffers on any thread
std::FILE* g_file = nullptr;
std::string g_path;
std::unordered_map<std::string, std::uint32_t> g_names;     // mangled name -> id
std::unordered_map<const char*, std::uint32_t> g_name_ptrs; // CUPTI shares one string per kernel
std::uint64_t g_launches = 0;
std::uint64_t g_records = 0; // the timeline's M, S, Y and R lines
std::uint64_t g_dropped = 0;
bool g_timeline = false;
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

void say(const char* what) {
  std::fprintf(stderr, "optimas-trace: %s\n", what);
}

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

// One line, formatted by hand: a trace holds one per launch, and printf's parsing of the
// format costs more than the record's handling otherwise.
class Line {
public:
  explicit Line(char kind) { buf_[0] = kind; }
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
  // A word of the tracer's own (an enumeration's name), never the program's data.
  Line& tab(const char* word) {
    *p_++ = '\t';
    for (; *word && p_ < end_; ++word) *p_++ = *word;
    return *this;
  }
  void write(std::FILE* f) {
    *p_++ = '\n';
    fwrite_unlocked(buf_, 1, static_cast<std::size_t>(p_ - buf_), f);
  }

private:
  char buf_[16 * 24];
  char* p_ = buf_ + 1; // after the kind
  char* end_ = buf_ + sizeof buf_ - 1;
};

void write_kernel(const CUpti_ActivityKernel10& k) {
  std::uint32_t id = name_id(k.name);
  Line line('L');
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

// The words of CUPTI's enumerations, as profile/trace.cpp reads them; "unknown" for a value
// this tracer does not know (a newer CUPTI's).
const char* copy_direction(std::uint8_t kind) {
  static const char* const k_names[] = {"unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                        "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
  return kind < sizeof k_names / sizeof *k_names ? k_names[kind] : "unknown";
}

const char* memory_kind(unsigned kind) {
  static const char* const k_names[] = {"unknown", "pageable", "pinned",        "device",
                                        "array",   "managed",  "device_static", "managed_static"};
  return kind < sizeof k_names / sizeof *k_names ? k_names[kind] : "unknown";
}

const char* wait_type(CUpti_ActivitySynchronizationType t) {
  switch (t) {
  case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_EVENT_SYNCHRONIZE:
    return "event";
  case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT:
    return "stream_wait_event";
  case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_SYNCHRONIZE:
    return "stream";
  case CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_CONTEXT_SYNCHRONIZE:
    return "context";
  default:
    return "unknown";
  }
}

// The runtime calls that may block the host thread, recorded as R lines: copies and memsets to
// or from pageable memory, the synchronisations, and allocations that synchronise the device
// (cudaFree, cudaMallocHost, cudaFreeHost) or are costly in a loop (cudaMalloc). The per-thread
// default stream's variants (_ptds, _ptsz) carry the call's usual name.
struct BlockingCall {
  CUpti_CallbackId cbid;
  const char* name;
};
constexpr BlockingCall k_blocking_calls[] = {
    {CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_v3020, "cudaMemcpy"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy_ptds_v7000, "cudaMemcpy"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_v3020, "cudaMemcpy2D"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy2D_ptds_v7000, "cudaMemcpy2D"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3D_v3020, "cudaMemcpy3D"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaMemcpy3D_ptds_v7000, "cudaMemcpy3D"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_v3020, "cudaMemcpyToSymbol"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyToSymbol_ptds_v7000, "cudaMemcpyToSymbol"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_v3020, "cudaMemcpyFromSymbol"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyFromSymbol_ptds_v7000, "cudaMemcpyFromSymbol"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyPeer_v4000, "cudaMemcpyPeer"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaMemset_v3020, "cudaMemset"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaMemset_ptds_v7000, "cudaMemset"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaDeviceSynchronize_v3020, "cudaDeviceSynchronize"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaThreadSynchronize_v3020, "cudaThreadSynchronize"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_v3020, "cudaStreamSynchronize"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaStreamSynchronize_ptsz_v7000, "cudaStreamSynchronize"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaEventSynchronize_v3020, "cudaEventSynchronize"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaMalloc_v3020, "cudaMalloc"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaFree_v3020, "cudaFree"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaMallocHost_v3020, "cudaMallocHost"},
    {CUPTI_RUNTIME_TRACE_CBID_cudaFreeHost_v3020, "cudaFreeHost"},
};

const char* call_name(CUpti_CallbackId cbid) {
  for (const auto& c : k_blocking_calls)
    if (c.cbid == cbid) return c.name;
  return nullptr; // a call this tracer did not ask for: not written
}

// M  direction  src memory  dst memory  bytes  device  context  stream  start  end  async  correlation
void write_copy(const CUpti_ActivityMemcpy6& c) {
  Line line('M');
  line.tab(copy_direction(c.copyKind)).tab(memory_kind(c.srcKind)).tab(memory_kind(c.dstKind));
  line.tab(c.bytes).tab(c.deviceId).tab(c.contextId).tab(c.streamId).tab(c.start).tab(c.end);
  line.tab((c.flags & CUPTI_ACTIVITY_FLAG_MEMCPY_ASYNC) ? 1 : 0).tab(c.correlationId).write(g_file);
  ++g_records;
}

// S  memory  bytes  device  context  stream  start  end  async  correlation
void write_memset(const CUpti_ActivityMemset4& m) {
  Line line('S');
  line.tab(memory_kind(m.memoryKind)).tab(m.bytes).tab(m.deviceId).tab(m.contextId).tab(m.streamId);
  line.tab(m.start).tab(m.end).tab((m.flags & CUPTI_ACTIVITY_FLAG_MEMSET_ASYNC) ? 1 : 0).tab(m.correlationId);
  line.write(g_file);
  ++g_records;
}

// Y  type  context  stream  start  end  correlation
void write_wait(const CUpti_ActivitySynchronization2& y) {
  Line line('Y');
  line.tab(wait_type(y.type)).tab(y.contextId).tab(y.streamId).tab(y.start).tab(y.end).tab(y.correlationId);
  line.write(g_file);
  ++g_records;
}

// R  call  thread  start  end  correlation
void write_call(const CUpti_ActivityAPI& a) {
  const char* name = call_name(a.cbid);
  if (!name) return;
  Line line('R');
  line.tab(name).tab(a.threadId).tab(a.start).tab(a.end).tab(a.correlationId).write(g_file);
  ++g_records;
}

void write_record(const CUpti_Activity* record) {
  switch (record->kind) {
  case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL:
  case CUPTI_ACTIVITY_KIND_KERNEL:
    return write_kernel(*reinterpret_cast<const CUpti_ActivityKernel10*>(record));
  case CUPTI_ACTIVITY_KIND_MEMCPY:
    return write_copy(*reinterpret_cast<const CUpti_ActivityMemcpy6*>(record));
  case CUPTI_ACTIVITY_KIND_MEMSET:
    return write_memset(*reinterpret_cast<const CUpti_ActivityMemset4*>(record));
  case CUPTI_ACTIVITY_KIND_SYNCHRONIZATION:
    return write_wait(*reinterpret_cast<const CUpti_ActivitySynchronization2*>(record));
  case CUPTI_ACTIVITY_KIND_RUNTIME:
    return write_call(*reinterpret_cast<const CUpti_ActivityAPI*>(record));
  default:
    return;
  }
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
      while (cuptiActivityGetNextRecord(buffer, valid, &record) == CUPTI_SUCCESS) write_record(record);
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
  std::fprintf(g_file, "E\t%llu\t%llu\t%llu", static_cast<unsigned long long>(g_launches),
               static_cast<unsigned long long>(g_dropped), static_cast<unsigned long long>(now));
  // Format 3 counts its timeline's lines too, so that the reader sees a line lost.
  if (g_timeline) std::fprintf(g_file, "\t%llu", static_cast<unsigned long long>(g_records));
  std::fputc('\n', g_file);
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
  return true;
}

// The first lines, once the activities are enabled: the format says whether the timeline is in.
void write_header() {
  std::uint64_t now = 0;
  cuptiGetTimestamp(&now);
  std::lock_guard<std::mutex> lock(g_mutex);
  if (!g_file) return;
  std::fprintf(g_file, "# optimas-trace %d\nP\t%ld\t%llu\n", g_timeline ? k_format_timeline : k_format_kernels,
               static_cast<long>(getpid()), static_cast<unsigned long long>(now));
}

// The timeline's activities; false (and none of them left on) where CUPTI refuses one, and the
// trace is then one of kernels only.
bool enable_timeline() {
  const CUpti_ActivityKind kinds[] = {CUPTI_ACTIVITY_KIND_MEMCPY, CUPTI_ACTIVITY_KIND_MEMSET,
                                      CUPTI_ACTIVITY_KIND_SYNCHRONIZATION};
  const char* refused = nullptr;
  CUptiResult r = CUPTI_SUCCESS;
  for (auto k : kinds)
    if (!refused && (r = cuptiActivityEnable(k)) != CUPTI_SUCCESS) refused = "cuptiActivityEnable";
  for (const auto& c : k_blocking_calls)
    if (!refused && (r = cuptiActivityEnableRuntimeApi(c.cbid, 1)) != CUPTI_SUCCESS)
      refused = "cuptiActivityEnableRuntimeApi";
  if (!refused) return true;
  for (auto k : kinds) cuptiActivityDisable(k);
  for (const auto& c : k_blocking_calls) cuptiActivityEnableRuntimeApi(c.cbid, 0);
  const char* text = nullptr;
  cuptiGetResultString(r, &text);
  std::fprintf(stderr, "optimas-trace: %s failed (%s); the trace has kernels only, no timeline\n", refused,
               text ? text : "?");
  return false;
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
    if (auto r = cuptiActivityEnable(OPTIMAS_TRACE_SERIAL ? CUPTI_ACTIVITY_KIND_KERNEL
                                                          : CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
        r != CUPTI_SUCCESS)
      return fail("cuptiActivityEnable", r);
  g_timeline = OPTIMAS_TRACE_TIMELINE && OPTIMAS_TRACE_STAGE >= 2 && enable_timeline();
  write_header();
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
