#pragma once

// execd's terminals (docs/opensandbox.md §2.16): a session made by POST /pty runs
// nothing until its first WebSocket, which starts `bash --norc --noprofile` (or
// `-c command`) on a pseudo-terminal of 80×24, or on three pipes in pipe mode. All
// output goes into a 1 MiB replay buffer counted by a total offset that only grows, and
// to the one attached client; the snapshot for a new client and its attachment happen
// under one lock, so every byte reaches it exactly once. The process outlives its
// clients; when it exits the client gets the exit and is let go, and the next client
// starts a new process in the same session. The WebSocket itself is pty_websocket.h's.

#include <sys/types.h>

#include <condition_variable>
#include <cstdint>
#include <map>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "tests/fake-opensandbox/sandbox_volumes.h"

namespace fake_opensandbox {

// The WebSocket attached to a session, as the session sees it. Called with the
// session's lock held: implementations only queue.
class PtyClient {
 public:
  virtual ~PtyClient() = default;
  // A live output frame: kind 1 (stdout, or everything in PTY mode) or 2 (stderr).
  virtual void QueueOutput(uint8_t kind, std::string bytes) = 0;
  // The process ended: the exit frame (-1 for a signal), then close 1000.
  virtual void QueueExit(int exit_code) = 0;
  // Another client took the session over: close 4001 TAKEN_OVER.
  virtual void QueueEvict() = 0;
  // Bytes queued and not yet written; the output pump waits while it is large.
  virtual size_t QueuedBytes() const = 0;
};

// Where and how a session's process runs in the sandbox.
struct PtyStart {
  std::string host_cwd;    // mapped already
  std::string chroot_dir;  // the sandbox root (see SpawnOptions)
  std::string chroot_cwd;  // the directory as the sandbox sees it
  std::vector<VolumeMount> mounts;  // the sandbox's volumes
  std::vector<std::string> env;
  // The pty_exit_overtakes_bytes fault: the client is sent output this many bytes late,
  // and what is still held back when the process ends is lost to it, as when execd's
  // exit frame overtakes the last output (it still counts in the offsets and the replay).
  uint64_t exit_overtakes_bytes = 0;
};

class PtySession : public std::enable_shared_from_this<PtySession> {
 public:
  static constexpr size_t kReplayBytes = 1 << 20;
  static constexpr size_t kMaxQueuedBytes = 1 << 20;  // per client, then the pump waits

  PtySession(std::string id, std::string sandbox_cwd, std::string command)
      : id_(std::move(id)), sandbox_cwd_(std::move(sandbox_cwd)), command_(std::move(command)) {}
  ~PtySession();

  const std::string& id() const { return id_; }
  const std::string& sandbox_cwd() const { return sandbox_cwd_; }

  // Is a client attached now?
  bool Held();
  // Attaches `client`, first evicting a holder when `takeover` (false without it when
  // one holds the session), starts the process when none runs (pipe mode when
  // `pipe_mode`), and takes the replay snapshot from `since`.
  struct Attached {
    bool ok = false;
    std::string error;          // the process could not start (START_FAILED)
    bool pipe_mode = false;     // of the running process
    uint64_t replay_offset = 0;
    std::string replay;         // empty: no replay frame
  };
  Attached Attach(std::shared_ptr<PtyClient> client, bool takeover, bool pipe_mode, uint64_t since,
                  const PtyStart& start);
  // The client left (or was evicted): output goes on into the buffer only. With
  // `stale_hold_ms` > 0 the session still counts as held that long, as execd holds a
  // connection that died without a close until its read deadline (the
  // pty_stale_hold_ms fault).
  void Detach(const PtyClient* client, int64_t stale_hold_ms = 0);

  // What the client sends. False when stdin cannot be written (STDIN_WRITE_FAILED).
  bool WriteStdin(const std::string& bytes);
  void Resize(int cols, int rows);
  void Signal(int sig);  // to the shell's process group
  // DELETE /pty/{id}: SIGKILL to the group, the client gets exit -1; nothing runs after.
  void Kill();

  bool running();
  uint64_t output_offset();
  // The replay buffer (all output while it is under 1 MiB); *from: its first byte's offset.
  std::string Recorded(uint64_t* from);

 private:
  bool StartLocked(bool pipe_mode, const PtyStart& start, std::string* error);
  void Pump(pid_t pid, int out_fd, int err_fd);
  void Append(uint8_t kind, const char* data, size_t size);

  const std::string id_;
  const std::string sandbox_cwd_;
  const std::string command_;

  std::mutex mu_;
  std::string ring_;        // the last ≤ kReplayBytes bytes of output, in order
  uint64_t total_ = 0;      // every output byte ever
  std::shared_ptr<PtyClient> client_;
  std::chrono::steady_clock::time_point stale_until_;  // held by a dead connection until then
  uint64_t client_lag_bytes_ = 0;  // PtyStart::exit_overtakes_bytes of the client
  std::string held_back_;          // output the client is owed and not yet sent
  pid_t pid_ = -1;          // the running shell, -1 when none
  bool pipe_mode_ = false;
  int master_fd_ = -1;      // PTY mode
  int stdin_fd_ = -1;       // pipe mode: the write end of the shell's stdin
  bool killed_ = false;
  std::vector<std::thread> pumps_;  // one per process started; joined at destruction
};

class PtySessions {
 public:
  std::shared_ptr<PtySession> Create(std::string sandbox_cwd, std::string command);
  std::shared_ptr<PtySession> Find(const std::string& id);
  // Removes and kills the session; false when there is none.
  bool Delete(const std::string& id);
  void DeleteAll();

 private:
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<PtySession>> sessions_;
};

}  // namespace fake_opensandbox
