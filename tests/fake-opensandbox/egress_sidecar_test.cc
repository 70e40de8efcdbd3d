// A sandbox created with a networkPolicy has an egress sidecar, reached as upstream's is:
// through execd's /proxy/18080 on Docker, at its own port on Kubernetes, and through the
// server proxy on both; a sandbox without one has none (egress_sidecar.h).

#include <gtest/gtest.h>

#include <string>

#include "tests/fake-opensandbox/test_support.h"

namespace fake_opensandbox {
namespace {

constexpr char kPolicy[] =
    R"("networkPolicy":{"defaultAction":"deny","egress":[{"action":"allow","target":"pypi.org"}]})";

struct Sidecar {
  std::unique_ptr<EndpointClient> client;
  httplib::Headers auth;  // the endpoint's headers
};

Sidecar Reach(TestFake& fake, const std::string& id, bool server_proxy) {
  auto answer = fake.lifecycle->Get(("/v1/sandboxes/" + id + "/endpoints/18080?use_server_proxy=" +
                                     (server_proxy ? "true" : "false")).c_str());
  Sidecar sidecar;
  EXPECT_EQ(answer->status, 200);
  auto doc = ParseJson(answer->body);
  sidecar.client = std::make_unique<EndpointClient>(doc["endpoint"].GetString());
  if (doc.HasMember("headers")) {
    for (const auto& h : doc["headers"].GetObject()) sidecar.auth.emplace(h.name.GetString(), h.value.GetString());
  }
  return sidecar;
}

std::string Rules(Sidecar& sidecar) {
  auto got = sidecar.client->client->Get(sidecar.client->Path("/policy").c_str(), sidecar.auth);
  if (!got || got->status != 200) return "<" + std::to_string(got ? got->status : 0) + ">";
  return got->body;
}

void ExpectSidecarWorks(TestFake& fake, const std::string& id, bool server_proxy) {
  SCOPED_TRACE(server_proxy ? "through the server proxy" : "at the endpoint");
  Sidecar sidecar = Reach(fake, id, server_proxy);
  ASSERT_EQ(sidecar.auth.count("OPENSANDBOX-EGRESS-AUTH"), 1u);
  EXPECT_EQ(sidecar.auth.find("OPENSANDBOX-EGRESS-AUTH")->second.size(), 32u);
  EXPECT_NE(Rules(sidecar).find(R"({"action":"allow","target":"pypi.org"})"), std::string::npos);
  auto refused = sidecar.client->client->Get(sidecar.client->Path("/policy").c_str());
  EXPECT_EQ(refused->status, 401);
  EXPECT_EQ(refused->body, "unauthorized\n");
  auto health = sidecar.client->client->Get(sidecar.client->Path("/healthz").c_str());
  EXPECT_EQ(health->body, "ok");
  auto patched = sidecar.client->client->Patch(sidecar.client->Path("/policy").c_str(), sidecar.auth,
                                               R"([{"action":"allow","target":"files.pythonhosted.org"}])",
                                               "application/json");
  EXPECT_EQ(patched->status, 200);
  EXPECT_NE(Rules(sidecar).find("files.pythonhosted.org"), std::string::npos);
}

TEST(EgressSidecarTest, ADockerSandboxsSidecarIsBehindExecd) {
  TestFake fake;
  std::string id = fake.CreateSandbox(kPolicy);
  ASSERT_FALSE(id.empty());
  auto info = ParseJson(fake.lifecycle->Get(("/_fake/sandboxes/" + id).c_str())->body);
  Sidecar sidecar = Reach(fake, id, false);
  EXPECT_EQ(sidecar.client->port, info["execd_port"].GetInt());
  EXPECT_EQ(sidecar.client->prefix, "/proxy/18080");
  ExpectSidecarWorks(fake, id, false);
  ExpectSidecarWorks(fake, id, true);
}

TEST(EgressSidecarTest, AKubernetesSandboxsSidecarHasItsOwnPort) {
  FakeConfig config = TestConfig();
  config.runtime = Runtime::kKubernetes;
  TestFake fake(config);
  std::string id = fake.CreateSandbox(kPolicy);
  ASSERT_FALSE(id.empty());
  Sidecar sidecar = Reach(fake, id, false);
  EXPECT_EQ(sidecar.client->prefix, "") << "a pod IP and port, as upstream's";
  ExpectSidecarWorks(fake, id, false);
  ExpectSidecarWorks(fake, id, true);
}

TEST(EgressSidecarTest, ASandboxWithoutAPolicyHasNone) {
  TestFake fake;
  std::string id = fake.CreateSandbox();
  Sidecar sidecar = Reach(fake, id, false);
  EXPECT_TRUE(sidecar.auth.empty());
  auto nothing = sidecar.client->client->Get(sidecar.client->Path("/policy").c_str());
  EXPECT_EQ(nothing->status, 502) << "execd's proxy finds nothing at 127.0.0.1:18080";
}

TEST(EgressSidecarTest, TheEgressReleaseDecidesItsMethods) {
  FakeConfig config = TestConfig();
  config.egress_version = "1.0.12";
  TestFake fake(config);
  std::string id = fake.CreateSandbox(kPolicy);
  Sidecar sidecar = Reach(fake, id, false);
  auto removed = sidecar.client->client->Delete(sidecar.client->Path("/policy").c_str(), sidecar.auth,
                                                R"(["pypi.org"])", "application/json");
  EXPECT_EQ(removed->status, 405);
  EXPECT_EQ(removed->get_header_value("Allow"), "GET, POST, PUT, PATCH");
}

}  // namespace
}  // namespace fake_opensandbox
