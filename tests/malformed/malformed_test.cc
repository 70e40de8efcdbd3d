// Malformed EPP/1 lines sent to the real shim, which forwards them to the real bridge:
// not JSON (-32700, id null), not a request (-32600), too long (E8008, the id when it
// comes first), and the odd bytes a host or a broken pipe can produce (NUL, CRLF, empty
// lines, invalid UTF-8, a megabyte id, nesting 100k deep). docs/epp1.md §1 and §4 say what
// each gets; after every one the same session still answers provider.info.

#include <signal.h>

#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "tests/e2e/harness.h"

namespace abx::e2e {
namespace {

constexpr size_t kMaxLine = 8388608;  // docs/epp1.md §1, newline excluded

// How long one answer may take. Generous on purpose: the whole suite on 2 cores, or a
// sanitizer build, makes an 8 MiB line take seconds. A right answer never waits for it,
// and a wrong one (another id, an error instead of a result) fails at once, because the
// test takes the first answer that comes and checks it rather than waiting for a match.
constexpr Millis kAnswerTimeout{60000};

class MalformedTest : public TestEnv {
 protected:
  void SetUp() override {
    TestEnv::SetUp();
    shim_ = StartInitializedShim();
    ASSERT_NE(shim_, nullptr);
    bridge_pid_ = BridgePid();
    ASSERT_TRUE(bridge_pid_.has_value()) << "no bridge pid after initialize";
  }

  // Sends `bytes` (one line, or a notification and then one line) as they are and
  // returns the first response that came after them, which must have id `id_json`;
  // null (with a failure) when it has another id or none comes. Only one line is in
  // flight at a time, so that response is the answer to these bytes.
  MessagePtr SendAndAwait(const std::string& bytes, const std::string& id_json,
                          Millis timeout = kAnswerTimeout) {
    const size_t before = shim_->AllMessages().size();
    if (!shim_->SendRaw(bytes)) {
      ADD_FAILURE() << "the shim's stdin is closed";
      return nullptr;
    }
    const auto deadline = Clock::now() + timeout;
    while (Clock::now() < deadline) {
      std::vector<MessagePtr> messages = shim_->AllMessages();
      for (size_t i = before; i < messages.size(); ++i) {
        if (!messages[i]->IsResponse()) continue;
        const std::string got = ToJson(messages[i]->id());
        if (got == id_json) return messages[i];
        ADD_FAILURE() << "answered with id " << Abbreviate(got, 80) << ", not "
                      << Abbreviate(id_json, 80) << ": " << Abbreviate(messages[i]->raw, 300)
                      << " to " << Abbreviate(bytes, 200);
        return nullptr;
      }
      std::this_thread::sleep_for(Millis(5));
    }
    ADD_FAILURE() << "no answer within " << timeout.count() << " ms (id "
                  << Abbreviate(id_json, 80) << ") to " << Abbreviate(bytes, 200);
    return nullptr;
  }

  // The error a malformed line must get: JSON-RPC `code`, and `epp` when it is an EPP one.
  void ExpectError(const MessagePtr& response, int64_t code, const std::string& epp = "") {
    ASSERT_NE(response, nullptr);
    ASSERT_TRUE(response->IsError()) << Abbreviate(response->raw, 300);
    EXPECT_EQ(response->ErrorCode(), code) << Abbreviate(response->raw, 300);
    EXPECT_EQ(response->EppCode(), epp) << Abbreviate(response->raw, 300);
    EXPECT_FALSE(response->ErrorMessage().empty()) << Abbreviate(response->raw, 300);
  }

  // The session goes on: a normal request is answered normally, by the same bridge (a
  // crashed one would be replaced by a new one, hiding the crash).
  void ExpectSessionAnswers() {
    MessagePtr info = shim_->Request("provider.info", "{}", kAnswerTimeout);
    ASSERT_NE(info, nullptr) << "the session stopped answering";
    EXPECT_FALSE(info->IsError()) << Abbreviate(info->raw, 300);
    EXPECT_TRUE(info->result().IsObject()) << Abbreviate(info->raw, 300);
    EXPECT_EQ(GetInt(info->result(), "bridge.pid"), *bridge_pid_)
        << "the bridge was replaced: " << Abbreviate(info->raw, 300);
    EXPECT_EQ(kill(*bridge_pid_, 0), 0) << "the bridge is gone";
  }

  // One line of exactly `size` bytes (newline excluded): a provider.info request with
  // id `id` (first), padded by a string parameter.
  static std::string RequestOfSize(size_t size, int64_t id) {
    const std::string head = R"({"jsonrpc":"2.0","id":)" + std::to_string(id) +
                             R"(,"method":"provider.info","params":{"pad":")";
    const std::string tail = "\"}}";
    return head + std::string(size - head.size() - tail.size(), 'x') + tail;
  }

  EppSession* shim_ = nullptr;
  std::optional<pid_t> bridge_pid_;
};

TEST_F(MalformedTest, InvalidJsonIsParseErrorWithNullId) {
  for (const std::string& line :
       {std::string(R"({"jsonrpc":"2.0","id":1000005,"method":"provider.info")"),
        std::string("not json at all"), std::string(R"({"jsonrpc":"2.0",,})"),
        std::string("}{"), std::string(R"({"jsonrpc":"2.0","id":1000005,"method":"provider.info"}})")}) {
    SCOPED_TRACE(line);
    ExpectError(SendAndAwait(line + "\n", "null"), -32700);
    ExpectSessionAnswers();
  }
  EXPECT_TRUE(shim_->ResponsesFor(1000005).empty()) << "a broken line's id must not be guessed";
}

TEST_F(MalformedTest, WrongTypesAreInvalidRequest) {
  // An id that is no id: answered with id null.
  ExpectError(SendAndAwait(R"({"jsonrpc":"2.0","id":{},"method":"provider.info"})"
                           "\n",
                           "null"),
              -32600);
  ExpectSessionAnswers();
  ExpectError(SendAndAwait(R"({"jsonrpc":"2.0","id":[1],"method":"provider.info"})"
                           "\n",
                           "null"),
              -32600);
  ExpectSessionAnswers();
  ExpectError(SendAndAwait(R"({"jsonrpc":"2.0","id":true,"method":"provider.info"})"
                           "\n",
                           "null"),
              -32600);
  ExpectSessionAnswers();
  // A readable id with a wrong method or params: answered with that id.
  ExpectError(SendAndAwait(R"({"jsonrpc":"2.0","id":1000001,"method":5})"
                           "\n",
                           "1000001"),
              -32600);
  ExpectSessionAnswers();
  ExpectError(SendAndAwait(R"({"jsonrpc":"2.0","id":1000002,"method":"provider.info","params":3})"
                           "\n",
                           "1000002"),
              -32600);
  ExpectSessionAnswers();
  ExpectError(SendAndAwait(R"({"jsonrpc":"1.0","id":1000003,"method":"provider.info"})"
                           "\n",
                           "1000003"),
              -32600);
  ExpectSessionAnswers();
  ExpectError(SendAndAwait("[1,2,3]\n", "null"), -32600);  // JSON, but no object
  ExpectSessionAnswers();
}

TEST_F(MalformedTest, HugeIdsComeBackAsSent) {
  // A 1 MiB string id is a valid id: the answer carries it whole.
  const std::string big_id = std::string(1 << 20, 'i');
  MessagePtr response = SendAndAwait(
      R"({"jsonrpc":"2.0","id":")" + big_id + R"(","method":"provider.info"})" "\n",
      "\"" + big_id + "\"");
  ASSERT_NE(response, nullptr);
  EXPECT_FALSE(response->IsError()) << Abbreviate(response->raw, 300);
  ExpectSessionAnswers();

  response = SendAndAwait(R"({"jsonrpc":"2.0","id":1e308,"method":"provider.info"})"
                          "\n",
                          "1e308");
  ASSERT_NE(response, nullptr);
  EXPECT_FALSE(response->IsError()) << response->raw;
  EXPECT_TRUE(response->id().IsDouble() && response->id().GetDouble() == 1e308) << response->raw;
  ExpectSessionAnswers();

  // Beyond int64 and uint64: read as a double, answered as that number.
  response = SendAndAwait(
      R"({"jsonrpc":"2.0","id":18446744073709551616,"method":"provider.info"})" "\n",
      "18446744073709553000.0");
  ASSERT_NE(response, nullptr);
  EXPECT_FALSE(response->IsError()) << response->raw;
  EXPECT_TRUE(response->id().IsDouble() && response->id().GetDouble() == 18446744073709551616.0)
      << response->raw;
  ExpectSessionAnswers();

  // Zero with a huge exponent is zero (RapidJSON's full-precision reader, once used
  // here, made it -6e-269).
  response = SendAndAwait(R"({"jsonrpc":"2.0","id":0e308,"method":"provider.info"})" "\n",
                          "0.0");
  ASSERT_NE(response, nullptr);
  EXPECT_FALSE(response->IsError()) << response->raw;
  ExpectSessionAnswers();

  // Too large for a double: not an id anyone can answer to. (The full-precision reader
  // made this one -3.8e-308 and the bridge answered with that id.)
  ExpectError(SendAndAwait(R"({"jsonrpc":"2.0","id":12.2e308,"method":"provider.info"})"
                           "\n",
                           "null"),
              -32600);
  ExpectSessionAnswers();
}

TEST_F(MalformedTest, DeepNestingDoesNotCrashTheBridge) {
  // 100k unclosed '[': not JSON.
  ExpectError(SendAndAwait(std::string(100000, '[') + "\n", "null"), -32700);
  ExpectSessionAnswers();
  // Closed, as params: JSON, answered by id whatever the method makes of it.
  MessagePtr response = SendAndAwait(
      R"({"jsonrpc":"2.0","id":1000010,"method":"provider.info","params":[)" +
          std::string(100000, '[') + std::string(100000, ']') + "]}\n",
      "1000010");
  ASSERT_NE(response, nullptr);
  ExpectSessionAnswers();
  // As the id of a $/cancel (a notification: no answer) and as a provider option.
  ASSERT_TRUE(shim_->SendRaw(R"({"jsonrpc":"2.0","method":"$/cancel","params":{"id":)" +
                             std::string(100000, '[') + std::string(100000, ']') + "}}\n"));
  ExpectSessionAnswers();
  response = SendAndAwait(
      R"({"jsonrpc":"2.0","id":1000011,"method":"sandbox.create","params":{"template":"base",)"
      R"("provider_options":{"network_policy":)" +
          std::string(100000, '[') + std::string(100000, ']') + "}}}\n",
      "1000011");
  ExpectError(response, -32602);
  ExpectSessionAnswers();
}

TEST_F(MalformedTest, InvalidUtf8IsParseError) {
  for (const std::string& line :
       {std::string("{\"jsonrpc\":\"2.0\",\"id\":1000007,\"method\":\"provider.info\",\"params\":{\"x\":\"\xff\xfe\"}}"),
        std::string("{\"jsonrpc\":\"2.0\",\"id\":\"\xc0\xaf\",\"method\":\"provider.info\"}"),
        std::string("{\"jsonrpc\":\"2.0\",\"id\":1000008,\"method\":\"provider.info\xed\xa0\x80\"}")}) {
    ExpectError(SendAndAwait(line + "\n", "null"), -32700);
    ExpectSessionAnswers();
  }
  EXPECT_TRUE(shim_->ResponsesFor(1000007).empty() && shim_->ResponsesFor(1000008).empty());
}

// A byte-order mark is not part of JSON text (RFC 8259 forbids sending one; EPP/1 lines
// are JSON text), and a lone piece of one is not UTF-8: neither is skipped.
TEST_F(MalformedTest, ByteOrderMarkIsParseError) {
  for (const std::string& line :
       {std::string("\xEF\xBB\xBF{\"jsonrpc\":\"2.0\",\"id\":1000009,\"method\":\"provider.info\"}"),
        std::string("\xEF{\"jsonrpc\":\"2.0\",\"id\":1000010,\"method\":\"provider.info\"}")}) {
    ExpectError(SendAndAwait(line + "\n", "null"), -32700);
    ExpectSessionAnswers();
  }
  EXPECT_TRUE(shim_->ResponsesFor(1000009).empty() && shim_->ResponsesFor(1000010).empty());
}

TEST_F(MalformedTest, LineOneByteOverTheLimitIsE8008WithItsId) {
  const std::string line = RequestOfSize(kMaxLine + 1, 1000020);
  ASSERT_EQ(line.size(), kMaxLine + 1);
  ExpectError(SendAndAwait(line + "\n", "1000020"), -32007, "E8008");
  ExpectSessionAnswers();
  // The id after a long member cannot be read from the line's start: id null.
  std::string late_id = R"({"jsonrpc":"2.0","method":"provider.info","params":{"pad":")" +
                        std::string(kMaxLine, 'x') + R"("},"id":1000021})";
  ExpectError(SendAndAwait(late_id + "\n", "null"), -32007, "E8008");
  ExpectSessionAnswers();
  EXPECT_TRUE(shim_->ResponsesFor(1000021).empty());
}

TEST_F(MalformedTest, LineOfExactlyTheLimitIsAnswered) {
  const std::string line = RequestOfSize(kMaxLine, 1000030);
  ASSERT_EQ(line.size(), kMaxLine);
  MessagePtr response = SendAndAwait(line + "\n", "1000030");
  ASSERT_NE(response, nullptr);
  EXPECT_NE(response->EppCode(), "E8008") << Abbreviate(response->raw, 300);
  EXPECT_FALSE(response->IsError()) << Abbreviate(response->raw, 300);
  ExpectSessionAnswers();
}

TEST_F(MalformedTest, GarbageBetweenRequestsSpoilsNothing) {
  const size_t nulls_before = shim_->ResponsesForIdJson("null").size();
  std::string bytes;
  for (int i = 0; i < 5; ++i) {
    bytes += R"({"jsonrpc":"2.0","id":)" + std::to_string(1000040 + i) +
             R"(,"method":"provider.info"})" "\n";
    bytes += i % 2 ? "\x1b[31mgarbage\x1b[0m\n" : "}}}{{{\n";
  }
  ASSERT_TRUE(shim_->SendRaw(bytes));
  for (int i = 0; i < 5; ++i) {
    MessagePtr response = shim_->WaitResponse(1000040 + i, kAnswerTimeout);
    ASSERT_NE(response, nullptr) << "request " << i << " between garbage lines unanswered";
    EXPECT_FALSE(response->IsError()) << response->raw;
  }
  ExpectSessionAnswers();
  // Answers may come in any order (docs/epp1.md §1): the garbage lines' may still be due.
  std::vector<MessagePtr> nulls;
  for (const auto deadline = Clock::now() + kAnswerTimeout; Clock::now() < deadline;) {
    nulls = shim_->ResponsesForIdJson("null");
    if (nulls.size() >= nulls_before + 5) break;
    std::this_thread::sleep_for(Millis(5));
  }
  std::this_thread::sleep_for(Millis(200));  // a sixth answer would be a wrong one
  nulls = shim_->ResponsesForIdJson("null");
  ASSERT_EQ(nulls.size(), nulls_before + 5) << "one -32700 per garbage line";
  for (size_t i = nulls_before; i < nulls.size(); ++i) ExpectError(nulls[i], -32700);
}

TEST_F(MalformedTest, NulByteIsParseError) {
  // After a complete object, and inside a string.
  ExpectError(SendAndAwait(std::string(R"({"jsonrpc":"2.0","id":1000009,"method":"provider.info"})") +
                               std::string(1, '\0') + "garbage\n",
                           "null"),
              -32700);
  ExpectSessionAnswers();
  ExpectError(SendAndAwait(std::string(R"({"jsonrpc":"2.0","id":1000009,"method":"provider)") +
                               std::string(1, '\0') + ".info\"}\n",
                           "null"),
              -32700);
  ExpectSessionAnswers();
  EXPECT_TRUE(shim_->ResponsesFor(1000009).empty()) << "a line with a NUL byte was executed";
}

TEST_F(MalformedTest, CrlfLineEndingIsANormalLine) {
  MessagePtr response = SendAndAwait(
      R"({"jsonrpc":"2.0","id":1000050,"method":"provider.info"})" "\r\n", "1000050");
  ASSERT_NE(response, nullptr);
  EXPECT_FALSE(response->IsError()) << response->raw;
  ExpectSessionAnswers();
}

TEST_F(MalformedTest, EmptyAndBlankLinesAreParseErrors) {
  ExpectError(SendAndAwait("\n", "null"), -32700);
  ExpectSessionAnswers();
  ExpectError(SendAndAwait(" \t\r\n", "null"), -32700);
  ExpectSessionAnswers();
}

}  // namespace
}  // namespace abx::e2e
