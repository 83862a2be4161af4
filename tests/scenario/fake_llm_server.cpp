// A stand-in for an OpenAI-compatible server (vLLM, llama.cpp server), for scenario tests: it
// checks requests the way the real API does, answers with a recorded reply, counts requests,
// and prints "ready PORT" once it listens.
//   fake_llm_server REPLY_FILE[,REPLY_FILE...] COUNT_FILE [EXPECTED_KEY]
// With several reply files, request N gets the Nth (the last one repeats). The user message of
// request N is written to COUNT_FILE.request-N.txt, so tests can check what was sent. A scripted
// model: an entry "when:TEXT=FILE" answers FILE to a request whose user message holds TEXT (the
// first such entry that matches wins; the plain entries answer the rest).
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <thread>
#include <vector>

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: fake_llm_server REPLY_FILE COUNT_FILE [EXPECTED_KEY]\n");
    return 2;
  }
  std::vector<std::string> replies;
  std::vector<std::pair<std::string, std::string>> scripted; // text in the user message -> reply
  auto read = [](const std::string& file) {
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  };
  std::stringstream files(argv[1]);
  for (std::string file; std::getline(files, file, ',');) {
    if (file.rfind("when:", 0) == 0 && file.find('=') != std::string::npos) {
      auto eq = file.find('=');
      scripted.emplace_back(file.substr(5, eq - 5), read(file.substr(eq + 1)));
    } else {
      replies.push_back(read(file));
    }
  }
  std::string count_file = argv[2];
  std::string key = argc > 3 ? argv[3] : "";
  std::atomic<int> count{0};
  httplib::Server server;
  server.Post("/v1/chat/completions", [&](const httplib::Request& req, httplib::Response& res) {
    int n = ++count;
    std::ofstream(count_file) << n << "\n";
    if (!key.empty() && req.get_header_value("Authorization") != "Bearer " + key) {
      res.status = 401;
      res.set_content(R"({"error": {"message": "Incorrect API key provided", "type": "invalid_request_error"}})",
                      "application/json");
      return;
    }
    auto body = nlohmann::json::parse(req.body, nullptr, false);
    if (body.is_discarded() || !body.contains("model") || !body.contains("messages") ||
        body["response_format"].value("type", "") != "json_schema") {
      res.status = 400;
      res.set_content(R"({"error": {"message": "model, messages and a json_schema response_format are required"}})",
                      "application/json");
      return;
    }
    std::string user;
    for (const auto& m : body["messages"])
      if (m.value("role", "") == "user") {
        user = m.value("content", "");
        std::ofstream(count_file + ".request-" + std::to_string(n) + ".txt") << user;
      }
    std::string reply =
        replies.empty() ? "" : replies[std::min<std::size_t>(static_cast<std::size_t>(n), replies.size()) - 1];
    for (const auto& [text, scripted_reply] : scripted)
      if (user.find(text) != std::string::npos) {
        reply = scripted_reply;
        break;
      }
    nlohmann::json answer = {
        {"id", "chatcmpl-test"},
        {"object", "chat.completion"},
        {"model", body["model"]},
        {"choices",
         {{{"index", 0}, {"message", {{"role", "assistant"}, {"content", reply}}}, {"finish_reason", "stop"}}}},
        {"usage", {{"prompt_tokens", 1234}, {"completion_tokens", 321}, {"total_tokens", 1555}}}};
    res.set_content(answer.dump(), "application/json");
  });
  server.Post("/shutdown", [&](const httplib::Request&, httplib::Response& res) {
    res.set_content("bye", "text/plain");
    server.stop();
  });
  int port = server.bind_to_any_port("127.0.0.1");
  if (port <= 0) return 1;
  std::cout << "ready " << port << std::endl;
  server.listen_after_bind();
  return 0;
}
