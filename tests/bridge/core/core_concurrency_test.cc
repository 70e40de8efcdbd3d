// The core as the typed gRPC services use it (bridge/api/grpc), without gRPC: each call
// validates its configuration, takes the EndpointCache of its server and credential from the
// shared core, and runs Sandboxes / Exec / Files with a CancelToken of its own, which the
// call's reactor cancels when the client goes away (typed_call.h). Many such calls at
// once, with two credentials, against the real fake server process; under
// --config=tsan ThreadSanitizer judges the core's threads, caches and cancellation
// (tools/sanitizers). Outcomes are checked exactly.

#include <unistd.h>

#include <atomic>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "bridge/base/cancel.h"
#include "bridge/core/bridge_core.h"
#include "bridge/core/config.h"
#include "bridge/core/exec/exec.h"
#include "bridge/core/files/files.h"
#include "bridge/core/sandboxes/sandboxes.h"
#include "tests/bridge/fake_upstream.h"
#include "tests/e2e/process.h"

namespace abx::core {
namespace {

using bridge_test::FakeUpstreamTest;
using Clock = std::chrono::steady_clock;
using Millis = std::chrono::milliseconds;

// One typed call's state, as TypedCall::Begin makes it.
struct Call {
  ProviderConfig config;
  std::shared_ptr<EndpointCache> upstream;
  CancelToken cancel;
};

// Collects a command's life as the typed Exec.Start sink does: one lock, seq in order.
class RecordingExecSink final : public ExecSink {
 public:
  void OnStarted(const std::string& exec_id) override {
    std::lock_guard<std::mutex> lock(mu_);
    exec_id_ = exec_id;
    ++started_;
  }
  void OnOutput(OutputChunk& chunk) override {
    std::lock_guard<std::mutex> lock(mu_);
    (chunk.stream == OutputStream::kStdout ? stdout_ : stderr_) += chunk.data;
    ++chunks_;
  }
  void OnExit(const ExecExit& exit) override {
    std::lock_guard<std::mutex> lock(mu_);
    exit_ = exit;
    ++exits_;
  }
  bool has_output() const {
    std::lock_guard<std::mutex> lock(mu_);
    return chunks_ > 0;
  }

  mutable std::mutex mu_;
  std::string exec_id_, stdout_, stderr_;
  int started_ = 0, chunks_ = 0, exits_ = 0;
  ExecExit exit_;
};

class CoreConcurrencyTest : public FakeUpstreamTest {
 protected:
  std::unique_ptr<Call> Begin(const std::string& key) {
    auto call = std::make_unique<Call>();
    auto config = ParseConfig(Config(key));
    if (!config.ok()) {
      ADD_FAILURE() << config.error().message;
      return nullptr;
    }
    call->config = std::move(config).value();
    call->upstream = core()->EndpointCacheFor(call->config);
    return call;
  }

  std::string CreateSandbox(const std::string& key, const std::map<std::string, std::string>& metadata) {
    auto call = Begin(key);
    if (!call) return "";
    Sandboxes sandboxes(call->upstream.get(), &call->config);
    CreateSpec spec;
    spec.metadata = metadata;
    auto created = sandboxes.Create(spec, &call->cancel, nullptr);
    if (!created.ok()) {
      ADD_FAILURE() << "create: " << created.error().message;
      return "";
    }
    EXPECT_EQ(created->record.state, "Running");
    return created->record.id;
  }

  void Kill(const std::string& key, const std::string& id) {
    auto call = Begin(key);
    ASSERT_NE(call, nullptr);
    auto killed = Sandboxes(call->upstream.get(), &call->config).Kill(id, &call->cancel);
    ASSERT_TRUE(killed.ok()) << killed.error().message;
    EXPECT_TRUE(*killed);
  }
};

std::string SeqOutput(int n) {
  std::string out;
  for (int i = 1; i <= n; ++i) out += std::to_string(i) + "\n";
  return out;
}

// Calls on many threads at once, each a typed call's worth (create, run, write, read,
// list, get, kill), half of them with each credential, while other threads read the
// core's counters and caches as Bridge.Status and ListCachedSandboxes do.
TEST_F(CoreConcurrencyTest, TypedCallsOnManyThreadsShareOneCoreAndKeepCredentialsApart) {
  constexpr int kCallers = 10;
  const std::string suite = "core-" + std::to_string(::getpid());
  std::vector<std::shared_ptr<EndpointCache>> upstreams(kCallers);
  std::atomic<bool> done{false};
  std::set<std::string> labels_seen;
  std::mutex labels_mu;
  std::thread status([&] {
    while (!done) {
      core()->counters();
      for (const BridgeCore::CachedSandbox& cached : core()->CachedSandboxes()) {
        std::lock_guard<std::mutex> lock(labels_mu);
        labels_seen.insert(cached.credential);
      }
      std::this_thread::sleep_for(Millis(2));
    }
  });

  std::vector<std::thread> callers;
  for (int i = 0; i < kCallers; ++i) {
    callers.emplace_back([&, i] {
      const std::string key = i % 2 ? kKeyB : kKeyA;
      const std::string id = CreateSandbox(key, {{"suite", suite}, {"caller", std::to_string(i)}});
      ASSERT_FALSE(id.empty());
      auto call = Begin(key);
      ASSERT_NE(call, nullptr);
      upstreams[i] = call->upstream;

      ExecSpec spec;
      spec.sandbox_id = id;
      spec.command = "seq 1 2000; echo caller-" + std::to_string(i) + " >&2; exit 7";
      spec.stdin_data = "ignored";
      RecordingExecSink sink;
      Status ran = Exec(core(), call->upstream.get(), &call->config).Run(spec, &call->cancel, &sink);
      ASSERT_TRUE(ran.ok()) << ran.error().message;
      EXPECT_EQ(sink.started_, 1);
      EXPECT_EQ(sink.exits_, 1);
      EXPECT_EQ(sink.stdout_, SeqOutput(2000));
      EXPECT_EQ(sink.stderr_, "caller-" + std::to_string(i) + "\n");
      EXPECT_EQ(sink.exit_.exit_code, std::optional<int>(7));
      EXPECT_FALSE(sink.exit_.cancelled);

      Files files(call->upstream.get(), &call->config);
      Status made = files.Mkdir(id, "/data", std::nullopt, true, &call->cancel);
      ASSERT_TRUE(made.ok()) << made.error().message;
      std::string data(100 * 1024 + i, '\0');
      for (size_t b = 0; b < data.size(); ++b) data[b] = static_cast<char>((b * 31 + i) & 0xff);
      auto size = files.Write(id, "/data/blob.bin", data, 0640, false, &call->cancel);
      ASSERT_TRUE(size.ok()) << size.error().message;
      EXPECT_EQ(*size, static_cast<int64_t>(data.size()));
      auto appended = files.Write(id, "/data/blob.bin", "tail", std::nullopt, true, &call->cancel);
      ASSERT_TRUE(appended.ok()) << appended.error().message;
      auto read = files.Read(id, "/data/blob.bin", 0, 0, &call->cancel);
      ASSERT_TRUE(read.ok()) << read.error().message;
      EXPECT_TRUE(read->data == data + "tail") << "caller " << i << ": file differs";
      auto listed = files.List(id, "/data", 1, &call->cancel);
      ASSERT_TRUE(listed.ok()) << listed.error().message;
      ASSERT_EQ(listed->size(), 1u);
      EXPECT_EQ((*listed)[0].name, "blob.bin");

      Sandboxes sandboxes(call->upstream.get(), &call->config);
      auto mine = sandboxes.List({}, {{"suite", suite}, {"caller", std::to_string(i)}}, 0, "",
                                 &call->cancel);
      ASSERT_TRUE(mine.ok()) << mine.error().message;
      ASSERT_EQ(mine->sandboxes.size(), 1u);
      EXPECT_EQ(mine->sandboxes[0].record.id, id);
      auto got = sandboxes.Get(id, &call->cancel);
      ASSERT_TRUE(got.ok()) << got.error().message;
      EXPECT_EQ(got->record.metadata["caller"], std::to_string(i));
      Kill(key, id);
    });
  }
  for (std::thread& t : callers) t.join();
  done = true;
  status.join();

  // One EndpointCache per credential, shared by every call holding it.
  for (int i = 2; i < kCallers; ++i) EXPECT_EQ(upstreams[i], upstreams[i % 2]) << "caller " << i;
  EXPECT_NE(upstreams[0], upstreams[1]);
  for (const std::string& label : labels_seen) {
    EXPECT_TRUE(label == "credential 1" || label == "credential 2") << label;
  }
  ExpectNoSandboxLeft();
}

// The client going away, seen by a watcher thread as TypedCall's ClientGoneWatcher
// sees it: a create waiting for Running is cancelled and kills its sandbox; a command
// that is streaming is interrupted and ends at the fake.
TEST_F(CoreConcurrencyTest, ClientGoneCancelsFromAnotherThread) {
  const std::string id = CreateSandbox(kKeyA, {});
  ASSERT_FALSE(id.empty());
  ASSERT_TRUE(SetFaults(R"({"never_running":true})"));

  auto create_call = Begin(kKeyA);
  ASSERT_NE(create_call, nullptr);
  std::atomic<bool> waiting{false};
  std::thread creator([&] {
    Sandboxes sandboxes(create_call->upstream.get(), &create_call->config);
    auto created = sandboxes.Create(CreateSpec(), &create_call->cancel,
                                    [&](const std::string&, const std::string&) { waiting = true; });
    ASSERT_FALSE(created.ok()) << "created " << created->record.id << " although cancelled";
    EXPECT_EQ(created.error().code, ErrorCode::kCancelled) << created.error().message;
  });

  const std::string sleeping = "sleep 307." + std::to_string(::getpid()) + "1";
  auto exec_call = Begin(kKeyB);
  ASSERT_NE(exec_call, nullptr);
  RecordingExecSink sink;
  std::thread runner([&] {
    ExecSpec spec;
    spec.sandbox_id = id;
    spec.command = "echo begun; " + sleeping;
    Status ran = Exec(core(), exec_call->upstream.get(), &exec_call->config)
                     .Run(spec, &exec_call->cancel, &sink);
    EXPECT_TRUE(ran.ok()) << ran.error().message;
  });

  const auto deadline = Clock::now() + Millis(60000);
  while ((!waiting || !sink.has_output()) && Clock::now() < deadline) {
    std::this_thread::sleep_for(Millis(20));
  }
  ASSERT_TRUE(waiting) << "the create never waited";
  ASSERT_TRUE(sink.has_output()) << "the command printed nothing";
  std::thread watcher([&] {
    create_call->cancel.Cancel();
    exec_call->cancel.Cancel();
  });
  watcher.join();
  creator.join();
  runner.join();

  EXPECT_EQ(sink.exits_, 1);
  EXPECT_TRUE(sink.exit_.cancelled);
  EXPECT_FALSE(sink.exit_.exit_code.has_value());
  EXPECT_EQ(sink.stdout_, "begun\n");
  const auto gone_by = Clock::now() + Millis(15000);
  while (!e2e::FindProcesses({sleeping}).empty() && Clock::now() < gone_by) {
    std::this_thread::sleep_for(Millis(100));
  }
  EXPECT_TRUE(e2e::FindProcesses({sleeping}).empty()) << sleeping << " still runs";
  ASSERT_TRUE(ClearFaults());
  Kill(kKeyA, id);
  ExpectNoSandboxLeft();
}

}  // namespace
}  // namespace abx::core
