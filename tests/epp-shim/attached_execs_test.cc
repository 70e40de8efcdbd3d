#include "epp-shim/attached_execs.h"

#include <string>

#include <gtest/gtest.h>

#include "epp-shim/line_meta.h"

namespace abx {
namespace {

void Send(AttachedExecs* execs, const std::string& line) {
  execs->OnRequest(ParseLineMeta(line), line);
}

TEST(AttachedExecsTest, OwesAnExitOnlyForAttachedCommandsStillRunning) {
  AttachedExecs execs;
  Send(&execs, R"({"jsonrpc":"2.0","id":1,"method":"exec.start","params":{"sandbox_id":"s","command":"a"}})");
  Send(&execs, R"({"jsonrpc":"2.0","id":2,"method":"exec.start","params":{"sandbox_id":"s","command":"b","detached":true}})");
  Send(&execs, R"({"jsonrpc":"2.0","id":3,"method":"exec.start","params":{"sandbox_id":"s","command":"c"}})");
  Send(&execs, R"({"jsonrpc":"2.0","id":4,"method":"exec.start","params":{"sandbox_id":"s"}})");
  Send(&execs, R"({"jsonrpc":"2.0","id":5,"method":"exec.run","params":{"sandbox_id":"s","command":"d"}})");
  execs.OnOutput("1", R"({"jsonrpc":"2.0","id":1,"result":{"exec_id":"aaa"}})");
  execs.OnOutput("2", R"({"jsonrpc":"2.0","id":2,"result":{"exec_id":"bbb"}})");
  execs.OnOutput("3", R"({"jsonrpc":"2.0","id":3,"result":{"exec_id":"ccc"}})");
  execs.OnOutput("4", R"({"jsonrpc":"2.0","id":4,"error":{"code":-32602,"message":"x"}})");
  execs.OnOutput("", R"({"jsonrpc":"2.0","method":"exec.output","params":{"exec_id":"ccc","stream":"stdout","data":"x\n","seq":0}})");
  // ccc ends normally; aaa's stream is cut.
  execs.OnOutput("", R"({"jsonrpc":"2.0","method":"exec.exit","params":{"exec_id":"ccc","exit_code":0,"signal":null,"timed_out":false,"cancelled":false,"error":null}})");

  auto lines = execs.TakeLostExitLines("the bridge went \"away\"");
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0],
            R"({"jsonrpc":"2.0","method":"exec.exit","params":{"exec_id":"aaa","exit_code":null,)"
            R"("signal":null,"timed_out":false,"cancelled":false,"error":{"code":"E8002",)"
            R"("message":"the bridge went \"away\""}}})");
  const LineMeta meta = ParseLineMeta(lines[0]);
  EXPECT_EQ(meta.kind, LineMeta::Kind::kNotification);
  EXPECT_EQ(meta.method, "exec.exit");
  // Forgotten once owed.
  EXPECT_TRUE(execs.TakeLostExitLines("again").empty());
}

TEST(AttachedExecsTest, AnExecStartNotAnsweredIsNotOwedAnExit) {
  AttachedExecs execs;
  Send(&execs, R"({"jsonrpc":"2.0","id":"k","method":"exec.start","params":{"sandbox_id":"s","command":"a"}})");
  EXPECT_TRUE(execs.TakeLostExitLines("gone").empty());
  // Its late answer (from no call) is not taken for a running command.
  execs.OnOutput("\"k\"", R"({"jsonrpc":"2.0","id":"k","result":{"exec_id":"late"}})");
  EXPECT_TRUE(execs.TakeLostExitLines("gone").empty());
}

}  // namespace
}  // namespace abx
