#include "tests/fake-opensandbox/fake_server.h"
#include "tests/fake-opensandbox/http_forwarder.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <regex>

#include "tests/fake-opensandbox/counting_task_queue.h"
#include "tests/fake-opensandbox/ids.h"
#include "tests/fake-opensandbox/image_catalog.h"
#include "tests/fake-opensandbox/lifecycle_errors.h"
#include "tests/fake-opensandbox/listen_backlog.h"
#include "tests/fake-opensandbox/listen_in_background.h"

namespace fake_opensandbox {
namespace {

bool Executable(const std::string& path) { return ::access(path.c_str(), X_OK) == 0; }

// --execd-binary: what every real-execd sandbox needs, checked once at start so that a
// missing piece is one clear message instead of a failure per sandbox.
bool PrepareRealExecd(FakeConfig* config, std::string* error) {
  if (::geteuid() != 0) {
    *error = "--execd-binary needs root (a sandbox maps the host's ids into its own user namespace)";
    return false;
  }
  if (!Executable(config->execd_binary)) {
    *error = "--execd-binary " + config->execd_binary + ": not an executable file";
    return false;
  }
  if (config->execd_bootstrap.empty()) {
    const std::string& binary = config->execd_binary;
    const size_t slash = binary.rfind('/');
    config->execd_bootstrap = (slash == std::string::npos ? "." : binary.substr(0, slash)) + "/bootstrap.sh";
  }
  if (!Executable(config->execd_bootstrap)) {
    *error = "--execd-bootstrap " + config->execd_bootstrap + ": not an executable file";
    return false;
  }
  if (!Executable("/usr/bin/bwrap")) {
    *error = "--execd-binary needs bubblewrap (/usr/bin/bwrap; Debian's bubblewrap, tools/setup)";
    return false;
  }
  if (!config->self_binary.empty()) return true;  // a test's fake runs in its process
  char self[4096];
  ssize_t n = ::readlink("/proc/self/exe", self, sizeof self - 1);
  if (n <= 0) {
    *error = std::string("readlink /proc/self/exe: ") + std::strerror(errno);
    return false;
  }
  config->self_binary.assign(self, static_cast<size_t>(n));
  return true;
}

const std::regex& ProxyPathPattern() {
  static const std::regex pattern(R"(^(/v1)?/sandboxes/[^/]+/proxy/[0-9]+(/|$))");
  return pattern;
}

// Paths the real server serves without an API key (docs/opensandbox.md §1.1).
bool IsAuthExempt(const std::string& path) {
  for (const char* prefix : {"/health", "/docs", "/redoc", "/openapi.json"}) {
    if (path.rfind(prefix, 0) == 0) return true;
  }
  return std::regex_search(path, ProxyPathPattern()) && path.find("..") == std::string::npos;
}

// Paths that exist with some method: a wrong method there is 405, not 404.
bool IsKnownPath(const std::string& path) {
  static const std::regex known(
      R"(^(/v1)?/sandboxes(/[^/]+(/(pause|resume|renew-expiration|metadata|snapshots)|/endpoints/[^/]+)?)?$|^/health$|^(/v1)?/snapshots(/[^/]+)?$)");
  return std::regex_match(path, known);
}

std::string Trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t");
  if (a == std::string::npos) return "";
  size_t b = s.find_last_not_of(" \t");
  return s.substr(a, b - a + 1);
}

std::string TempBase() {
  for (const char* var : {"TEST_TMPDIR", "TMPDIR"}) {
    const char* value = getenv(var);
    if (value && *value) return value;
  }
  return "/tmp";
}

}  // namespace

void SendJson(httplib::Response& res, int status, const std::string& body) {
  res.status = status;
  res.set_content(body, "application/json");
}

void SendCodeMessage(httplib::Response& res, int status, const std::string& code,
                     const std::string& message) {
  SendJson(res, status, CodeMessageBody(code, message));
}

std::string RuntimeNamespace(const LifecycleContext& context) {
  return context.config.runtime == Runtime::kDocker ? "DOCKER::" : "KUBERNETES::";
}

void SendSandboxNotFound(httplib::Response& res, const LifecycleContext& context,
                         const std::string& id) {
  if (context.config.runtime == Runtime::kDocker) {
    SendCodeMessage(res, 404, "DOCKER::SANDBOX_NOT_FOUND", "Sandbox " + id + " not found.");
  } else {
    SendCodeMessage(res, 404, "KUBERNETES::SANDBOX_NOT_FOUND", "Sandbox '" + id + "' not found");
  }
}

std::unique_ptr<FakeServer> FakeServer::Start(const FakeConfig& given, std::string* error) {
  FakeConfig config = given;
  if (!config.execd_binary.empty() && !PrepareRealExecd(&config, error)) return nullptr;
  LeaveProgramsOut(config.programs_left_out);
  std::unique_ptr<FakeServer> fake(new FakeServer());
  fake->config_ = config;
  if (config.root_dir.empty()) {
    std::string templ = TempBase() + "/fake-opensandbox-XXXXXX";
    if (!mkdtemp(&templ[0])) {
      *error = "create temp root: " + std::string(strerror(errno));
      return nullptr;
    }
    fake->root_dir_ = templ;
    fake->owns_root_ = true;
  } else {
    fake->root_dir_ = config.root_dir;
    if (mkdir(config.root_dir.c_str(), 0755) != 0 && errno != EEXIST) {
      *error = "create root " + config.root_dir + ": " + strerror(errno);
      return nullptr;
    }
  }
  if (!config.faults_json.empty() &&
      ((!config.execd_binary.empty() && !FaultsAllowedWithRealExecd(config.faults_json, error)) ||
       !fake->faults_->Update(config.faults_json, error))) {
    *error = "--faults: " + *error;
    return nullptr;
  }
  ServerClock clock(config.clock_skew_s);
  fake->registry_ = std::make_unique<SandboxRegistry>(config, clock, fake->faults_,
                                                      fake->stats_, fake->root_dir_,
                                                      fake->root_dir_ + "/.fake-work");
  fake->snapshots_ = std::make_unique<SnapshotStore>(clock, fake->faults_, fake->root_dir_ + "/.fake-work/snapshots");
  LifecycleContext& ctx = fake->context_;
  ctx.config = config;
  ctx.clock = clock;
  ctx.registry = fake->registry_.get();
  ctx.snapshots = fake->snapshots_.get();
  ctx.faults = fake->faults_;
  ctx.stats = fake->stats_;
  if (config.ingress_route_mode != IngressRouteMode::kNone) {
    fake->gateway_ = IngressGateway::Start(config, fake->registry_.get(), fake->faults_, fake->stats_, clock, error);
    if (!fake->gateway_) return nullptr;
    ctx.gateway_port = fake->gateway_->port();
  }

  httplib::Server& server = fake->server_;
  std::shared_ptr<ServerStats> stats = fake->stats_;
  server.new_task_queue = [stats] {
    return new CountingTaskQueue(stats, &stats->connections_accepted);
  };
  server.set_keep_alive_max_count(1000000000);
  server.set_keep_alive_timeout(config.keep_alive_timeout_s);
  server.set_read_timeout(60, 0);
  server.set_write_timeout(3600, 0);
  server.set_tcp_nodelay(true);
  fake->InstallMiddleware();
  RegisterControlRoutes(server, &ctx);
  RegisterLifecycleRoutes(server, &ctx);
  RegisterServerProxyRoute(server, &ctx);

  fake->port_ = BindWithFullBacklog(server, config.port);
  if (fake->port_ <= 0) {
    *error = "cannot listen on 127.0.0.1:" + std::to_string(config.port);
    return nullptr;
  }
  ctx.port = fake->port_;
  fake->listener_ = ListenInBackground(fake->server_);
  return fake;
}

void FakeServer::InstallMiddleware() {
  server_.set_pre_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    using R = httplib::Server::HandlerResponse;
    // Range requests are answered by the handlers (or passed through by the proxy);
    // httplib must not slice answers on its own.
    const_cast<httplib::Request&>(req).ranges.clear();
    const std::string& path = req.path;
    if (path.rfind("/_fake/", 0) == 0) return R::Unhandled;
    // The faults first: a test that sees the request counted may clear them at once.
    Faults faults = faults_->Get();
    stats_->requests.fetch_add(1);
    if (faults.latency_ms > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(faults.latency_ms));
    }
    bool is_proxy = std::regex_search(path, ProxyPathPattern());
    if (is_proxy) HideContentTypeFromBodyParsing(const_cast<httplib::Request&>(req));
    if (faults.silent && !is_proxy) {
      // Accept, read the request, never answer (until the fault is switched off).
      while (faults_->Get().silent && !stopping_) {
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
      }
    }
    if (!config_.api_key.empty() && !IsAuthExempt(path)) {
      std::string key = req.get_header_value("OPEN-SANDBOX-API-KEY");
      if (key.empty()) {
        stats_->auth_rejected.fetch_add(1);
        SendCodeMessage(res, 401, "MISSING_API_KEY",
                        "Authentication credentials are missing. Provide API key via "
                        "OPEN-SANDBOX-API-KEY header.");
        return R::Handled;
      }
      if (key != config_.api_key &&
          std::find(config_.more_api_keys.begin(), config_.more_api_keys.end(), key) ==
              config_.more_api_keys.end()) {
        stats_->auth_rejected.fetch_add(1);
        SendCodeMessage(res, 401, "INVALID_API_KEY",
                        "Authentication credentials are invalid. Check your API key and try "
                        "again.");
        return R::Handled;
      }
    }
    if (!is_proxy && path != "/health" && faults_->Roll(faults.error_rate)) {
      SendCodeMessage(res, 503, RuntimeNamespace(context_) + "INITIALIZATION_ERROR",
                      "Failed to connect to the container runtime.");
      return R::Handled;
    }
    return R::Unhandled;
  });
  server_.set_error_handler(httplib::Server::HandlerWithResponse([](const httplib::Request& req, httplib::Response& res) {
    if (!res.body.empty() || res.content_provider_) return httplib::Server::HandlerResponse::Unhandled;
    if (res.status == 404) {
      if (IsKnownPath(req.path)) {
        res.status = 405;
        SendJson(res, 405, "{\"detail\":\"Method Not Allowed\"}");
      } else {
        SendJson(res, 404, "{\"detail\":\"Not Found\"}");
      }
      return httplib::Server::HandlerResponse::Handled;
    }
    return httplib::Server::HandlerResponse::Unhandled;
  }));
  server_.set_post_routing_handler([this](const httplib::Request& req, httplib::Response& res) {
    std::string request_id = Trim(req.get_header_value("X-Request-ID"));
    res.set_header("X-Request-ID", request_id.empty() ? NewUuid4Hex() : request_id);
    if (!res.has_header("Date")) res.set_header("Date", FormatHttpDate(context_.clock.Now()));
    const std::string& path = req.path;
    bool is_control = path.rfind("/_fake/", 0) == 0;
    if (!is_control && !res.body.empty() && !std::regex_search(path, ProxyPathPattern()) &&
        faults_->Roll(faults_->Get().garbage_body)) {
      // A body cut in half is never valid JSON; keep Content-Length honest.
      res.body = res.body.substr(0, res.body.size() / 2);
      res.headers.erase("Content-Length");
      res.set_header("Content-Length", std::to_string(res.body.size()));
    }
  });
}

void FakeServer::EmergencyCleanup() {
  stopping_ = true;
  registry_->RemoveAll();
  RemoveTreeQuietly(owns_root_ ? root_dir_ : root_dir_ + "/.fake-work");
}

FakeServer::~FakeServer() {
  stopping_ = true;
  server_.stop();
  if (listener_.joinable()) listener_.join();
  gateway_.reset();
  registry_.reset();
  snapshots_.reset();  // waits for captures in progress
  RemoveTreeQuietly(owns_root_ ? root_dir_ : root_dir_ + "/.fake-work");
}

}  // namespace fake_opensandbox
