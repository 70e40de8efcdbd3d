// Volumes and the server's own pools through sandbox.create (docs/epp1.md §3,
// "sandbox.metadata extension"): a host directory's file is seen inside and a file
// written inside is seen on the host; a named volume outlives its sandbox; a bad volume
// is -32602 before any request; what only the server knows comes back E8007; the OSS
// key secret is in no log line and no answer; pool_ref on a Docker server is E8007 and
// on a Kubernetes server takes a sandbox from the named pool.

#include <fstream>
#include <sstream>
#include <string>

#include <gtest/gtest.h>
#include <sys/stat.h>

#include "tests/e2e/harness.h"

namespace abx::e2e {
namespace {

const char kOssSecret[] = "oss-Secret-51c0ffee-KEY";

std::string ReadHostFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

class VolumesTest : public TestEnv {
 protected:
  // The server lets host volumes name the test's shared directory and nothing else.
  std::vector<std::string> FakeFlags() const override {
    return {"--api-key", kApiKey, "--allowed-host-path", SharedDir()};
  }
  std::string SharedDir() const { return root_dir() + "/shared"; }

  // sandbox.create with `volumes_json` as provider_options.volumes.
  MessagePtr CreateWithVolumes(EppSession* shim, const std::string& volumes_json) {
    return shim->Request("sandbox.create",
                         JsonObject().Raw("provider_options", JsonObject().Raw("volumes", volumes_json).str()).str(),
                         Millis(30000));
  }
  std::string Run(EppSession* shim, const std::string& sandbox, const std::string& command) {
    MessagePtr ran = shim->Request("exec.run", JsonObject().Str("sandbox_id", sandbox).Str("command", command).str());
    if (!ran) return "<no answer>";
    if (ran->IsError()) return "<" + ran->EppCode() + ">";
    return GetString(ran->result(), "stdout");
  }
  static std::string OssVolume(const std::string& extra = "") {
    return R"([{"name":"bucket","mount_path":"/oss","ossfs":{"bucket":"my-bucket",)"
           R"("endpoint":"oss-cn-hangzhou.aliyuncs.com","access_key_id":"id","access_key_secret":")" +
           std::string(kOssSecret) + "\"" + extra + "}}]";
  }
};

TEST_F(VolumesTest, AHostDirectoryIsTheSameFilesInsideAndOnTheHost) {
  REQUIRE_FAKE("a host directory of the fake");
  ASSERT_EQ(::mkdir(SharedDir().c_str(), 0755), 0);
  { std::ofstream(SharedDir() + "/hello.txt") << "from the host"; }
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  MessagePtr created = CreateWithVolumes(
      shim, R"([{"name":"work","mount_path":"/mnt/work","host":{"path":")" + SharedDir() + R"("}}])");
  ASSERT_NE(created, nullptr);
  ASSERT_FALSE(created->IsError()) << created->raw;
  const std::string sandbox = GetString(created->result(), "id");

  EXPECT_EQ(Run(shim, sandbox, "cat /mnt/work/hello.txt"), "from the host\n");
  MessagePtr wrote = shim->Request(
      "files.write",
      JsonObject().Str("sandbox_id", sandbox).Str("path", "/mnt/work/out.txt").Str("data", "from inside").str());
  ASSERT_FALSE(wrote->IsError()) << wrote->raw;
  EXPECT_EQ(ReadHostFile(SharedDir() + "/out.txt"), "from inside");

  // Read-only: the command's write fails and the host's file stays.
  MessagePtr read_only = CreateWithVolumes(
      shim, R"([{"name":"ro","mount_path":"/ro","read_only":true,"host":{"path":")" + SharedDir() + R"("}}])");
  ASSERT_FALSE(read_only->IsError()) << read_only->raw;
  const std::string ro_sandbox = GetString(read_only->result(), "id");
  EXPECT_EQ(Run(shim, ro_sandbox, "rm /ro/hello.txt 2>/dev/null || echo refused"), "refused\n");
  EXPECT_EQ(ReadHostFile(SharedDir() + "/hello.txt"), "from the host");
}

TEST_F(VolumesTest, ANamedVolumeOutlivesItsSandbox) {
  REQUIRE_FAKE("the fake's named volumes");
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  const std::string volume = R"([{"name":"cache","mount_path":"/cache","pvc":{"claim_name":"pip-cache"}}])";
  MessagePtr first = CreateWithVolumes(shim, volume);
  ASSERT_FALSE(first->IsError()) << first->raw;
  const std::string first_id = GetString(first->result(), "id");
  EXPECT_EQ(Run(shim, first_id, "echo -n wheel > /cache/pkg && echo ok"), "ok\n");
  ASSERT_FALSE(shim->Request("sandbox.kill", JsonObject().Str("sandbox_id", first_id).str())->IsError());

  MessagePtr second = CreateWithVolumes(shim, volume);
  ASSERT_FALSE(second->IsError()) << second->raw;
  EXPECT_EQ(Run(shim, GetString(second->result(), "id"), "cat /cache/pkg"), "wheel\n");

  // A volume that must exist and does not: the server's refusal, E8007.
  MessagePtr missing = CreateWithVolumes(
      shim, R"([{"name":"v","mount_path":"/v","pvc":{"claim_name":"absent","create_if_not_exists":false}}])");
  EXPECT_EQ(missing->EppCode(), "E8007") << missing->raw;
  EXPECT_NE(missing->ErrorMessage().find("VOLUME::PVC_NOT_FOUND"), std::string::npos) << missing->raw;
}

TEST_F(VolumesTest, ABadVolumeIsRefusedBeforeAnyRequest) {
  REQUIRE_FAKE("its request counter");
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  const std::pair<std::string, std::string> cases[] = {
      {R"([{"name":"Bad_Name","mount_path":"/a","host":{"path":"/tmp"}}])", "provider_options.volumes[0].name"},
      {R"([{"name":"a","mount_path":"relative","host":{"path":"/tmp"}}])", "provider_options.volumes[0].mount_path"},
      {R"([{"name":"a","mount_path":"/a","sub_path":"x/../..","host":{"path":"/tmp"}}])",
       "provider_options.volumes[0].sub_path"},
      {R"([{"name":"a","mount_path":"/a","host":{"path":"/tmp"},"pvc":{"claim_name":"c"}}])",
       "provider_options.volumes[0]"},
      {R"([{"name":"a","mount_path":"/a"}])", "provider_options.volumes[0]"},
      {R"([{"name":"a","mount_path":"/a","host":{"path":"/tmp/../etc"}}])", "provider_options.volumes[0].host.path"},
      {R"([{"name":"a","mount_path":"/a","host":{"path":"/tmp"}},{"name":"a","mount_path":"/b","host":{"path":"/tmp"}}])",
       "provider_options.volumes[1].name"},
      {R"([{"name":"a","mountPath":"/a","host":{"path":"/tmp"}}])", "provider_options.volumes[0].mountPath"},
      {R"([{"name":"a","mount_path":"/a","pvc":{"claim_name":"c","storage":"lots"}}])",
       "provider_options.volumes[0].pvc.storage"},
      {OssVolume(R"(,"version":"3.0")"), "provider_options.volumes[0].ossfs.version"},
      {R"({"name":"a"})", "provider_options.volumes"},
  };
  for (const auto& [volumes, field] : cases) {
    MessagePtr refused;
    auto upstream = UpstreamRequestsDuring([&] { refused = CreateWithVolumes(shim, volumes); });
    ASSERT_NE(refused, nullptr);
    EXPECT_EQ(refused->ErrorCode(), -32602) << volumes << " -> " << refused->raw;
    EXPECT_EQ(GetString(refused->error(), "data.field"), field) << volumes << " -> " << refused->raw;
    ASSERT_TRUE(upstream.has_value());
    EXPECT_EQ(*upstream, 0) << volumes;
    EXPECT_EQ(refused->raw.find(kOssSecret), std::string::npos) << refused->raw;
  }
}

TEST_F(VolumesTest, WhatOnlyTheServerKnowsIsE8007AndTheOssSecretIsInNoLogOrAnswer) {
  REQUIRE_FAKE("its log and its volume refusals");
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  MessagePtr not_allowed =
      CreateWithVolumes(shim, R"([{"name":"etc","mount_path":"/hostetc","host":{"path":"/etc"}}])");
  EXPECT_EQ(not_allowed->EppCode(), "E8007") << not_allowed->raw;
  EXPECT_NE(not_allowed->ErrorMessage().find("VOLUME::HOST_PATH_NOT_ALLOWED"), std::string::npos)
      << not_allowed->raw;

  // The fake, as a server without the ossfs driver, cannot mount the bucket.
  MessagePtr oss = CreateWithVolumes(shim, OssVolume());
  EXPECT_EQ(oss->EppCode(), "E8007") << oss->raw;
  EXPECT_NE(oss->ErrorMessage().find("VOLUME::OSSFS_MOUNT_FAILED"), std::string::npos) << oss->raw;
  ASSERT_FALSE(shim->Request("provider.info", "{}")->IsError());
  ASSERT_FALSE(shim->Request("provider.doctor", "{}")->IsError());
  EXPECT_EQ(fake().Stats()->live_sandboxes, 0);

  // Every line the shim answered, the bridge's log and the fake's log.
  std::string answers;
  for (const MessagePtr& m : shim->AllMessages()) answers += m->raw + "\n";
  EXPECT_EQ(answers.find(kOssSecret), std::string::npos);
  StopBridge();
  const std::string bridge_log = ReadHostFile(bridge_log_path());
  EXPECT_FALSE(bridge_log.empty());
  EXPECT_EQ(bridge_log.find(kOssSecret), std::string::npos);
  EXPECT_EQ(ReadHostFile(fake().log_path()).find(kOssSecret), std::string::npos);
}

TEST_F(VolumesTest, ADockerServerRefusesAPoolRefAsE8007) {
  REQUIRE_FAKE("a Docker runtime");
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  MessagePtr refused = shim->Request(
      "sandbox.create", JsonObject().Raw("provider_options", JsonObject().Str("pool_ref", "warm").str()).str());
  EXPECT_EQ(refused->EppCode(), "E8007") << refused->raw;
  EXPECT_NE(refused->ErrorMessage().find("SANDBOX::UNSUPPORTED_POOL_REF"), std::string::npos) << refused->raw;
  // The host's default template names nothing more: the same refusal from the server.
  MessagePtr with_base = shim->Request(
      "sandbox.create",
      JsonObject().Str("template", "base").Raw("provider_options", JsonObject().Str("pool_ref", "warm").str()).str());
  EXPECT_EQ(with_base->EppCode(), "E8007") << with_base->raw;
  MessagePtr with_template = shim->Request(
      "sandbox.create",
      JsonObject().Str("template", "python:3.11").Raw("provider_options", JsonObject().Str("pool_ref", "warm").str()).str());
  EXPECT_EQ(with_template->ErrorCode(), -32602) << with_template->raw;
  // A pool's pods exist before the request: no volume can be mounted into one.
  MessagePtr with_volume;
  auto upstream = UpstreamRequestsDuring([&] {
    with_volume = shim->Request(
        "sandbox.create",
        JsonObject()
            .Raw("provider_options",
                 JsonObject()
                     .Str("pool_ref", "warm")
                     .Raw("volumes", R"([{"name":"v","mount_path":"/v","pvc":{"claim_name":"c"}}])")
                     .str())
            .str());
  });
  EXPECT_EQ(with_volume->ErrorCode(), -32602) << with_volume->raw;
  EXPECT_EQ(GetString(with_volume->error(), "data.field"), "provider_options.volumes") << with_volume->raw;
  ASSERT_TRUE(upstream.has_value());
  EXPECT_EQ(*upstream, 0);
  EXPECT_EQ(fake().Stats()->live_sandboxes, 0);
}

TEST_F(VolumesTest, AKubernetesServerServesItsNamedPools) {
  REQUIRE_FAKE("--runtime kubernetes with --pool");
  ASSERT_TRUE(RestartFake({"--runtime", "kubernetes", "--pool", "warm=python:3.11-slim"}));
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  MessagePtr pooled = shim->Request(
      "sandbox.create", JsonObject()
                            .Raw("metadata", R"({"task":"t1"})")
                            .Raw("provider_options", JsonObject().Str("pool_ref", "warm").str())
                            .str());
  ASSERT_FALSE(pooled->IsError()) << pooled->raw;
  EXPECT_EQ(GetString(pooled->result(), "image"), "python:3.11-slim");
  EXPECT_EQ(GetString(pooled->result(), "metadata.task"), "t1");
  EXPECT_EQ(Run(shim, GetString(pooled->result(), "id"), "echo pooled"), "pooled\n");
  // With the host's default template, as a host may always send it.
  MessagePtr with_base = shim->Request(
      "sandbox.create",
      JsonObject().Str("template", "base").Raw("provider_options", JsonObject().Str("pool_ref", "warm").str()).str());
  ASSERT_FALSE(with_base->IsError()) << with_base->raw;
  EXPECT_EQ(GetString(with_base->result(), "image"), "python:3.11-slim");

  MessagePtr unknown = shim->Request(
      "sandbox.create", JsonObject().Raw("provider_options", JsonObject().Str("pool_ref", "cold").str()).str());
  EXPECT_EQ(unknown->EppCode(), "E8005") << unknown->raw;

  // The configured pool_ref serves a create of the default template; a named template
  // (here an image) is created as usual.
  EppSession* configured = StartInitializedShim({{"ABX_OPENSANDBOX_POOL_REF", "warm"}});
  ASSERT_NE(configured, nullptr);
  MessagePtr from_pool = configured->Request("sandbox.create", "{}", Millis(30000));
  ASSERT_FALSE(from_pool->IsError()) << from_pool->raw;
  EXPECT_EQ(GetString(from_pool->result(), "image"), "python:3.11-slim");
  MessagePtr from_image = configured->Request("sandbox.create", R"({"template":"python:3.11"})", Millis(30000));
  ASSERT_FALSE(from_image->IsError()) << from_image->raw;
  EXPECT_EQ(GetString(from_image->result(), "image"), "python:3.11");
}

}  // namespace
}  // namespace abx::e2e
