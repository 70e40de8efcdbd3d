#include "tests/fake-opensandbox/test_support.h"

#include <dirent.h>

#include <cctype>
#include <fstream>

namespace fake_opensandbox {

FakeConfig TestConfig() {
  FakeConfig config;
  config.port = 0;
  config.execd_ready_after = 0;
  config.sse_grace_ms = 20;
  config.k8s_transition_ms = 200;
  return config;
}

std::string JsonQuoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  return out + "\"";
}

std::string FakeBinaryPath() {
  const char* srcdir = getenv("TEST_SRCDIR");
  const char* workspace = getenv("TEST_WORKSPACE");
  if (srcdir && workspace) {
    return std::string(srcdir) + "/" + workspace + "/tests/fake-opensandbox/fake-opensandbox";
  }
  return "tests/fake-opensandbox/fake-opensandbox";
}

TestFake::TestFake(const FakeConfig& config) {
  std::string error;
  server = FakeServer::Start(config, &error);
  if (!server) {
    fprintf(stderr, "fake did not start: %s\n", error.c_str());
    abort();
  }
  lifecycle = std::make_unique<httplib::Client>("127.0.0.1", server->port());
  lifecycle->set_read_timeout(30, 0);
}

std::string TestFake::CreateSandbox(const std::string& extra_fields) {
  std::string body =
      R"({"image":{"uri":"python:3.11"},"entrypoint":["tail","-f","/dev/null"],)"
      R"("resourceLimits":{"cpu":"1","memory":"2Gi"})" +
      (extra_fields.empty() ? "" : "," + extra_fields) + "}";
  auto res = lifecycle->Post("/v1/sandboxes", body, "application/json");
  if (!res || res->status != 202) return "";
  rapidjson::Document doc = ParseJson(res->body);
  return doc.IsObject() && doc.HasMember("id") ? doc["id"].GetString() : "";
}

std::string TestFake::ExecdEndpoint(const std::string& id, bool server_proxy) {
  auto res = lifecycle->Get(("/v1/sandboxes/" + id + "/endpoints/44772?use_server_proxy=" +
                             (server_proxy ? "true" : "false"))
                                .c_str());
  if (!res || res->status != 200) return "";
  return ParseJson(res->body)["endpoint"].GetString();
}

EndpointClient::EndpointClient(const std::string& endpoint) {
  size_t colon = endpoint.find(':');
  size_t slash = endpoint.find('/');
  host = endpoint.substr(0, colon);
  port = atoi(endpoint.substr(colon + 1, slash - colon - 1).c_str());
  prefix = slash == std::string::npos ? "" : endpoint.substr(slash);
  client = std::make_unique<httplib::Client>(host, port);
  client->set_read_timeout(60, 0);
}

std::vector<StreamEvent> ParseEvents(const std::string& body, bool* well_framed) {
  std::vector<StreamEvent> events;
  bool ok = true;
  size_t pos = 0;
  while (pos < body.size()) {
    size_t end = body.find("\n\n", pos);
    if (end == std::string::npos) {
      ok = false;
      end = body.size();
    }
    std::string raw = body.substr(pos, end - pos);
    pos = end + 2;
    rapidjson::Document doc = ParseJson(raw);
    if (!doc.IsObject()) {
      ok = false;
      continue;
    }
    StreamEvent event;
    event.raw = raw;
    event.type = doc.HasMember("type") ? doc["type"].GetString() : "";
    if (doc.HasMember("text")) event.text = doc["text"].GetString();
    if (doc.HasMember("error")) {
      event.evalue = doc["error"]["evalue"].GetString();
      if (doc["error"]["traceback"].Size() > 0) {
        event.traceback = doc["error"]["traceback"][0].GetString();
      }
    }
    events.push_back(event);
  }
  if (well_framed) *well_framed = ok;
  return events;
}

std::vector<std::string> OutputTexts(const std::vector<StreamEvent>& events, const char* type) {
  std::vector<std::string> texts;
  for (const auto& e : events) {
    if (e.type == type) texts.push_back(e.text);
  }
  return texts;
}

rapidjson::Document ParseJson(const std::string& text) {
  rapidjson::Document doc;
  doc.Parse(text.c_str(), text.size());
  if (doc.HasParseError()) doc.SetNull();
  return doc;
}

}  // namespace fake_opensandbox

namespace fake_opensandbox {

bool ProcessRunning(const std::string& command_line) {
  DIR* proc = opendir("/proc");
  if (!proc) return false;
  bool found = false;
  while (dirent* entry = readdir(proc)) {
    if (!isdigit(static_cast<unsigned char>(entry->d_name[0]))) continue;
    std::string base = std::string("/proc/") + entry->d_name;
    std::ifstream stat_file(base + "/stat");
    std::string stat((std::istreambuf_iterator<char>(stat_file)), {});
    size_t close = stat.rfind(')');
    if (close != std::string::npos && stat.size() > close + 2 && stat[close + 2] == 'Z') continue;
    std::ifstream in(base + "/cmdline", std::ios::binary);
    std::string cmdline((std::istreambuf_iterator<char>(in)), {});
    while (!cmdline.empty() && cmdline.back() == '\0') cmdline.pop_back();
    for (auto& c : cmdline) {
      if (c == '\0') c = ' ';
    }
    if (cmdline == command_line) {
      found = true;
      break;
    }
  }
  closedir(proc);
  return found;
}

}  // namespace fake_opensandbox
