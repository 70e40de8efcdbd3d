#pragma once
// The watches of one sandbox, from every session of one server and credential
// (docs/epp1.md, "files.watch extension"; the scripts: watch_scripts.h). A hub has one
// mode, picked when it is made:
//
// - inotify: one watch host (an execd command with a stdin stream) for all of the
//   sandbox's watches. A thread of the hub follows the host's one output stream; adding
//   a watch is a control line to the host's stdin, answered once its inotifywait says its
//   watches are established; removing one is another line. The host lives while the hub
//   has watches: when the last goes its stdin is closed and it ends, its inotifywaits
//   with it. Every lease third the hub writes a line the host waits for, so a host whose
//   bridge died ends by itself within the lease.
// - poll: one listing of every watched path per interval, on the core's background
//   threads, compared with the one before. Nothing runs in the sandbox between two looks
//   and no thread waits for the next.
//
// Listeners are told of changes outside the hub's lock, in order (one thread delivers: the
// host's, or the one look at a time); a listener may be told once more after Remove
// returned (a batch on its way), so it must tolerate that.

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "bridge/base/cancel.h"
#include "bridge/base/error.h"
#include "bridge/core/config.h"
#include "bridge/core/files/watch_scripts.h"

namespace abx::core {

class BridgeCore;
class EndpointCache;

// Who is told of one watch's changes (a session, a typed call).
class WatchListener {
 public:
  virtual ~WatchListener() = default;
  virtual void OnEvents(const std::string& watch_id, const std::vector<WatchEvent>& events) = 0;
  // The watch ended without Remove (its sandbox ended): told once, then nothing more.
  virtual void OnEnded(const std::string& watch_id, const std::string& reason) = 0;
};

class WatchHub : public std::enable_shared_from_this<WatchHub> {
 public:
  enum class Mode { kInotify, kPoll };
  // How long an add waits for its inotifywait.
  static constexpr int64_t kAddTimeoutMs = 30000;

  WatchHub(BridgeCore* core, EndpointCache* upstream, ProviderConfig config, std::string sandbox_id, Mode mode);
  ~WatchHub();
  WatchHub(const WatchHub&) = delete;
  WatchHub& operator=(const WatchHub&) = delete;

  const std::string& sandbox_id() const { return sandbox_id_; }
  const char* mode_name() const { return mode_ == Mode::kInotify ? "inotify" : "poll"; }

  // Starts watching `path` (absolute; a directory or a file) and returns once every
  // change after the return will be reported. E8007 (retryable) when the hub is stopping:
  // the caller makes a new one.
  Status Add(const std::string& watch_id, const std::string& path, bool recursive,
             std::shared_ptr<WatchListener> listener, CancelToken* cancel);
  // Stops a watch; false when the hub has no such watch. True in *now_empty when it was
  // the last: the hub is then stopping.
  bool Remove(const std::string& watch_id, bool* now_empty);
  // Ends every watch without telling their listeners, and what runs in the sandbox.
  void Stop();

 private:
  struct Watch {
    std::string path;
    bool recursive = false;
    std::shared_ptr<WatchListener> listener;
    PollSnapshot snapshot;  // poll mode: the last look
  };
  class HostSink;

  // inotify
  Status StartHostLocked(std::unique_lock<std::mutex>& lock, CancelToken* cancel);
  // Deletes an add that failed or was cancelled, and waits until the host says it is gone.
  void EndFailedAdd(const std::string& watch_id);
  void FollowHost();
  void OnHostStarted(const std::string& exec_id);
  void OnHostLines(const std::string& data);
  void OnHostEnded(const std::string& why);
  Status WriteToHost(const std::string& line, CancelToken* cancel);
  void ScheduleLease();
  // poll
  Result<std::map<size_t, PollSnapshot>> Look(const std::vector<PollTarget>& targets, CancelToken* cancel);
  // The next look at `at`: looks start one interval apart (a look that took longer than
  // the interval is followed at once), so a change waits at most one interval plus one
  // look's own time.
  void ScheduleLook(std::chrono::steady_clock::time_point at);
  void LookNow();

  // Tells the listener of every watch (but an add still in flight) that it ended, once.
  void EndAll(const std::string& reason);

  BridgeCore* const core_;
  EndpointCache* const upstream_;
  const ProviderConfig config_;
  const std::string sandbox_id_;
  const Mode mode_;

  std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::string, Watch> watches_;  // by watch id
  bool stopping_ = false;
  bool ended_ = false;

  // inotify: the host and the one add in flight.
  std::mutex add_mu_;  // one add at a time: inotifywait's own lines carry no watch id
  std::mutex join_mu_;  // Stop may come from Remove and from the registry at once
  std::thread host_thread_;
  CancelToken host_cancel_;
  std::string host_exec_id_;     // under mu_; empty until execd named it
  bool host_running_ = false;    // under mu_
  std::string host_end_reason_;  // under mu_
  std::string pending_watch_id_;  // under mu_: the add in flight; empty: none
  std::string pending_path_;      // under mu_
  std::string add_outcome_;      // under mu_: "ready", or what inotifywait said instead
  std::string unwatching_id_;    // under mu_: the failed add whose `del` is awaited; empty: none
  InotifyOutput parser_;         // the host thread's only
  std::string partial_line_;     // the host thread's only: output not ended by a newline yet
};

}  // namespace abx::core
