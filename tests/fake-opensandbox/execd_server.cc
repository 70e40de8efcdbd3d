#include "tests/fake-opensandbox/execd_server.h"

#include <signal.h>

#include "tests/fake-opensandbox/counting_task_queue.h"
#include "tests/fake-opensandbox/execd_routes.h"
#include "tests/fake-opensandbox/go_json.h"
#include "tests/fake-opensandbox/listen_backlog.h"
#include "tests/fake-opensandbox/listen_in_background.h"

namespace fake_opensandbox {

struct ExecdServer::State {
  State(const ExecdServerOptions& options, const std::string& host_root)
      : commands(options.clock, options.release.keep_blank_lines, options.release.interrupt_kills_group,
               options.log_dir),
        code(options.jupyter, options.log_dir, options.stats) {
    context.clock = options.clock;
    context.paths = SandboxPaths(host_root, options.mounts);
    context.commands = &commands;
    context.code = &code;
    context.sessions = &sessions;
    context.ptys = &ptys;
    context.release = options.release;
    context.faults = options.faults;
    context.stats = options.stats;
    context.staging_dir = options.staging_dir;
    context.ready_after = options.ready_after;
    context.sse_grace_ms = options.sse_grace_ms;
    context.egress_port = options.egress_port;
  }

  CommandRegistry commands;
  CodeContexts code;
  BashSessions sessions;
  PtySessions ptys;
  ExecdContext context{ServerClock(), SandboxPaths("/nonexistent")};
  httplib::Server server;
  std::thread listener;
  int port = 0;
  bool shut_down = false;
};

namespace {

void SetUpMiddleware(httplib::Server& server, ExecdContext* context, std::string token) {
  server.set_pre_routing_handler([context, token](const httplib::Request& req,
                                                  httplib::Response& res) {
    // The faults first: a test that sees the request counted may clear them at once.
    Faults faults = context->faults->Get();
    context->stats->execd_requests.fetch_add(1);
    if (faults.latency_ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(faults.latency_ms));
    }
    SandboxGate::State state = context->gate->WaitWhileFrozen();
    if (state == SandboxGate::State::kGone) {
      res.set_header("Connection", "close");
      SendExecdError(res, 503, "UNKNOWN", "sandbox is gone");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (state == SandboxGate::State::kStarting || faults.execd_down) {
      SendExecdError(res, 503, "UNKNOWN", "execd is not reachable");
      return httplib::Server::HandlerResponse::Handled;
    }
    if (!token.empty() && req.get_header_value("X-EXECD-ACCESS-TOKEN") != token) {
      res.status = 401;
      res.set_content("{\"error\":\"Unauthorized: invalid or missing header X-EXECD-ACCESS-TOKEN\"}",
                      "application/json; charset=utf-8");
      return httplib::Server::HandlerResponse::Handled;
    }
    // Range requests are handled by /files/download itself (Go's ServeContent rules);
    // httplib must not slice other answers on its own.
    const_cast<httplib::Request&>(req).ranges.clear();
    return httplib::Server::HandlerResponse::Unhandled;
  });
  server.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request&, httplib::Response& res) {
    if (!res.body.empty() || res.content_provider_) {
      return httplib::Server::HandlerResponse::Unhandled;
    }
    if (res.status == 404) {
      res.set_content("404 page not found", "text/plain");  // gin's default
      return httplib::Server::HandlerResponse::Handled;
    }
    if (res.status == 416) {  // httplib rejected a malformed Range header
      res.set_content("{\"code\":\"UNKNOWN\"}", "application/json; charset=utf-8");
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  }));
  server.set_post_routing_handler([context](const httplib::Request&, httplib::Response& res) {
    // A proxied answer keeps the Date of the service that made it.
    if (!res.has_header("Date")) res.set_header("Date", FormatHttpDate(context->clock.Now()));
  });
}

}  // namespace

void SendExecdError(httplib::Response& res, int status, const char* code,
                    const std::string& message) {
  res.status = status;
  res.set_content(GoErrorBody(code, message), "application/json; charset=utf-8");
}

void SendRunRefusal(httplib::Response& res, const ExecdRelease& release, const char* code,
                    const std::string& message) {
  if (release.deferred_stream_headers) return SendExecdError(res, 500, code, message);
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("Connection", "keep-alive");
  res.set_header("X-Accel-Buffering", "no");
  res.set_content(GoErrorBody(code, message), "text/event-stream");
}

std::unique_ptr<ExecdServer> ExecdServer::Start(const ExecdServerOptions& options,
                                                const std::string& host_root,
                                                std::shared_ptr<SandboxGate> gate,
                                                std::string* error) {
  auto state = std::make_shared<State>(options, host_root);
  state->context.gate = std::move(gate);
  httplib::Server& server = state->server;
  std::shared_ptr<ServerStats> stats = options.stats;
  server.new_task_queue = [stats] {
    return new CountingTaskQueue(stats, &stats->execd_connections_accepted);
  };
  server.set_keep_alive_max_count(1000000000);
  server.set_keep_alive_timeout(options.keep_alive_timeout_s);
  server.set_read_timeout(60, 0);
  server.set_write_timeout(3600, 0);  // a client may stall a stream for a long time
  server.set_tcp_nodelay(true);
  SetUpMiddleware(server, &state->context, options.access_token);
  RegisterCommandRoutes(server, &state->context);
  RegisterFileRoutes(server, &state->context);
  RegisterUploadRoute(server, &state->context);
  RegisterDownloadRoute(server, &state->context);
  RegisterDirectoryRoutes(server, &state->context);
  RegisterMetricsRoutes(server, &state->context);
  RegisterCodeRoutes(server, &state->context);
  RegisterSessionRoutes(server, &state->context);
  RegisterPtyRoutes(server, &state->context);
  RegisterPortProxyRoute(server, &state->context);

  state->port = BindWithFullBacklog(server, 0);
  if (state->port <= 0) {
    *error = "execd listener: cannot bind 127.0.0.1:0";
    return nullptr;
  }
  state->listener = ListenInBackground(state->server);
  return std::unique_ptr<ExecdServer>(new ExecdServer(std::move(state)));
}

ExecdServer::~ExecdServer() { Shutdown(); }

int ExecdServer::port() const { return state_->port; }

CommandRegistry& ExecdServer::commands() { return state_->commands; }

void ExecdServer::Shutdown() {
  if (!state_ || state_->shut_down) return;
  state_->shut_down = true;
  state_->context.gate->Set(SandboxGate::State::kGone);
  state_->commands.SignalAll(SIGCONT);
  state_->commands.SignalAll(SIGKILL);
  state_->code.Shutdown();
  state_->sessions.DeleteAll();
  state_->ptys.DeleteAll();
  state_->server.stop();
  // Joining waits for the open connections (idle keep-alive ones end within the
  // keep-alive timeout), so it happens off the caller's thread.
  std::thread([state = state_] {
    if (state->listener.joinable()) state->listener.join();
  }).detach();
}

}  // namespace fake_opensandbox
