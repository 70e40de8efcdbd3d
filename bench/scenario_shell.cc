// Shell: one command in a stateful shell. `exec.run` with a shell_id in one live session
// against a direct libcurl client running the same command in a session of its own
// through execd's POST /session/{id}/run on a kept-alive connection, reading the stream
// to its end. Alternated one by one after a warm-up, in the set-up's sandbox.
#include <string>
#include <vector>

#include <rapidjson/document.h>

#include "bench/clock.h"
#include "bench/scenarios.h"
#include "bench/side_by_side.h"
#include "bench/stats.h"

namespace abx::bench {
namespace {

constexpr char kCommand[] = "echo $PWD";

bool RunInSessionDirect(DirectClient& client, const std::string& execd_base, const std::string& session_id,
                        std::string* error) {
  std::string tail;
  HttpResult r = client.PostStreaming(
      execd_base + "/session/" + session_id + "/run", std::string("{\"command\":\"") + kCommand + "\"}",
      {"Accept: text/event-stream", "Content-Type: application/json"},
      [&](const char* data, size_t size) {
        tail.append(data, size);
        if (tail.size() > 4096) tail.erase(0, tail.size() - 1024);
      });
  if (!r.ok || r.status != 200) {
    *error = r.ok ? "HTTP " + std::to_string(r.status) : r.error;
    return false;
  }
  if (tail.find("\"type\":\"execution_complete\"") == std::string::npos) {
    *error = "the stream ended without execution_complete";
    return false;
  }
  return true;
}

}  // namespace

void RunShell(BenchContext& ctx) {
  const std::string row_name = "shell: exec.run in a stateful shell (median)";
  ShimSession s;
  std::string error;
  if (!ctx.OpenSession(&s, &error)) return ctx.report.Add({row_name, "session failed: " + error, "", "", "≤ 1.3×", "n/a"});
  Answer created = s.Call("shell.create", ctx.Params(""), 30000);
  if (!created.ok || !created.result->IsObject() || !created.result->HasMember("shell_id")) {
    return ctx.report.Add({row_name, "shell.create: " + created.error, "", "", "≤ 1.3×", "n/a"});
  }
  const std::string shell = (*created.result)["shell_id"].GetString();
  DirectClient direct;
  HttpResult made = direct.Post(ctx.execd_base + "/session", "{}", {"Content-Type: application/json"});
  rapidjson::Document doc;
  doc.Parse(made.body.c_str(), made.body.size());
  if (!made.ok || made.status != 200 || !doc.IsObject() || !doc.HasMember("session_id")) {
    return ctx.report.Add({row_name, "POST /session: HTTP " + std::to_string(made.status), "", "", "≤ 1.3×", "n/a"});
  }
  const std::string session = doc["session_id"].GetString();

  const std::string params =
      ctx.Params("\"shell_id\":\"" + shell + "\",\"command\":\"" + std::string(kCommand) + "\"");
  const SideBySide r = Alternate(
      5, std::max(20, ctx.options.warm_runs / 2),
      [&](std::string* why) {
        Answer a = s.Call("exec.run", params, 30000);
        if (!a.ok) *why = a.error;
        return a.ok;
      },
      [&](std::string* why) { return RunInSessionDirect(direct, ctx.execd_base, session, why); });
  AddMedianRow(ctx, row_name, "libcurl → execd /session/{id}/run", 1.3, "shell", "exec.run in a shell", r);
  s.Call("shell.close", ctx.Params("\"shell_id\":\"" + shell + "\""), 30000);
  s.Close();
}

}  // namespace abx::bench
