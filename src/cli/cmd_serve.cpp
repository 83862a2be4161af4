// optimas serve: the dashboard over the run store (all of it in serve/).
#include "cli/commands.hpp"

#include "serve/server.hpp"

#include <iostream>
#include <memory>

namespace optimas::cli {

void add_serve_command(CLI::App& app) {
  auto o = std::make_shared<serve::ServeOptions>();
  auto* cmd = app.add_subcommand("serve", "Browse the run store in a web browser (read-only, localhost by default)");
  cmd->add_option("--runs-dir", o->runs_dir, "Where runs are stored")->envname("OPTIMAS_RUNS")->capture_default_str();
  cmd->add_option("--port", o->port, "Port to listen on (0: any free port)")
      ->check(CLI::Range(0, 65535))
      ->capture_default_str();
  cmd->add_option("--host", o->host, "Address to listen on")->capture_default_str();
  cmd->add_option("--allowed-host", o->allowed_hosts,
                  "A name requests may give in their Host header besides the address, localhost and 127.0.0.1 (a "
                  "reverse proxy's; repeatable)");
  cmd->add_option("--request-timeout", o->request_timeout,
                  "Seconds a connection has to send its whole request (then 408)")
      ->check(CLI::Range(1, 3600))
      ->capture_default_str();
  cmd->callback([o] {
    serve::serve(*o, [&](int port) { std::cout << "serving http://" << o->host << ":" << port << "/" << std::endl; });
  });
}

} // namespace optimas::cli
