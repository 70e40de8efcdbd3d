// The sandbox.network extension end to end (docs/epp1.md §3, docs/mapping.md,
// network.policy.*): a sandbox created with a network policy has the server's egress
// sidecar, whose rules the shim reads and changes through the bridge, at the endpoint of
// port 18080 and through the server proxy, on a Docker and a Kubernetes server; the
// targets are checked before anything is sent; the sidecar's token stays a secret.

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/harness.h"

namespace abx::e2e {
namespace {

constexpr char kPolicy[] =
    R"({"template":"base","provider_options":{"network_policy":)"
    R"({"default_action":"deny","egress":[{"action":"allow","target":"pypi.org"}]}}})";

class NetworkTest : public TestEnv {
 protected:
  MessagePtr Call(EppSession* shim, const std::string& method, const std::string& params) {
    MessagePtr response = shim->Request(method, params, Millis(20000));
    if (!response) ADD_FAILURE() << "no answer to " << method << " " << Abbreviate(params, 300);
    return response;
  }
  MessagePtr Ok(EppSession* shim, const std::string& method, const std::string& params) {
    MessagePtr r = Call(shim, method, params);
    if (r && r->IsError()) ADD_FAILURE() << method << " failed: " << r->raw;
    return r;
  }
  MessagePtr Get(EppSession* shim, const std::string& id) {
    return Call(shim, "network.policy.get", JsonObject().Str("sandbox_id", id).str());
  }
  MessagePtr Patch(EppSession* shim, const std::string& id, const std::string& rules) {
    return Call(shim, "network.policy.patch", JsonObject().Str("sandbox_id", id).Raw("rules", rules).str());
  }
  MessagePtr Delete(EppSession* shim, const std::string& id, const std::string& targets) {
    return Call(shim, "network.policy.delete", JsonObject().Str("sandbox_id", id).Raw("targets", targets).str());
  }

  // "action target" of each rule, in order.
  static std::vector<std::string> Rules(const MessagePtr& r) {
    std::vector<std::string> out;
    const rapidjson::Value* rules = r ? Find(r->result(), "rules") : nullptr;
    if (!rules || !rules->IsArray()) return {"<no rules: " + (r ? r->raw : std::string("no answer")) + ">"};
    for (const auto& rule : rules->GetArray()) out.push_back(GetString(rule, "action") + " " + GetString(rule, "target"));
    return out;
  }

  // The sidecar's token, as the server hands it out.
  std::string SidecarToken(const std::string& id) {
    HttpResponse endpoint = fake().Http("GET", "/v1/sandboxes/" + id + "/endpoints/18080");
    rapidjson::Document doc;
    doc.Parse(endpoint.body.c_str());
    return doc.IsObject() ? GetString(doc, "headers.OPENSANDBOX-EGRESS-AUTH") : "";
  }

  // Reads, changes and removes rules on a sandbox of `shim`, and a second shim through
  // the server proxy sees the same.
  void ExpectRulesCanChange(EppSession* shim) {
    const std::string id = CreateSandbox(shim, kPolicy);
    ASSERT_FALSE(id.empty());
    MessagePtr r = Get(shim, id);
    ASSERT_NE(r, nullptr);
    ASSERT_FALSE(r->IsError()) << r->raw;
    EXPECT_EQ(GetString(r->result(), "mode"), "enforcing") << r->raw;
    EXPECT_EQ(GetString(r->result(), "enforcement"), "dns") << r->raw;
    EXPECT_EQ(GetString(r->result(), "default_action"), "deny") << r->raw;
    EXPECT_EQ(Rules(r), (std::vector<std::string>{"allow pypi.org"}));

    r = Patch(shim, id, R"([{"action":"deny","target":"PyPI.org"},{"action":"allow","target":"*.pythonhosted.org"}])");
    EXPECT_EQ(Rules(r), (std::vector<std::string>{"deny PyPI.org", "allow *.pythonhosted.org"}))
        << "a rule replaces the one with the same target, whatever its case";
    EXPECT_EQ(GetString(r->result(), "default_action"), "deny");

    r = Delete(shim, id, R"(["*.PYTHONHOSTED.org","nothing.example"])");
    EXPECT_EQ(Rules(r), (std::vector<std::string>{"deny PyPI.org"})) << "an unknown target is ignored";

    EppSession* proxied = StartInitializedShim({{"ABX_OPENSANDBOX_USE_SERVER_PROXY", "true"}});
    ASSERT_NE(proxied, nullptr);
    r = Patch(proxied, id, R"([{"action":"allow","target":"10.1.0.0/16"}])");
    EXPECT_EQ(Rules(r), (std::vector<std::string>{"allow 10.1.0.0/16", "deny PyPI.org"}))
        << "through the server proxy, which drops the endpoint's headers";
    EXPECT_EQ(Rules(Get(shim, id)), Rules(r));
    r = Delete(proxied, id, R"(["10.1.0.0/16","pypi.org"])");
    EXPECT_TRUE(Rules(r).empty()) << r->raw;
    EXPECT_EQ(GetString(r->result(), "mode"), "deny_all") << r->raw;
  }
};

TEST_F(NetworkTest, RulesAreReadChangedAndRemovedOnADockerServer) {
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  ExpectRulesCanChange(shim);
}

TEST_F(NetworkTest, RulesAreReadChangedAndRemovedOnAKubernetesServer) {
  REQUIRE_FAKE("a Kubernetes runtime (--runtime kubernetes)");
  ASSERT_TRUE(RestartFake({"--runtime", "kubernetes"}));
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  ExpectRulesCanChange(shim);
}

TEST_F(NetworkTest, RulesAreCheckedBeforeAnythingIsSent) {
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  const std::string id = CreateSandbox(shim, kPolicy);
  ASSERT_FALSE(id.empty());
  struct Case {
    const char* method;
    std::string list;
    const char* field;
  };
  std::string many = "[";
  for (int i = 0; i <= 4096; ++i) many += std::string(i ? "," : "") + R"({"action":"allow","target":"h)" + std::to_string(i) + R"(.example"})";
  many += "]";
  const std::vector<Case> cases = {
      {"network.policy.patch", R"([{"action":"allow","target":"ok.org"},{"action":"allow","target":"not a host!"}])", "rules[1].target"},
      {"network.policy.patch", R"([{"action":"block","target":"ok.org"}])", "rules[0].action"},
      {"network.policy.patch", R"([{"action":"allow","target":"pypi.*"}])", "rules[0].target"},
      {"network.policy.patch", R"([{"action":"allow","target":"10.0.0.0/33"}])", "rules[0].target"},
      {"network.policy.patch", R"([{"action":"allow"}])", "rules[0].target"},
      {"network.policy.patch", "[]", "rules"},
      {"network.policy.patch", many, "rules"},
      {"network.policy.delete", R"(["ok.org","a b"])", "targets[1]"},
      {"network.policy.delete", "[]", "targets"},
  };
  for (const Case& c : cases) {
    MessagePtr r;
    auto sent = UpstreamRequestsDuring([&] {
      r = Call(shim, c.method,
               JsonObject().Str("sandbox_id", id).Raw(std::string(c.method) == "network.policy.patch" ? "rules" : "targets", c.list).str());
    });
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->ErrorCode(), -32602) << r->raw;
    EXPECT_EQ(GetString(r->error(), "data.field"), c.field) << r->raw;
    if (sent) {
      EXPECT_EQ(*sent, 0) << c.field << ": nothing may be sent";
    }
  }
  EXPECT_EQ(Rules(Get(shim, id)), (std::vector<std::string>{"allow pypi.org"}));
  MessagePtr create = Call(shim, "sandbox.create",
                           R"({"template":"base","provider_options":{"network_policy":)"
                           R"({"egress":[{"action":"allow","target":"pypi.org."}]}}})");
  ASSERT_NE(create, nullptr);
  EXPECT_EQ(create->ErrorCode(), -32602) << create->raw;
  EXPECT_NE(create->ErrorMessage().find("network_policy.egress[0].target"), std::string::npos) << create->raw;
}

TEST_F(NetworkTest, ASandboxWithoutAPolicyHasNoRulesToChange) {
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  const std::string id = CreateSandbox(shim);
  ASSERT_FALSE(id.empty());
  MessagePtr r = Get(shim, id);
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->EppCode(), "E8007") << r->raw;
  EXPECT_NE(r->ErrorMessage().find("network_policy"), std::string::npos) << r->raw;
  r = Get(shim, "no-such-sandbox");
  EXPECT_EQ(r->EppCode(), "E8005") << r->raw;
}

TEST_F(NetworkTest, TheSidecarsTokenIsNeverShown) {
  REQUIRE_FAKE("the sidecar's token, read from the fake");
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  const std::string id = CreateSandbox(shim, kPolicy);
  ASSERT_FALSE(id.empty());
  const std::string token = SidecarToken(id);
  ASSERT_EQ(token.size(), 32u);
  std::vector<MessagePtr> answers = {Get(shim, id), Patch(shim, id, R"([{"action":"allow","target":"a.org"}])"),
                                     Delete(shim, id, R"(["a.org"])"),
                                     Call(shim, "ports.url", JsonObject().Str("sandbox_id", id).Int("port", 8080).str()),
                                     Call(shim, "provider.info", "{}")};
  // The sidecar's port is not handed out: its endpoint's headers are its token.
  MessagePtr port = Call(shim, "ports.url", JsonObject().Str("sandbox_id", id).Int("port", 18080).str());
  ASSERT_NE(port, nullptr);
  EXPECT_EQ(port->ErrorCode(), -32602) << port->raw;
  EXPECT_EQ(GetString(port->error(), "data.field"), "port") << port->raw;
  answers.push_back(port);
  ASSERT_TRUE(fake().SetFaults(R"({"error_rate":1.0})"));
  answers.push_back(Get(shim, id));  // an error's message
  ASSERT_TRUE(fake().ClearFaults());
  for (const MessagePtr& r : answers) {
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->raw.find(token), std::string::npos) << r->raw;
  }
  EXPECT_EQ(ReadFile(bridge_log_path()).find(token), std::string::npos) << "the bridge's log";
}

TEST_F(NetworkTest, APausedSandboxsRulesWaitForItsResume) {
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  const std::string id = CreateSandbox(shim, kPolicy);
  ASSERT_FALSE(id.empty());
  ASSERT_NE(Ok(shim, "sandbox.pause", JsonObject().Str("sandbox_id", id).str()), nullptr);
  MessagePtr r = Patch(shim, id, R"([{"action":"allow","target":"a.org"}])");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->EppCode(), "E8007") << r->raw;
  EXPECT_NE(r->ErrorMessage().find("Paused"), std::string::npos) << r->raw;
  ASSERT_NE(Ok(shim, "sandbox.resume", JsonObject().Str("sandbox_id", id).str()), nullptr);
  EXPECT_EQ(Rules(Get(shim, id)), (std::vector<std::string>{"allow pypi.org"})) << "the refused change was not made";
}

TEST_F(NetworkTest, APodsSidecarNeverGetsExecdsToken) {
  REQUIRE_FAKE("a Kubernetes runtime whose execd wants a token");
  constexpr char kExecdToken[] = "e2e-Execd-Token-7d21";
  ASSERT_TRUE(RestartFake({"--runtime", "kubernetes", "--execd-token", kExecdToken}));
  for (const char* proxy : {"false", "true"}) {
    SCOPED_TRACE(std::string("use_server_proxy ") + proxy);
    EppSession* shim = StartInitializedShim(
        {{"ABX_OPENSANDBOX_EXECD_ACCESS_TOKEN", kExecdToken}, {"ABX_OPENSANDBOX_USE_SERVER_PROXY", proxy}});
    ASSERT_NE(shim, nullptr);
    const std::string id = CreateSandbox(shim, kPolicy);
    ASSERT_FALSE(id.empty());
    EXPECT_EQ(Rules(Patch(shim, id, R"([{"action":"allow","target":"a.org"}])")),
              (std::vector<std::string>{"allow a.org", "allow pypi.org"}));
    auto stats = fake().Stats();
    ASSERT_TRUE(stats.has_value());
    EXPECT_EQ(stats->egress_requests_with_execd_token, 0);
  }
}

TEST_F(NetworkTest, TheSidecarsRuleLimitIsE8008) {
  REQUIRE_FAKE("a sidecar with a small rule limit (--egress-max-rules)");
  ASSERT_TRUE(RestartFake({"--egress-max-rules", "2"}));
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  const std::string id = CreateSandbox(shim, kPolicy);
  ASSERT_FALSE(id.empty());
  MessagePtr r = Patch(shim, id, R"([{"action":"allow","target":"a.org"},{"action":"allow","target":"b.org"}])");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->EppCode(), "E8008") << r->raw;
  EXPECT_NE(r->ErrorMessage().find("egress rule total count 3 exceeds limit 2"), std::string::npos) << r->raw;
  EXPECT_EQ(Rules(Get(shim, id)), (std::vector<std::string>{"allow pypi.org"}));
}

TEST_F(NetworkTest, AnOldSidecarSaysWhatItLacks) {
  REQUIRE_FAKE("older egress releases (--egress-version)");
  ASSERT_TRUE(RestartFake({"--egress-version", "1.0.12"}));
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  std::string id = CreateSandbox(shim, kPolicy);
  EXPECT_EQ(Rules(Patch(shim, id, R"([{"action":"allow","target":"a.org"}])")),
            (std::vector<std::string>{"allow a.org", "allow pypi.org"}));
  MessagePtr r = Delete(shim, id, R"(["a.org"])");
  EXPECT_EQ(r->EppCode(), "E8007") << r->raw;
  EXPECT_NE(r->ErrorMessage().find("too old"), std::string::npos) << r->raw;
  EXPECT_NE(r->ErrorMessage().find("1.0.13"), std::string::npos) << r->raw;

  ASSERT_TRUE(RestartFake({"--egress-version", "1.0.0"}));
  shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  id = CreateSandbox(shim, kPolicy);
  r = Get(shim, id);
  EXPECT_EQ(Rules(r), (std::vector<std::string>{"allow pypi.org"}));
  EXPECT_EQ(Find(r->result(), "enforcement"), nullptr) << "1.0.0 does not say: " << r->raw;
  r = Patch(shim, id, R"([{"action":"allow","target":"a.org"}])");
  EXPECT_EQ(r->EppCode(), "E8007") << r->raw;
  EXPECT_NE(r->ErrorMessage().find("1.0.2"), std::string::npos) << r->raw;
}

TEST_F(NetworkTest, ExecdsTokenGoesAlongWhereExecdStandsBeforeTheSidecar) {
  REQUIRE_FAKE("an execd that wants a token (--execd-token)");
  constexpr char kExecdToken[] = "e2e-Execd-Token-51c0";
  ASSERT_TRUE(RestartFake({"--execd-token", kExecdToken}));
  EppSession* shim = StartInitializedShim({{"ABX_OPENSANDBOX_EXECD_ACCESS_TOKEN", kExecdToken}});
  ASSERT_NE(shim, nullptr);
  const std::string id = CreateSandbox(shim, kPolicy);
  ASSERT_FALSE(id.empty());
  EXPECT_EQ(Rules(Get(shim, id)), (std::vector<std::string>{"allow pypi.org"}));
  auto stats = fake().Stats();
  ASSERT_TRUE(stats.has_value());
  EXPECT_GT(stats->egress_requests_with_execd_token, 0) << "execd's proxy passes the header on, as upstream's";
  EppSession* wrong = StartInitializedShim({{"ABX_OPENSANDBOX_EXECD_ACCESS_TOKEN", "e2e-Wrong-Token"}});
  ASSERT_NE(wrong, nullptr);
  MessagePtr r = Get(wrong, id);
  EXPECT_EQ(r->EppCode(), "E8003") << r->raw;
  EXPECT_EQ(r->raw.find("e2e-Wrong-Token"), std::string::npos) << r->raw;
}


// The CLI a person uses: `abx-opensandbox-bridge egress SANDBOX [get|allow|deny|remove]`.
TEST_F(NetworkTest, TheBridgeCliReadsAndChangesTheRules) {
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  const std::string id = CreateSandbox(shim, kPolicy);
  ASSERT_FALSE(id.empty());
  auto egress = [&](std::vector<std::string> words, std::string* output) {
    std::vector<std::string> argv = {BridgeBinary(), "egress", id};
    argv.insert(argv.end(), words.begin(), words.end());
    argv.insert(argv.end(), {"--socket", socket_path()});
    auto status = RunCommand(argv, ShimEnv(), Millis(30000), output);
    return status && status->exited ? status->code : -1;
  };
  std::string output;
  EXPECT_EQ(egress({}, &output), 0) << output;
  EXPECT_EQ(output, "default deny, enforcing (dns)\nallow pypi.org\n");
  EXPECT_EQ(egress({"allow", "files.pythonhosted.org", "*.pythonhosted.org"}, &output), 0) << output;
  EXPECT_EQ(output, "default deny, enforcing (dns)\nallow files.pythonhosted.org\nallow *.pythonhosted.org\nallow pypi.org\n");
  EXPECT_EQ(egress({"deny", "pypi.org"}, &output), 0) << output;
  EXPECT_NE(output.find("\ndeny pypi.org\n"), std::string::npos) << output;
  EXPECT_EQ(egress({"remove", "files.pythonhosted.org", "*.pythonhosted.org", "pypi.org"}, &output), 0) << output;
  EXPECT_EQ(output, "default deny, deny_all (dns)\n");
  EXPECT_EQ(Rules(Get(shim, id)), std::vector<std::string>{});

  EXPECT_EQ(egress({"allow", "not a host"}, &output), 1) << output;
  EXPECT_NE(output.find("rules[0].target"), std::string::npos) << output;
  EXPECT_EQ(egress({"allow"}, &output), 2) << "a target is needed: " << output;
  EXPECT_NE(output.find("usage:"), std::string::npos) << output;
  EXPECT_EQ(egress({"open", "x.org"}, &output), 2) << output;
  EXPECT_EQ(egress({"--help"}, &output), 0) << output;
}

}  // namespace
}  // namespace abx::e2e
