#pragma once

// What one soak session does, and what it found. Each session owns one sandbox for the
// whole run and loops over a weighted mix until the end time:
//   exec.start (streamed) and exec.run (collected) of commands whose output is known
//   exactly (seq-numbered lines on stdout and stderr, tagged with session and op so any
//   cross-talk shows, a few of them large) and a chosen exit code;
//   files.write then files.read of random content (text or binary as base64);
//   sandbox.get and sandbox.list (filtered by this session's metadata);
// plus a few sandbox.create / exec.run / sandbox.kill of an extra sandbox, spread over
// the run, and a host's think time (0-1 s) between calls. Every answer is checked
// against what it must be.

#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <random>
#include <string>
#include <vector>

#include "tests/soak/soak_client.h"

namespace abx::soak {

// Caps how many commands run at once across all sessions. The fake runs every command as
// a real process on this host (fork, a mount namespace, bash); 64 of them at once on a
// loaded 2-core machine only measure how slowly it spawns, and push the first byte of a
// stream past the bridge's 20 s idle limit. Sessions wait for a slot; everything else
// (files, lifecycle) runs unthrottled.
class CommandSlots {
 public:
  explicit CommandSlots(int slots) : free_(slots) {}
  void Acquire() {
    std::unique_lock<std::mutex> lock(mutex_);
    cv_.wait(lock, [&] { return free_ > 0; });
    --free_;
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mutex_);
    ++free_;
    cv_.notify_one();
  }

 private:
  std::mutex mutex_;
  std::condition_variable cv_;
  int free_;
};

struct SessionReport {
  int64_t ops = 0;             // requests answered and checked
  int64_t checked_bytes = 0;   // output and file bytes compared with what they must be
  int64_t failures = 0;        // checks that failed (only the first few are kept)
  std::vector<std::string> failure_messages;
  std::map<std::string, std::vector<int64_t>> latency_us;  // by operation
  int creates = 0;
  int kills = 0;
};

class SessionWorkload {
 public:
  // `extra_creates`: how many create/kill cycles of a second sandbox the run holds.
  SessionWorkload(SoakClient* client, CommandSlots* slots, int index, int extra_creates);

  // Creates the session's own sandbox; false (with a failure recorded) when it cannot.
  bool Prepare();
  // The mix, from now until `end`.
  void Run(Clock::time_point start, Clock::time_point end);
  // Kills the session's sandbox.
  void Cleanup();

  const SessionReport& report() const { return report_; }

 private:
  void Fail(const std::string& message);
  // A call that must succeed; null (with a failure) when it did not.
  std::shared_ptr<const rapidjson::Document> Ok(const std::string& op, const std::string& method,
                                                const std::string& params);
  std::string CreateSandbox(const std::string& metadata_json);
  void Kill(const std::string& sandbox_id);

  void ExecStream();
  void ExecRun();
  void FileRoundTrip();
  void GetAndList();
  void CreateAndKillExtra();

  // A command whose output is known: stdout/stderr lines tagged with this op, and an
  // exit code.
  struct Command {
    std::string text, stdout_data, stderr_data;
    int exit_code = 0;
  };
  Command NextCommand();
  void Record(const std::string& op, Clock::time_point since);

  SoakClient* client_;
  CommandSlots* slots_;
  const int index_;
  const int extra_creates_;
  int extras_done_ = 0;
  int64_t op_counter_ = 0;
  std::mt19937_64 rng_;
  std::string sandbox_;
  SessionReport report_;
};

}  // namespace abx::soak
