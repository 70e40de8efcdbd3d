// execd's bash sessions (docs/opensandbox.md §2.9, §2.15): POST /session,
// POST /session/{id}/run (a run's event stream), DELETE /session/{id}; the sessions
// themselves are bash_sessions.h's.

#include <poll.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <memory>
#include <string>
#include <thread>

#include "rapidjson/document.h"
#include "rapidjson/error/en.h"
#include "tests/fake-opensandbox/bash_sessions.h"
#include "tests/fake-opensandbox/child_process.h"
#include "tests/fake-opensandbox/event_pipe.h"
#include "tests/fake-opensandbox/execd_context.h"
#include "tests/fake-opensandbox/execd_routes.h"
#include "tests/fake-opensandbox/go_json.h"
#include "tests/fake-opensandbox/sse_events.h"
#include "tests/fake-opensandbox/stream_events.h"

namespace fake_opensandbox {
namespace {

using SteadyClock = std::chrono::steady_clock;

constexpr int64_t kDefaultTimeoutMs = 24LL * 3600 * 1000;  // execd: omitted or 0

// Go's time.Duration text for whole milliseconds: "500ms", "1s", "1.5s", "2m0s".
std::string GoDuration(int64_t ms) {
  if (ms < 1000) return std::to_string(ms) + "ms";
  const int64_t minutes = ms / 60000;
  const int64_t rest_ms = ms % 60000;
  std::string seconds = std::to_string(rest_ms / 1000);
  if (rest_ms % 1000) {
    char frac[8];
    std::snprintf(frac, sizeof frac, "%03lld", static_cast<long long>(rest_ms % 1000));
    std::string f = frac;
    while (!f.empty() && f.back() == '0') f.pop_back();
    seconds += "." + f;
  }
  return (minutes ? std::to_string(minutes) + "m" : "") + seconds + "s";
}

// Where a sandbox path lives on the host, checked to be a directory; false with the text.
bool MapDirectory(ExecdContext* context, const std::string& path, SandboxPaths::Mapped* mapped,
                  bool create, std::string* error) {
  if (!context->paths.Map(path, /*strict_vars=*/true, mapped, error)) return false;
  if (create && !MakeDirectories(mapped->host, 0755)) {
    *error = "mkdir " + mapped->sandbox + ": " + std::strerror(errno);
    return false;
  }
  struct stat st;
  if (stat(mapped->host.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    *error = "working directory does not exist: " + path;
    return false;
  }
  return true;
}

struct RunRequest {
  std::string command;
  std::string cwd;  // sandbox path; empty: the session's
  int64_t timeout_ms = 0;
};

// One run, on a thread of its own: the bash, its output as events, the saved state.
void DriveSessionRun(std::shared_ptr<BashSession> session, RunRequest run, std::shared_ptr<EventPipe> events,
                     std::shared_ptr<std::atomic<pid_t>> bash_pid, ExecdContext* context) {
  const ServerClock clock = context->clock;
  const auto started = SteadyClock::now();
  ++context->stats->session_runs_active;
  struct Counted {
    ServerStats* stats;
    ~Counted() { --stats->session_runs_active; }
  } counted{context->stats.get()};
  SpawnOptions options;
  std::string cwd;
  {
    std::lock_guard<std::mutex> lock(session->mu);
    options.env = session->env;
    cwd = run.cwd.empty() ? session->sandbox_cwd : run.cwd;
  }
  SandboxPaths::Mapped mapped;
  std::string error;
  SpawnedProcess process;
  bool spawned = MapDirectory(context, cwd, &mapped, false, &error);
  // As execd: the run is a script file in the sandbox's /tmp, run by path and never
  // removed (runtime/bash_session.go, os.CreateTemp).
  std::string script_host_path;
  if (spawned && !WriteSessionScriptFile(context->paths.host_root() + "/tmp",
                                         SessionScript(options.env, run.command), &script_host_path)) {
    error = "error running in session. create script file: " + std::string(strerror(errno));
    spawned = false;
  }
  if (spawned) {
    // A chrooted run (the fake as root) sees the sandbox's /tmp as /tmp.
    const std::string seen = geteuid() == 0
                                 ? "/tmp/" + script_host_path.substr(script_host_path.rfind('/') + 1)
                                 : script_host_path;
    options.command = "exec 2>&1; exec bash --noprofile --norc '" + seen + "'";
    options.host_cwd = mapped.host;
    options.chroot_dir = context->paths.host_root();
    options.chroot_cwd = mapped.sandbox;
    options.mounts = context->paths.mounts();
    options.sigint_ignored = true;
    spawned = SpawnShell(options, &process, &error);
  }
  if (!spawned) {
    std::string batch;
    AppendErrorEvent(&batch, error, error, clock.NowUnixMillis());
    events->Append(batch);
    events->Close();
    return;
  }
  {
    std::lock_guard<std::mutex> lock(session->mu);
    session->running.insert(process.pid);
    if (session->deleted) kill(process.pid, SIGKILL);
  }
  *bash_pid = process.pid;
  if (process.stderr_fd >= 0) close(process.stderr_fd);  // the script sends stderr to stdout

  const int64_t timeout_ms = run.timeout_ms > 0 ? run.timeout_ms : kDefaultTimeoutMs;
  const auto deadline = started + std::chrono::milliseconds(timeout_ms);
  bool timed_out = false;
  bool in_dump = false, saw_pwd = false;
  std::string line, dump, pwd;
  auto take_line = [&](std::string text) {
    if (!text.empty() && text.back() == '\r') text.pop_back();  // "\r\n"; a lone "\r" stays
    if (in_dump) {
      if (text == "__ENV_DUMP_END__") {
        in_dump = false;
      } else {
        dump += text + "\n";
      }
      return;
    }
    if (text == "__ENV_DUMP_START__") {
      in_dump = true;
      return;
    }
    if (text.rfind("__EXIT_CODE__:", 0) == 0) return;
    if (text.rfind("__PWD__:", 0) == 0) {
      pwd = text.substr(8);
      saw_pwd = true;
      return;
    }
    if (text.empty()) return;  // execd drops blank lines
    std::string batch;
    AppendOutputEvent(&batch, false, text, clock.NowUnixMillis());
    events->Append(batch);
  };
  char buffer[65536];
  for (;;) {
    const auto now = SteadyClock::now();
    if (!timed_out && now >= deadline) {
      timed_out = true;
      kill(process.pid, SIGKILL);  // only bash, as execd's CommandContext does
    }
    const int wait_ms = timed_out ? 200
                                  : static_cast<int>(std::min<int64_t>(
                                        200, std::chrono::duration_cast<std::chrono::milliseconds>(deadline - now).count() + 1));
    pollfd p{process.stdout_fd, POLLIN, 0};
    const int ready = poll(&p, 1, wait_ms);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0) continue;
    const ssize_t n = read(process.stdout_fd, buffer, sizeof buffer);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) break;  // every writer gone
    line.append(buffer, static_cast<size_t>(n));
    size_t newline;
    while ((newline = line.find('\n')) != std::string::npos) {
      take_line(line.substr(0, newline));
      line.erase(0, newline + 1);
    }
  }
  if (!line.empty()) take_line(line);
  close(process.stdout_fd);
  int status = 0;
  waitpid(process.pid, &status, 0);
  if (process.pidfd >= 0) close(process.pidfd);
  bool deleted;
  {
    std::lock_guard<std::mutex> lock(session->mu);
    session->running.erase(process.pid);
    deleted = session->deleted;
    // The state of a run that ended normally; not of one that timed out, was killed or
    // called `exit` (its markers never came).
    if (!timed_out && !deleted && saw_pwd) {
      session->env = ParseExportDump(dump);
      session->sandbox_cwd = pwd;
    }
  }
  std::string batch;
  const int64_t now_ms = clock.NowUnixMillis();
  if (timed_out) {
    // No terminal event: the bare error object, appended to the open stream.
    batch = GoErrorBody("RUNTIME_ERROR", "error running in session. timeout after " + GoDuration(run.timeout_ms));
  } else if (WIFSIGNALED(status)) {
    AppendErrorEvent(&batch, "-1", DescribeWaitStatus(status), now_ms);
  } else if (WEXITSTATUS(status) != 0) {
    AppendErrorEvent(&batch, std::to_string(WEXITSTATUS(status)), DescribeWaitStatus(status), now_ms);
  } else {
    const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(SteadyClock::now() - started);
    AppendCompleteEvent(&batch, took.count(), now_ms);
  }
  events->Append(batch);
  events->Close();
}

void HandleCreate(const httplib::Request& req, httplib::Response& res, ExecdContext* context) {
  std::string cwd;
  if (!req.body.empty()) {
    rapidjson::Document doc;
    doc.Parse(req.body.c_str(), req.body.size());
    if (doc.HasParseError() || !doc.IsObject()) {
      SendExecdError(res, 400, "INVALID_REQUEST_BODY",
                     std::string("error parsing request. ") +
                         (doc.HasParseError() ? rapidjson::GetParseError_En(doc.GetParseError()) : "not an object"));
      return;
    }
    auto it = doc.FindMember("cwd");
    if (it != doc.MemberEnd() && it->value.IsString()) cwd = it->value.GetString();
  }
  SandboxPaths::Mapped mapped;
  std::string error;
  if (!MapDirectory(context, cwd.empty() ? "/" : cwd, &mapped, !cwd.empty(), &error)) {
    SendExecdError(res, 500, "RUNTIME_ERROR", "error creating session. resolve request cwd " + error);
    return;
  }
  // A session starts with execd's own environment.
  auto session = context->sessions->Create(MergedEnvironment({}), mapped.sandbox);
  GoJsonWriter w;
  w.StartObject();
  w.Key("session_id").String(session->id);
  w.EndObject();
  res.status = 200;
  res.set_content(w.Take(), "application/json; charset=utf-8");
}

void HandleRun(const httplib::Request& req, httplib::Response& res, ExecdContext* context) {
  const std::string id = req.matches[1];
  rapidjson::Document doc;
  doc.Parse(req.body.c_str(), req.body.size());
  if (req.body.empty() || doc.HasParseError() || !doc.IsObject()) {
    SendExecdError(res, 400, "INVALID_REQUEST_BODY",
                   std::string("error parsing request. ") +
                       (req.body.empty() ? "EOF" : doc.HasParseError() ? rapidjson::GetParseError_En(doc.GetParseError())
                                                                       : "not an object"));
    return;
  }
  RunRequest run;
  const bool v108 = context->release.session_api == SessionApi::kCode;
  auto command = doc.FindMember(v108 ? "code" : "command");
  if (command != doc.MemberEnd() && command->value.IsString()) run.command = command->value.GetString();
  auto cwd = doc.FindMember("cwd");
  if (cwd != doc.MemberEnd() && cwd->value.IsString()) run.cwd = cwd->value.GetString();
  auto timeout = doc.FindMember(v108 ? "timeout_ms" : "timeout");
  if (timeout != doc.MemberEnd() && timeout->value.IsInt64()) run.timeout_ms = timeout->value.GetInt64();
  if (run.command.empty()) {
    SendExecdError(res, 400, "INVALID_REQUEST_BODY",
                   v108 ? "invalid request. Key: 'RunInSessionRequest.Code' Error:Field validation for 'Code' "
                          "failed on the 'required' tag"
                        : "invalid request. Key: 'RunInSessionRequest.Command' Error:Field validation for "
                          "'Command' failed on the 'required' tag");
    return;
  }
  if (run.timeout_ms < 0) {
    SendExecdError(res, 400, "INVALID_REQUEST_BODY", "invalid request. timeout must be greater than or equal to 0");
    return;
  }
  if (!run.cwd.empty()) {
    SandboxPaths::Mapped mapped;
    std::string error;
    if (!MapDirectory(context, run.cwd, &mapped, false, &error)) {
      SendExecdError(res, 400, "INVALID_REQUEST_BODY", "invalid request. " + error);
      return;
    }
    run.cwd = mapped.sandbox;
  }
  std::shared_ptr<BashSession> session = context->sessions->Find(id);
  if (!session) {
    SendRunRefusal(res, context->release, "RUNTIME_ERROR", "error running in session. context not found");
    return;
  }
  auto events = std::make_shared<EventPipe>();
  auto bash_pid = std::make_shared<std::atomic<pid_t>>(-1);
  std::thread(DriveSessionRun, session, run, events, bash_pid, context).detach();
  // The run lives on the request's context: a client that leaves kills its bash.
  StreamEvents(id, events, "", [bash_pid] {
    const pid_t pid = bash_pid->load();
    if (pid > 0) kill(pid, SIGKILL);
  }, context, res);
}

void HandleDelete(const httplib::Request& req, httplib::Response& res, ExecdContext* context) {
  const std::string id = req.matches[1];
  if (!context->sessions->Delete(id)) {
    SendExecdError(res, 404, "CONTEXT_NOT_FOUND", "context " + id + " not found");
    return;
  }
  res.status = 200;
}

}  // namespace

bool DeleteBashSession(ExecdContext* context, const std::string& id) {
  return context->sessions->Delete(id);
}

void RegisterSessionRoutes(httplib::Server& server, ExecdContext* context) {
  if (context->release.session_api == SessionApi::kNone) return;  // gin's plain 404 answers
  const std::string p = kExecdRoutePrefix;
  server.Post(p + "/session", [context](const httplib::Request& req, httplib::Response& res) {
    HandleCreate(req, res, context);
  });
  server.Post(p + "/session/([^/]+)/run", [context](const httplib::Request& req, httplib::Response& res) {
    HandleRun(req, res, context);
  });
  server.Delete(p + "/session/([^/]+)", [context](const httplib::Request& req, httplib::Response& res) {
    HandleDelete(req, res, context);
  });
}

}  // namespace fake_opensandbox
