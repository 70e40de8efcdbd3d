#include "bench/fake_server.h"

#include <rapidjson/document.h>

#include "bench/line_reader.h"

namespace abx::bench {

bool FakeServer::Start(const std::string& binary, const std::vector<std::string>& args,
                       const std::string& stderr_path, std::string* error) {
  SpawnOptions options;
  options.argv = {binary};
  options.argv.insert(options.argv.end(), args.begin(), args.end());
  options.env = CurrentEnvironment({});
  options.pipe_stdin = true;  // with --exit-on-stdin-eof, the fake dies with this driver
  options.pipe_stdout = true;
  options.stderr_path = stderr_path;
  if (!child_.Spawn(options, error)) return false;
  LineReader reader(child_.stdout_fd());
  char* line = nullptr;
  size_t size = 0;
  if (!reader.Next(&line, &size, 15000)) {
    *error = "the fake server printed no \"listening on\" line within 15 s (see " + stderr_path + ")";
    return false;
  }
  const std::string first(line, size);
  const std::string prefix = "listening on ";
  if (first.compare(0, prefix.size(), prefix) != 0) {
    *error = "the fake server's first line is not \"listening on ...\": " + first;
    return false;
  }
  address_ = first.substr(prefix.size());
  base_url_ = "http://" + address_;
  return true;
}

void FakeServer::Stop() { child_.Stop(5000); }

bool FakeServer::Stats(FakeStats* stats, std::string* error) {
  HttpResult r = control_.Get(base_url_ + "/_fake/stats");
  if (!r.ok || r.status != 200) {
    *error = "GET /_fake/stats: " + (r.ok ? "HTTP " + std::to_string(r.status) : r.error);
    return false;
  }
  rapidjson::Document doc;
  doc.Parse(r.body.c_str(), r.body.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    *error = "GET /_fake/stats: not JSON";
    return false;
  }
  auto get = [&](const char* key) -> long long {
    auto m = doc.FindMember(key);
    return m != doc.MemberEnd() && m->value.IsInt64() ? m->value.GetInt64() : 0;
  };
  control_connections_ += r.new_connections;
  stats->connections_accepted = get("connections_accepted") - control_connections_;
  stats->execd_connections_accepted = get("execd_connections_accepted");
  stats->requests = get("requests");
  stats->execd_requests = get("execd_requests");
  return true;
}

}  // namespace abx::bench
