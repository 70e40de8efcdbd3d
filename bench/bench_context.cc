#include "bench/bench_context.h"

#include <rapidjson/document.h>

#include "bench/direct_client.h"
#include "bench/line_reader.h"

namespace abx::bench {

std::string DirectExecdBase(const std::string& endpoint) {
  static const std::string kSelfHop = "/proxy/44772";
  std::string base = "http://" + endpoint;
  while (base.size() > 7 && base.back() == '/') base.pop_back();
  const size_t host_end = base.find('/', 7);
  if (host_end != std::string::npos && base.compare(host_end, std::string::npos, kSelfHop) == 0) {
    base.resize(host_end);
  }
  return base;
}

ShimConfig BenchContext::Shim() const {
  ShimConfig config;
  config.shim_binary = options.shim;
  // Nothing from the driver's own environment may configure the provider.
  config.env = CurrentEnvironment({"ABX_", "OPEN_SANDBOX_", "HOME=", "XDG_RUNTIME_DIR="});
  config.env.push_back("HOME=" + work_dir + "/home");
  config.env.push_back("ABX_OPENSANDBOX_BASE_URL=" + fake.base_url());
  config.env.push_back("ABX_OPENSANDBOX_API_KEY=" + api_key);
  config.env.push_back("ABX_OPENSANDBOX_BRIDGE_SOCKET=" + socket_path);
  config.env.push_back("ABX_OPENSANDBOX_BRIDGE_BIN=" + options.bridge);
  // The bench stops the bridge itself; it must not leave by itself in a slow phase.
  config.env.push_back("ABX_OPENSANDBOX_BRIDGE_IDLE_TIMEOUT=900");
  config.stderr_path = LogPath("shims");
  return config;
}

bool BenchContext::OpenSession(ShimSession* session, std::string* error) const {
  if (!session->Start(Shim(), error)) return false;
  Answer a = session->Initialize();
  if (!a.ok) {
    *error = "initialize: " + a.error;
    return false;
  }
  return true;
}

bool BenchContext::SetFakeStartDelay(int ms) const {
  DirectClient control;
  HttpResult r = control.Post(fake.base_url() + "/_fake/faults", "{\"start_ms\":" + std::to_string(ms) + "}",
                              {"Content-Type: application/json"});
  return r.ok && r.status == 200;
}

std::string BenchContext::Params(const std::string& extra) const {
  return "{\"sandbox_id\":\"" + sandbox_id + "\"" + (extra.empty() ? "" : "," + extra) + "}";
}

bool BenchContext::BridgeStatus(long long* peak_rss_bytes, long long* upstream_connections,
                                pid_t* pid, std::string* error) const {
  Child child;
  SpawnOptions spawn;
  spawn.argv = {options.bridge, "status", "--socket", socket_path};
  spawn.env = CurrentEnvironment({"ABX_", "OPEN_SANDBOX_"});
  spawn.pipe_stdout = true;
  if (!child.Spawn(spawn, error)) return false;
  LineReader reader(child.stdout_fd());
  char* line = nullptr;
  size_t size = 0;
  const bool got = reader.Next(&line, &size, 10000);
  const std::string text = got ? std::string(line, size) : "";
  const int code = child.Wait(10000);
  if (!got || code != 0) {
    *error = "bridge status exited " + std::to_string(code);
    return false;
  }
  rapidjson::Document doc;
  doc.Parse(text.c_str(), text.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    *error = "bridge status printed no JSON";
    return false;
  }
  auto get = [&](const char* key) -> long long {
    auto m = doc.FindMember(key);
    return m != doc.MemberEnd() && m->value.IsInt64() ? m->value.GetInt64() : -1;
  };
  if (peak_rss_bytes) *peak_rss_bytes = get("peak_rss_bytes");
  if (upstream_connections) *upstream_connections = get("upstream_connections");
  if (pid) *pid = static_cast<pid_t>(get("pid"));
  return true;
}

}  // namespace abx::bench
