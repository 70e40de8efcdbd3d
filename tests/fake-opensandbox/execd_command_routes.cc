// POST /command (SSE), DELETE /command?id=, GET /command/status/{id},
// GET /command/{id}/logs?cursor= (docs/opensandbox.md §2.3–2.9).

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <fstream>
#include <thread>

#include "rapidjson/document.h"
#include "rapidjson/error/en.h"
#include "tests/fake-opensandbox/execd_routes.h"
#include "tests/fake-opensandbox/go_json.h"
#include "tests/fake-opensandbox/sse_events.h"
#include "tests/fake-opensandbox/stream_events.h"

namespace fake_opensandbox {
namespace {

using SteadyClock = std::chrono::steady_clock;
constexpr auto kPingInterval = std::chrono::seconds(3);

const char* JsonKind(const rapidjson::Value& v) {
  if (v.IsString()) return "string";
  if (v.IsNumber()) return "number";
  if (v.IsBool()) return "bool";
  if (v.IsArray()) return "array";
  if (v.IsObject()) return "object";
  return "null";
}

std::string UnmarshalError(const rapidjson::Value& v, const char* field, const char* go_type) {
  return std::string("error parsing request, MAYBE invalid body format. json: cannot unmarshal ") +
         JsonKind(v) + " into Go struct field RunCommandRequest." + field + " of type " + go_type;
}

// Reads an unsigned integer of at most `max`; Go rejects fractions and negatives.
bool ReadUnsigned(const rapidjson::Value& v, uint64_t max, uint64_t* out) {
  if (v.IsUint64() && v.GetUint64() <= max) {
    *out = v.GetUint64();
    return true;
  }
  return false;
}

// The parsed and checked body of POST /command, or the 400 to send.
bool ParseRunCommand(const httplib::Request& req, ExecdContext* context, CommandSpec* spec,
                     std::string* error) {
  rapidjson::Document doc;
  doc.Parse(req.body.c_str(), req.body.size());
  if (doc.HasParseError()) {
    *error = req.body.empty()
                 ? "error parsing request, MAYBE invalid body format. EOF"
                 : std::string("error parsing request, MAYBE invalid body format. ") +
                       rapidjson::GetParseError_En(doc.GetParseError());
    return false;
  }
  if (!doc.IsObject()) {
    *error = std::string("error parsing request, MAYBE invalid body format. json: cannot unmarshal ") +
             JsonKind(doc) + " into Go value of type model.RunCommandRequest";
    return false;
  }
  std::string cwd;
  for (auto it = doc.MemberBegin(); it != doc.MemberEnd(); ++it) {
    std::string key = it->name.GetString();
    const rapidjson::Value& v = it->value;
    if (v.IsNull()) continue;  // Go leaves the zero value
    if (key == "command") {
      if (!v.IsString()) return *error = UnmarshalError(v, "command", "string"), false;
      spec->command = v.GetString();
    } else if (key == "cwd") {
      if (!v.IsString()) return *error = UnmarshalError(v, "cwd", "string"), false;
      cwd = v.GetString();
    } else if (key == "background") {
      if (!v.IsBool()) return *error = UnmarshalError(v, "background", "bool"), false;
      spec->background = v.GetBool();
    } else if (key == "timeout") {
      if (!v.IsInt64()) return *error = UnmarshalError(v, "timeout", "int64"), false;
      spec->timeout_ms = v.GetInt64();
    } else if (key == "uid" || key == "gid") {
      uint64_t id;
      if (!ReadUnsigned(v, UINT32_MAX, &id)) {
        return *error = UnmarshalError(v, key.c_str(), "uint32"), false;
      }
      (key == "uid" ? spec->uid : spec->gid) = static_cast<uint32_t>(id);
    } else if (key == "envs") {
      if (!v.IsObject()) {
        return *error = UnmarshalError(v, "envs", "map[string]string"), false;
      }
      for (auto env = v.MemberBegin(); env != v.MemberEnd(); ++env) {
        if (!env->value.IsString()) {
          return *error = UnmarshalError(env->value, "envs", "string"), false;
        }
        spec->envs.emplace_back(env->name.GetString(), env->value.GetString());
      }
    }
  }
  if (spec->command.empty()) {
    *error =
        "invalid request, validation error Key: 'RunCommandRequest.Command' Error:Field "
        "validation for 'Command' failed on the 'required' tag";
    return false;
  }
  if (spec->gid && !spec->uid) {
    *error = "invalid request, validation error uid is required when gid is provided";
    return false;
  }
  if (spec->timeout_ms < 0) {
    *error = "invalid request, validation error timeout must be greater than or equal to 0";
    return false;
  }
  spec->sandbox_root = context->paths.host_root();
  spec->mounts = context->paths.mounts();
  if (cwd.empty()) {
    spec->host_cwd = context->paths.host_root();
    spec->sandbox_cwd = "/";
  } else {
    SandboxPaths::Mapped mapped;
    std::string map_error;
    if (!context->paths.Map(cwd, /*strict_vars=*/true, &mapped, &map_error)) {
      *error = "invalid request, validation error " + map_error;
      return false;
    }
    struct stat st;
    if (stat(mapped.host.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
      *error = "working directory does not exist: " + cwd;
      return false;
    }
    spec->host_cwd = mapped.host;
    spec->sandbox_cwd = mapped.sandbox;
  }
  // Where the sandbox lives on the host, for commands that run without the chroot
  // (when the fake is not root).
  spec->envs.emplace(spec->envs.begin(), "OPENSANDBOX_FAKE_SANDBOX_ROOT",
                     context->paths.host_root());
  return true;
}

// State of one SSE answer, shared by the calls of the content provider.
struct StreamState {
  std::shared_ptr<Command> command;
  std::string buffer;  // reused across reads
  bool started = false;
  bool terminal_seen = false;
  SteadyClock::time_point next_ping;
  int64_t events_left = -1;  // reset_stream_after_events fault: events still to send
};

// `grace_ms`: how long the stream stays open after the terminal event.
void StreamCommand(const std::shared_ptr<Command>& command, ExecdContext* context,
                   int64_t grace_ms, httplib::Response& res) {
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("Connection", "keep-alive");
  res.set_header("X-Accel-Buffering", "no");
  auto state = std::make_shared<StreamState>();
  state->command = command;
  int64_t reset_after = context->faults->Get().reset_stream_after_events;
  if (reset_after > 0) state->events_left = reset_after;
  ServerClock clock = context->clock;

  res.set_chunked_content_provider(
      "text/event-stream",
      [state, clock, grace_ms](size_t, httplib::DataSink& sink) {
        Command& cmd = *state->command;
        if (!state->started) {
          state->started = true;
          std::string head;
          AppendInitEvent(&head, cmd.id(), clock.NowUnixMillis());
          AppendPingEvent(&head, clock.NowUnixMillis());
          if (cmd.background() && cmd.start_error().empty()) {
            AppendCompleteEvent(&head, 0, clock.NowUnixMillis());
            state->terminal_seen = true;
          }
          state->next_ping = SteadyClock::now() + kPingInterval;
          return WriteEvents(&state->events_left, sink, head);
        }
        if (state->terminal_seen) {
          // execd keeps a command's stream open for its grace period, then closes it.
          if (grace_ms > 0) std::this_thread::sleep_for(std::chrono::milliseconds(grace_ms));
          sink.done();
          return true;
        }
        switch (cmd.events().Read(&state->buffer, state->next_ping)) {
          case EventPipe::ReadResult::kData:
            return WriteEvents(&state->events_left, sink, state->buffer);
          case EventPipe::ReadResult::kTimeout: {
            std::string ping;
            AppendPingEvent(&ping, clock.NowUnixMillis());
            state->next_ping += kPingInterval;
            return WriteEvents(&state->events_left, sink, ping);
          }
          case EventPipe::ReadResult::kClosed:
            state->terminal_seen = true;
            return true;
        }
        return false;
      },
      [state](bool) {
        // Client gone (or stream over): the command keeps running, its output is dropped.
        if (!state->command->background()) state->command->events().Detach();
      });
}

void HandleRunCommand(const httplib::Request& req, httplib::Response& res,
                      ExecdContext* context) {
  CommandSpec spec;
  std::string error;
  if (!ParseRunCommand(req, context, &spec, &error)) {
    SendExecdError(res, 400, "INVALID_REQUEST_BODY", error);
    return;
  }
  std::shared_ptr<Command> command = context->commands->Start(spec);
  StreamCommand(command, context, context->sse_grace_ms, res);
}

}  // namespace

void RunCodeAsCommand(const std::string& code, ExecdContext* context, httplib::Response& res) {
  CommandSpec spec;
  spec.command = code;
  spec.sandbox_root = context->paths.host_root();
  spec.mounts = context->paths.mounts();
  spec.host_cwd = context->paths.host_root();
  spec.sandbox_cwd = "/";
  spec.envs.emplace_back("OPENSANDBOX_FAKE_SANDBOX_ROOT", context->paths.host_root());
  StreamCommand(context->commands->Start(spec), context, /*grace_ms=*/0, res);
}

void HandleExecdInterrupt(const httplib::Request& req, httplib::Response& res,
                          ExecdContext* context) {
  std::string id = req.get_param_value("id");
  if (id.empty()) {
    SendExecdError(res, 400, "MISSING_QUERY", "missing query parameter 'id'");
    return;
  }
  if (InterruptCodeContext(context, id)) {
    res.status = 200;  // at once: execd does not wait for the run to stop
    return;
  }
  switch (context->commands->Interrupt(id)) {
    case CommandRegistry::InterruptResult::kInterrupted:
      res.status = 200;
      return;
    case CommandRegistry::InterruptResult::kUnknown:
      if (DeleteBashSession(context, id)) {
        res.status = 200;  // a bash session's interrupt closes it
        return;
      }
      SendExecdError(res, 500, "RUNTIME_ERROR",
                     "error interruptting code context. no such session");
      return;
    case CommandRegistry::InterruptResult::kNotRunning:
      SendExecdError(res, 500, "RUNTIME_ERROR",
                     "error interruptting code context. command " + id + " is not running");
      return;
  }
}

namespace {

void HandleStatus(const httplib::Request& req, httplib::Response& res, ExecdContext* context) {
  std::string id = req.matches[1];
  std::shared_ptr<Command> command = context->commands->Find(id);
  if (!command) {
    SendExecdError(res, 404, "INVALID_REQUEST_BODY", "command not found: " + id);
    return;
  }
  CommandStatus status = command->Status();
  GoJsonWriter w;
  w.StartObject();
  w.Key("id").String(command->id());
  if (!command->content().empty()) w.Key("content").String(command->content());
  w.Key("running").Bool(status.running);
  if (!status.running && status.exit_code) w.Key("exit_code").Int(*status.exit_code);
  if (!status.error.empty()) w.Key("error").String(status.error);
  w.Key("started_at").String(FormatGoTime(status.started_at));
  if (status.finished_at) w.Key("finished_at").String(FormatGoTime(*status.finished_at));
  w.EndObject();
  res.status = 200;
  res.set_content(w.Take(), "application/json; charset=utf-8");
}

void HandleLogs(const httplib::Request& req, httplib::Response& res, ExecdContext* context) {
  std::string id = req.matches[1];
  std::shared_ptr<Command> command = context->commands->Find(id);
  if (!command) {
    SendExecdError(res, 400, "INVALID_REQUEST_BODY", "command not found: " + id);
    return;
  }
  if (!command->background()) {
    SendExecdError(res, 400, "INVALID_REQUEST_BODY",
                   "command " + id + " is not running in background");
    return;
  }
  // An absent or unreadable cursor means "from the start", as upstream.
  long long cursor = 0;
  if (req.has_param("cursor")) {
    char* end = nullptr;
    std::string text = req.get_param_value("cursor");
    long long value = strtoll(text.c_str(), &end, 10);
    if (!text.empty() && end && *end == '\0' && value >= 0) cursor = value;
  }
  std::ifstream log(command->log_path(), std::ios::binary);
  std::string content;
  long long size = 0;
  if (log) {
    log.seekg(0, std::ios::end);
    size = static_cast<long long>(log.tellg());
    if (cursor < size) {
      log.seekg(cursor);
      content.resize(static_cast<size_t>(size - cursor));
      log.read(&content[0], static_cast<std::streamsize>(content.size()));
      content.resize(static_cast<size_t>(log.gcount()));
    }
  }
  long long next = cursor < size ? cursor + static_cast<long long>(content.size()) : cursor;
  res.status = 200;
  res.set_header("EXECD-COMMANDS-TAIL-CURSOR", std::to_string(next));
  res.set_content(content, "text/plain; charset=utf-8");
}

}  // namespace

void RegisterCommandRoutes(httplib::Server& server, ExecdContext* context) {
  const std::string p = kExecdRoutePrefix;
  server.Get(p + "/ping", [context](const httplib::Request&, httplib::Response& res) {
    if (context->gate->PingShouldFail(context->ready_after)) {
      // A body matters: some clients take a bodiless 503 for success.
      SendExecdError(res, 503, "UNKNOWN", "execd is starting");
      return;
    }
    res.status = 200;
  });
  server.Post(p + "/command", [context](const httplib::Request& req, httplib::Response& res) {
    HandleRunCommand(req, res, context);
  });
  server.Delete(p + "/command", [context](const httplib::Request& req, httplib::Response& res) {
    HandleExecdInterrupt(req, res, context);
  });
  server.Get(p + "/command/status/([^/]+)",
             [context](const httplib::Request& req, httplib::Response& res) {
               HandleStatus(req, res, context);
             });
  server.Get(p + "/command/([^/]+)/logs",
             [context](const httplib::Request& req, httplib::Response& res) {
               HandleLogs(req, res, context);
             });
}

}  // namespace fake_opensandbox
