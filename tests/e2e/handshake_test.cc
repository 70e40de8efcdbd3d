// EPP/1 session rules (docs/epp1.md §1, §2, §4): the handshake, JSON-RPC's own errors,
// unsupported methods, and how a session ends.

#include <string>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "common/version.h"
#include "tests/e2e/harness.h"

namespace abx::e2e {
namespace {

using ::testing::UnorderedElementsAre;

class HandshakeTest : public TestEnv {};

TEST_F(HandshakeTest, InitializeResultMatchesContract) {
  EppSession* shim = StartShim();
  ASSERT_NE(shim, nullptr);
  MessagePtr response = shim->Initialize();
  ASSERT_NE(response, nullptr) << "no answer to initialize";
  ASSERT_TRUE(response->IsResponse()) << response->raw;
  ASSERT_FALSE(response->IsError()) << response->raw;
  EXPECT_EQ(GetString(response->json, "jsonrpc"), "2.0");
  EXPECT_EQ(GetInt(response->json, "id"), 1);

  const rapidjson::Value& result = response->result();
  ASSERT_TRUE(result.IsObject()) << response->raw;
  EXPECT_EQ(GetString(result, "protocol"), "EPP/1");
  EXPECT_EQ(GetString(result, "provider.name"), kProviderName);
  EXPECT_EQ(GetString(result, "provider.version"), kProviderVersion);
  EXPECT_THAT(GetStrings(result, "features"),
              UnorderedElementsAre("sandbox.lifecycle", "sandbox.timeout", "sandbox.pause",
                                   "exec.run", "exec.stream", "process.manage", "files.rw",
                                   "ports.url", "sessions", "code.interpret", "pty", "templates"))
      << response->raw;
  const rapidjson::Value* partial = Find(result, "partial");
  ASSERT_TRUE(partial && partial->IsObject()) << response->raw;
  EXPECT_EQ(partial->MemberCount(), 3u) << response->raw;
  // The key holds a dot, so it is looked up directly rather than by dotted path.
  auto note = partial->FindMember("process.manage");
  ASSERT_NE(note, partial->MemberEnd()) << response->raw;
  ASSERT_TRUE(note->value.IsString()) << response->raw;
  EXPECT_STREQ(note->value.GetString(),
               "an execd command id accepts only SIGKILL");
  auto code = partial->FindMember("code.interpret");
  ASSERT_NE(code, partial->MemberEnd()) << response->raw;
  EXPECT_STREQ(code->value.GetString(),
               "only the last expression's value is passed on, not display() output; input() is unavailable");
  auto shell = partial->FindMember("exec.shell");
  ASSERT_NE(shell, partial->MemberEnd()) << response->raw;
  EXPECT_STREQ(shell->value.GetString(), "stderr arrives as stdout; blank lines are dropped");
  EXPECT_THAT(GetStrings(result, "extensions"),
              UnorderedElementsAre("exec.detached", "exec.shell", "files.search", "files.chmod",
                                   "files.transfer", "sandbox.metrics", "sandbox.snapshot",
                                   "sandbox.metadata", "sandbox.pool", "files.watch", "sandbox.network"))
      << response->raw;
  EXPECT_EQ(GetInt(result, "limits.max_line_bytes"), 8388608) << response->raw;
  EXPECT_EQ(GetInt(result, "limits.max_read_bytes"), 4194304) << response->raw;
  EXPECT_EQ(GetInt(result, "limits.code_output_bytes"), 2097152) << response->raw;
  EXPECT_EQ(GetInt(result, "limits.pty_buffer_bytes"), 4194304) << response->raw;
}

TEST_F(HandshakeTest, RequestBeforeInitializeIsE8001AndSendsNothingUpstream) {
  REQUIRE_FAKE("counting the requests that reach the server (/_fake/stats)");
  EppSession* shim = StartShim();
  ASSERT_NE(shim, nullptr);
  MessagePtr response;
  auto upstream = UpstreamRequestsDuring(
      [&] { response = shim->Request("sandbox.list", "{}"); });
  ASSERT_NE(response, nullptr) << "no answer to sandbox.list before initialize";
  ASSERT_TRUE(response->IsError()) << response->raw;
  EXPECT_EQ(response->ErrorCode(), -32000) << response->raw;
  EXPECT_EQ(response->EppCode(), "E8001") << response->raw;
  EXPECT_FALSE(response->ErrorMessage().empty()) << response->raw;
  EXPECT_EQ(upstream.value_or(-1), 0) << "requests reached the server before initialize";

  // The refusal does not spoil the session: initialize still works.
  MessagePtr init = shim->Initialize();
  ASSERT_NE(init, nullptr);
  EXPECT_FALSE(init->IsError()) << init->raw;
}

TEST_F(HandshakeTest, WrongProtocolIsE8001) {
  EppSession* shim = StartShim();
  ASSERT_NE(shim, nullptr);
  MessagePtr response = shim->Request(
      "initialize", R"({"protocol":"EPP/2","host":{"name":"abx","version":"1.4.0"}})");
  ASSERT_NE(response, nullptr) << "no answer to initialize with EPP/2";
  ASSERT_TRUE(response->IsError()) << response->raw;
  EXPECT_EQ(response->ErrorCode(), -32000) << response->raw;
  EXPECT_EQ(response->EppCode(), "E8001") << response->raw;
}

TEST_F(HandshakeTest, UnknownMethodIsMethodNotFound) {
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  MessagePtr response = shim->Request("sandbox.frobnicate", "{}");
  ASSERT_NE(response, nullptr);
  ASSERT_TRUE(response->IsError()) << response->raw;
  EXPECT_EQ(response->ErrorCode(), -32601) << response->raw;
}

TEST_F(HandshakeTest, UnsupportedMethodsAreE8004BeforeAnythingGoesUpstream) {
  REQUIRE_FAKE("counting the requests that reach the server (/_fake/stats)");
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  const std::vector<std::string> methods = {
      "files.upload_url", "files.download_url"};
  for (const std::string& method : methods) {
    MessagePtr response;
    auto upstream = UpstreamRequestsDuring([&] {
      response = shim->Request(method, R"({"sandbox_id":"sbx-e2e-none"})");
    });
    ASSERT_NE(response, nullptr) << "no answer to " << method;
    ASSERT_TRUE(response->IsError()) << method << ": " << response->raw;
    EXPECT_EQ(response->ErrorCode(), -32003) << method << ": " << response->raw;
    EXPECT_EQ(response->EppCode(), "E8004") << method << ": " << response->raw;
    EXPECT_EQ(upstream.value_or(-1), 0) << method << " sent requests upstream";
  }
}

TEST_F(HandshakeTest, MalformedLineIsParseErrorWithNullIdAndSessionGoesOn) {
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  ASSERT_TRUE(shim->Send(R"({"jsonrpc":"2.0","id":5,"method":"sandbox.list",)"));
  MessagePtr error = shim->WaitResponseForIdJson("null");
  ASSERT_NE(error, nullptr) << "no answer (id null) to a malformed line";
  ASSERT_TRUE(error->IsError()) << error->raw;
  EXPECT_EQ(error->ErrorCode(), -32700) << error->raw;
  EXPECT_TRUE(shim->ResponsesFor(5).empty()) << "a broken line's id must not be guessed";

  MessagePtr next = shim->Request("sandbox.list", "{}");
  ASSERT_NE(next, nullptr) << "the session stopped answering after a malformed line";
  EXPECT_NE(next->ErrorCode(), -32700) << next->raw;
}

TEST_F(HandshakeTest, RequestWithoutMethodIsInvalidRequest) {
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  ASSERT_TRUE(shim->Send(R"({"jsonrpc":"2.0","id":1000001,"params":{}})"));
  MessagePtr response = shim->WaitResponse(1000001);
  ASSERT_NE(response, nullptr) << "no answer to a request without a method";
  EXPECT_EQ(response->ErrorCode(), -32600) << response->raw;
}

TEST_F(HandshakeTest, ShutdownThenExitEndsWithStatusZero) {
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  MessagePtr response = shim->Request("shutdown", "");
  ASSERT_NE(response, nullptr) << "no answer to shutdown";
  ASSERT_TRUE(response->IsResponse()) << response->raw;
  ASSERT_TRUE(response->json.HasMember("result")) << response->raw;
  EXPECT_TRUE(response->result().IsNull()) << response->raw;

  ASSERT_TRUE(shim->Notify("exit", ""));
  auto status = shim->WaitExit(Millis(3000));
  ASSERT_TRUE(status.has_value()) << "the shim is still running 3 s after exit";
  EXPECT_TRUE(status->exited && status->code == 0) << status->ToString();
  // Nobody else (a spawned bridge, say) may hold the host's stdout pipe open.
  EXPECT_TRUE(shim->WaitStdoutEof(Millis(2000)))
      << "the shim's stdout stays open after it exited";
}

TEST_F(HandshakeTest, EndOfStdinExitsZeroWithinTwoSeconds) {
  EppSession* shim = StartInitializedShim();
  ASSERT_NE(shim, nullptr);
  shim->CloseStdin();
  auto status = shim->WaitExit(Millis(2000));
  ASSERT_TRUE(status.has_value()) << "the shim is still running 2 s after end of stdin";
  EXPECT_TRUE(status->exited && status->code == 0) << status->ToString();
  EXPECT_TRUE(shim->WaitStdoutEof(Millis(2000)))
      << "the shim's stdout stays open after it exited";
}

TEST_F(HandshakeTest, EndOfStdinBeforeInitializeExitsZero) {
  EppSession* shim = StartShim();
  ASSERT_NE(shim, nullptr);
  shim->CloseStdin();
  auto status = shim->WaitExit(Millis(2000));
  ASSERT_TRUE(status.has_value()) << "the shim is still running 2 s after end of stdin";
  EXPECT_TRUE(status->exited && status->code == 0) << status->ToString();
}

}  // namespace
}  // namespace abx::e2e
