// `optimas serve`: a read-only web server over the run store (cpp-httplib), and the routing it
// uses, kept apart from the sockets so that tests can ask for any path without a server.
//
//   /                      Runs page (?q=filter&sort=started|app|status|backend|speedup&asc=1)
//   /runs/ID               Run page
//   /runs/ID/files/PATH    an artifact of the run, as text/plain (never as HTML)
//   /compare?a=ID[:KEY]&b=ID[:KEY]   Compare page
//   /campaigns/ID          Campaign page (<runs_dir>/campaigns/ID: table.json, state.json)
//   /api/runs              the runs (JSON array), /api/runs/ID the run page's data,
//   /api/runs/ID/progress  status and variants so far, /api/compare?a=..&b=.. the comparison
//   /api/campaigns         the campaigns (JSON array), /api/campaigns/ID one with its table and cells
#pragma once

#include "store/run_store.hpp"

#include <functional>
#include <map>
#include <string>
#include <vector>

namespace optimas::serve {

struct Response {
  int status = 200;
  std::string content_type = "text/html; charset=utf-8";
  std::string body;
};

// The pages and endpoints over one store. Every answer to a path outside the store, an unknown
// run or a refused file is a 4xx page that names what was asked; nothing is ever written.
class Dashboard {
public:
  explicit Dashboard(const store::RunStore& store) : m_store(store) {}

  // One GET request: the decoded path and its query parameters.
  Response handle(const std::string& path, const std::map<std::string, std::string>& params) const;

private:
  Response run_file(const std::string& id, const std::string& relative) const;
  Response json_endpoint(const std::string& path, const std::map<std::string, std::string>& params) const;
  const store::RunStore& m_store;
};

struct ServeOptions {
  std::string runs_dir = "runs";
  std::string host = "127.0.0.1";
  // Names a request's Host header may give besides the address listened on, localhost,
  // 127.0.0.1 and [::1] (a reverse proxy's; --allowed-host).
  std::vector<std::string> allowed_hosts;
  int port = 8765;          // 0: any free port
  int request_timeout = 10; // seconds from a connection's opening to its whole request
};

// Whether a request's Host header (name or address, with or without a port) names this
// server: the address it listens on, localhost, 127.0.0.1, [::1] or an allowed host. Anything
// else is refused (421): a page of another site that a browser on this machine loads could
// otherwise read the store through a name that resolves here (DNS rebinding). An absent header
// (HTTP/1.0) is no browser's.
bool host_allowed(const std::string& host_header, const ServeOptions& options);

// Listens until SIGINT or SIGTERM; `on_listening` gets the port once the socket is bound (the
// CLI prints the address). Error when the address cannot be bound.
void serve(const ServeOptions& options, const std::function<void(int port)>& on_listening);

// The Run page as one self-contained file (no script, no link outside the file).
std::string report_html(const store::RunStore& store, const std::string& id_or_prefix);

} // namespace optimas::serve
