// A Kubernetes server behind its ingress gateway, end to end (docs/epp1.md "ports.url",
// docs/mapping.md "Signed URLs"): commands, files and terminals reach execd through the
// gateway in each route mode, with a secure sandbox's access header; ports.url
// {expires} gives a signed URL that works with no header until expires_at and not
// after, and is refused where the server or the sandbox cannot give one; the typed API
// (through the CLI's `url`) gives the same.

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <ctime>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/base64_encode.h"
#include "tests/e2e/harness.h"

namespace abx::e2e {
namespace {

using Clock = std::chrono::steady_clock;

constexpr char kKeys[] = "a=c2lnbmluZy1rZXktb2YtdGhlLWUyZS1zdWl0ZQ==";  // "signing-key-of-the-e2e-suite"
constexpr char kSecure[] = R"({"template":"base","secure":true})";

// A port nothing listens on now (the kernel's pick, released).
int FreePort() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  ::bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof address);
  socklen_t length = sizeof address;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length);
  ::close(fd);
  return ntohs(address.sin_port);
}

// GET `url` + `path` as a browser would: the name in Host, the connection to the
// loopback (the fake's gateway names are 127.0.0.1 and *.localhost).
HttpResponse Browse(const std::string& url, const std::string& path,
                    const std::vector<std::pair<std::string, std::string>>& headers = {}) {
  const std::string rest = url.substr(url.find("://") + 3);
  const std::string host = rest.substr(0, rest.find('/'));
  const std::string prefix = rest.find('/') == std::string::npos ? "" : rest.substr(rest.find('/'));
  const int port = std::stoi(host.substr(host.rfind(':') + 1));
  auto all = headers;
  all.emplace_back("Host", host);
  return HttpRequest(port, "GET", prefix + path, all, "", Millis(10000));
}

class GatewayTest : public TestEnv {
 protected:
  MessagePtr Call(EppSession* shim, const std::string& method, const std::string& params) {
    MessagePtr response = shim->Request(method, params, Millis(30000));
    if (!response) ADD_FAILURE() << "no answer to " << method << " " << Abbreviate(params, 300);
    return response;
  }
  MessagePtr Ok(EppSession* shim, const std::string& method, const std::string& params) {
    MessagePtr r = Call(shim, method, params);
    if (r && r->IsError()) ADD_FAILURE() << method << " failed: " << r->raw;
    return r;
  }
  MessagePtr Url(EppSession* shim, const std::string& id, int port, std::optional<int> expires = std::nullopt) {
    JsonObject params;
    params.Str("sandbox_id", id).Int("port", port);
    if (expires) params.Int("expires", *expires);
    return Call(shim, "ports.url", params.str());
  }
  bool StartGateway(const std::string& mode, bool keys = true) {
    std::vector<std::string> flags = {"--runtime", "kubernetes", "--ingress-gateway", mode};
    if (keys) flags.insert(flags.end(), {"--secure-access-keys", kKeys});
    return RestartFake(flags);
  }
  // Serves `text` as /hello.txt on a free port of the sandbox (Python's http.server,
  // started with exec.start); the port.
  int ServeHello(EppSession* shim, const std::string& id, const std::string& text) {
    if (!Ok(shim, "files.write", JsonObject().Str("sandbox_id", id).Str("path", "/srv/www/hello.txt").Str("data", text).str())) {
      return 0;
    }
    const int port = FreePort();
    MessagePtr started = Ok(shim, "exec.start",
                            JsonObject()
                                .Str("sandbox_id", id)
                                .Str("command", "cd /srv/www && exec /usr/bin/python3 -m http.server " +
                                                    std::to_string(port) + " --bind 127.0.0.1")
                                .str());
    return started && !started->IsError() ? port : 0;
  }
  // Waits until `url` serves /hello.txt (the server in the sandbox is up).
  HttpResponse WaitServed(const std::string& url, const std::vector<std::pair<std::string, std::string>>& headers) {
    HttpResponse got;
    const auto deadline = Clock::now() + Millis(15000);
    while (Clock::now() < deadline) {
      got = Browse(url, "/hello.txt", headers);
      if (got.status == 200) break;
      std::this_thread::sleep_for(Millis(100));
    }
    return got;
  }
};

TEST_F(GatewayTest, CommandsFilesAndTerminalsGoThroughTheGatewayInEachRouteMode) {
  REQUIRE_FAKE("a Kubernetes server behind the fake's ingress gateway");
  for (const std::string mode : {"wildcard", "uri", "header"}) {
    SCOPED_TRACE("route mode " + mode);
    ASSERT_TRUE(StartGateway(mode));
    EppSession* shim = StartInitializedShim();
    ASSERT_NE(shim, nullptr);
    const auto before = fake().Stats();
    const std::string id = CreateSandbox(shim, kSecure);
    ASSERT_FALSE(id.empty());
    MessagePtr r = Ok(shim, "exec.run", JsonObject().Str("sandbox_id", id).Str("command", "echo via-" + mode).str());
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(GetString(r->result(), "stdout"), "via-" + mode + "\n") << r->raw;
    ASSERT_NE(Ok(shim, "files.write", JsonObject().Str("sandbox_id", id).Str("path", "/g.txt").Str("data", mode).str()),
              nullptr);
    r = Ok(shim, "files.read", JsonObject().Str("sandbox_id", id).Str("path", "/g.txt").str());
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(GetString(r->result(), "data"), mode);
    // A terminal: a WebSocket through the gateway.
    r = Ok(shim, "pty.open", JsonObject().Str("sandbox_id", id).str());
    ASSERT_NE(r, nullptr);
    const std::string pty = GetString(r->result(), "pty_id");
    ASSERT_NE(Ok(shim, "pty.input", JsonObject().Str("sandbox_id", id).Str("pty_id", pty).Str("data", "echo gw-$((40+2))\n").str()),
              nullptr);
    std::string seen;
    const auto deadline = Clock::now() + Millis(15000);
    while (seen.find("gw-42") == std::string::npos && Clock::now() < deadline) {
      std::this_thread::sleep_for(Millis(50));
      seen.clear();
      for (const MessagePtr& n : shim->NotificationsByMethod("pty.output")) seen += Unbase64(GetString(n->params(), "data"));
    }
    EXPECT_NE(seen.find("gw-42"), std::string::npos) << seen;
    Ok(shim, "pty.close", JsonObject().Str("sandbox_id", id).Str("pty_id", pty).str());
    const auto after = fake().Stats();
    ASSERT_TRUE(before && after);
    EXPECT_GT(after->gateway_requests, before->gateway_requests + 3) << "execd was not reached through the gateway";

  }
}

TEST_F(GatewayTest, ASignedUrlWorksWithoutHeadersUntilItExpires) {
  REQUIRE_FAKE("the fake's ingress gateway and its clock");
  for (const std::string mode : {"wildcard", "uri"}) {
    SCOPED_TRACE("route mode " + mode);
    ASSERT_TRUE(StartGateway(mode));
    EppSession* shim = StartInitializedShim();
    ASSERT_NE(shim, nullptr);
    const std::string id = CreateSandbox(shim, kSecure);
    ASSERT_FALSE(id.empty());
    const int port = ServeHello(shim, id, "hello from " + mode);
    ASSERT_NE(port, 0);

    // The plain URL needs the sandbox's access header.
    MessagePtr plain = Url(shim, id, port);
    ASSERT_NE(plain, nullptr);
    ASSERT_FALSE(plain->IsError()) << plain->raw;
    const std::string token = GetString(plain->result(), "headers.OpenSandbox-Secure-Access");
    EXPECT_EQ(WaitServed(GetString(plain->result(), "url"), {{"OpenSandbox-Secure-Access", token}}).body,
              "hello from " + mode);
    EXPECT_EQ(Browse(GetString(plain->result(), "url"), "/hello.txt").status, 401);

    MessagePtr r = Url(shim, id, port, 60);
    ASSERT_NE(r, nullptr);
    ASSERT_FALSE(r->IsError()) << r->raw;
    const std::string url = GetString(r->result(), "url");
    const rapidjson::Value* headers = Find(r->result(), "headers");
    ASSERT_TRUE(headers && headers->IsObject());
    EXPECT_EQ(headers->MemberCount(), 0u) << "a signed URL needs no header: " << r->raw;
    // 60 s from the server's now (the fake's clock is this machine's).
    const std::string expires_at = GetString(r->result(), "expires_at");
    std::tm parts{};
    const char* end = strptime(expires_at.c_str(), "%Y-%m-%dT%H:%M:%S", &parts);
    ASSERT_NE(end, nullptr) << r->raw;
    EXPECT_TRUE(*end == 'Z' || *end == '.') << r->raw;
    EXPECT_NEAR(static_cast<double>(timegm(&parts)), static_cast<double>(std::time(nullptr) + 60), 3) << r->raw;
    HttpResponse got = Browse(url, "/hello.txt");
    EXPECT_EQ(got.status, 200);
    EXPECT_EQ(got.body, "hello from " + mode);

    // Altered: another digit in the signature.
    std::string tampered = url;
    const size_t sig = mode == "uri" ? tampered.rfind('/') + 1 : tampered.find('.') - 9;
    tampered[sig] = tampered[sig] == '0' ? '1' : '0';
    got = Browse(tampered, "/hello.txt");
    EXPECT_EQ(got.status, 401);
    EXPECT_EQ(got.body, "OpenSandbox Ingress: signature: unauthorized: signature mismatch\n");

    // The gateway's clock 50 s on: still valid; 70 s on (past the 60 asked for): expired.
    ASSERT_TRUE(fake().SetFaults(R"({"gateway_clock_ahead_s":50})"));
    EXPECT_EQ(Browse(url, "/hello.txt").status, 200);
    ASSERT_TRUE(fake().SetFaults(R"({"gateway_clock_ahead_s":70})"));
    got = Browse(url, "/hello.txt");
    EXPECT_EQ(got.status, 401);
    EXPECT_EQ(got.body, "OpenSandbox Ingress: signature: access expired\n");
    ASSERT_TRUE(fake().ClearFaults());
  }
}

TEST_F(GatewayTest, SignedUrlsAreRefusedWhereTheyCannotWorkBare) {
  REQUIRE_FAKE("servers of each kind");
  auto expect_error = [&](EppSession* shim, const std::string& id, int port, std::optional<int> expires,
                          const std::string& code, const std::string& field_or_words) {
    MessagePtr r = Url(shim, id, port, expires);
    ASSERT_NE(r, nullptr);
    ASSERT_TRUE(r->IsError()) << r->raw;
    if (code == "-32602") {
      EXPECT_EQ(r->ErrorCode(), -32602) << r->raw;
      EXPECT_EQ(GetString(r->error(), "data.field"), field_or_words) << r->raw;
    } else {
      EXPECT_EQ(r->EppCode(), code) << r->raw;
      EXPECT_NE(r->ErrorMessage().find(field_or_words), std::string::npos) << r->raw;
    }
  };
  {
    SCOPED_TRACE("a Docker server");
    EppSession* shim = StartInitializedShim();
    ASSERT_NE(shim, nullptr);
    const std::string id = CreateSandbox(shim);
    ASSERT_FALSE(id.empty());
    const auto sent = UpstreamRequestsDuring([&] {
      expect_error(shim, id, 8080, 59, "-32602", "expires");
      expect_error(shim, id, 8080, 604801, "-32602", "expires");
      expect_error(shim, id, 44772, 60, "-32602", "port");
      expect_error(shim, id, 18080, 60, "-32602", "port");
    });
    EXPECT_EQ(sent, 0) << "refused before anything is sent";
    EppSession* proxied = StartInitializedShim({{"ABX_OPENSANDBOX_USE_SERVER_PROXY", "true"}});
    ASSERT_NE(proxied, nullptr);
    EXPECT_EQ(UpstreamRequestsDuring([&] { expect_error(proxied, id, 8080, 60, "-32602", "expires"); }), 0);
    MessagePtr r = Call(shim, "ports.url", JsonObject().Str("sandbox_id", id).Int("port", 8080).Str("expires", "60").str());
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->ErrorCode(), -32602) << r->raw;
    expect_error(shim, id, 8080, 60, "E8007", "its runtime is Docker");
  }
  // Servers and sandboxes that cannot give a URL that works bare and expires.
  struct Case {
    const char* what;
    std::vector<std::string> fake_flags;
    const char* create;
    const char* words;  // in the E8007's message
  };
  const std::vector<std::string> k8s = {"--runtime", "kubernetes"};
  const std::vector<Case> cases = {
      {"a Kubernetes server without the gateway", k8s, R"({"template":"base"})", "not in gateway mode"},
      {"a server before signed routes, which ignores expires",
       {"--runtime", "kubernetes", "--ingress-gateway", "wildcard", "--secure-access-keys", kKeys, "--no-signed-routes"},
       kSecure, "answered the plain endpoint"},
      {"a gateway without signing keys", {"--runtime", "kubernetes", "--ingress-gateway", "wildcard"}, kSecure,
       "no secure_access signing keys"},
      {"a gateway in header route mode",
       {"--runtime", "kubernetes", "--ingress-gateway", "header", "--secure-access-keys", kKeys}, kSecure,
       "route mode header"},
      {"a sandbox created without secure_access",
       {"--runtime", "kubernetes", "--ingress-gateway", "wildcard", "--secure-access-keys", kKeys},
       R"({"template":"base"})", "not created with secure_access"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    ASSERT_TRUE(RestartFake(c.fake_flags));
    EppSession* shim = StartInitializedShim();
    ASSERT_NE(shim, nullptr);
    const std::string id = CreateSandbox(shim, c.create);
    ASSERT_FALSE(id.empty());
    expect_error(shim, id, 8080, 60, "E8007", c.words);
    if (c.create == kSecure) continue;
    // A sandbox that is not secure needs no header at its plain URL: open to anyone.
    MessagePtr plain = Url(shim, id, 8080);
    ASSERT_NE(plain, nullptr);
    EXPECT_FALSE(plain->IsError()) << plain->raw;
    EXPECT_EQ(Find(plain->result(), "headers")->MemberCount(), 0u) << "open to anyone: " << plain->raw;
  }
}

// The typed door, as a person uses it: `abx-opensandbox-bridge url SANDBOX PORT
// [--expires S]` asks the bridge's Ports service.
TEST_F(GatewayTest, TheBridgeCliPrintsPlainAndSignedUrls) {
  REQUIRE_FAKE("the fake's ingress gateway");
  ASSERT_TRUE(StartGateway("wildcard"));
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  const std::string id = CreateSandbox(shim, kSecure);
  ASSERT_FALSE(id.empty());
  const int port = ServeHello(shim, id, "hello from the cli");
  ASSERT_NE(port, 0);
  auto url = [&](std::vector<std::string> words, std::string* output) {
    std::vector<std::string> argv = {BridgeBinary(), "url", id};
    argv.insert(argv.end(), words.begin(), words.end());
    argv.insert(argv.end(), {"--socket", socket_path()});
    auto status = RunCommand(argv, ShimEnv(), Millis(30000), output);
    return status && status->exited ? status->code : -1;
  };
  std::string output;
  ASSERT_EQ(url({std::to_string(port)}, &output), 0) << output;
  const std::string plain_url = output.substr(0, output.find('\n'));
  const size_t header = output.find("\nOpenSandbox-Secure-Access: ");
  ASSERT_NE(header, std::string::npos) << output;
  const std::string token = output.substr(header + 28, 32);
  EXPECT_EQ(WaitServed(plain_url, {{"OpenSandbox-Secure-Access", token}}).body, "hello from the cli");

  ASSERT_EQ(url({std::to_string(port), "--expires", "120"}, &output), 0) << output;
  const std::string signed_url = output.substr(0, output.find('\n'));
  EXPECT_NE(output.find("\nexpires_at 20"), std::string::npos) << output;
  EXPECT_EQ(output.find("OpenSandbox-Secure-Access"), std::string::npos) << output;
  EXPECT_EQ(Browse(signed_url, "/hello.txt").body, "hello from the cli");

  EXPECT_EQ(url({"44772", "--expires", "120"}, &output), 1) << output;
  EXPECT_NE(output.find("execd"), std::string::npos) << output;
  EXPECT_EQ(url({"70000"}, &output), 2) << output;
  EXPECT_EQ(url({std::to_string(port), "--expires", "soon"}, &output), 2) << output;
}

}  // namespace
}  // namespace abx::e2e
