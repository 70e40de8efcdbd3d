// core::ValidateExec, the one check of a command request both front doors make (EPP's
// exec.start/exec.run and the typed Exec service).

#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "bridge/core/exec/exec.h"
#include "bridge/core/shell_quote.h"

namespace abx::core {
namespace {

ExecRequest Command(std::string command) {
  ExecRequest request;
  request.sandbox_id = "sb";
  request.command = std::move(command);
  return request;
}

ExecRequest Argv(std::vector<std::string> argv) {
  ExecRequest request;
  request.sandbox_id = "sb";
  request.argv = std::move(argv);
  return request;
}

std::string FieldOf(const Result<ExecSpec>& result) {
  EXPECT_FALSE(result.ok());
  if (result.ok()) return "";
  EXPECT_EQ(result.error().code, ErrorCode::kInvalidParams);
  return result.error().field;
}

TEST(ValidateExecTest, ACommandIsTakenAsItIs) {
  ExecRequest request = Command("echo hi | wc -c");
  request.env = {{"A", "1"}};
  request.cwd = "/tmp";
  request.user = "1000";
  request.stdin_data = "in";
  request.timeout_s = 1.5;
  request.detached = true;
  Result<ExecSpec> spec = ValidateExec(request);
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_EQ(spec->sandbox_id, "sb");
  EXPECT_EQ(spec->command, "echo hi | wc -c");
  EXPECT_EQ(spec->env.at("A"), "1");
  EXPECT_EQ(spec->cwd, "/tmp");
  EXPECT_EQ(spec->user, "1000");
  EXPECT_EQ(spec->stdin_data, "in");
  EXPECT_EQ(spec->timeout_s, 1.5);
  EXPECT_TRUE(spec->detached);
}

TEST(ValidateExecTest, AnArgvIsQuotedIntoOneShellString) {
  Result<ExecSpec> spec = ValidateExec(Argv({"printf", "%s\n", "it's a $HOME"}));
  ASSERT_TRUE(spec.ok()) << spec.error().message;
  EXPECT_EQ(spec->command, ShellJoin({"printf", "%s\n", "it's a $HOME"}));
}

TEST(ValidateExecTest, ExactlyOneOfArgvOrCommand) {
  ExecRequest both = Command("true");
  both.argv = std::vector<std::string>{"true"};
  EXPECT_EQ(FieldOf(ValidateExec(both)), "command");
  ExecRequest neither;
  neither.sandbox_id = "sb";
  EXPECT_EQ(FieldOf(ValidateExec(neither)), "argv");
}

TEST(ValidateExecTest, RefusesWhatCannotRun) {
  EXPECT_EQ(FieldOf(ValidateExec(Argv({}))), "argv");
  EXPECT_EQ(FieldOf(ValidateExec(Argv({"a", std::string("b\0c", 3)}))), "argv");
  EXPECT_EQ(FieldOf(ValidateExec(Command(" \t\r\n"))), "command");
  ExecRequest no_sandbox = Command("true");
  no_sandbox.sandbox_id.clear();
  EXPECT_EQ(FieldOf(ValidateExec(no_sandbox)), "sandbox_id");
}

TEST(ValidateExecTest, ATimeoutMustBePositiveAndIsNamedAsTheRequestNamesIt) {
  ExecRequest zero = Command("true");
  zero.timeout_s = 0;
  EXPECT_EQ(FieldOf(ValidateExec(zero)), "timeout");
  ExecRequest negative = Command("true");
  negative.timeout_s = -1;
  negative.timeout_field = "timeout_seconds";
  Result<ExecSpec> result = ValidateExec(negative);
  EXPECT_EQ(FieldOf(result), "timeout_seconds");
  EXPECT_EQ(result.error().message, "timeout_seconds must be positive");
}

TEST(ValidateExecTest, AShellRefusesWhatItCannotHonourNamingTheOption) {
  ExecRequest plain = Command("pwd");
  plain.shell_id = "s1";
  plain.cwd = "/tmp";
  plain.timeout_s = 5;
  auto ok = ValidateExec(plain);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_EQ(ok->shell_id, "s1");
  EXPECT_EQ(ok->cwd, "/tmp");

  const char* fields[] = {"env", "user", "stdin", "stdin_stream", "detached"};
  for (const char* field : fields) {
    ExecRequest request = Command("pwd");
    request.shell_id = "s1";
    if (std::string(field) == "env") request.env = {{"A", "1"}};
    if (std::string(field) == "user") request.user = "root";
    if (std::string(field) == "stdin") request.stdin_data = "";
    if (std::string(field) == "stdin_stream") request.stdin_stream = true;
    if (std::string(field) == "detached") request.detached = true;
    auto refused = ValidateExec(request);
    ASSERT_FALSE(refused.ok()) << field;
    EXPECT_EQ(refused.error().code, ErrorCode::kUnsupported) << field;
    EXPECT_EQ(refused.error().field, field);
    EXPECT_NE(refused.error().message.find(field), std::string::npos) << refused.error().message;
    // Without a shell the same request is fine.
    request.shell_id.clear();
    EXPECT_TRUE(ValidateExec(request).ok()) << field;
  }
}

TEST(ValidateExecTest, AStdinStreamTakesNeitherStdinNorDetached) {
  ExecRequest streamed = Command("cat");
  streamed.stdin_stream = true;
  auto ok = ValidateExec(streamed);
  ASSERT_TRUE(ok.ok()) << ok.error().message;
  EXPECT_TRUE(ok->stdin_stream);
  for (const char* other : {"stdin", "detached"}) {
    ExecRequest request = streamed;
    if (std::string(other) == "stdin") request.stdin_data = "x";
    if (std::string(other) == "detached") request.detached = true;
    auto refused = ValidateExec(request);
    ASSERT_FALSE(refused.ok()) << other;
    EXPECT_EQ(refused.error().code, ErrorCode::kInvalidParams) << other;
    EXPECT_EQ(refused.error().field, "stdin_stream");
    EXPECT_NE(refused.error().message.find(other), std::string::npos) << refused.error().message;
  }
}

}  // namespace
}  // namespace abx::core
