// The fake's snapshots against docs/opensandbox.md §1.11: capture in the background
// (Creating → Ready, Failed on the fault), a restore with the captured files and
// upstream's default entrypoint, the 404/409/422/501 answers, the list's filters and
// pages, and a launcher entrypoint among the snapshot's files that starts the
// code interpreter again.

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include "tests/fake-opensandbox/test_support.h"

namespace fake_opensandbox {
namespace {

std::string RootOf(TestFake& fake, const std::string& id) {
  auto res = fake.lifecycle->Get(("/_fake/sandboxes/" + id).c_str());
  return res && res->status == 200 ? ParseJson(res->body)["root"].GetString() : "";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// POST /v1/sandboxes/{id}/snapshots; the answer's body parsed, its status in *status.
rapidjson::Document Snapshot(TestFake& fake, const std::string& id, const std::string& body, int* status,
                             std::string* location = nullptr) {
  auto res = fake.lifecycle->Post(("/v1/sandboxes/" + id + "/snapshots").c_str(), body, "application/json");
  *status = res ? res->status : 0;
  if (location && res) *location = res->get_header_value("Location");
  return ParseJson(res ? res->body : "{}");
}

// Polls until the snapshot leaves Creating; its last state.
std::string WaitSettled(TestFake& fake, const std::string& snapshot_id) {
  for (int i = 0; i < 500; ++i) {
    auto res = fake.lifecycle->Get(("/v1/snapshots/" + snapshot_id).c_str());
    if (!res || res->status != 200) return "gone";
    const std::string state = ParseJson(res->body)["status"]["state"].GetString();
    if (state != "Creating") return state;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return "Creating";
}

httplib::Result Restore(TestFake& fake, const std::string& snapshot_id, const std::string& extra = "") {
  return fake.lifecycle->Post(
      "/v1/sandboxes",
      R"({"snapshotId":")" + snapshot_id + R"(","resourceLimits":{})" + (extra.empty() ? "" : "," + extra) + "}",
      "application/json");
}

TEST(SnapshotTest, ACaptureKeepsTheFilesOfItsMomentAndRestoresWithTheDefaultEntrypoint) {
  TestFake fake;
  const std::string source = fake.CreateSandbox();
  ASSERT_FALSE(source.empty());
  const std::string source_root = RootOf(fake, source);
  { std::ofstream(source_root + "/tmp/kept.txt") << "before"; }
  chmod((source_root + "/tmp/kept.txt").c_str(), 0640);

  int status = 0;
  std::string location;
  rapidjson::Document created = Snapshot(fake, source, R"({"name":"checkpoint"})", &status, &location);
  ASSERT_EQ(status, 202);
  const std::string snapshot_id = created["id"].GetString();
  EXPECT_EQ(location, "/v1/snapshots/" + snapshot_id);
  EXPECT_STREQ(created["sandboxId"].GetString(), source.c_str());
  EXPECT_STREQ(created["name"].GetString(), "checkpoint");
  EXPECT_STREQ(created["status"]["state"].GetString(), "Creating");
  EXPECT_STREQ(created["status"]["reason"].GetString(), "snapshot_accepted");
  EXPECT_STREQ(created["status"]["message"].GetString(), "Snapshot creation accepted.");
  EXPECT_TRUE(created.HasMember("createdAt"));
  ASSERT_EQ(WaitSettled(fake, snapshot_id), "Ready");
  { std::ofstream(source_root + "/tmp/kept.txt") << "after"; }

  auto restored = Restore(fake, snapshot_id);
  ASSERT_EQ(restored->status, 202) << restored->body;
  rapidjson::Document answer = ParseJson(restored->body);
  EXPECT_EQ(restored->body.find("\"image\""), std::string::npos);
  EXPECT_EQ(restored->body.find("\"snapshotId\""), std::string::npos) << "the create answer has neither";
  const std::string copy = answer["id"].GetString();
  auto got = fake.lifecycle->Get(("/v1/sandboxes/" + copy).c_str());
  rapidjson::Document sandbox = ParseJson(got->body);
  EXPECT_STREQ(sandbox["snapshotId"].GetString(), snapshot_id.c_str());
  EXPECT_FALSE(sandbox.HasMember("image"));
  EXPECT_STREQ(sandbox["status"]["state"].GetString(), "Running");
  ASSERT_EQ(sandbox["entrypoint"].Size(), 3u);
  EXPECT_STREQ(sandbox["entrypoint"][0].GetString(), "tail");
  const std::string copy_root = RootOf(fake, copy);
  EXPECT_EQ(ReadFile(copy_root + "/tmp/kept.txt"), "before");
  struct stat st;
  ASSERT_EQ(stat((copy_root + "/tmp/kept.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0640u);
  ASSERT_EQ(stat((copy_root + "/tmp").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 01777u);

  // The snapshot outlives its source, and a second restore gets the same files.
  ASSERT_EQ(fake.lifecycle->Delete(("/v1/sandboxes/" + source).c_str())->status, 204);
  auto again = Restore(fake, snapshot_id, R"("entrypoint":["sleep","infinity"])");
  ASSERT_EQ(again->status, 202) << again->body;
  const std::string second = ParseJson(again->body)["id"].GetString();
  EXPECT_EQ(ReadFile(RootOf(fake, second) + "/tmp/kept.txt"), "before");
  EXPECT_STREQ(ParseJson(again->body)["entrypoint"][0].GetString(), "sleep");
}

TEST(SnapshotTest, RefusalsAsTheServerAnswersThem) {
  TestFake fake;
  const std::string source = fake.CreateSandbox();
  int status = 0;
  rapidjson::Document body = Snapshot(fake, "no-such-sandbox", "", &status);
  EXPECT_EQ(status, 404);
  EXPECT_STREQ(body["code"].GetString(), "DOCKER::SANDBOX_NOT_FOUND");
  body = Snapshot(fake, source, R"({"name":""})", &status);
  EXPECT_EQ(status, 422);
  EXPECT_STREQ(body["detail"][0]["type"].GetString(), "string_too_short");
  ASSERT_EQ(fake.lifecycle->Post(("/v1/sandboxes/" + source + "/pause").c_str(), "", "application/json")->status, 202);
  body = Snapshot(fake, source, "{}", &status);
  EXPECT_EQ(status, 409);
  EXPECT_STREQ(body["code"].GetString(), "SNAPSHOT::INVALID_SOURCE_STATE");
  ASSERT_EQ(fake.lifecycle->Post(("/v1/sandboxes/" + source + "/resume").c_str(), "", "application/json")->status, 202);

  auto missing = fake.lifecycle->Get("/v1/snapshots/no-such-snapshot");
  EXPECT_EQ(missing->status, 404);
  EXPECT_STREQ(ParseJson(missing->body)["code"].GetString(), "SNAPSHOT::NOT_FOUND");
  EXPECT_EQ(fake.lifecycle->Delete("/v1/snapshots/no-such-snapshot")->status, 404);
  auto restore_missing = Restore(fake, "no-such-snapshot");
  EXPECT_EQ(restore_missing->status, 404);
  EXPECT_STREQ(ParseJson(restore_missing->body)["code"].GetString(), "SNAPSHOT::NOT_FOUND");

  // Creating: a delete and a restore are refused; then Ready, deleted once.
  ASSERT_EQ(fake.lifecycle->Post("/_fake/faults", R"({"snapshot_capture_ms":600})", "application/json")->status, 200);
  const std::string slow = Snapshot(fake, source, "", &status)["id"].GetString();
  ASSERT_EQ(status, 202);
  auto refused = fake.lifecycle->Delete(("/v1/snapshots/" + slow).c_str());
  EXPECT_EQ(refused->status, 409);
  EXPECT_STREQ(ParseJson(refused->body)["code"].GetString(), "SNAPSHOT::INVALID_STATE");
  EXPECT_EQ(Restore(fake, slow)->status, 409);
  EXPECT_EQ(WaitSettled(fake, slow), "Ready");
  EXPECT_EQ(fake.lifecycle->Delete(("/v1/snapshots/" + slow).c_str())->status, 204);
  EXPECT_EQ(fake.lifecycle->Delete(("/v1/snapshots/" + slow).c_str())->status, 404);

  // Failed: a restore from it is refused.
  ASSERT_EQ(fake.lifecycle->Post("/_fake/faults", R"({"snapshot_capture_ms":0,"snapshot_fails":true})",
                                 "application/json")
                ->status,
            200);
  const std::string failed = Snapshot(fake, source, "", &status)["id"].GetString();
  ASSERT_EQ(WaitSettled(fake, failed), "Failed");
  auto failed_body = ParseJson(fake.lifecycle->Get(("/v1/snapshots/" + failed).c_str())->body);
  EXPECT_STREQ(failed_body["status"]["reason"].GetString(), "snapshot_capture_failed");
  EXPECT_EQ(Restore(fake, failed)->status, 409);
  EXPECT_EQ(fake.lifecycle->Delete(("/v1/snapshots/" + failed).c_str())->status, 204);
  auto stats = ParseJson(fake.lifecycle->Get("/_fake/stats")->body);
  EXPECT_EQ(stats["snapshots"].GetUint64(), 0u);
}

TEST(SnapshotTest, AServerWithoutSnapshotsAnswers501) {
  FakeConfig config = TestConfig();
  config.snapshots = false;
  TestFake fake(config);
  const std::string source = fake.CreateSandbox();
  int status = 0;
  rapidjson::Document body = Snapshot(fake, source, "", &status);
  EXPECT_EQ(status, 501);
  EXPECT_STREQ(body["code"].GetString(), "SNAPSHOT::NOT_IMPLEMENTED");
}

TEST(SnapshotTest, TheListFiltersBySandboxAndStateAndPagesNewestFirst) {
  TestFake fake;
  const std::string a = fake.CreateSandbox();
  const std::string b = fake.CreateSandbox();
  std::vector<std::string> of_a;
  int status = 0;
  for (int i = 0; i < 3; ++i) {
    of_a.push_back(Snapshot(fake, a, "", &status)["id"].GetString());
    ASSERT_EQ(WaitSettled(fake, of_a.back()), "Ready");
  }
  const std::string of_b = Snapshot(fake, b, "", &status)["id"].GetString();
  ASSERT_EQ(WaitSettled(fake, of_b), "Ready");

  auto page = ParseJson(fake.lifecycle->Get(("/v1/snapshots?sandboxId=" + a + "&pageSize=2").c_str())->body);
  ASSERT_EQ(page["items"].Size(), 2u);
  EXPECT_STREQ(page["items"][0]["id"].GetString(), of_a[2].c_str());  // newest first
  EXPECT_STREQ(page["items"][1]["id"].GetString(), of_a[1].c_str());
  EXPECT_EQ(page["pagination"]["totalItems"].GetInt(), 3);
  EXPECT_EQ(page["pagination"]["totalPages"].GetInt(), 2);
  EXPECT_TRUE(page["pagination"]["hasNextPage"].GetBool());
  page = ParseJson(fake.lifecycle->Get(("/v1/snapshots?sandboxId=" + a + "&pageSize=2&page=2").c_str())->body);
  ASSERT_EQ(page["items"].Size(), 1u);
  EXPECT_STREQ(page["items"][0]["id"].GetString(), of_a[0].c_str());

  page = ParseJson(fake.lifecycle->Get("/v1/snapshots?state=ready&state=Failed")->body);
  EXPECT_EQ(page["pagination"]["totalItems"].GetInt(), 4);
  page = ParseJson(fake.lifecycle->Get("/v1/snapshots?state=Creating")->body);
  EXPECT_EQ(page["pagination"]["totalItems"].GetInt(), 0);
  EXPECT_EQ(fake.lifecycle->Get("/v1/snapshots?pageSize=201")->status, 422);
}

// A launcher script among the snapshot's files that execs the image's start script
// starts the code interpreter, as the script itself does; the default entrypoint does
// not.
TEST(SnapshotTest, ALauncherAmongTheFilesStartsWhatItExecs) {
  TestFake fake;
  auto res = fake.lifecycle->Post(
      "/v1/sandboxes",
      R"({"image":{"uri":"opensandbox/code-interpreter:v1.1.0"},)"
      R"("entrypoint":["/opt/code-interpreter/code-interpreter.sh"],"resourceLimits":{}})",
      "application/json");
  ASSERT_EQ(res->status, 202);
  const std::string source = ParseJson(res->body)["id"].GetString();
  const std::string launcher = RootOf(fake, source) + "/usr-local-launcher";
  {
    std::ofstream out(launcher);
    out << "#!/bin/sh\n# the source's entrypoint\nexec '/opt/code-interpreter/code-interpreter.sh'\n";
  }
  chmod(launcher.c_str(), 0755);
  int status = 0;
  const std::string snapshot_id = Snapshot(fake, source, "", &status)["id"].GetString();
  ASSERT_EQ(WaitSettled(fake, snapshot_id), "Ready");

  auto jupyter_answers = [&](const std::string& extra) {
    auto restored = Restore(fake, snapshot_id, extra);
    EXPECT_EQ(restored->status, 202) << restored->body;
    const std::string id = ParseJson(restored->body)["id"].GetString();
    EndpointClient execd(fake.ExecdEndpoint(id));
    return execd.client->Get(execd.Path("/proxy/44771/api/kernelspecs").c_str(),
                             {{"Authorization", "token opensandboxcodeinterpreterjupyter"}})
        ->status;
  };
  EXPECT_EQ(jupyter_answers(R"("entrypoint":["/usr-local-launcher"])"), 200);
  EXPECT_EQ(jupyter_answers(""), 502);  // tail -f /dev/null: Jupyter never started

  // A launcher the files lack: the container exits 127 and the sandbox fails.
  auto broken = Restore(fake, snapshot_id, R"("entrypoint":["/no/such/launcher"])");
  ASSERT_EQ(broken->status, 202);
  const std::string id = ParseJson(broken->body)["id"].GetString();
  std::string state;
  for (int i = 0; i < 100 && state != "Failed"; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    state = ParseJson(fake.lifecycle->Get(("/v1/sandboxes/" + id).c_str())->body)["status"]["state"].GetString();
  }
  EXPECT_EQ(state, "Failed");
}

}  // namespace
}  // namespace fake_opensandbox
