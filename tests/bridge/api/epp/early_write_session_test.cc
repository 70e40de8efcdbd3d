// files.write lines fed in parts, as the gRPC adapter feeds them (epp::LineAssembler),
// into sessions over one real core and the real fake server: the upload that starts
// while a line arrives (bridge/api/epp/early_write.h) runs on the HTTP client's I/O thread
// and a request thread while the test's threads grow the lines, so under --config=tsan
// this is how ThreadSanitizer judges those handovers (tools/sanitizers). The same cases
// through the real shim and bridge: tests/e2e/early_write_test.cc.

#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "bridge/api/epp/early_write.h"
#include "bridge/api/epp/line_assembler.h"
#include "bridge/core/bridge_core.h"
#include "tests/bridge/api/epp/in_process_host.h"
#include "tests/bridge/api/epp/session_fixture.h"
#include "tests/e2e/base64_encode.h"
#include "tests/e2e/json_util.h"

namespace abx::epp::testing {
namespace {

using e2e::GetBool;
using e2e::GetInt;
using e2e::GetString;

constexpr size_t kPart = 1 << 20;  // as the shim sends them

std::string WriteLine(const std::string& id, const std::string& sandbox, const std::string& path,
                      const std::string& data, const std::string& tail = "}}") {
  return "{\"jsonrpc\":\"2.0\",\"id\":" + id + ",\"method\":\"files.write\",\"params\":{" +
         "\"sandbox_id\":\"" + sandbox + "\",\"path\":\"" + path +
         "\",\"encoding\":\"base64\",\"data\":\"" + data + "\"" + tail;
}

// Feeds `line` to `host`'s session in parts with a pause after each, then its end.
void FeedInParts(InProcessHost* host, LineAssembler* lines, const std::string& line) {
  size_t at = 0;
  for (; line.size() - at > kPart; at += kPart) {
    ASSERT_TRUE(lines->AddPart(std::string_view(line).substr(at, kPart)));
    std::this_thread::sleep_for(Millis(3));
  }
  std::shared_ptr<EarlyWrite> early_write;
  std::string whole = lines->Complete(line.substr(at), &early_write);
  host->session()->OnLine(std::move(whole), std::move(early_write));
}

// The file in base64, read in 3 MiB pieces (whose texts join); "<missing>" for E8005.
std::string ReadBack(InProcessHost* host, const std::string& sandbox, const std::string& path) {
  std::string text;
  for (int64_t offset = 0;; offset += 3 << 20) {
    MessagePtr read = host->Call("files.read",
                                 "{\"sandbox_id\":\"" + sandbox + "\",\"path\":\"" + path +
                                     "\",\"encoding\":\"base64\",\"offset\":" +
                                     std::to_string(offset) + ",\"length\":" +
                                     std::to_string(3 << 20) + "}",
                                 kAnswerTimeout);
    if (!read) return "<no answer>";
    if (read->EppCode() == "E8005") return "<missing>";
    if (read->IsError()) return "<error " + read->raw.substr(0, 300) + ">";
    text += GetString(read->result(), "data");
    if (GetBool(read->result(), "eof", true)) return text;
  }
}

TEST_F(SessionTest, LinesFedInPartsOnManySessionsAtOnceWriteTheirFiles) {
  constexpr int kHosts = 4;
  constexpr int kWrites = 3;
  std::vector<std::unique_ptr<InProcessHost>> hosts(kHosts);
  std::vector<std::string> sandboxes(kHosts);
  for (int i = 0; i < kHosts; ++i) {
    hosts[i] = HostWithSandbox(&sandboxes[i]);
    ASSERT_NE(hosts[i], nullptr);
  }
  const core::BridgeCore::Counters before = core()->counters();
  OnThreads(kHosts, [&](int i) {
    LineAssembler lines(hosts[i]->session());
    for (int k = 0; k < kWrites; ++k) {
      const std::string bytes = RandomBytes((2u << 20) + 1000 * k + i, 100 * i + k);
      const std::string path = "/tmp/early-" + std::to_string(i) + "-" + std::to_string(k);
      const std::string id = std::to_string(1000 + k);
      FeedInParts(hosts[i].get(), &lines, WriteLine(id, sandboxes[i], path, e2e::Base64(bytes)));
      MessagePtr written = hosts[i]->sink().WaitResponse(id, kAnswerTimeout);
      ASSERT_NE(written, nullptr) << "host " << i << " write " << k;
      ASSERT_FALSE(written->IsError()) << written->raw;
      EXPECT_EQ(GetInt(written->result(), "size", -1), static_cast<int64_t>(bytes.size()));
      EXPECT_TRUE(ReadBack(hosts[i].get(), sandboxes[i], path) == e2e::Base64(bytes))
          << "host " << i << " file " << k << " differs";
    }
  });
  const core::BridgeCore::Counters after = core()->counters();
  EXPECT_EQ(after.early_writes_used - before.early_writes_used, kHosts * kWrites);
  EXPECT_EQ(after.early_writes_dropped - before.early_writes_dropped, 0);
  for (auto& host : hosts) EXPECT_EQ(Join(host->sink().Problems()), "");
}

// A line cut off (an oversized line, a host gone) and one that ends as no JSON: the
// uploads that had begun write nothing.
TEST_F(SessionTest, LinesThatDoNotEndAsTheirRequestWriteNothing) {
  std::string sandbox;
  auto host = HostWithSandbox(&sandbox);
  ASSERT_NE(host, nullptr);
  const std::string data = e2e::Base64(RandomBytes(3u << 20, 7));
  const core::BridgeCore::Counters before = core()->counters();
  {
    LineAssembler lines(host->session());
    const std::string line = WriteLine("1", sandbox, "/tmp/early-cut", data);
    ASSERT_TRUE(lines.AddPart(std::string_view(line).substr(0, kPart)));
    ASSERT_TRUE(lines.AddPart(std::string_view(line).substr(kPart, kPart)));
    std::this_thread::sleep_for(Millis(100));  // the upload has begun and waits for more
    lines.Drop();
  }
  {
    LineAssembler lines(host->session());
    FeedInParts(host.get(), &lines, WriteLine("2", sandbox, "/tmp/early-broken", data, "}}x"));
    MessagePtr answer = host->sink().WaitResponse("null", kAnswerTimeout);
    ASSERT_NE(answer, nullptr);
    EXPECT_EQ(answer->ErrorCode(), -32700) << answer->raw;
  }
  const core::BridgeCore::Counters after = core()->counters();
  EXPECT_EQ(after.early_writes_dropped - before.early_writes_dropped, 2);
  EXPECT_EQ(after.early_writes_used - before.early_writes_used, 0);
  EXPECT_EQ(ReadBack(host.get(), sandbox, "/tmp/early-cut"), "<missing>");
  EXPECT_EQ(ReadBack(host.get(), sandbox, "/tmp/early-broken"), "<missing>");
}

}  // namespace
}  // namespace abx::epp::testing
