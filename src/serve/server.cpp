#include "serve/server.hpp"

#include "serve/campaign_page.hpp"
#include "serve/connections.hpp"
#include "serve/html.hpp"
#include "serve/run_files.hpp"
#include "serve/run_page.hpp"
#include "serve/runs_page.hpp"
#include "util/error.hpp"
#include "util/json_text.hpp"
#include "util/log.hpp"

#include <fmt/format.h>

#include <algorithm>

#include <csignal>
#include <filesystem>
#include <pthread.h>
#include <thread>

namespace optimas::serve {

using nlohmann::json;

namespace {

// Pages carry no script; the policy makes the browser refuse one even if some text escaped us.
constexpr const char* k_policy = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'";

Response not_found(const std::string& what) {
  return {404, "text/html; charset=utf-8",
          page("Not found - Optimas", "<h1>Not found</h1><p>" + escape(what) + "</p>")};
}

Response json_response(const json& doc) {
  return {200, "application/json", util::json_text(doc) + "\n"};
}

std::string param(const std::map<std::string, std::string>& params, const char* key) {
  auto it = params.find(key);
  return it == params.end() ? "" : it->second;
}

// "/runs/ID/rest" -> {ID, rest}; the id is checked by the store when it is resolved.
std::pair<std::string, std::string> split_run_path(const std::string& path, std::size_t prefix) {
  std::string tail = path.substr(prefix);
  auto slash = tail.find('/');
  if (slash == std::string::npos) return {tail, ""};
  return {tail.substr(0, slash), tail.substr(slash + 1)};
}

} // namespace

Response Dashboard::run_file(const std::string& id, const std::string& relative) const {
  std::string full = m_store.resolve(id);
  auto text = read_run_file(m_store, full, relative);
  if (!text) {
    bool refused = !path_in_run(m_store, full, relative);
    return {
        refused ? 403 : 404, "text/plain; charset=utf-8",
        fmt::format("{}: {} '{}'\n", full, refused ? "refused, outside the run's folder:" : "no such file:", relative)};
  }
  return {200, "text/plain; charset=utf-8", *text};
}

Response Dashboard::json_endpoint(const std::string& path, const std::map<std::string, std::string>& params) const {
  if (path == "/api/runs") return json_response(json(runs_now(m_store)));
  if (path == "/api/campaigns") {
    json list = json::array();
    for (const auto& c : list_campaigns(m_store)) {
      json doc = campaign_json(c);
      doc.erase("state"); // the list says how far each got; /api/campaigns/ID has the cells
      list.push_back(std::move(doc));
    }
    return json_response(list);
  }
  if (path.rfind("/api/campaigns/", 0) == 0)
    return json_response(campaign_json(load_campaign(m_store, path.substr(15))));
  if (path == "/api/compare") {
    if (param(params, "a").empty() || param(params, "b").empty())
      return {400, "application/json",
              R"({"error": "give a=RUN[:VARIANT] and b=RUN[:VARIANT]"})"
              "\n"};
    return json_response(
        compare_json(compare_side(m_store, param(params, "a")), compare_side(m_store, param(params, "b"))));
  }
  if (path.rfind("/api/runs/", 0) == 0) {
    auto [id, rest] = split_run_path(path, 10);
    if (rest.empty()) return json_response(to_json(load_run_data(m_store, id)));
    if (rest == "progress") {
      json run = m_store.load_run(m_store.resolve(id));
      json variants = json::array();
      for (const auto& v : run.value("variants", json::array()))
        variants.push_back({{"key", v.value("key", "")}, {"status", v.value("status", "")}});
      return json_response({{"id", run.value("id", "")},
                            {"status", run.value("status", "")},
                            {"started", run.value("started", json())},
                            {"finished", run.value("finished", json())},
                            {"variants", variants}});
    }
  }
  return {404, "application/json", util::json_text(json{{"error", "no such endpoint: " + path}}) + "\n"};
}

Response Dashboard::handle(const std::string& path, const std::map<std::string, std::string>& params) const {
  try {
    if (path == "/") {
      RunsQuery q;
      q.filter = param(params, "q");
      if (!param(params, "sort").empty()) q.sort = param(params, "sort");
      q.ascending = param(params, "asc") == "1";
      return {200, "text/html; charset=utf-8",
              runs_page(runs_now(m_store), q, campaigns_section(list_campaigns(m_store)))};
    }
    if (path.rfind("/campaigns/", 0) == 0)
      return {200, "text/html; charset=utf-8", campaign_page(load_campaign(m_store, path.substr(11)))};
    if (path.rfind("/api/", 0) == 0) return json_endpoint(path, params);
    if (path == "/compare") {
      std::string a = param(params, "a"), b = param(params, "b");
      if (a.empty() || b.empty())
        return {200, "text/html; charset=utf-8", compare_page(m_store.list_runs(), nullptr, nullptr)};
      CompareSide sa = compare_side(m_store, a), sb = compare_side(m_store, b);
      return {200, "text/html; charset=utf-8", compare_page(m_store.list_runs(), &sa, &sb)};
    }
    if (path.rfind("/runs/", 0) == 0) {
      auto [id, rest] = split_run_path(path, 6);
      if (rest.empty()) return {200, "text/html; charset=utf-8", run_page(load_run_data(m_store, id))};
      if (rest.rfind("files/", 0) == 0) return run_file(id, rest.substr(6));
    }
    return not_found("no page at " + path);
  } catch (const ParseError& e) {
    return {500, "text/html; charset=utf-8",
            page("Error - Optimas", "<h1>Unreadable run</h1><p>" + escape(e.what()) + "</p>")};
  } catch (const Error& e) {
    return not_found(e.what());
  }
}

std::string report_html(const store::RunStore& store, const std::string& id_or_prefix) {
  PageOptions o;
  o.report = true;
  return run_page(load_run_data(store, id_or_prefix), o);
}

bool host_allowed(const std::string& host_header, const ServeOptions& options) {
  if (host_header.empty()) return true;
  std::string name = host_header;
  if (!name.empty() && name.front() == '[') { // [::1]:8765
    const auto close = name.find(']');
    if (close == std::string::npos) return false;
    name = name.substr(1, close - 1);
  } else if (const auto colon = name.rfind(':'); colon != std::string::npos && name.find(':') == colon) {
    name = name.substr(0, colon); // name:port (a bare IPv6 address has several colons)
  }
  std::transform(name.begin(), name.end(), name.begin(), [](unsigned char c) { return std::tolower(c); });
  if (name == "localhost" || name == "127.0.0.1" || name == "::1" || name == options.host) return true;
  return std::any_of(options.allowed_hosts.begin(), options.allowed_hosts.end(), [&](std::string h) {
    std::transform(h.begin(), h.end(), h.begin(), [](unsigned char c) { return std::tolower(c); });
    return h == name;
  });
}

// Signals are taken by one thread with sigwait, which stops the server: a handler could not
// call stop() safely, and the worker threads inherit the blocked mask.
void serve(const ServeOptions& options, const std::function<void(int port)>& on_listening) {
  if (!std::filesystem::is_directory(options.runs_dir))
    throw UsageError(fmt::format("--runs-dir {}: not a folder (no runs there yet?)", options.runs_dir));
  store::RunStore store(options.runs_dir);
  Dashboard dashboard(store);
  Connections server(std::chrono::seconds(options.request_timeout));
  server.Get(".*", [&](const httplib::Request& req, httplib::Response& res) {
    std::map<std::string, std::string> params(req.params.begin(), req.params.end());
    const std::string host = req.get_header_value("Host");
    Response r = host_allowed(host, options)
                     ? dashboard.handle(req.path, params)
                     : Response{421, "text/plain; charset=utf-8",
                                fmt::format("This server answers to {}, localhost and 127.0.0.1, not to the name this "
                                            "request gave ({}); behind a proxy, start it with --allowed-host NAME.\n",
                                            options.host, host)};
    res.status = r.status;
    res.set_header("Content-Security-Policy", k_policy);
    res.set_header("X-Content-Type-Options", "nosniff");
    res.set_header("Cache-Control", "no-store");
    res.set_content(r.body, r.content_type);
    log::debug("GET {} -> {}", req.path, r.status);
  });
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  int port = options.port == 0 ? server.bind_to_any_port(options.host)
                               : (server.bind_to_port(options.host, options.port) ? options.port : -1);
  if (port < 0)
    throw Error(
        fmt::format("cannot listen on {}:{} (in use, or not an address of this machine)", options.host, options.port));
  std::thread stopper([&] {
    int sig = 0;
    sigwait(&signals, &sig);
    server.stop();
  });
  on_listening(port);
  bool ok = server.listen_after_bind();
  pthread_kill(stopper.native_handle(), SIGTERM); // wakes sigwait when listening ended otherwise
  stopper.join();
  server.close_all();
  if (!ok) log::debug("the server stopped listening");
}

} // namespace optimas::serve
