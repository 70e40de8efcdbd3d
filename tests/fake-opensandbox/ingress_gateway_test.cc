// The Kubernetes server behind its ingress gateway (ingress_gateway.h): endpoints in the
// three route modes, signed routes minted and refused in upstream's order, and the
// gateway routing by Host, header or path, checking a secure sandbox's access header or
// route signature and leaving other sandboxes open.

#include <gtest/gtest.h>

#include <chrono>
#include <ctime>
#include <mutex>
#include <string>
#include <thread>

#include "tests/fake-opensandbox/listen_in_background.h"
#include "tests/fake-opensandbox/signed_route.h"
#include "tests/fake-opensandbox/test_support.h"

namespace fake_opensandbox {
namespace {

constexpr char kSecret[] = "secret";  // "c2VjcmV0" in base64

FakeConfig GatewayConfig(IngressRouteMode mode, bool keys = true) {
  FakeConfig config = TestConfig();
  config.runtime = Runtime::kKubernetes;
  config.ingress_route_mode = mode;
  if (keys) {
    config.signing_keys = {{'a', kSecret}, {'b', "other"}};
    config.active_signing_key = 'a';
  }
  return config;
}

long long Now() { return static_cast<long long>(std::time(nullptr)); }

struct Answer {
  int status = 0;
  std::string body;
  std::string content_type;
  std::string powered_by;  // Reverse-Proxy-Server-Powerby: the gateway passed it on
};

struct Endpoint {
  std::string endpoint;
  httplib::Headers headers;
};

Endpoint GetEndpoint(TestFake& fake, const std::string& id, const std::string& port, const std::string& query = "") {
  auto res = fake.lifecycle->Get(("/v1/sandboxes/" + id + "/endpoints/" + port + query).c_str());
  Endpoint out;
  EXPECT_TRUE(res);
  if (!res) return out;
  EXPECT_EQ(res->status, 200) << res->body;
  auto doc = ParseJson(res->body);
  if (!doc.IsObject() || !doc.HasMember("endpoint")) return out;
  out.endpoint = doc["endpoint"].GetString();
  if (doc.HasMember("headers")) {
    for (const auto& h : doc["headers"].GetObject()) out.headers.emplace(h.name.GetString(), h.value.GetString());
  }
  return out;
}

// A request to the gateway for `path` under an endpoint, sent as a client would: a
// wildcard endpoint's name goes in Host (the test resolves it to the loopback itself).
Answer Fetch(TestFake& fake, const Endpoint& endpoint, const std::string& path, httplib::Headers headers = {}) {
  std::string host_and_port = endpoint.endpoint.substr(0, endpoint.endpoint.find('/'));
  const std::string prefix =
      endpoint.endpoint.find('/') == std::string::npos ? "" : endpoint.endpoint.substr(endpoint.endpoint.find('/'));
  httplib::Client client("127.0.0.1", fake.server->gateway_port());
  client.set_read_timeout(30, 0);
  for (const auto& h : endpoint.headers) headers.emplace(h.first, h.second);
  headers.emplace("Host", host_and_port);
  auto res = client.Get((prefix + path).c_str(), headers);
  Answer out;
  if (!res) return out;
  out.status = res->status;
  out.body = res->body;
  out.content_type = res->get_header_value("Content-Type");
  out.powered_by = res->get_header_value("Reverse-Proxy-Server-Powerby");
  return out;
}

bool WaitRunning(TestFake& fake, const std::string& id) {
  for (int i = 0; i < 200; ++i) {
    auto res = fake.lifecycle->Get(("/v1/sandboxes/" + id).c_str());
    if (res && res->body.find("\"Running\"") != std::string::npos) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return false;
}

httplib::Headers Without(httplib::Headers headers, const std::string& name) {
  headers.erase(name);
  return headers;
}

TEST(IngressGatewayTest, EndpointsNameTheGatewayInItsRouteMode) {
  for (IngressRouteMode mode : {IngressRouteMode::kWildcard, IngressRouteMode::kUri, IngressRouteMode::kHeader}) {
    TestFake fake(GatewayConfig(mode));
    const std::string gateway = std::to_string(fake.server->gateway_port());
    const std::string id = fake.CreateSandbox(R"("secureAccess":true)");
    const std::string open = fake.CreateSandbox();
    ASSERT_FALSE(id.empty());
    Endpoint secure = GetEndpoint(fake, id, "8080");
    Endpoint plain = GetEndpoint(fake, open, "8080");
    ASSERT_EQ(secure.headers.count("OpenSandbox-Secure-Access"), 1u);
    EXPECT_EQ(secure.headers.find("OpenSandbox-Secure-Access")->second.size(), 32u);
    EXPECT_EQ(plain.headers.count("OpenSandbox-Secure-Access"), 0u);
    switch (mode) {
      case IngressRouteMode::kWildcard:
        EXPECT_EQ(secure.endpoint, id + "-8080.localhost:" + gateway);
        EXPECT_EQ(secure.headers.size(), 1u);
        break;
      case IngressRouteMode::kUri:
        EXPECT_EQ(secure.endpoint, "127.0.0.1:" + gateway + "/" + id + "/8080");
        break;
      case IngressRouteMode::kHeader:
        EXPECT_EQ(secure.endpoint, "127.0.0.1:" + gateway);
        EXPECT_EQ(secure.headers.find("OpenSandbox-Ingress-To")->second, id + "-8080");
        EXPECT_EQ(plain.headers.find("OpenSandbox-Ingress-To")->second, open + "-8080");
        break;
      case IngressRouteMode::kNone:
        break;
    }
    // The server proxy's path keeps the port's headers (its callers send the access one).
    Endpoint proxied = GetEndpoint(fake, id, "8080", "?use_server_proxy=true");
    EXPECT_NE(proxied.endpoint.find("/sandboxes/" + id + "/proxy/8080"), std::string::npos);
    EXPECT_EQ(proxied.headers.count("OpenSandbox-Secure-Access"), 1u);

    const uint64_t expires = static_cast<uint64_t>(Now() + 600);
    Endpoint signed_route = GetEndpoint(fake, id, "8080", "?expires=" + std::to_string(expires));
    const std::string token = SignedRouteToken(kSecret, 'a', id, 8080, expires);
    EXPECT_EQ(signed_route.headers.count("OpenSandbox-Secure-Access"), 0u) << "a signed route carries no token";
    switch (mode) {
      case IngressRouteMode::kWildcard:
        EXPECT_EQ(signed_route.endpoint, token + ".localhost:" + gateway);
        EXPECT_TRUE(signed_route.headers.empty());
        break;
      case IngressRouteMode::kUri:
        EXPECT_EQ(signed_route.endpoint, "127.0.0.1:" + gateway + "/" + id + "/8080/" + Base36(expires) + "/" +
                                             RouteSignature(kSecret, 'a', id, 8080, expires));
        break;
      case IngressRouteMode::kHeader:
        EXPECT_EQ(signed_route.endpoint, "127.0.0.1:" + gateway);
        EXPECT_EQ(signed_route.headers.find("OpenSandbox-Ingress-To")->second, token);
        break;
      case IngressRouteMode::kNone:
        break;
    }
  }
}

TEST(IngressGatewayTest, SignedEndpointsAreRefusedInUpstreamsOrder) {
  auto refusal = [](TestFake& fake, const std::string& path) {
    auto res = fake.lifecycle->Get(path.c_str());
    return res ? std::to_string(res->status) + " " + res->body : std::string("no answer");
  };
  const std::string future = std::to_string(Now() + 600);
  {
    TestFake docker;
    const std::string id = docker.CreateSandbox();
    EXPECT_EQ(refusal(docker, "/v1/sandboxes/" + id + "/endpoints/8080?expires=" + future + "&use_server_proxy=true"),
              R"(400 {"code":"SANDBOX::INVALID_PARAMETER","message":"use_server_proxy cannot be combined with )"
              R"(expires; signed endpoints require the gateway route."})");
    // Docker refuses before it looks at the port or the sandbox.
    EXPECT_EQ(refusal(docker, "/v1/sandboxes/nope/endpoints/0?expires=1"),
              R"(400 {"code":"SANDBOX::API_NOT_SUPPORTED","message":"Signed routes (expires parameter) are not )"
              R"(supported when runtime.type='docker'. Use the Kubernetes runtime for signed routes."})");
    EXPECT_EQ(refusal(docker, "/v1/sandboxes/" + id + "/endpoints/8080?expires=soon").substr(0, 4), "422 ");
  }
  {
    FakeConfig direct = TestConfig();
    direct.runtime = Runtime::kKubernetes;
    TestFake fake(direct);
    const std::string id = fake.CreateSandbox();
    EXPECT_EQ(refusal(fake, "/v1/sandboxes/nope/endpoints/8080?expires=" + future),
              R"(404 {"code":"KUBERNETES::SANDBOX_NOT_FOUND","message":"Sandbox 'nope' not found"})");
    EXPECT_EQ(refusal(fake, "/v1/sandboxes/" + id + "/endpoints/8080?expires=" + future),
              R"(400 {"code":"SANDBOX::INVALID_PARAMETER","message":"Signed routes require ingress.mode = )"
              R"('gateway'. Configure ingress gateway or omit the expires parameter."})");
    EXPECT_EQ(refusal(fake, "/v1/sandboxes/" + id + "/endpoints/8080?expires=-1"),
              R"(400 {"code":"SANDBOX::INVALID_PARAMETER","message":"expires must be a non-negative Unix )"
              R"(timestamp (uint64)."})");
    const std::string past = refusal(fake, "/v1/sandboxes/nope/endpoints/8080?expires=100");
    EXPECT_EQ(past.rfind(R"(400 {"code":"SANDBOX::INVALID_PARAMETER","message":"expires (100) must be greater )"
                         R"(than current time ()",
                         0),
              0u)
        << past << " (the expiry is checked before the sandbox)";
  }
  {
    TestFake fake(GatewayConfig(IngressRouteMode::kWildcard, /*keys=*/false));
    const std::string id = fake.CreateSandbox(R"("secureAccess":true)");
    EXPECT_EQ(refusal(fake, "/v1/sandboxes/" + id + "/endpoints/8080?expires=" + future),
              R"(400 {"code":"SANDBOX::INVALID_PARAMETER","message":"Signed routes require )"
              R"(ingress.secure_access to be configured with signing keys. Configure secure_access or omit the )"
              R"(expires parameter."})");
  }
}

TEST(IngressGatewayTest, ASecureSandboxNeedsItsHeaderOrASignature) {
  TestFake fake(GatewayConfig(IngressRouteMode::kWildcard));
  const std::string id = fake.CreateSandbox(R"("secureAccess":true)");
  ASSERT_TRUE(WaitRunning(fake, id));
  Endpoint plain = GetEndpoint(fake, id, "44772");
  const std::string token = plain.headers.find("OpenSandbox-Secure-Access")->second;

  Answer passed = Fetch(fake, plain, "/ping");
  EXPECT_EQ(passed.status, 200) << "with the access header";
  EXPECT_EQ(passed.powered_by, "OpenSandbox-ingress");
  Answer refused = Fetch(fake, Endpoint{plain.endpoint, {}}, "/ping");
  EXPECT_EQ(refused.status, 401);
  EXPECT_EQ(refused.body, "OpenSandbox Ingress: signature: signature required for this sandbox\n");
  EXPECT_EQ(refused.content_type, "text/plain; charset=utf-8");
  EXPECT_EQ(Fetch(fake, Endpoint{plain.endpoint, {{"OpenSandbox-Secure-Access", token + "x"}}}, "/ping").body,
            "OpenSandbox Ingress: signature: secure access header mismatch\n");

  const uint64_t expires = static_cast<uint64_t>(Now() + 120);
  Endpoint signed_route = GetEndpoint(fake, id, "44772", "?expires=" + std::to_string(expires));
  EXPECT_EQ(Fetch(fake, signed_route, "/ping").status, 200) << "a signed route needs no header";
  // A header that is there is what counts, even beside a good signature.
  EXPECT_EQ(Fetch(fake, signed_route, "/ping", {{"OpenSandbox-Secure-Access", "wrong"}}).status, 401);

  auto with_token = [&](const std::string& route) {
    Endpoint e = signed_route;
    e.endpoint = route + e.endpoint.substr(e.endpoint.find('.'));
    return e;
  };
  const std::string sig = RouteSignature(kSecret, 'a', id, 44772, expires);
  std::string tampered = sig;
  tampered[0] = tampered[0] == '0' ? '1' : '0';
  EXPECT_EQ(Fetch(fake, with_token(id + "-44772-" + Base36(expires) + "-" + tampered), "/ping").body,
            "OpenSandbox Ingress: signature: unauthorized: signature mismatch\n");
  EXPECT_EQ(Fetch(fake, with_token(id + "-44772-" + Base36(expires + 1) + "-" + sig), "/ping").status, 401)
      << "a later expiry under the same signature";
  EXPECT_EQ(Fetch(fake, with_token(id + "-8080-" + Base36(expires) + "-" + sig), "/ping").status, 401)
      << "another port under the same signature";
  EXPECT_EQ(Fetch(fake, with_token(id + "-44772-" + Base36(expires) + "-" + sig.substr(0, 8) + "z"), "/ping").body,
            "OpenSandbox Ingress: signature: unauthorized: unknown signed_key_id\n");
  // A route signed with the other key the gateway knows (a key being rotated out) holds.
  EXPECT_EQ(Fetch(fake, with_token(SignedRouteToken("other", 'b', id, 44772, expires)), "/ping").status, 200);

  // Expiry is inclusive: valid through the second `expires` names, refused after.
  auto clock_at = [&](uint64_t second) {
    return fake.lifecycle->Post("/_fake/faults", "{\"gateway_clock_at_s\":" + std::to_string(second) + "}",
                                "application/json");
  };
  ASSERT_TRUE(clock_at(expires));
  EXPECT_EQ(Fetch(fake, signed_route, "/ping").status, 200);
  ASSERT_TRUE(clock_at(expires + 1));
  EXPECT_EQ(Fetch(fake, signed_route, "/ping").body, "OpenSandbox Ingress: signature: access expired\n");
  EXPECT_EQ(Fetch(fake, plain, "/ping").status, 200) << "the access header does not expire";
  fake.lifecycle->Delete("/_fake/faults");

  Answer unknown = Fetch(fake, Endpoint{"nope-44772.localhost:1", {}}, "/ping");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(unknown.body, "OpenSandbox Ingress: sandbox not found: nope\n");
  EXPECT_EQ(Fetch(fake, Endpoint{"127.0.0.1:1", {}}, "/ping").status, 400) << "no route in the name";
  ASSERT_EQ(fake.lifecycle->Post(("/v1/sandboxes/" + id + "/pause").c_str())->status, 202);
  Answer paused = Fetch(fake, plain, "/ping");
  EXPECT_EQ(paused.status, 503);
  EXPECT_EQ(paused.body.rfind("OpenSandbox Ingress: sandbox not ready: ", 0), 0u) << paused.body;
}

TEST(IngressGatewayTest, ASandboxThatIsNotSecureIsOpenAndItsSignaturesAreNotRead) {
  TestFake fake(GatewayConfig(IngressRouteMode::kWildcard));
  const std::string id = fake.CreateSandbox();
  ASSERT_TRUE(WaitRunning(fake, id));
  Endpoint plain = GetEndpoint(fake, id, "44772");
  EXPECT_EQ(Fetch(fake, plain, "/ping").status, 200);
  Endpoint e = plain;
  e.endpoint = id + "-44772-" + Base36(100) + "-00000000a" + plain.endpoint.substr(plain.endpoint.find('.'));
  EXPECT_EQ(Fetch(fake, e, "/ping").status, 200) << "expired and wrongly signed, but not looked at";
  const auto stats = ParseJson(fake.lifecycle->Get("/_fake/stats")->body);
  EXPECT_EQ(stats["gateway_requests"].GetUint64(), 2u);
}

TEST(IngressGatewayTest, UriModeStripsTheRouteAndHeaderModeReadsTheHeader) {
  {
    TestFake fake(GatewayConfig(IngressRouteMode::kUri));
    const std::string secure = fake.CreateSandbox(R"("secureAccess":true)");
    const std::string open = fake.CreateSandbox();
    ASSERT_TRUE(WaitRunning(fake, secure) && WaitRunning(fake, open));
    EXPECT_EQ(Fetch(fake, GetEndpoint(fake, secure, "44772"), "/ping").status, 200);
    const std::string expires = std::to_string(Now() + 120);
    Endpoint signed_route = GetEndpoint(fake, secure, "44772", "?expires=" + expires);
    EXPECT_EQ(Fetch(fake, signed_route, "/ping").status, 200);
    // The server signs for a sandbox that is not secure too, but the gateway reads such a
    // path as a plain route: the signature's segments become the path passed on.
    Endpoint open_signed = GetEndpoint(fake, open, "44772", "?expires=" + expires);
    Answer misrouted = Fetch(fake, open_signed, "/ping");
    EXPECT_EQ(misrouted.status, 404);
    EXPECT_EQ(misrouted.body.rfind("OpenSandbox Ingress:", 0), std::string::npos) << "execd's 404, not the gateway's";
    EXPECT_EQ(misrouted.powered_by, "OpenSandbox-ingress");
    EXPECT_EQ(Fetch(fake, GetEndpoint(fake, open, "44772"), "/ping").status, 200);
    Answer bad = Fetch(fake, Endpoint{"127.0.0.1:1/only-one-segment", {}}, "");
    EXPECT_EQ(bad.status, 400);
    EXPECT_EQ(bad.body.rfind("OpenSandbox Ingress: invalid ingress route: invalid URI path format", 0), 0u) << bad.body;
  }
  {
    TestFake fake(GatewayConfig(IngressRouteMode::kHeader));
    const std::string id = fake.CreateSandbox(R"("secureAccess":true)");
    ASSERT_TRUE(WaitRunning(fake, id));
    Endpoint plain = GetEndpoint(fake, id, "44772");
    EXPECT_EQ(Fetch(fake, plain, "/ping").status, 200);
    EXPECT_EQ(Fetch(fake, Endpoint{plain.endpoint, Without(plain.headers, "OpenSandbox-Ingress-To")}, "/ping").status,
              400)
        << "the Host 127.0.0.1:<port> names no sandbox";
    Endpoint signed_route = GetEndpoint(fake, id, "44772", "?expires=" + std::to_string(Now() + 120));
    EXPECT_EQ(Fetch(fake, signed_route, "/ping").status, 200);
    EXPECT_EQ(Fetch(fake, Endpoint{signed_route.endpoint, {}}, "/ping").status, 400) << "without its header";
  }
}

// The gateway passes a request on without its route and access headers
// (docs/opensandbox.md §1.10): what listens on a sandbox's port never sees the token
// that opens the sandbox. Every other header passes.
TEST(IngressGatewayTest, TheRouteAndAccessHeadersStopAtTheGateway) {
  std::mutex mu;
  httplib::Headers seen;
  // A program listening on a port of the sandbox: the fake's sandboxes reach such a port
  // on the loopback, through execd's /proxy/<P>.
  struct PortProgram {
    httplib::Server server;
    std::thread loop;
    ~PortProgram() {
      server.stop();
      if (loop.joinable()) loop.join();
    }
  } app;
  app.server.Get("/hello", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mu);
    seen = req.headers;
    res.set_content("hello", "text/plain");
  });
  const int port = app.server.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  app.loop = ListenInBackground(app.server);
  for (IngressRouteMode mode : {IngressRouteMode::kHeader, IngressRouteMode::kWildcard, IngressRouteMode::kUri}) {
    SCOPED_TRACE(static_cast<int>(mode));
    TestFake fake(GatewayConfig(mode));
    const std::string id = fake.CreateSandbox(R"("secureAccess":true)");
    ASSERT_TRUE(WaitRunning(fake, id));
    Endpoint endpoint = GetEndpoint(fake, id, std::to_string(port));
    ASSERT_EQ(endpoint.headers.count("OpenSandbox-Secure-Access"), 1u);
    httplib::Headers extra = {{"X-Agent-Trace", "kept"}};
    // In uri mode the route is the path, and a route header besides is not read.
    if (mode == IngressRouteMode::kUri) extra.emplace("OpenSandbox-Ingress-To", id + "-" + std::to_string(port));
    Answer answer = Fetch(fake, endpoint, "/hello", extra);
    ASSERT_EQ(answer.status, 200) << answer.body;
    EXPECT_EQ(answer.body, "hello");
    std::lock_guard<std::mutex> lock(mu);
    EXPECT_EQ(seen.count("OpenSandbox-Secure-Access"), 0u) << "the sandbox's access token reached its port";
    EXPECT_EQ(seen.count("OpenSandbox-Ingress-To"), 0u);
    EXPECT_EQ(seen.count("X-Agent-Trace"), 1u) << "a header of the client's own is passed on";
    seen.clear();
  }
}

// A gateway without keys of its own cannot check a signed route to a secure sandbox.
TEST(IngressGatewayTest, AGatewayWithoutKeysCannotVerify) {
  TestFake fake(GatewayConfig(IngressRouteMode::kWildcard, /*keys=*/false));
  const std::string id = fake.CreateSandbox(R"("secureAccess":true)");
  ASSERT_TRUE(WaitRunning(fake, id));
  Endpoint plain = GetEndpoint(fake, id, "44772");
  Endpoint e{SignedRouteToken(kSecret, 'a', id, 44772, static_cast<uint64_t>(Now() + 60)) +
                 plain.endpoint.substr(plain.endpoint.find('.')),
             {}};
  Answer refused = Fetch(fake, e, "/ping");
  EXPECT_EQ(refused.status, 503);
  EXPECT_EQ(refused.body, "OpenSandbox Ingress: signature: ingress verifier not configured\n");
}

}  // namespace
}  // namespace fake_opensandbox
