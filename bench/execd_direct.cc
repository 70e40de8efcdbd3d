#include "bench/execd_direct.h"

namespace abx::bench {

SseRun RunCommandDirect(DirectClient& client, const std::string& execd_base, const std::string& command) {
  SseRun run;
  std::string tail;
  const std::string body = "{\"command\":\"" + command + "\",\"background\":false}";
  HttpResult r = client.PostStreaming(
      execd_base + "/command", body, {"Accept: text/event-stream", "Content-Type: application/json"},
      [&](const char* data, size_t size) {
        run.stream_bytes += size;
        tail.append(data, size);
        if (tail.size() > 4096) tail.erase(0, tail.size() - 1024);
      });
  run.new_connections = r.new_connections;
  if (!r.ok || r.status != 200) {
    run.error = r.ok ? "HTTP " + std::to_string(r.status) : r.error;
    return run;
  }
  run.completed = tail.find("\"type\":\"execution_complete\"") != std::string::npos;
  run.ok = run.completed || tail.find("\"type\":\"error\"") != std::string::npos;
  if (!run.ok) run.error = "the stream ended without a terminal event";
  return run;
}

}  // namespace abx::bench
