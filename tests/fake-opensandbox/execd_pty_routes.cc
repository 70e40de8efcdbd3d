// execd's terminals (docs/opensandbox.md §2.16): POST /pty, GET and DELETE /pty/{id}, and
// the WebSocket GET /pty/{id}/ws, whose checks answer as plain HTTP before the upgrade.
// The sessions are pty_sessions.h's, the WebSocket pty_websocket.h's.

#include <sys/stat.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "rapidjson/document.h"
#include "rapidjson/error/en.h"
#include "tests/fake-opensandbox/accepted_socket.h"
#include "tests/fake-opensandbox/child_process.h"
#include "tests/fake-opensandbox/execd_context.h"
#include "tests/fake-opensandbox/execd_routes.h"
#include "tests/fake-opensandbox/go_json.h"
#include "tests/fake-opensandbox/pty_websocket.h"

namespace fake_opensandbox {
namespace {

void NotFound(httplib::Response& res, const std::string& id) {
  SendExecdError(res, 404, "CONTEXT_NOT_FOUND", "pty session " + id + " not found");
}

bool HeaderHasToken(const httplib::Request& req, const char* name, const char* token) {
  std::string value = req.get_header_value(name);
  for (char& c : value) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return value.find(token) != std::string::npos;
}

void HandleCreate(const httplib::Request& req, httplib::Response& res, ExecdContext* context) {
  std::string cwd, command;
  if (!req.body.empty()) {
    rapidjson::Document doc;
    doc.Parse(req.body.c_str(), req.body.size());
    if (doc.HasParseError() || !doc.IsObject()) {
      SendExecdError(res, 400, "INVALID_REQUEST_BODY",
                     std::string("error parsing request: ") +
                         (doc.HasParseError() ? rapidjson::GetParseError_En(doc.GetParseError()) : "not an object"));
      return;
    }
    auto it = doc.FindMember("cwd");
    if (it != doc.MemberEnd() && it->value.IsString()) cwd = it->value.GetString();
    it = doc.FindMember("command");
    // Before 1.0.19 execd has no such field: a plain shell runs.
    if (it != doc.MemberEnd() && it->value.IsString() && context->release.pty_api == PtyApi::kFull) {
      command = it->value.GetString();
    }
  }
  std::string sandbox_cwd;
  if (!cwd.empty()) {
    SandboxPaths::Mapped mapped;
    std::string error;
    if (!context->paths.Map(cwd, /*strict_vars=*/true, &mapped, &error) || !MakeDirectories(mapped.host, 0755)) {
      if (error.empty()) error = "mkdir " + cwd + ": " + std::strerror(errno);
      // execd's handler misses a `return` here: the error and a session id, concatenated,
      // and the id is not registered.
      GoJsonWriter id;
      id.StartObject();
      id.Key("session_id").String("00000000-0000-4000-8000-000000000000");
      id.EndObject();
      res.status = 500;
      res.set_content(GoErrorBody("RUNTIME_ERROR", "error creating pty session: " + error) + id.Take(),
                      "application/json; charset=utf-8");
      return;
    }
    sandbox_cwd = mapped.sandbox;
  }
  auto session = context->ptys->Create(sandbox_cwd, command);
  GoJsonWriter w;
  w.StartObject();
  w.Key("session_id").String(session->id());
  w.EndObject();
  res.status = 201;
  res.set_content(w.Take(), "application/json; charset=utf-8");
}

void HandleGet(const httplib::Request& req, httplib::Response& res, ExecdContext* context) {
  const std::string id = req.matches[1];
  auto session = context->ptys->Find(id);
  if (!session) return NotFound(res, id);
  GoJsonWriter w;
  w.StartObject();
  w.Key("session_id").String(id);
  w.Key("running").Bool(session->running());
  w.Key("output_offset").Uint(session->output_offset());
  w.EndObject();
  res.status = 200;
  res.set_content(w.Take(), "application/json; charset=utf-8");
}

void HandleDelete(const httplib::Request& req, httplib::Response& res, ExecdContext* context) {
  const std::string id = req.matches[1];
  if (!context->ptys->Delete(id)) return NotFound(res, id);
  res.status = 200;
}

void HandleWebSocket(const httplib::Request& req, httplib::Response& res, ExecdContext* context) {
  const std::string id = req.matches[1];
  auto session = context->ptys->Find(id);
  if (!session) return NotFound(res, id);
  const bool upgrade = HeaderHasToken(req, "Connection", "upgrade") && HeaderHasToken(req, "Upgrade", "websocket");
  PtySocketOptions options;
  options.pipe_mode = req.has_param("pty") && req.get_param_value("pty") == "0";
  options.takeover = req.has_param("takeover") && req.get_param_value("takeover") == "1" &&
                     context->release.pty_api == PtyApi::kFull;  // 1.0.19 on
  if (req.has_param("since")) {
    char* end = nullptr;
    const std::string since = req.get_param_value("since");
    const long long value = std::strtoll(since.c_str(), &end, 10);
    if (end && *end == '\0' && value > 0) options.since = static_cast<uint64_t>(value);
  }
  if (session->Held() && !(options.takeover && upgrade)) {
    SendExecdError(res, 409, "ALREADY_CONNECTED", "another client is already connected to pty session " + id);
    return;
  }
  if (!upgrade) {  // gorilla/websocket's own answer
    res.status = 400;
    res.set_content("Bad Request\nwebsocket: the client is not using the websocket protocol: 'upgrade' token not "
                    "found in 'Connection' header\n",
                    "text/plain; charset=utf-8");
    return;
  }
  const Faults faults = context->faults->Get();
  if (faults.pty_refuse_upgrade) {
    SendExecdError(res, 503, "SERVICE_UNAVAILABLE", "the fake refuses terminal connections (pty_refuse_upgrade)");
    return;
  }
  if (faults.pty_drop_after_bytes > 0) {
    options.drop_after_bytes = static_cast<uint64_t>(faults.pty_drop_after_bytes);
    options.stale_hold_ms = faults.pty_stale_hold_ms;
    std::string ignored;
    context->faults->Update(R"({"pty_drop_after_bytes":0})", &ignored);  // once
  }
  options.stall_reads_ms = faults.pty_stall_reads_ms;
  const int fd = AcceptedSocketOf(req);
  if (fd < 0) {
    res.status = 500;
    return;
  }
  PtyStart start;
  const std::string sandbox_cwd = session->sandbox_cwd().empty() ? "/" : session->sandbox_cwd();
  SandboxPaths::Mapped mapped;
  std::string error;
  context->paths.Map(sandbox_cwd, false, &mapped, &error);
  start.host_cwd = mapped.host;
  start.chroot_dir = context->paths.host_root();
  start.chroot_cwd = mapped.sandbox;
  start.mounts = context->paths.mounts();
  start.env = MergedEnvironment({});  // execd's own environment, nothing added
  start.exit_overtakes_bytes = static_cast<uint64_t>(std::max<int64_t>(0, faults.pty_exit_overtakes_bytes));
  ServePtyWebSocket(fd, req, session, start, options);
  res.status = 101;  // never reaches the client: the connection is shut down
}

// The fake's own (tests compare what reached a host with it): the session's replay
// buffer, which is all its output while that is under 1 MiB, with the offset of its
// first byte in X-Fake-Output-From.
void HandleRecordedOutput(const httplib::Request& req, httplib::Response& res, ExecdContext* context) {
  const std::string id = req.matches[1];
  auto session = context->ptys->Find(id);
  if (!session) return NotFound(res, id);
  uint64_t from = 0;
  std::string bytes = session->Recorded(&from);
  res.status = 200;
  res.set_header("X-Fake-Output-From", std::to_string(from));
  res.set_content(std::move(bytes), "application/octet-stream");
}

}  // namespace

void RegisterPtyRoutes(httplib::Server& server, ExecdContext* context) {
  if (context->release.pty_api == PtyApi::kNone) return;  // gin's plain 404 answers
  const std::string p = kExecdRoutePrefix;
  server.Post(p + "/pty", [context](const httplib::Request& req, httplib::Response& res) {
    HandleCreate(req, res, context);
  });
  server.Get(p + "/pty/([^/]+)/ws", [context](const httplib::Request& req, httplib::Response& res) {
    HandleWebSocket(req, res, context);
  });
  server.Get(p + "/pty/([^/]+)", [context](const httplib::Request& req, httplib::Response& res) {
    HandleGet(req, res, context);
  });
  server.Delete(p + "/pty/([^/]+)", [context](const httplib::Request& req, httplib::Response& res) {
    HandleDelete(req, res, context);
  });
  server.Get(p + "/_fake/pty/([^/]+)/output", [context](const httplib::Request& req, httplib::Response& res) {
    HandleRecordedOutput(req, res, context);
  });
}

}  // namespace fake_opensandbox
