// The sandbox.snapshot extension end to end (docs/epp1.md §3): a snapshot keeps a
// sandbox's files and the entrypoint it ran, a restore gets both (a code-interpreter
// snapshot comes back with a working interpreter), the refusals, and nothing left behind
// by a snapshot nobody got an answer for ($/cancel, end of stdin, snapshot_timeout, a
// failed capture), counted through the fake's stats.

#include <chrono>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "tests/e2e/harness.h"

namespace abx::e2e {
namespace {

constexpr Millis kSnapshotTimeout{60000};
const char kLauncher[] = "/.abx-opensandbox-entrypoint";

class SnapshotTest : public TestEnv {
 protected:
  MessagePtr Snapshot(EppSession* shim, const std::string& sandbox, const std::string& extra = "") {
    JsonObject params;
    params.Str("sandbox_id", sandbox);
    if (!extra.empty()) params.Raw("name", extra);
    return shim->Request("sandbox.snapshot", params.str(), kSnapshotTimeout);
  }
  // The file's text in `sandbox`, or "<EPP code>" when it cannot be read.
  std::string Read(EppSession* shim, const std::string& sandbox, const std::string& path) {
    MessagePtr read = shim->Request("files.read", JsonObject().Str("sandbox_id", sandbox).Str("path", path).str());
    if (!read) return "<no answer>";
    if (read->IsError()) return "<" + read->EppCode() + ">";
    return GetString(read->result(), "data");
  }
  // Waits until the launcher is gone from `sandbox` (it is removed once the snapshot has
  // left Creating, in the background after a cancel).
  bool LauncherGone(EppSession* shim, const std::string& sandbox, Millis within = Millis(10000)) {
    const auto deadline = Clock::now() + within;
    while (Clock::now() < deadline) {
      if (Read(shim, sandbox, kLauncher) == "<E8005>") return true;
      std::this_thread::sleep_for(Millis(100));
    }
    return false;
  }
  // Waits until the fake holds `count` snapshots.
  bool SnapshotsBecome(int64_t count, Millis within) {
    const auto deadline = Clock::now() + within;
    while (Clock::now() < deadline) {
      auto stats = fake().Stats();
      if (stats && stats->snapshots == count) return true;
      std::this_thread::sleep_for(Millis(100));
    }
    return false;
  }
};

TEST_F(SnapshotTest, ARestoreHasTheFilesOfTheSnapshotAndNothingIsLeftInTheSource) {
  EppSession* shim = nullptr;
  std::string source;
  ASSERT_TRUE(StartShimWithSandbox(&shim, &source));
  ASSERT_FALSE(shim->Request("files.write", JsonObject()
                                                .Str("sandbox_id", source)
                                                .Str("path", "/root/kept.txt")
                                                .Str("data", "kept across the snapshot")
                                                .str())
                   ->IsError());
  MessagePtr taken = Snapshot(shim, source, "\"checkpoint\"");
  ASSERT_NE(taken, nullptr);
  ASSERT_FALSE(taken->IsError()) << taken->raw;
  const std::string snapshot = GetString(taken->result(), "id");
  EXPECT_EQ(GetString(taken->result(), "sandbox_id"), source);
  EXPECT_EQ(GetString(taken->result(), "name"), "checkpoint");
  EXPECT_EQ(GetString(taken->result(), "state"), "Ready");
  EXPECT_FALSE(GetString(taken->result(), "created_at").empty());
  // The launcher was only there for the capture.
  EXPECT_EQ(Read(shim, source, kLauncher), "<E8005>");

  MessagePtr restored = shim->Request(
      "sandbox.create", JsonObject().Raw("provider_options", JsonObject().Str("snapshot_id", snapshot).str()).str(),
      Millis(30000));
  ASSERT_NE(restored, nullptr);
  ASSERT_FALSE(restored->IsError()) << restored->raw;
  const std::string copy = GetString(restored->result(), "id");
  EXPECT_NE(copy, source);
  EXPECT_EQ(GetString(restored->result(), "image"), "");  // a restore has no image of its own
  EXPECT_EQ(GetString(restored->result(), "template"), "");  // nor a template: "checkpoint" is not one
  MessagePtr got_copy = shim->Request("sandbox.get", JsonObject().Str("sandbox_id", copy).str());
  ASSERT_NE(got_copy, nullptr);
  EXPECT_EQ(GetString(got_copy->result(), "template"), "") << got_copy->raw;
  EXPECT_EQ(GetString(restored->result(), "state"), "Running");
  EXPECT_EQ(Read(shim, copy, "/root/kept.txt"), "kept across the snapshot");
  // It runs what the source ran, through the launcher kept in the snapshot.
  EXPECT_NE(Read(shim, copy, kLauncher).find("exec 'tail' '-f' '/dev/null'"), std::string::npos);

  // get, list (by sandbox, with a cursor), delete.
  MessagePtr got = shim->Request("snapshot.get", JsonObject().Str("snapshot_id", snapshot).str());
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(GetString(got->result(), "state"), "Ready") << got->raw;
  MessagePtr second = Snapshot(shim, source);
  ASSERT_NE(second, nullptr);
  ASSERT_FALSE(second->IsError()) << second->raw;
  MessagePtr page = shim->Request("snapshot.list", JsonObject().Str("sandbox_id", source).Int("limit", 1).str());
  ASSERT_NE(page, nullptr);
  ASSERT_FALSE(page->IsError()) << page->raw;
  EXPECT_EQ(GetString(page->result(), "snapshots.0.id"), GetString(second->result(), "id"));  // newest first
  const std::string cursor = GetString(page->result(), "next_cursor");
  ASSERT_FALSE(cursor.empty()) << page->raw;
  page = shim->Request("snapshot.list",
                       JsonObject().Str("sandbox_id", source).Int("limit", 1).Str("cursor", cursor).str());
  EXPECT_EQ(GetString(page->result(), "snapshots.0.id"), snapshot) << page->raw;
  MessagePtr deleted = shim->Request("snapshot.delete", JsonObject().Str("snapshot_id", snapshot).str());
  EXPECT_TRUE(GetBool(deleted->result(), "deleted")) << deleted->raw;
  deleted = shim->Request("snapshot.delete", JsonObject().Str("snapshot_id", snapshot).str());
  EXPECT_FALSE(GetBool(deleted->result(), "deleted", true)) << deleted->raw;
  MessagePtr gone = shim->Request("snapshot.get", JsonObject().Str("snapshot_id", snapshot).str());
  EXPECT_EQ(gone->EppCode(), "E8005") << gone->raw;
}

TEST_F(SnapshotTest, ACodeInterpreterSnapshotRestoresWithAWorkingInterpreter) {
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  const std::string source = CreateSandbox(shim, R"({"template":"code"})", Millis(60000));
  ASSERT_FALSE(source.empty());
  MessagePtr ran = shim->Request("code.run", JsonObject().Str("sandbox_id", source).Str("code", "1 + 1").str(),
                                 Millis(60000));
  ASSERT_NE(ran, nullptr);
  ASSERT_FALSE(ran->IsError()) << ran->raw;
  MessagePtr taken = Snapshot(shim, source);
  ASSERT_NE(taken, nullptr);
  ASSERT_FALSE(taken->IsError()) << taken->raw;
  // Whether or not the source still exists.
  ASSERT_TRUE(GetBool(shim->Request("sandbox.kill", JsonObject().Str("sandbox_id", source).str())->result(), "killed"));
  MessagePtr restored = shim->Request(
      "sandbox.create",
      JsonObject()
          .Raw("provider_options", JsonObject().Str("snapshot_id", GetString(taken->result(), "id")).str())
          .Raw("metadata", R"({"restored":"yes"})")
          .str(),
      Millis(60000));
  ASSERT_NE(restored, nullptr);
  ASSERT_FALSE(restored->IsError()) << restored->raw;
  ran = shim->Request("code.run",
                      JsonObject().Str("sandbox_id", GetString(restored->result(), "id")).Str("code", "6 * 7").str(),
                      Millis(60000));
  ASSERT_NE(ran, nullptr);
  ASSERT_FALSE(ran->IsError()) << ran->raw;
  EXPECT_NE(ran->raw.find("42"), std::string::npos) << ran->raw;
  EXPECT_EQ(GetString(restored->result(), "metadata.restored"), "yes") << restored->raw;

  // The call's own entrypoint wins: a plain one starts no interpreter, which does not
  // answer within ready_timeout (E8006, naming the replaced entrypoint as the likely cause).
  EppSession* quick = StartInitializedShim({{"ABX_OPENSANDBOX_READY_TIMEOUT", "3"}});
  ASSERT_NE(quick, nullptr);
  MessagePtr plain = quick->Request("sandbox.create",
                                    JsonObject()
                                        .Raw("entrypoint", R"(["tail","-f","/dev/null"])")
                                        .Raw("provider_options",
                                             JsonObject().Str("snapshot_id", GetString(taken->result(), "id")).str())
                                        .str(),
                                    Millis(60000));
  ASSERT_NE(plain, nullptr);
  ASSERT_FALSE(plain->IsError()) << plain->raw;
  ran = quick->Request("code.run",
                       JsonObject().Str("sandbox_id", GetString(plain->result(), "id")).Str("code", "1").str(),
                       Millis(30000));
  ASSERT_NE(ran, nullptr);
  EXPECT_EQ(ran->EppCode(), "E8006") << ran->raw;
}

TEST_F(SnapshotTest, RefusalsComeBeforeAnythingIsLeftBehind) {
  EppSession* shim = nullptr;
  std::string source;
  ASSERT_TRUE(StartShimWithSandbox(&shim, &source));
  MessagePtr answer = Snapshot(shim, source, "\"\"");
  EXPECT_EQ(answer->ErrorCode(), -32602) << answer->raw;
  EXPECT_EQ(GetString(answer->error(), "data.field"), "name") << answer->raw;
  answer = Snapshot(shim, source, "\"" + std::string(129, 'n') + "\"");
  EXPECT_EQ(answer->ErrorCode(), -32602) << answer->raw;
  answer = shim->Request("snapshot.list", JsonObject().Int("limit", 201).str());
  EXPECT_EQ(GetString(answer->error(), "data.field"), "limit") << answer->raw;
  answer = Snapshot(shim, source, "\"bad\\nname\"");
  EXPECT_EQ(answer->ErrorCode(), -32602) << answer->raw;
  answer = shim->Request("sandbox.create",
                         JsonObject()
                             .Str("template", "base")
                             .Raw("provider_options", JsonObject().Str("snapshot_id", "x").str())
                             .str());
  EXPECT_EQ(answer->ErrorCode(), -32602) << answer->raw;
  EXPECT_EQ(GetString(answer->error(), "data.field"), "template") << answer->raw;
  answer = shim->Request("sandbox.create",
                         JsonObject().Raw("provider_options", JsonObject().Str("snapshot_id", "no-such").str()).str());
  EXPECT_EQ(answer->EppCode(), "E8005") << answer->raw;
  answer = shim->Request("snapshot.get", JsonObject().Str("snapshot_id", "no-such").str());
  EXPECT_EQ(answer->EppCode(), "E8005") << answer->raw;

  ASSERT_FALSE(shim->Request("sandbox.pause", JsonObject().Str("sandbox_id", source).str())->IsError());
  answer = Snapshot(shim, source);
  EXPECT_EQ(answer->EppCode(), "E8007") << answer->raw;
  ASSERT_FALSE(shim->Request("sandbox.resume", JsonObject().Str("sandbox_id", source).str(), Millis(30000))->IsError());

  // A snapshot still Creating: not deleted, not restored from.
  REQUIRE_FAKE("the fake's snapshot faults");
  ASSERT_TRUE(fake().SetFaults(R"({"snapshot_capture_ms":3000})"));
  const int64_t pending = shim->SendRequest("sandbox.snapshot", JsonObject().Str("sandbox_id", source).str());
  std::string creating;
  for (int i = 0; i < 50 && creating.empty(); ++i) {
    std::this_thread::sleep_for(Millis(50));
    MessagePtr listed = shim->Request("snapshot.list", JsonObject().Str("sandbox_id", source).str());
    creating = GetString(listed->result(), "snapshots.0.id");
  }
  ASSERT_FALSE(creating.empty());
  answer = shim->Request("snapshot.delete", JsonObject().Str("snapshot_id", creating).str());
  EXPECT_EQ(answer->EppCode(), "E8007") << answer->raw;
  answer = shim->Request("sandbox.create",
                         JsonObject().Raw("provider_options", JsonObject().Str("snapshot_id", creating).str()).str());
  EXPECT_EQ(answer->EppCode(), "E8007") << answer->raw;
  MessagePtr done = shim->WaitResponse(pending, kSnapshotTimeout);
  ASSERT_NE(done, nullptr);
  EXPECT_EQ(GetString(done->result(), "state"), "Ready") << done->raw;
  // $/progress for this request, Creating, at most once a second over the 3 s capture.
  int progress = 0;
  for (const MessagePtr& n : shim->NotificationsByMethod("$/progress")) {
    if (GetInt(n->params(), "id") != pending) continue;
    EXPECT_EQ(GetString(n->params(), "state"), "Creating") << n->raw;
    ++progress;
  }
  EXPECT_GE(progress, 2);
  EXPECT_LE(progress, 4);
  MessagePtr only_creating = shim->Request("snapshot.list", JsonObject().Raw("state", R"(["Creating"])").str());
  EXPECT_TRUE(IsNull(only_creating->result(), "next_cursor")) << only_creating->raw;
  EXPECT_EQ(GetString(only_creating->result(), "snapshots.0.id"), "") << "nothing is Creating now: " << only_creating->raw;
  ASSERT_FALSE(shim->Request("snapshot.delete", JsonObject().Str("snapshot_id", creating).str())->IsError());

  // A failed capture is E8010 with the server's reason, and is not kept.
  ASSERT_TRUE(fake().SetFaults(R"({"snapshot_capture_ms":0,"snapshot_fails":true})"));
  answer = Snapshot(shim, source);
  EXPECT_EQ(answer->EppCode(), "E8010") << answer->raw;
  EXPECT_NE(answer->ErrorMessage().find("snapshot_capture_failed"), std::string::npos) << answer->raw;
  ASSERT_TRUE(fake().ClearFaults());
  EXPECT_TRUE(SnapshotsBecome(0, Millis(5000)));
  EXPECT_TRUE(LauncherGone(shim, source));
}

// $/cancel, snapshot_timeout and end of stdin: the answer comes at once, and the snapshot
// begun for it is deleted as soon as it leaves Creating, with the launcher.
TEST_F(SnapshotTest, ASnapshotNobodyGotAnAnswerForIsDeleted) {
  REQUIRE_FAKE("the fake's snapshot_capture_ms fault");
  EppSession* shim = nullptr;
  std::string source;
  ASSERT_TRUE(StartShimWithSandbox(&shim, &source));
  ASSERT_TRUE(fake().SetFaults(R"({"snapshot_capture_ms":1500})"));

  const int64_t cancelled = shim->SendRequest("sandbox.snapshot", JsonObject().Str("sandbox_id", source).str());
  ASSERT_TRUE(SnapshotsBecome(1, Millis(5000))) << "the snapshot was never begun";
  const auto sent = Clock::now();
  ASSERT_TRUE(shim->Notify("$/cancel", JsonObject().Int("id", cancelled).str()));
  MessagePtr answer = shim->WaitResponse(cancelled);
  ASSERT_NE(answer, nullptr);
  EXPECT_EQ(answer->EppCode(), "E8009") << answer->raw;
  EXPECT_LT(Clock::now() - sent, Millis(1000));
  EXPECT_TRUE(SnapshotsBecome(0, Millis(10000)));
  EXPECT_TRUE(LauncherGone(shim, source));

  EppSession* hurried = StartInitializedShim({{"ABX_OPENSANDBOX_SNAPSHOT_TIMEOUT", "0.5"}});
  ASSERT_NE(hurried, nullptr);
  answer = Snapshot(hurried, source);
  ASSERT_NE(answer, nullptr);
  EXPECT_EQ(answer->EppCode(), "E8006") << answer->raw;
  EXPECT_TRUE(SnapshotsBecome(0, Millis(10000)));
  EXPECT_TRUE(LauncherGone(shim, source));

  EppSession* leaving = StartInitializedShim();
  ASSERT_NE(leaving, nullptr);
  leaving->SendRequest("sandbox.snapshot", JsonObject().Str("sandbox_id", source).str());
  ASSERT_TRUE(SnapshotsBecome(1, Millis(5000))) << "the snapshot was never begun";
  leaving->CloseStdin();
  EXPECT_TRUE(leaving->WaitExit(Millis(10000)).has_value());
  EXPECT_TRUE(SnapshotsBecome(0, Millis(10000)));
  EXPECT_TRUE(LauncherGone(shim, source));
}

// The deletion is owed to the server: a bridge whose last session has gone does not idle
// out before the capture is over and the snapshot deleted; then it does.
TEST_F(SnapshotTest, AnIdleBridgeExitsOnlyOnceAnAbandonedSnapshotIsDeleted) {
  REQUIRE_FAKE("the fake's snapshot_capture_ms fault");
  EppSession* shim = StartInitializedShim({{"ABX_OPENSANDBOX_BRIDGE_IDLE_TIMEOUT", "1"}});
  ASSERT_NE(shim, nullptr);
  MessagePtr created = shim->Request("sandbox.create", "{}", Millis(30000));
  ASSERT_NE(created, nullptr);
  const std::string source = GetString(created->result(), "id");
  ASSERT_FALSE(source.empty()) << created->raw;
  ASSERT_TRUE(fake().SetFaults(R"({"snapshot_capture_ms":5000})"));
  const int64_t cancelled = shim->SendRequest("sandbox.snapshot", JsonObject().Str("sandbox_id", source).str());
  ASSERT_TRUE(SnapshotsBecome(1, Millis(5000))) << "the snapshot was never begun";
  ASSERT_TRUE(shim->Notify("$/cancel", JsonObject().Int("id", cancelled).str()));
  MessagePtr answer = shim->WaitResponse(cancelled);
  ASSERT_NE(answer, nullptr);
  EXPECT_EQ(answer->EppCode(), "E8009") << answer->raw;
  shim->CloseStdin();
  ASSERT_TRUE(shim->WaitExit(Millis(10000)).has_value());
  const auto ended = Clock::now();

  // Well past the idle timeout, the capture still under way: the bridge is up.
  std::this_thread::sleep_for(Millis(2500));
  EXPECT_FALSE(BridgeProcesses().empty()) << "the bridge idled out with a snapshot still owed a deletion";
  EXPECT_TRUE(SnapshotsBecome(0, Millis(15000))) << "the abandoned snapshot was left";
  // Then it goes.
  const auto deadline = Clock::now() + Millis(10000);
  while (!BridgeProcesses().empty() && Clock::now() < deadline) std::this_thread::sleep_for(Millis(100));
  EXPECT_TRUE(BridgeProcesses().empty()) << "the bridge never idled out";
  EXPECT_GT(Clock::now() - ended, Millis(2000));
}

TEST_F(SnapshotTest, AServerWithoutSnapshotsIsE8007) {
  REQUIRE_FAKE("a fake without snapshots");
  ASSERT_TRUE(RestartFake({"--no-snapshots"}));
  EppSession* shim = nullptr;
  std::string source;
  ASSERT_TRUE(StartShimWithSandbox(&shim, &source));
  MessagePtr answer = Snapshot(shim, source);
  ASSERT_NE(answer, nullptr);
  EXPECT_EQ(answer->EppCode(), "E8007") << answer->raw;
  EXPECT_NE(answer->ErrorMessage().find("no snapshots"), std::string::npos) << answer->raw;
  EXPECT_EQ(Read(shim, source, kLauncher), "<E8005>");
}

TEST_F(SnapshotTest, MetadataIsSetAndDeletedByTheServersMergePatch) {
  EppSession* shim = nullptr;
  std::string sandbox;
  ASSERT_TRUE(StartShimWithSandbox(&shim, &sandbox));
  MessagePtr set = shim->Request(
      "sandbox.set_metadata",
      JsonObject().Str("sandbox_id", sandbox).Raw("metadata", R"({"team":"infra","example.com/stage":"one"})").str());
  ASSERT_NE(set, nullptr);
  ASSERT_FALSE(set->IsError()) << set->raw;
  EXPECT_EQ(GetString(set->result(), "id"), sandbox);
  EXPECT_EQ(GetString(set->result(), "metadata.team"), "infra") << set->raw;
  set = shim->Request("sandbox.set_metadata",
                      JsonObject().Str("sandbox_id", sandbox).Raw("metadata", R"({"team":null,"owner":"ana"})").str());
  ASSERT_FALSE(set->IsError()) << set->raw;
  EXPECT_EQ(Find(set->result(), "metadata.team"), nullptr) << set->raw;
  EXPECT_EQ(GetString(set->result(), "metadata.owner"), "ana") << set->raw;
  MessagePtr got = shim->Request("sandbox.get", JsonObject().Str("sandbox_id", sandbox).str());
  EXPECT_EQ(GetString(got->result(), "metadata.owner"), "ana") << got->raw;

  // The server's label rules, checked before anything is sent.
  const auto before = UpstreamRequestsDuring([&] {
    for (const char* bad : {R"({"opensandbox.io/x":"1"})", R"({"-bad":"1"})", R"({"ok":"no spaces"})",
                            R"({"ok":1})"}) {
      MessagePtr refused = shim->Request("sandbox.set_metadata",
                                         JsonObject().Str("sandbox_id", sandbox).Raw("metadata", bad).str());
      EXPECT_EQ(refused->ErrorCode(), -32602) << bad << ": " << refused->raw;
      EXPECT_EQ(GetString(refused->error(), "data.field").rfind("metadata.", 0), 0u) << refused->raw;
    }
  });
  if (before) {
    EXPECT_EQ(*before, 0) << "a refused patch reached the server";
  }
  MessagePtr gone = shim->Request("sandbox.set_metadata",
                                  JsonObject().Str("sandbox_id", "no-such").Raw("metadata", R"({"a":"b"})").str());
  EXPECT_EQ(gone->EppCode(), "E8005") << gone->raw;
}

// The CLI a person uses: `abx-opensandbox-bridge snapshot SANDBOX --name N` waits for
// Ready and prints the id; an unknown sandbox fails with the EPP code.
TEST_F(SnapshotTest, TheBridgeCliTakesASnapshotByName) {
  EppSession* shim = nullptr;
  std::string sandbox;
  ASSERT_TRUE(StartShimWithSandbox(&shim, &sandbox));
  std::string output;
  auto status = RunCommand({BridgeBinary(), "snapshot", sandbox, "--name", "from the cli", "--socket", socket_path()},
                           ShimEnv(), Millis(60000), &output);
  ASSERT_TRUE(status.has_value()) << output;
  EXPECT_TRUE(status->exited && status->code == 0) << output;
  const std::string marker = "\nsnapshot ";  // the sentence after "taking a snapshot of ..."
  const size_t at = output.find(marker);
  ASSERT_NE(at, std::string::npos) << output;
  const std::string id = output.substr(at + marker.size(), output.find(' ', at + marker.size()) - at - marker.size());
  EXPECT_NE(output.find(id + "\n"), std::string::npos) << "the id alone on a line: " << output;
  MessagePtr got = shim->Request("snapshot.get", JsonObject().Str("snapshot_id", id).str());
  ASSERT_NE(got, nullptr);
  EXPECT_EQ(GetString(got->result(), "name"), "from the cli") << got->raw;
  EXPECT_EQ(GetString(got->result(), "state"), "Ready") << got->raw;

  status = RunCommand({BridgeBinary(), "snapshot", "no-such-sandbox", "--socket", socket_path()}, ShimEnv(),
                      Millis(30000), &output);
  ASSERT_TRUE(status.has_value()) << output;
  EXPECT_EQ(status->code, 1) << output;
  EXPECT_NE(output.find("E8005"), std::string::npos) << output;
}

}  // namespace
}  // namespace abx::e2e
