// One Terminal (bridge/core/terminals/terminal.h) on its own, against the fake server's
// execd over a real WebSocket: no Terminals facade, no registry, no front door. A
// recording holder stands in for a session, and can stop taking output to play one that
// stopped reading.
#include "bridge/core/terminals/terminal.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "bridge/core/terminals/terminal_command.h"
#include "bridge/opensandbox/pty_frames.h"
#include "common/limits.h"
#include "tests/bridge/fake_sandbox.h"

namespace abx::core {
namespace {

using Clock = std::chrono::steady_clock;
using std::chrono::milliseconds;

constexpr int64_t kConnectMs = 15000;

// What a holder got, in order.
struct Delivery {
  enum Kind { kOutput, kExit, kDetached } kind;
  uint64_t offset = 0;
  std::string data;                // output; the reason of a notice
  std::optional<int> exit_code;
  std::optional<Error> error;
};

class RecordingHolder : public TerminalHolder {
 public:
  void OnOutput(const std::string&, uint64_t offset, const std::string& data) override {
    std::unique_lock<std::mutex> lock(mu_);
    in_call_ = true;
    call_end_ = offset + data.size();
    cv_.notify_all();
    cv_.wait(lock, [&] { return open_; });  // a holder that stopped reading
    in_call_ = false;
    deliveries_.push_back({Delivery::kOutput, offset, data, {}, {}});
    output_ += data;
    cv_.notify_all();
  }
  void OnExit(const std::string&, std::optional<int> exit_code, uint64_t offset,
              const std::optional<Error>& error) override {
    Record({Delivery::kExit, offset, "", exit_code, error});
  }
  void OnDetached(const std::string&, uint64_t offset, const std::string& reason) override {
    Record({Delivery::kDetached, offset, reason, {}, {}});
  }

  // Closed: the next output call waits until it opens.
  void SetOpen(bool open) {
    std::lock_guard<std::mutex> lock(mu_);
    open_ = open;
    cv_.notify_all();
  }
  bool WaitInCall(milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, timeout, [&] { return in_call_; });
  }
  // The end of the output of the latest call: where the terminal's next byte owed is.
  uint64_t CallEnd() {
    std::lock_guard<std::mutex> lock(mu_);
    return call_end_;
  }

  std::vector<Delivery> deliveries() {
    std::lock_guard<std::mutex> lock(mu_);
    return deliveries_;
  }
  std::string Output() {
    std::lock_guard<std::mutex> lock(mu_);
    return output_;
  }
  bool WaitForOutput(const std::string& text, milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    size_t from = 0;  // what was searched already (megabytes, delivered in small calls)
    return cv_.wait_for(lock, timeout, [&] {
      if (output_.find(text, from) != std::string::npos) return true;
      from = output_.size() >= text.size() ? output_.size() - text.size() + 1 : 0;
      return false;
    });
  }
  std::optional<Delivery> WaitFor(Delivery::Kind kind, milliseconds timeout) {
    std::unique_lock<std::mutex> lock(mu_);
    std::optional<Delivery> found;
    cv_.wait_for(lock, timeout, [&] {
      for (const Delivery& d : deliveries_) {
        if (d.kind == kind) found = d;
      }
      return found.has_value();
    });
    return found;
  }

 private:
  void Record(Delivery d) {
    std::lock_guard<std::mutex> lock(mu_);
    deliveries_.push_back(std::move(d));
    cv_.notify_all();
  }

  std::mutex mu_;
  std::condition_variable cv_;
  bool open_ = true;
  bool in_call_ = false;
  uint64_t call_end_ = 0;
  std::vector<Delivery> deliveries_;
  std::string output_;  // the data of every output call, in order
};

// Output calls continue each other or leave a gap, never overlap; what a gap lost is
// counted. Returns the end of the last output.
uint64_t ExpectInOrder(const std::vector<Delivery>& deliveries, uint64_t* gap_bytes = nullptr) {
  uint64_t end = 0;
  bool first = true;
  for (const Delivery& d : deliveries) {
    if (d.kind != Delivery::kOutput) continue;
    if (!first) {
      EXPECT_GE(d.offset, end) << "output overlaps what came before";
      if (gap_bytes) *gap_bytes += d.offset - end;
    }
    first = false;
    end = d.offset + d.data.size();
  }
  return end;
}

std::string WithoutCarriageReturns(std::string text) {
  text.erase(std::remove(text.begin(), text.end(), '\r'), text.end());
  return text;
}

class TerminalTest : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string error;
    sandbox_ = bridge_test::FakeSandbox::Start(&error);
    ASSERT_NE(sandbox_, nullptr) << error;
    execd_ = &sandbox_->execd();
  }

  void TearDown() override {
    // Before the sandbox's client goes, which their connections belong to.
    for (auto& terminal : terminals_) terminal->Abort();
    terminals_.clear();
    if (HasFailure() && sandbox_) std::printf("---- fake log\n%s\n----\n", sandbox_->LogTail().c_str());
  }

  // A terminal running `command` (empty: a shell), connected, held by `holder` from its
  // first byte.
  std::shared_ptr<Terminal> Open(const std::string& command, std::shared_ptr<RecordingHolder> holder) {
    TerminalOpenSpec spec;
    spec.sandbox_id = sandbox_->sandbox_id();
    spec.command = command;
    auto pty_id = execd_->CreatePty("", TerminalCommand(spec), &never_);
    EXPECT_TRUE(pty_id.ok()) << pty_id.error().message;
    if (!pty_id.ok()) return nullptr;
    auto terminal = std::make_shared<Terminal>(spec.sandbox_id, *pty_id, /*keep=*/false, *execd_, [] { return false; });
    terminals_.push_back(terminal);
    Status connected = terminal->Connect(/*takeover=*/false, &never_, kConnectMs);
    EXPECT_TRUE(connected.ok()) << connected.error().message;
    if (!connected.ok()) return nullptr;
    Status held = terminal->SetHolder(holder, 0, [](uint64_t, uint64_t) {});
    EXPECT_TRUE(held.ok()) << held.error().message;
    return terminal;
  }

  static void Type(Terminal& terminal, const std::string& keys) {
    Status sent = terminal.Send(/*text=*/false, opensandbox::PtyStdinFrame(keys), 10000);
    EXPECT_TRUE(sent.ok()) << sent.error().message;
  }

  std::unique_ptr<bridge_test::FakeSandbox> sandbox_;
  opensandbox::ExecdClient* execd_ = nullptr;
  std::vector<std::shared_ptr<Terminal>> terminals_;
  CancelToken never_;
};

TEST_F(TerminalTest, OutputReachesTheHolderInOrderAndTheExitAfterItsLastByte) {
  auto holder = std::make_shared<RecordingHolder>();
  auto terminal = Open("seq 1 20000; exit 3", holder);
  ASSERT_NE(terminal, nullptr);
  auto exit = holder->WaitFor(Delivery::kExit, milliseconds(20000));
  ASSERT_TRUE(exit.has_value());

  std::vector<Delivery> got = holder->deliveries();
  uint64_t gaps = 0;
  const uint64_t end = ExpectInOrder(got, &gaps);
  EXPECT_EQ(gaps, 0u);
  std::string expected;
  for (int i = 1; i <= 20000; ++i) expected += std::to_string(i) + "\n";
  EXPECT_EQ(WithoutCarriageReturns(holder->Output()), expected);
  ASSERT_EQ(got.back().kind, Delivery::kExit) << "the exit is the last thing a holder gets";
  EXPECT_EQ(exit->exit_code, 3);
  EXPECT_EQ(exit->offset, end);
  EXPECT_FALSE(exit->error.has_value());
  EXPECT_TRUE(terminal->ended());
  EXPECT_FALSE(terminal->Info().running);
}

TEST_F(TerminalTest, ANewHolderIsReplayedWhatWasKeptAndTheEarlierIsToldWhereItStopped) {
  auto first = std::make_shared<RecordingHolder>();
  auto terminal = Open("", first);
  ASSERT_NE(terminal, nullptr);
  Type(*terminal, "echo one-$((40+2))\n");
  ASSERT_TRUE(first->WaitForOutput("one-42", milliseconds(10000))) << first->Output();

  auto second = std::make_shared<RecordingHolder>();
  uint64_t answered_offset = 99, answered_lost = 99;
  ASSERT_TRUE(terminal->SetHolder(second, 0, [&](uint64_t offset, uint64_t lost) {
    answered_offset = offset;
    answered_lost = lost;
  }).ok());
  EXPECT_EQ(answered_offset, 0u);
  EXPECT_EQ(answered_lost, 0u);
  auto notice = first->WaitFor(Delivery::kDetached, milliseconds(5000));
  ASSERT_TRUE(notice.has_value()) << "the earlier holder is told";
  EXPECT_EQ(notice->data, "taken_over");
  EXPECT_EQ(notice->offset, ExpectInOrder(first->deliveries())) << "the first byte it did not get";
  EXPECT_TRUE(terminal->Holds(second.get()));
  EXPECT_FALSE(terminal->Holds(first.get()));

  Type(*terminal, "echo two-$((40+3))\n");
  ASSERT_TRUE(second->WaitForOutput("two-43", milliseconds(10000))) << second->Output();
  const std::string replayed = second->Output();
  const std::string before = first->Output();
  EXPECT_EQ(replayed.substr(0, before.size()), before) << "replayed from the first byte";
  EXPECT_EQ(first->deliveries().back().kind, Delivery::kDetached) << "nothing reaches it after its notice";
  EXPECT_EQ(first->Output().find("two-43"), std::string::npos);
  ExpectInOrder(second->deliveries());

  // An offset past the end is refused, and changes nothing.
  const uint64_t end = terminal->Info().offset;
  Status beyond = terminal->SetHolder(first, end + 1000000, [](uint64_t, uint64_t) {});
  ASSERT_FALSE(beyond.ok());
  EXPECT_EQ(beyond.error().code, ErrorCode::kInvalidParams);
  EXPECT_TRUE(terminal->Holds(second.get()));
}

// A holder that stops taking output: at kPtyBufferBytes owed, the connection to execd
// goes, so the program in the terminal runs on; once the holder took what was held, the
// connection comes back from the next byte owed, and what execd no longer kept shows as
// a gap in the offsets.
TEST_F(TerminalTest, AHolderThatStopsReadingParksTheConnectionAndTheProgramRunsOn) {
  // Past what the bridge holds, more than execd keeps (1 MiB), with room to spare.
  constexpr uint64_t kWritten = kPtyBufferBytes + (4 << 20);
  auto holder = std::make_shared<RecordingHolder>();
  holder->SetOpen(false);
  // The program waits for a line before its last words, so that it is still running
  // when the connection comes back, however long the holder takes to catch up.
  auto terminal = Open("head -c " + std::to_string(kWritten) + " /dev/zero | tr '\\0' x; read line; echo done-$((6*7))",
                       holder);
  ASSERT_NE(terminal, nullptr);
  ASSERT_TRUE(holder->WaitInCall(milliseconds(10000)));

  // The bridge parks once it holds kPtyBufferBytes its holder has not taken. Until then,
  // what execd counts as written may still be on its way (in execd's queue and the
  // socket's buffers, megabytes on the loopback), so that is waited for first.
  const uint64_t owed_from = holder->CallEnd();
  auto deadline = Clock::now() + milliseconds(20000);
  while (terminal->Info().offset < owed_from + kPtyBufferBytes && Clock::now() < deadline) {
    std::this_thread::sleep_for(milliseconds(20));
  }
  ASSERT_GE(terminal->Info().offset, owed_from + kPtyBufferBytes) << "the bridge did not take output";

  // The program wrote it all while the holder took nothing.
  const std::string pty_id = terminal->Info().pty_id;
  uint64_t written = 0;
  deadline = Clock::now() + milliseconds(20000);
  while (written < kWritten && Clock::now() < deadline) {
    auto status = execd_->GetPty(pty_id, &never_);
    ASSERT_TRUE(status.ok()) << status.error().message;
    written = status->output_offset;
    if (written < kWritten) std::this_thread::sleep_for(milliseconds(50));
  }
  ASSERT_GE(written, kWritten) << "the program was held up by a holder that does not read";
  const uint64_t taken = terminal->Info().offset;
  ASSERT_LE(taken, owed_from + kPtyBufferBytes + (1 << 20)) << "the bridge stopped taking output from execd";
  ASSERT_GT(written, taken + (1 << 20)) << "more than execd keeps (1 MiB) was written past what the bridge took";

  holder->SetOpen(true);
  Type(*terminal, "\n");
  ASSERT_TRUE(holder->WaitForOutput("done-42", milliseconds(20000)))
      << "the connection came back (" << holder->Output().size() << " bytes)";
  auto exit = holder->WaitFor(Delivery::kExit, milliseconds(10000));
  ASSERT_TRUE(exit.has_value());
  EXPECT_EQ(exit->exit_code, 0);
  uint64_t gaps = 0;
  const uint64_t end = ExpectInOrder(holder->deliveries(), &gaps);
  EXPECT_EQ(exit->offset, end);
  EXPECT_GT(gaps, 0u) << "execd keeps 1 MiB: the rest of what was written while parked is lost";
  EXPECT_EQ(holder->Output().size() + gaps, end) << "every byte is either delivered or counted in a gap";
}

TEST_F(TerminalTest, ATakenOverTerminalTellsItsHolderAndRestoreTakesItBack) {
  auto first = std::make_shared<RecordingHolder>();
  auto terminal = Open("", first);
  ASSERT_NE(terminal, nullptr);
  Type(*terminal, "echo one-$((40+2))\n");
  ASSERT_TRUE(first->WaitForOutput("one-42", milliseconds(10000)));

  // Another client (another bridge) takes the terminal over.
  const std::string pty_id = terminal->Info().pty_id;
  http::WebSocket::Handlers ignore;
  ignore.on_message = [](bool, std::string) {};
  ignore.on_end = [](const http::WebSocketEnd&) {};
  auto other = execd_->OpenPty(pty_id, 0, /*takeover=*/true, ignore, &never_);
  ASSERT_TRUE(other.ok()) << other.error().message;
  auto notice = first->WaitFor(Delivery::kDetached, milliseconds(10000));
  ASSERT_TRUE(notice.has_value());
  EXPECT_EQ(notice->data, "taken_over");
  EXPECT_FALSE(terminal->ended()) << "the shell runs on, elsewhere";
  (*other)->Abort();

  ASSERT_TRUE(terminal->Restore(&never_, kConnectMs).ok());
  auto second = std::make_shared<RecordingHolder>();
  ASSERT_TRUE(terminal->SetHolder(second, std::nullopt, [](uint64_t, uint64_t) {}).ok());
  Type(*terminal, "echo back-$((1+1))\n");
  EXPECT_TRUE(second->WaitForOutput("back-2", milliseconds(10000))) << second->Output();
  EXPECT_EQ(first->Output().find("back-2"), std::string::npos);
}

TEST_F(TerminalTest, DetachWaitsForTheCallUnderWayAndNothingFollowsIt) {
  auto holder = std::make_shared<RecordingHolder>();
  holder->SetOpen(false);
  auto terminal = Open("while :; do echo tick; sleep 0.05; done", holder);
  ASSERT_NE(terminal, nullptr);
  ASSERT_TRUE(holder->WaitInCall(milliseconds(10000)));

  std::atomic<bool> detached{false};
  std::thread detach([&] {
    terminal->Detach(holder.get());
    detached = true;
  });
  std::this_thread::sleep_for(milliseconds(300));
  EXPECT_FALSE(detached) << "Detach returned while a call to the holder was under way";
  holder->SetOpen(true);
  detach.join();
  const size_t calls = holder->deliveries().size();
  const uint64_t offset = terminal->Info().offset;
  const auto deadline = Clock::now() + milliseconds(5000);
  while (terminal->Info().offset == offset && Clock::now() < deadline) std::this_thread::sleep_for(milliseconds(20));
  EXPECT_GT(terminal->Info().offset, offset) << "the program runs on";
  std::this_thread::sleep_for(milliseconds(200));
  EXPECT_EQ(holder->deliveries().size(), calls);
  EXPECT_FALSE(terminal->Info().attached);
}

TEST_F(TerminalTest, AnEndedTerminalRefusesInput) {
  auto holder = std::make_shared<RecordingHolder>();
  auto terminal = Open("exit 0", holder);
  ASSERT_NE(terminal, nullptr);
  ASSERT_TRUE(holder->WaitFor(Delivery::kExit, milliseconds(10000)).has_value());
  // Once its connection has closed too (the exit frame comes just before the close).
  Status sent = OkStatus();
  const auto deadline = Clock::now() + milliseconds(5000);
  while (sent.ok() && Clock::now() < deadline) {
    sent = terminal->Send(false, opensandbox::PtyStdinFrame("echo late\n"), 1000);
    if (sent.ok()) std::this_thread::sleep_for(milliseconds(20));
  }
  ASSERT_FALSE(sent.ok());
  EXPECT_EQ(sent.error().code, ErrorCode::kInvalidState);
  EXPECT_NE(sent.error().message.find("ended"), std::string::npos) << sent.error().message;
}

}  // namespace
}  // namespace abx::core
