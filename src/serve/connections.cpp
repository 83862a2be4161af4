#include "serve/connections.hpp"

#include "util/log.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cstring>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <thread>
#include <unistd.h>

namespace optimas::serve {

namespace {

using Clock = std::chrono::steady_clock;

// Runs each task where it is enqueued: the task only hands the socket to a thread of its own.
class InPlace : public httplib::TaskQueue {
public:
  void enqueue(std::function<void()> fn) override { fn(); }
  void shutdown() override {}
};

// The bytes of one connection, every wait bounded by a deadline rather than by the time since
// the last byte, and no more than k_max_request_bytes read.
class DeadlineStream : public httplib::Stream {
public:
  DeadlineStream(socket_t sock, Clock::time_point deadline) : m_sock(sock), m_deadline(deadline) {}

  bool is_readable() const override { return m_at < m_end || wait(POLLIN); }
  bool is_writable() const override { return wait(POLLOUT); }

  ssize_t read(char* ptr, std::size_t size) override {
    if (m_at == m_end) {
      if (m_read >= k_max_request_bytes || !wait(POLLIN)) return -1;
      ssize_t n = 0;
      do n = ::recv(m_sock, m_buffer, std::min(sizeof m_buffer, k_max_request_bytes - m_read), 0);
      while (n < 0 && errno == EINTR);
      if (n <= 0) return n;
      m_at = 0;
      m_end = static_cast<std::size_t>(n);
      m_read += m_end;
    }
    std::size_t n = std::min(size, m_end - m_at);
    std::memcpy(ptr, m_buffer + m_at, n);
    m_at += n;
    return static_cast<ssize_t>(n);
  }

  ssize_t write(const char* ptr, std::size_t size) override {
    if (!m_writing) {             // the request is read: the answer has its own time
      if (m_timed_out) return -1; // a 408 instead of the 400 for a request cut short
      m_writing = true;
      m_deadline = Clock::now() + k_answer_time;
    }
    if (!wait(POLLOUT)) return -1;
    ssize_t n = 0;
    do n = ::send(m_sock, ptr, size, MSG_NOSIGNAL);
    while (n < 0 && errno == EINTR);
    return n;
  }

  void get_remote_ip_and_port(std::string& ip, int& port) const override { address(::getpeername, ip, port); }
  void get_local_ip_and_port(std::string& ip, int& port) const override { address(::getsockname, ip, port); }
  socket_t socket() const override { return m_sock; }

  bool timed_out() const { return m_timed_out; }
  bool writing() const { return m_writing; }

private:
  bool wait(short events) const {
    for (;;) {
      auto left = std::chrono::duration_cast<std::chrono::milliseconds>(m_deadline - Clock::now()).count();
      if (left <= 0) {
        m_timed_out = true;
        return false;
      }
      pollfd p{m_sock, events, 0};
      int n = ::poll(&p, 1, static_cast<int>(std::min<long long>(left, 1000 * 1000)));
      if (n > 0) return true;
      if (n < 0 && errno != EINTR) return false;
    }
  }

  void address(int (*get)(int, sockaddr*, socklen_t*), std::string& ip, int& port) const {
    sockaddr_storage a{};
    socklen_t length = sizeof a;
    char host[NI_MAXHOST] = "", service[NI_MAXSERV] = "";
    if (get(m_sock, reinterpret_cast<sockaddr*>(&a), &length) != 0 ||
        ::getnameinfo(reinterpret_cast<sockaddr*>(&a), length, host, sizeof host, service, sizeof service,
                      NI_NUMERICHOST | NI_NUMERICSERV) != 0)
      return;
    ip = host;
    port = std::atoi(service);
  }

  socket_t m_sock;
  Clock::time_point m_deadline;
  mutable bool m_timed_out = false;
  bool m_writing = false;
  char m_buffer[4096];
  std::size_t m_at = 0, m_end = 0, m_read = 0;
};

// A short answer written without waiting: the client may not read it, and nothing may block
// the thread that writes it.
void answer_now(socket_t sock, int status, const char* reason) {
  std::string text = fmt::format("HTTP/1.1 {0} {1}\r\nContent-Type: text/plain\r\nContent-Length: {2}\r\n"
                                 "Connection: close\r\n\r\n{1}\n",
                                 status, reason, std::strlen(reason) + 1);
  [[maybe_unused]] ssize_t n = ::send(sock, text.data(), text.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

} // namespace

Connections::Connections(std::chrono::milliseconds request_time) : m_request_time(request_time) {
  new_task_queue = [] { return new InPlace; };
  set_payload_max_length(k_max_request_bytes);
}

Connections::~Connections() {
  close_all();
}

void Connections::close_all() {
  std::unique_lock lock(m_mutex);
  for (socket_t sock : m_open) ::shutdown(sock, SHUT_RDWR);
  m_closed.wait(lock, [&] { return m_open.empty(); });
}

bool Connections::process_and_close_socket(socket_t sock) {
  {
    std::lock_guard lock(m_mutex);
    if (m_open.size() < k_max_connections) {
      m_open.insert(sock);
      try {
        std::thread([this, sock] { answer(sock); }).detach();
        return true;
      } catch (const std::system_error&) { // no thread to be had: as if the connections were full
        m_open.erase(sock);
      }
    }
  }
  log::debug("connection refused: {} open", k_max_connections);
  answer_now(sock, 503, "Service Unavailable");
  ::close(sock);
  return false;
}

void Connections::answer(socket_t sock) {
  DeadlineStream stream(sock, Clock::now() + m_request_time);
  try {
    bool closed = false;
    process_request(stream, true, closed, nullptr);
  } catch (const std::exception& e) { // a thread of its own: nothing above it would catch
    log::debug("connection ended: {}", e.what());
  }
  if (stream.timed_out() && !stream.writing()) answer_now(sock, 408, "Request Timeout");
  std::lock_guard lock(m_mutex);
  ::close(sock); // under the lock: close_all must not shut down a number accept() gave again
  m_open.erase(sock);
  m_closed.notify_all();
}

} // namespace optimas::serve
