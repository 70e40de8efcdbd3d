// The fake's volumes and pools against docs/opensandbox.md §1.13: a host directory seen
// from both sides (commands and the files API), read-only mounts, named volumes that
// outlive a sandbox, ossfs refused as a server without the driver refuses it, the
// VOLUME::* and 422 answers in upstream's order, and extensions.poolRef on each runtime.

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "tests/fake-opensandbox/sandbox_registry.h"
#include "tests/fake-opensandbox/test_support.h"

namespace fake_opensandbox {
namespace {

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct Answer {
  int status = 0;
  std::string body;
  std::string code;  // {"code"} of a service error
  std::string id;    // of a created sandbox
};

Answer Create(TestFake& fake, const std::string& extra) {
  const std::string body =
      R"({"image":{"uri":"python:3.11"},"entrypoint":["tail","-f","/dev/null"],)"
      R"("resourceLimits":{"cpu":"1","memory":"2Gi"},)" + extra + "}";
  auto res = fake.lifecycle->Post("/v1/sandboxes", body, "application/json");
  Answer answer;
  if (!res) return answer;
  answer.status = res->status;
  answer.body = res->body;
  rapidjson::Document doc = ParseJson(res->body);
  if (doc.IsObject() && doc.HasMember("code")) answer.code = doc["code"].GetString();
  if (doc.IsObject() && doc.HasMember("id")) answer.id = doc["id"].GetString();
  return answer;
}

// Runs `command` in the sandbox; its stdout, and its exit code in *exit_code.
std::string RunIn(TestFake& fake, const std::string& id, const std::string& command, int* exit_code = nullptr) {
  EndpointClient execd(fake.ExecdEndpoint(id));
  auto res = execd.client->Post(execd.Path("/command").c_str(), "{\"command\":" + JsonQuoted(command) + "}",
                                "application/json");
  if (!res) return "<no answer>";
  std::string out;
  for (const auto& text : OutputTexts(ParseEvents(res->body), "stdout")) out += text;
  if (exit_code) {
    *exit_code = -1;
    for (const auto& event : ParseEvents(res->body)) {
      if (event.type == "error") *exit_code = 1;
      if (event.type == "execution_complete" && *exit_code < 0) *exit_code = 0;
    }
  }
  return out;
}

int64_t LiveSandboxes(TestFake& fake) {
  auto res = fake.lifecycle->Get("/_fake/stats");
  return res ? ParseJson(res->body)["live_sandboxes"].GetInt64() : -1;
}

class VolumeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/fake-volumes-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    host_dir_ = pattern;
    FakeConfig config = TestConfig();
    config.allowed_host_paths = {host_dir_};
    fake_ = std::make_unique<TestFake>(config);
  }
  void TearDown() override {
    fake_.reset();
    RemoveTreeQuietly(host_dir_);
  }
  std::string HostVolume(const std::string& name, const std::string& path, const std::string& mount,
                         bool read_only = false) {
    return R"({"name":")" + name + R"(","mountPath":")" + mount + R"(","readOnly":)" +
           (read_only ? "true" : "false") + R"(,"host":{"path":")" + path + R"("}})";
  }

  std::string host_dir_;
  std::unique_ptr<TestFake> fake_;
};

TEST_F(VolumeTest, AHostDirectoryIsTheSameFilesOnBothSides) {
  { std::ofstream(host_dir_ + "/hello.txt") << "from the host"; }
  Answer created = Create(*fake_, R"("volumes":[)" + HostVolume("work", host_dir_, "/mnt/work") + "]");
  ASSERT_EQ(created.status, 202) << created.body;
  int exit_code = 0;
  EXPECT_EQ(RunIn(*fake_, created.id, "cat /mnt/work/hello.txt", &exit_code), "from the host");
  EXPECT_EQ(exit_code, 0);
  RunIn(*fake_, created.id, "echo -n from the sandbox > /mnt/work/out.txt");
  EXPECT_EQ(ReadFile(host_dir_ + "/out.txt"), "from the sandbox");

  // The files API sees the same directory.
  EndpointClient execd(fake_->ExecdEndpoint(created.id));
  auto download = execd.client->Get(execd.Path("/files/download?path=/mnt/work/hello.txt").c_str());
  ASSERT_TRUE(download);
  EXPECT_EQ(download->status, 200);
  EXPECT_EQ(download->body, "from the host");

  // The mount point itself cannot be removed or moved away (EBUSY), through any route.
  auto removed = execd.client->Delete(execd.Path("/directories?path=/mnt/work").c_str());
  ASSERT_TRUE(removed);
  EXPECT_EQ(removed->status, 500);
  EXPECT_NE(removed->body.find("device or resource busy"), std::string::npos) << removed->body;
  auto moved = execd.client->Post(execd.Path("/files/mv").c_str(), R"([{"src":"/mnt/work","dest":"/moved"}])",
                                  "application/json");
  ASSERT_TRUE(moved);
  EXPECT_EQ(moved->status, 500) << moved->body;

  // Killing the sandbox leaves the host's files alone.
  ASSERT_EQ(fake_->lifecycle->Delete(("/v1/sandboxes/" + created.id).c_str())->status, 204);
  EXPECT_EQ(ReadFile(host_dir_ + "/hello.txt"), "from the host");
  EXPECT_EQ(ReadFile(host_dir_ + "/out.txt"), "from the sandbox");
}

TEST_F(VolumeTest, AMountPathUnderADirectoryTheFakeBindsIsRefused) {
  Answer refused = Create(*fake_, R"("volumes":[)" + HostVolume("etc", host_dir_, "/etc/app") + "]");
  EXPECT_EQ(refused.status, 500);
  EXPECT_EQ(refused.code, "DOCKER::SANDBOX_START_FAILED");
  EXPECT_EQ(LiveSandboxes(*fake_), 0);
}

TEST_F(VolumeTest, AMissingHostDirectoryIsCreatedAndASubPathNarrowsIt) {
  Answer created = Create(*fake_, R"("volumes":[{"name":"part","mountPath":"/data","subPath":"a/b",)"
                                  R"("host":{"path":")" + host_dir_ + R"(/new"}}])");
  ASSERT_EQ(created.status, 202) << created.body;
  RunIn(*fake_, created.id, "echo -n x > /data/f");
  EXPECT_EQ(ReadFile(host_dir_ + "/new/a/b/f"), "x");
}

TEST_F(VolumeTest, AReadOnlyVolumeRefusesWritesFromCommandsAndTheFilesApi) {
  { std::ofstream(host_dir_ + "/kept.txt") << "kept"; }
  Answer created = Create(*fake_, R"("volumes":[)" + HostVolume("ro", host_dir_, "/mnt/ro", true) + "]");
  ASSERT_EQ(created.status, 202) << created.body;
  EXPECT_EQ(RunIn(*fake_, created.id, "cat /mnt/ro/kept.txt"), "kept");
  int exit_code = 0;
  RunIn(*fake_, created.id, "rm /mnt/ro/kept.txt", &exit_code);
  EXPECT_NE(exit_code, 0);
  EndpointClient execd(fake_->ExecdEndpoint(created.id));
  auto removed = execd.client->Delete(execd.Path("/files?path=/mnt/ro/kept.txt").c_str());
  ASSERT_TRUE(removed);
  EXPECT_EQ(removed->status, 500);
  EXPECT_NE(removed->body.find("read-only file system"), std::string::npos) << removed->body;
  EXPECT_EQ(ReadFile(host_dir_ + "/kept.txt"), "kept");
}

TEST_F(VolumeTest, ANamedVolumeOutlivesItsSandboxUnlessMarkedToEndWithIt) {
  const std::string keep = R"("volumes":[{"name":"cache","mountPath":"/cache","pvc":{"claimName":"pip-cache"}}])";
  Answer first = Create(*fake_, keep);
  ASSERT_EQ(first.status, 202) << first.body;
  RunIn(*fake_, first.id, "echo -n wheel > /cache/pkg");
  ASSERT_EQ(fake_->lifecycle->Delete(("/v1/sandboxes/" + first.id).c_str())->status, 204);
  Answer second = Create(*fake_, keep);
  ASSERT_EQ(second.status, 202) << second.body;
  EXPECT_EQ(RunIn(*fake_, second.id, "cat /cache/pkg"), "wheel");

  // createIfNotExists false: the volume must exist.
  Answer missing = Create(*fake_, R"("volumes":[{"name":"v","mountPath":"/v",)"
                                  R"("pvc":{"claimName":"absent","createIfNotExists":false}}])");
  EXPECT_EQ(missing.status, 400);
  EXPECT_EQ(missing.code, "VOLUME::PVC_NOT_FOUND");
  Answer existing = Create(*fake_, R"("volumes":[{"name":"v","mountPath":"/v",)"
                                   R"("pvc":{"claimName":"pip-cache","createIfNotExists":false}}])");
  EXPECT_EQ(existing.status, 202) << existing.body;

  // Made for a sandbox and marked: it ends with that sandbox.
  const std::string scratch = R"("volumes":[{"name":"s","mountPath":"/s",)"
                              R"("pvc":{"claimName":"scratch","deleteOnSandboxTermination":true}}])";
  Answer third = Create(*fake_, scratch);
  ASSERT_EQ(third.status, 202) << third.body;
  RunIn(*fake_, third.id, "echo -n tmp > /s/f");
  ASSERT_EQ(fake_->lifecycle->Delete(("/v1/sandboxes/" + third.id).c_str())->status, 204);
  Answer fourth = Create(*fake_, scratch);
  ASSERT_EQ(fourth.status, 202) << fourth.body;
  EXPECT_EQ(RunIn(*fake_, fourth.id, "cat /s/f 2>/dev/null || echo -n none"), "none");
}

TEST_F(VolumeTest, OssfsIsRefusedAsAServerWithoutTheDriverRefusesItAndItsSecretIsNeverEchoed) {
  Answer ossfs = Create(*fake_, R"("volumes":[{"name":"bucket","mountPath":"/oss","ossfs":{"bucket":"my-bucket",)"
                                R"("endpoint":"oss-cn-hangzhou.aliyuncs.com","accessKeyId":"id",)"
                                R"("accessKeySecret":"very-secret-value"}}])");
  EXPECT_EQ(ossfs.status, 500);
  EXPECT_EQ(ossfs.code, "VOLUME::OSSFS_MOUNT_FAILED");
  EXPECT_EQ(ossfs.body.find("very-secret-value"), std::string::npos);
  // A 422 echoes the volume as its input: the secret is masked.
  Answer invalid = Create(*fake_, R"("volumes":[{"name":"bucket","mountPath":"/oss","ossfs":{"bucket":"b",)"
                                  R"("endpoint":"e","accessKeyId":"id","accessKeySecret":"very-secret-value"}}])");
  EXPECT_EQ(invalid.status, 422);
  EXPECT_NE(invalid.body.find("at least 3 characters"), std::string::npos) << invalid.body;
  EXPECT_EQ(invalid.body.find("very-secret-value"), std::string::npos) << invalid.body;
  EXPECT_EQ(LiveSandboxes(*fake_), 0);
}

TEST_F(VolumeTest, TheServiceChecksAnswerUpstreamsCodesInItsOrder) {
  struct Case {
    std::string volumes;
    int status;
    std::string code;  // "" for a 422
  };
  const std::string other = "/srv/not-allowed";
  const Case cases[] = {
      {HostVolume("a", host_dir_, "/a") + "," + HostVolume("a", host_dir_, "/b"), 400, "VOLUME::DUPLICATE_NAME"},
      {R"({"name":"a","mountPath":"/a","subPath":"x/../..","host":{"path":")" + host_dir_ + R"("}})", 400,
       "VOLUME::INVALID_SUB_PATH"},
      {R"({"name":"a","mountPath":"/a","subPath":"/abs","host":{"path":")" + host_dir_ + R"("}})", 400,
       "VOLUME::INVALID_SUB_PATH"},
      {HostVolume("a", other, "/a"), 400, "VOLUME::HOST_PATH_NOT_ALLOWED"},
      {HostVolume("a", host_dir_ + "/x/../y", "/a"), 400, "VOLUME::INVALID_HOST_PATH"},
      {HostVolume("a", host_dir_ + "//y", "/a"), 400, "VOLUME::INVALID_HOST_PATH"},
      {HostVolume("Bad_Name", host_dir_, "/a"), 422, ""},
      {HostVolume("a", host_dir_, "relative"), 422, ""},
      {R"({"name":"a","mountPath":"/a"})", 422, ""},
      {R"({"name":"a","mountPath":"/a","host":{"path":"/t"},"pvc":{"claimName":"c"}})", 422, ""},
      {R"({"name":"a","mountPath":"/a","pvc":{"claimName":"Upper"}})", 422, ""},
  };
  for (const Case& c : cases) {
    Answer answer = Create(*fake_, R"("volumes":[)" + c.volumes + "]");
    EXPECT_EQ(answer.status, c.status) << c.volumes << " -> " << answer.body;
    EXPECT_EQ(answer.code, c.code) << c.volumes << " -> " << answer.body;
  }
  EXPECT_EQ(LiveSandboxes(*fake_), 0);

  // With no allowed prefix configured, every host volume is refused.
  TestFake strict;
  Answer refused = Create(strict, R"("volumes":[)" + HostVolume("a", host_dir_, "/a") + "]");
  EXPECT_EQ(refused.status, 400);
  EXPECT_EQ(refused.code, "VOLUME::HOST_PATH_NOT_ALLOWED");
  EXPECT_NE(refused.body.find("Allowed prefixes: []"), std::string::npos) << refused.body;
}

TEST(PoolRefTest, ADockerServerRefusesItAndAKubernetesServerServesItsPools) {
  TestFake docker;
  Answer refused = Create(docker, R"("extensions":{"poolRef":"warm"})");
  EXPECT_EQ(refused.status, 400);
  EXPECT_EQ(refused.code, "SANDBOX::UNSUPPORTED_POOL_REF");

  FakeConfig config = TestConfig();
  config.runtime = Runtime::kKubernetes;
  config.pending_polls = 3;
  config.pools = {{"warm", "python:3.12-slim"}};
  TestFake k8s(config);
  auto res = k8s.lifecycle->Post("/v1/sandboxes", R"({"extensions":{"poolRef":"warm"},"metadata":{"k":"v"}})",
                                 "application/json");
  ASSERT_TRUE(res);
  ASSERT_EQ(res->status, 202) << res->body;
  const std::string id = ParseJson(res->body)["id"].GetString();
  // A pooled pod was started before the request: Running at the first GET.
  rapidjson::Document got = ParseJson(k8s.lifecycle->Get(("/v1/sandboxes/" + id).c_str())->body);
  EXPECT_STREQ(got["status"]["state"].GetString(), "Running");
  EXPECT_STREQ(got["image"]["uri"].GetString(), "python:3.12-slim");
  EXPECT_EQ(RunIn(k8s, id, "echo -n pooled"), "pooled");

  Answer unknown = Create(k8s, R"("extensions":{"poolRef":"cold"})");
  EXPECT_EQ(unknown.status, 404);
  EXPECT_EQ(unknown.code, "KUBERNETES::POOL_NOT_FOUND");
  Answer with_volume = Create(k8s, R"("extensions":{"poolRef":"warm"},"volumes":[{"name":"v","mountPath":"/v",)"
                                   R"("pvc":{"claimName":"c"}}])");
  EXPECT_EQ(with_volume.status, 400);
  EXPECT_EQ(with_volume.code, "SANDBOX::INVALID_PARAMETER");
  auto with_snapshot = k8s.lifecycle->Post("/v1/sandboxes", R"({"extensions":{"poolRef":"warm"},"snapshotId":"s"})",
                                           "application/json");
  ASSERT_TRUE(with_snapshot);
  EXPECT_EQ(with_snapshot->status, 422);
}

}  // namespace
}  // namespace fake_opensandbox
