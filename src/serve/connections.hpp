// The dashboard's HTTP server: cpp-httplib's request parsing and routing, with connections of
// our own. cpp-httplib 0.11 answers from a fixed pool of threads (8 on a small machine) and
// only times out a read that waits 5 s for its next byte, so eight clients sending a header
// line every 2 s held every thread, and a browser waited for them. Here each connection has its
// own thread, at most k_max_connections at once (the next ones get 503 at once), and a request
// must arrive whole before its deadline (408 otherwise), however slowly its bytes trickle in.
#pragma once

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <set>

namespace optimas::serve {

inline constexpr std::size_t k_max_connections = 128;
// A GET has no body; a request line and headers longer than this are refused (400).
inline constexpr std::size_t k_max_request_bytes = 64 * 1024;
// Time to write the answer, counted from its first byte.
inline constexpr std::chrono::seconds k_answer_time{60};

class Connections : public httplib::Server {
public:
  // `request_time`: from accepting a connection to having read its whole request.
  explicit Connections(std::chrono::milliseconds request_time);
  ~Connections() override;

  // After listening ended: ends the connections still open and waits for their threads.
  void close_all();

private:
  // Called by cpp-httplib's accept loop (on its thread: the task queue runs tasks in place).
  bool process_and_close_socket(socket_t sock) override;
  void answer(socket_t sock);

  std::chrono::milliseconds m_request_time;
  std::mutex m_mutex;
  std::condition_variable m_closed;
  std::set<socket_t> m_open;
};

} // namespace optimas::serve
