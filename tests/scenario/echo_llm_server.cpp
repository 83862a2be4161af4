// A server that gives a key back: it speaks each provider's protocol (OpenAI and compatible
// servers, Gemini, Anthropic, Ollama) and answers with a recorded reply in which every "@ECHO@"
// is replaced by the request's target and headers, Authorization, x-api-key and x-goog-api-key
// included. So a key a backend sends comes back in the model's answer, as a careless proxy or a
// hostile server would return it, and the scenario test can look for it in everything optimas
// writes. Prints "ready PORT" once it listens.
//   echo_llm_server REPLY_FILE
#include <httplib.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

using nlohmann::json;

namespace {

std::string echo_of(const httplib::Request& req) {
  std::string echo = "POST " + req.target;
  for (const auto& [name, value] : req.headers) echo += "; " + name + ": " + value;
  return echo;
}

// The reply with every "@ECHO@" in its strings replaced by `echo`.
json echoed(const json& j, const std::string& echo) {
  if (j.is_string()) {
    std::string s = j.get<std::string>();
    for (auto pos = s.find("@ECHO@"); pos != std::string::npos; pos = s.find("@ECHO@", pos + echo.size()))
      s.replace(pos, 6, echo);
    return s;
  }
  if (j.is_array() || j.is_object()) {
    json out = j;
    for (auto it = out.begin(); it != out.end(); ++it) *it = echoed(*it, echo);
    return out;
  }
  return j;
}

void answer(httplib::Response& res, const json& body) {
  res.set_content(body.dump(), "application/json");
}

} // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: echo_llm_server REPLY_FILE\n";
    return 2;
  }
  std::ifstream in(argv[1]);
  std::stringstream text;
  text << in.rdbuf();
  const json reply = json::parse(text.str());
  httplib::Server server;
  server.Post("/v1/chat/completions", [&](const httplib::Request& req, httplib::Response& res) {
    json body = json::parse(req.body);
    answer(res, {{"id", "chatcmpl-echo"},
                 {"object", "chat.completion"},
                 {"model", body.value("model", "")},
                 {"choices",
                  {{{"index", 0},
                    {"message", {{"role", "assistant"}, {"content", echoed(reply, echo_of(req)).dump()}}},
                    {"finish_reason", "stop"}}}},
                 {"usage", {{"prompt_tokens", 100}, {"completion_tokens", 50}, {"total_tokens", 150}}}});
  });
  server.Post(R"(/v1beta/models/[^/]+:generateContent)", [&](const httplib::Request& req, httplib::Response& res) {
    answer(res, {{"candidates",
                  {{{"content", {{"role", "model"}, {"parts", {{{"text", echoed(reply, echo_of(req)).dump()}}}}}},
                    {"finishReason", "STOP"}}}},
                 {"usageMetadata", {{"promptTokenCount", 100}, {"candidatesTokenCount", 50}}},
                 {"modelVersion", "gemini-echo"}});
  });
  server.Post("/v1/messages", [&](const httplib::Request& req, httplib::Response& res) {
    json body = json::parse(req.body);
    std::string tool = body.contains("tools") && !body["tools"].empty() ? body["tools"][0].value("name", "") : "";
    answer(res,
           {{"id", "msg_echo"},
            {"type", "message"},
            {"role", "assistant"},
            {"model", body.value("model", "")},
            {"content",
             {{{"type", "tool_use"}, {"id", "toolu_echo"}, {"name", tool}, {"input", echoed(reply, echo_of(req))}}}},
            {"stop_reason", "tool_use"},
            {"usage", {{"input_tokens", 100}, {"output_tokens", 50}}}});
  });
  server.Post("/api/chat", [&](const httplib::Request& req, httplib::Response& res) {
    json body = json::parse(req.body);
    answer(res, {{"model", body.value("model", "")},
                 {"message", {{"role", "assistant"}, {"content", echoed(reply, echo_of(req)).dump()}}},
                 {"done", true},
                 {"done_reason", "stop"},
                 {"prompt_eval_count", 100},
                 {"eval_count", 50}});
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
