// pty: pty.open, input, resize, signal, attach, list, close; the session's terminal
// notifications pty.output, pty.exit and pty.detached (docs/epp1.md §3 "pty").
#include <memory>

#include "bridge/api/epp/jsonrpc.h"
#include "bridge/api/epp/methods.h"
#include "bridge/api/epp/params.h"
#include "bridge/api/epp/session.h"
#include "bridge/base/base64.h"
#include "bridge/base/error_codes.h"
#include "bridge/base/json.h"
#include "bridge/core/terminals/terminals.h"

namespace abx::epp {
namespace {

using json::Quote;

core::Terminals TerminalsFor(Request& req) {
  return core::Terminals(req.session().upstream().get(), &req.session().config());
}

Result<int> Dimension(const Params& p, const char* field, std::optional<int> fallback) {
  ABX_ASSIGN_OR_RETURN(auto value, p.Int(field));
  if (!value) {
    if (fallback) return *fallback;
    return InvalidParams(field, std::string(field) + " is required");
  }
  if (*value < 1 || *value > 65535) return InvalidParams(field, std::string(field) + " must be 1 to 65535");
  return static_cast<int>(*value);
}

}  // namespace

// The session as its terminals' holder: notifications written straight to the host.
class SessionTerminalHolder final : public core::TerminalHolder {
 public:
  explicit SessionTerminalHolder(LineSink* sink) : sink_(sink) {}

  void OnOutput(const std::string& pty_id, uint64_t offset, const std::string& data) override {
    std::string line = NotificationStart("pty.output", data.size() / 3 * 4 + pty_id.size() + 64);
    line.append("{\"pty_id\":");
    json::AppendQuoted(&line, pty_id);
    line.append(",\"offset\":").append(std::to_string(offset)).append(",\"data\":\"");
    AppendBase64(data, &line);
    line.append("\"}");
    NotificationEnd(&line);
    sink_->Write(std::move(line), "");
  }
  void OnExit(const std::string& pty_id, std::optional<int> exit_code, uint64_t offset,
              const std::optional<Error>& error) override {
    std::string params = "{\"pty_id\":" + Quote(pty_id) +
                         ",\"exit_code\":" + (exit_code ? std::to_string(*exit_code) : "null") +
                         ",\"offset\":" + std::to_string(offset) + ",\"error\":";
    params += error ? "{\"code\":" + Quote(std::string(EppCodeName(error->code))) +
                          ",\"message\":" + Quote(error->message) + "}"
                    : "null";
    sink_->Write(NotificationLine("pty.exit", params + "}"), "");
  }
  void OnDetached(const std::string& pty_id, uint64_t offset, const std::string& reason) override {
    sink_->Write(NotificationLine("pty.detached", "{\"pty_id\":" + Quote(pty_id) + ",\"offset\":" +
                                                      std::to_string(offset) + ",\"reason\":" + Quote(reason) + "}"),
                 "");
  }

 private:
  LineSink* sink_;
};

Result<std::string> PtyOpen(Request& req) {
  Params p(req.params());
  core::TerminalOpenSpec spec;
  ABX_ASSIGN_OR_RETURN(spec.sandbox_id, SandboxId(p));
  ABX_ASSIGN_OR_RETURN(spec.cols, Dimension(p, "cols", 80));
  ABX_ASSIGN_OR_RETURN(spec.rows, Dimension(p, "rows", 24));
  ABX_ASSIGN_OR_RETURN(auto cwd, p.String("cwd"));
  spec.cwd = cwd.value_or("");
  ABX_ASSIGN_OR_RETURN(auto term, p.String("term"));
  if (term && term->empty()) return InvalidParams("term", "term must not be empty");
  spec.term = term.value_or("");  // TerminalCommand's default where the host names none
  ABX_ASSIGN_OR_RETURN(auto env, p.StringMap("env"));
  if (env) spec.env = std::move(*env);
  ABX_ASSIGN_OR_RETURN(auto command, p.String("command"));
  if (command && command->find_first_not_of(" \t\r\n") == std::string::npos) {
    return InvalidParams("command", "command must not be blank");
  }
  spec.command = command.value_or("");
  ABX_ASSIGN_OR_RETURN(auto keep, p.Bool("keep"));
  spec.keep = keep.value_or(false);
  ABX_ASSIGN_OR_RETURN(std::string pty_id,
                       TerminalsFor(req).Open(
                           spec, req.session().terminal_holder(),
                           [&](const std::string& id) { req.Respond("{\"pty_id\":" + Quote(id) + "}"); },
                           &req.cancel()));
  return std::string("null");  // answered before the terminal's output
}

Result<std::string> PtyInput(Request& req) {
  Params p(req.params());
  ABX_ASSIGN_OR_RETURN(std::string id, SandboxId(p));
  ABX_ASSIGN_OR_RETURN(std::string pty_id, p.RequiredString("pty_id"));
  ABX_ASSIGN_OR_RETURN(std::string data, p.RequiredString("data"));
  ABX_ASSIGN_OR_RETURN(std::string encoding, DataEncoding(p));
  if (encoding == "base64") {
    ABX_ASSIGN_OR_RETURN(data, DecodeBase64Data(data));
  }
  Status st = TerminalsFor(req).Input(id, pty_id, req.session().terminal_holder().get(), std::move(data));
  if (!st.ok()) return st.error();
  return std::string("{}");
}

Result<std::string> PtyResize(Request& req) {
  Params p(req.params());
  ABX_ASSIGN_OR_RETURN(std::string id, SandboxId(p));
  ABX_ASSIGN_OR_RETURN(std::string pty_id, p.RequiredString("pty_id"));
  ABX_ASSIGN_OR_RETURN(int cols, Dimension(p, "cols", std::nullopt));
  ABX_ASSIGN_OR_RETURN(int rows, Dimension(p, "rows", std::nullopt));
  Status st = TerminalsFor(req).Resize(id, pty_id, req.session().terminal_holder().get(), cols, rows);
  if (!st.ok()) return st.error();
  return std::string("{}");
}

Result<std::string> PtySignal(Request& req) {
  Params p(req.params());
  ABX_ASSIGN_OR_RETURN(std::string id, SandboxId(p));
  ABX_ASSIGN_OR_RETURN(std::string pty_id, p.RequiredString("pty_id"));
  std::string signal;
  if (const rapidjson::Value* v = p.Raw("signal")) {
    if (v->IsString()) signal = v->GetString();
    else if (v->IsInt()) signal = std::to_string(v->GetInt());
  }
  if (signal.empty()) return InvalidParams("signal", "signal must be a signal name or number");
  Status st = TerminalsFor(req).Signal(id, pty_id, req.session().terminal_holder().get(), signal);
  if (!st.ok()) return st.error();
  return std::string("{}");
}

Result<std::string> PtyAttach(Request& req) {
  Params p(req.params());
  ABX_ASSIGN_OR_RETURN(std::string id, SandboxId(p));
  ABX_ASSIGN_OR_RETURN(std::string pty_id, p.RequiredString("pty_id"));
  ABX_ASSIGN_OR_RETURN(auto since, p.Int("since"));
  if (since && *since < 0) return InvalidParams("since", "since must not be negative");
  std::optional<uint64_t> from;
  if (since) from = static_cast<uint64_t>(*since);
  Status st = TerminalsFor(req).Attach(
      id, pty_id, from, req.session().terminal_holder(),
      [&](uint64_t offset, uint64_t lost) {
        req.Respond("{\"pty_id\":" + Quote(pty_id) + ",\"offset\":" + std::to_string(offset) +
                    ",\"lost\":" + std::to_string(lost) + "}");
      },
      &req.cancel());
  if (!st.ok()) return st.error();
  return std::string("null");  // answered before the replay
}

Result<std::string> PtyList(Request& req) {
  ABX_ASSIGN_OR_RETURN(std::string id, SandboxId(Params(req.params())));
  std::string out = "{\"terminals\":[";
  bool first = true;
  for (const core::TerminalInfo& t : TerminalsFor(req).List(id)) {
    out += std::string(first ? "" : ",") + "{\"pty_id\":" + Quote(t.pty_id) +
           ",\"running\":" + (t.running ? "true" : "false") + ",\"offset\":" + std::to_string(t.offset) +
           ",\"attached\":" + (t.attached ? "true" : "false") + "}";
    first = false;
  }
  return out + "]}";
}

Result<std::string> PtyClose(Request& req) {
  Params p(req.params());
  ABX_ASSIGN_OR_RETURN(std::string id, SandboxId(p));
  ABX_ASSIGN_OR_RETURN(std::string pty_id, p.RequiredString("pty_id"));
  if (pty_id.empty()) return InvalidParams("pty_id", "pty_id must not be empty");
  ABX_ASSIGN_OR_RETURN(bool closed, TerminalsFor(req).Close(id, pty_id, &req.cancel()));
  return std::string("{\"closed\":") + (closed ? "true" : "false") + "}";
}

std::shared_ptr<core::TerminalHolder> MakeTerminalHolder(LineSink* sink) {
  return std::make_shared<SessionTerminalHolder>(sink);
}

}  // namespace abx::epp
