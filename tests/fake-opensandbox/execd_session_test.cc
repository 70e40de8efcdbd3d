// The fake's bash sessions (/session routes) against docs/opensandbox.md §2.9 and §2.15:
// state carried from run to run, the output framing, exit codes, timeouts, and the ways
// a session ends.

#include <gtest/gtest.h>

#include "tests/fake-opensandbox/test_support.h"

namespace fake_opensandbox {
namespace {

bool EndsWith(const std::string& text, const std::string& tail) {
  return text.size() >= tail.size() && text.compare(text.size() - tail.size(), tail.size(), tail) == 0;
}

class SessionTest : public ::testing::Test {
 protected:
  void SetUp() override {
    execd_ = std::make_unique<EndpointClient>(fake_.ExecdEndpoint(fake_.CreateSandbox()));
  }
  std::string NewSession(const std::string& body = "") {
    auto res = execd_->client->Post(execd_->Path("/session").c_str(), body, "application/json");
    EXPECT_EQ(res->status, 200) << res->body;
    return ParseJson(res->body)["session_id"].GetString();
  }
  httplib::Result RunRaw(const std::string& id, const std::string& body) {
    return execd_->client->Post(execd_->Path("/session/" + id + "/run").c_str(), body, "application/json");
  }
  std::vector<StreamEvent> Run(const std::string& id, const std::string& command, const std::string& extra = "") {
    rapidjson::StringBuffer out;
    rapidjson::Writer<rapidjson::StringBuffer> w(out);
    w.StartObject();
    w.Key("command");
    w.String(command.c_str());
    w.EndObject();
    std::string body = out.GetString();
    if (!extra.empty()) body = body.substr(0, body.size() - 1) + "," + extra + "}";
    auto res = RunRaw(id, body);
    EXPECT_EQ(res->status, 200) << res->body;
    last_body_ = res->body;
    return ParseEvents(res->body);
  }

  TestFake fake_;
  std::unique_ptr<EndpointClient> execd_;
  std::string last_body_;
};

TEST_F(SessionTest, DirectoryAndExportedVariablesCarryOver) {
  const std::string id = NewSession();
  auto events = Run(id, "cd /tmp && export A=1 && B=2");
  EXPECT_EQ(events.front().type, "init");
  EXPECT_EQ(events.front().text, id);
  EXPECT_EQ(events.back().type, "execution_complete");
  events = Run(id, "pwd; echo \"$A\"; echo \"${B:-unset}\"; echo to-stderr >&2; echo; echo last");
  auto lines = OutputTexts(events, "stdout");
  ASSERT_EQ(lines.size(), 5u) << last_body_;
  EXPECT_TRUE(EndsWith(lines[0], "/tmp")) << lines[0];
  EXPECT_EQ(lines[1], "1");
  EXPECT_EQ(lines[2], "unset");     // not exported: not kept
  EXPECT_EQ(lines[3], "to-stderr");  // stderr shares the pipe
  EXPECT_EQ(lines[4], "last");       // the blank line is dropped
  EXPECT_TRUE(OutputTexts(events, "stderr").empty());
}

TEST_F(SessionTest, ExitCodesAndRunsThatSaveNothing) {
  const std::string id = NewSession(R"({"cwd":"/tmp/session-home"})");
  auto events = Run(id, "pwd; false");
  EXPECT_TRUE(EndsWith(OutputTexts(events, "stdout").at(0), "/tmp/session-home"));
  ASSERT_EQ(events.back().type, "error");
  EXPECT_EQ(events.back().evalue, "1");
  EXPECT_NE(events.back().raw.find(R"("traceback":["exit status 1"])"), std::string::npos) << events.back().raw;
  // `exit` ends bash before the state is saved.
  events = Run(id, "cd / && export GONE=1 && exit 3");
  EXPECT_EQ(events.back().evalue, "3");
  events = Run(id, "pwd; echo \"${GONE:-none}\"");
  auto lines = OutputTexts(events, "stdout");
  EXPECT_TRUE(EndsWith(lines.at(0), "/tmp/session-home"));
  EXPECT_EQ(lines.at(1), "none");
  // A run's cwd sticks.
  Run(id, "true", R"("cwd":"/root")");
  EXPECT_TRUE(EndsWith(OutputTexts(Run(id, "pwd"), "stdout").at(0), "/root"));
}

TEST_F(SessionTest, ATimeoutEndsTheStreamWithTheBareObject) {
  const std::string id = NewSession();
  Run(id, "export KEPT=yes");
  auto events = Run(id, "export KEPT=no; sleep 5", R"("timeout":500)");
  const std::string bare = R"({"code":"RUNTIME_ERROR","message":"error running in session. timeout after 500ms"})";
  EXPECT_TRUE(EndsWith(last_body_, bare)) << last_body_;
  EXPECT_EQ(OutputTexts(Run(id, "echo $KEPT"), "stdout").at(0), "yes");  // not saved
}

TEST_F(SessionTest, ErrorsAndTheWaysASessionEnds) {
  auto unknown = RunRaw("no-such-session", R"({"command":"true"})");
  EXPECT_EQ(unknown->status, 500);
  EXPECT_EQ(unknown->body, R"({"code":"RUNTIME_ERROR","message":"error running in session. context not found"})");
  const std::string id = NewSession();
  EXPECT_EQ(RunRaw(id, R"({})")->status, 400);
  EXPECT_EQ(RunRaw(id, R"({"command":"true","cwd":"/no/such/dir"})")->status, 400);
  EXPECT_EQ(execd_->client->Delete(execd_->Path("/session/" + id).c_str())->status, 200);
  EXPECT_EQ(execd_->client->Delete(execd_->Path("/session/" + id).c_str())->status, 404);
  // The interrupt closes a session.
  const std::string other = NewSession();
  EXPECT_EQ(execd_->client->Delete(execd_->Path("/code?id=" + other).c_str())->status, 200);
  EXPECT_EQ(RunRaw(other, R"({"command":"true"})")->status, 500);
}

}  // namespace
}  // namespace fake_opensandbox
