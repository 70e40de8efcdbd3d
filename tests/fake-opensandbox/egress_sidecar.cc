#include "tests/fake-opensandbox/egress_sidecar.h"

#include <random>

#include "tests/fake-opensandbox/listen_in_background.h"

namespace fake_opensandbox {

std::unique_ptr<EgressSidecar> EgressSidecar::Start(const EgressSidecarOptions& options, std::string* error) {
  std::unique_ptr<EgressSidecar> sidecar(new EgressSidecar());
  std::string bad;
  sidecar->policy_ = std::make_unique<EgressPolicy>(options.initial_policy, options.token, options.release,
                                                    options.enforcement, options.max_rules, &bad);
  if (!bad.empty()) {
    *error = "egress sidecar: " + bad;
    return nullptr;
  }
  httplib::Server& server = sidecar->server_;
  // httplib gives each connection a thread while it is kept alive: enough of them that
  // the connections a proxy keeps open (execd's, the server's) never leave a request
  // waiting for one to idle out.
  server.new_task_queue = [] { return new httplib::ThreadPool(16); };
  EgressPolicy* policy = sidecar->policy_.get();
  std::atomic<uint64_t>* execd_token_seen = options.execd_token_seen;
  auto handle = [policy, execd_token_seen](const httplib::Request& req, httplib::Response& res) {
    if (execd_token_seen && req.has_header("X-EXECD-ACCESS-TOKEN")) execd_token_seen->fetch_add(1);
    std::optional<std::string> auth;
    if (req.has_header(kEgressAuthHeader)) auth = req.get_header_value(kEgressAuthHeader);
    EgressAnswer answer = policy->Handle(req.method, auth, req.body);
    res.status = answer.status;
    for (const auto& [name, value] : answer.headers) res.set_header(name, value);
    res.set_content(answer.body, answer.content_type);
  };
  server.Get("/policy", handle);
  server.Post("/policy", handle);
  server.Put("/policy", handle);
  server.Patch("/policy", handle);
  server.Delete("/policy", handle);
  server.Options("/policy", handle);
  server.Get("/healthz", [](const httplib::Request&, httplib::Response& res) {
    res.set_content("ok", "text/plain; charset=utf-8");
  });
  sidecar->port_ = server.bind_to_any_port("127.0.0.1");
  if (sidecar->port_ <= 0) {
    *error = "egress sidecar: cannot bind 127.0.0.1:0";
    return nullptr;
  }
  sidecar->listener_ = ListenInBackground(sidecar->server_);
  return sidecar;
}

EgressSidecar::~EgressSidecar() {
  server_.stop();
  if (listener_.joinable()) listener_.join();
}

std::string NewEgressToken() {
  static const char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
  std::random_device random;
  std::string token;
  for (int i = 0; i < 32; ++i) token += kAlphabet[random() % 64];
  return token;
}

}  // namespace fake_opensandbox
