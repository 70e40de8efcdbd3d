#include "bridge/core/files/watch_hub.h"

#include <algorithm>
#include <chrono>

#include "bridge/base/log.h"
#include "bridge/base/time_util.h"
#include "bridge/core/bridge_core.h"
#include "bridge/core/endpoint_cache.h"
#include "bridge/core/exec/exec.h"
#include "bridge/core/exec/process_stdin.h"
#include "bridge/core/exec/sandbox_script.h"

namespace abx::core {
namespace {

// How long a stopping hub waits for its host to end after closing its stdin, before it
// interrupts it at execd.
constexpr auto kHostEndWait = std::chrono::seconds(5);

// Errors that say the sandbox is gone for good: its watches end. A paused sandbox (E8007)
// is looked at again at the next interval.
bool SandboxGone(const Error& e) { return e.code == ErrorCode::kNotFound; }

// Events per watch, in the order they came, each watch's run of alike events as one.
using Batches = std::vector<std::pair<std::shared_ptr<WatchListener>, std::pair<std::string, std::vector<WatchEvent>>>>;

void Deliver(Batches batches) {
  for (auto& [listener, batch] : batches) {
    CoalesceEvents(&batch.second);
    if (!batch.second.empty()) listener->OnEvents(batch.first, batch.second);
  }
}

}  // namespace

// The watch host's command, as the hub sees it.
class WatchHub::HostSink final : public ExecSink {
 public:
  explicit HostSink(WatchHub* hub) : hub_(hub) {}
  void OnStarted(const std::string& exec_id) override { hub_->OnHostStarted(exec_id); }
  void OnOutput(OutputChunk& chunk) override {
    if (chunk.stream == OutputStream::kStdout) hub_->OnHostLines(chunk.data);
  }
  void OnExit(const ExecExit& exit) override {
    reason_ = exit.error ? exit.error->message
                         : "the sandbox's watch host ended" +
                               (exit.exit_code ? " with exit code " + std::to_string(*exit.exit_code) : std::string());
  }
  const std::string& reason() const { return reason_; }

 private:
  WatchHub* hub_;
  std::string reason_;
};

WatchHub::WatchHub(BridgeCore* core, EndpointCache* upstream, ProviderConfig config, std::string sandbox_id,
                   Mode mode)
    : core_(core), upstream_(upstream), config_(std::move(config)), sandbox_id_(std::move(sandbox_id)), mode_(mode) {}

WatchHub::~WatchHub() { Stop(); }

Status WatchHub::Add(const std::string& watch_id, const std::string& path, bool recursive,
                     std::shared_ptr<WatchListener> listener, CancelToken* cancel) {
  auto stopping = [] {
    Error e = MakeError(ErrorCode::kInvalidState, "the sandbox's watches are being stopped");
    e.retryable = true;
    return e;
  };
  if (mode_ == Mode::kPoll) {
    // The first look is the one later looks are compared with: taken before the answer.
    auto first = Look({PollTarget{path, recursive}}, cancel);
    if (!first.ok()) return first.error();
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || ended_) return stopping();
    const bool was_empty = watches_.empty();
    watches_[watch_id] = Watch{path, recursive, std::move(listener), (*first)[0]};
    if (was_empty) {
      ScheduleLook(std::chrono::steady_clock::now() + std::chrono::milliseconds(config_.watch_interval_ms));
    }
    return OkStatus();
  }

  // Registered before mu_ is taken: on a token already cancelled the hook runs at once,
  // and it takes mu_.
  std::weak_ptr<WatchHub> self = weak_from_this();
  cancel->OnCancel([self] {
    if (auto hub = self.lock()) {
      std::lock_guard<std::mutex> wake(hub->mu_);
      hub->changed_.notify_all();
    }
  });
  std::lock_guard<std::mutex> one_add(add_mu_);
  std::unique_lock<std::mutex> lock(mu_);
  if (stopping_ || ended_) return stopping();
  if (!host_running_) {
    Status started = StartHostLocked(lock, cancel);
    if (!started.ok()) return started;
  }
  watches_[watch_id] = Watch{path, recursive, std::move(listener), {}};
  pending_watch_id_ = watch_id;
  pending_path_ = path;
  add_outcome_.clear();
  lock.unlock();
  Status sent = WriteToHost(InotifyAddLine(watch_id, recursive, path), cancel);
  lock.lock();
  if (sent.ok()) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(kAddTimeoutMs);
    changed_.wait_until(lock, deadline, [&] {
      return !add_outcome_.empty() || !host_running_ || cancel->cancelled();
    });
  }
  pending_watch_id_.clear();
  const std::string outcome = add_outcome_;
  if (sent.ok() && outcome == "ready") return OkStatus();
  watches_.erase(watch_id);
  const bool host_gone = !host_running_;
  lock.unlock();
  if (!sent.ok()) return sent.error().Within("start watching " + path);
  if (!host_gone) EndFailedAdd(watch_id);
  if (cancel->cancelled()) return MakeError(ErrorCode::kCancelled, "files.watch was cancelled");
  if (outcome.empty()) {
    return MakeError(host_gone ? ErrorCode::kUnreachable : ErrorCode::kTimeout,
                     host_gone ? "the sandbox's watch host ended before " + path + " was watched"
                               : "inotifywait did not start watching " + path + " in time");
  }
  return MakeError(ErrorCode::kUpstream, "inotifywait could not watch " + path + ": " + outcome);
}

void WatchHub::EndFailedAdd(const std::string& watch_id) {
  // The next add waits (add_mu_ is held) until this one's inotifywait is gone: a
  // "Watches established." it wrote late would otherwise read as the next add's.
  {
    std::lock_guard<std::mutex> lock(mu_);
    unwatching_id_ = watch_id;
  }
  CancelToken none;
  Status sent = WriteToHost(InotifyDelLine(watch_id), &none);
  std::unique_lock<std::mutex> lock(mu_);
  if (sent.ok()) {
    changed_.wait_for(lock, kHostEndWait, [&] { return unwatching_id_.empty() || !host_running_; });
  }
  unwatching_id_.clear();
}

bool WatchHub::Remove(const std::string& watch_id, bool* now_empty) {
  std::unique_lock<std::mutex> lock(mu_);
  *now_empty = false;
  if (!watches_.erase(watch_id)) return false;
  *now_empty = watches_.empty();
  if (*now_empty) {
    lock.unlock();
    Stop();  // the host (inotify) or the next look (poll) goes with the last watch
    return true;
  }
  const bool host = mode_ == Mode::kInotify && host_running_;
  lock.unlock();
  CancelToken none;
  if (host) WriteToHost(InotifyDelLine(watch_id), &none);
  return true;
}

void WatchHub::Stop() {
  std::unique_lock<std::mutex> lock(mu_);
  stopping_ = true;
  watches_.clear();
  const bool host = host_running_;
  const std::string exec_id = host_exec_id_;
  lock.unlock();
  if (host && !exec_id.empty()) {
    // End of its stdin ends the host and every inotifywait it started.
    CancelToken none;
    StdinWrite eof{sandbox_id_, exec_id, "", true};
    ProcessStdin(upstream_, &config_).Write(eof, nullptr, &none);
    lock.lock();
    if (!changed_.wait_for(lock, kHostEndWait, [&] { return !host_running_; })) host_cancel_.Cancel();
    lock.unlock();
  } else if (host) {
    host_cancel_.Cancel();
  }
  std::lock_guard<std::mutex> join(join_mu_);
  if (host_thread_.joinable() && host_thread_.get_id() != std::this_thread::get_id()) host_thread_.join();
}

Status WatchHub::StartHostLocked(std::unique_lock<std::mutex>& lock, CancelToken* cancel) {
  {
    std::lock_guard<std::mutex> join(join_mu_);
    if (host_thread_.joinable()) {
      lock.unlock();
      host_thread_.join();
      lock.lock();
    }
  }
  host_running_ = true;
  host_exec_id_.clear();
  host_end_reason_.clear();
  host_thread_ = std::thread([this] { FollowHost(); });
  changed_.wait_until(lock, std::chrono::steady_clock::now() + std::chrono::milliseconds(kAddTimeoutMs),
                      [&] { return !host_exec_id_.empty() || !host_running_ || cancel->cancelled(); });
  if (!host_exec_id_.empty() && host_running_) {
    ScheduleLease();
    return OkStatus();
  }
  const std::string why = host_end_reason_.empty() ? "it did not start in time" : host_end_reason_;
  if (host_running_) host_cancel_.Cancel();
  return MakeError(ErrorCode::kUnreachable, "the sandbox's watch host did not start: " + why);
}

void WatchHub::FollowHost() {
  ExecRequest request;
  request.sandbox_id = sandbox_id_;
  request.command = InotifyHostScript(core_->sandbox_lease_seconds());
  request.stdin_stream = true;
  request.env[kWatchHostVariable] = WatchHostMark(core_->owner(), core_->instance());
  Result<ExecSpec> spec = ValidateExec(std::move(request));
  HostSink sink(this);
  std::string why;
  if (spec.ok()) {
    Status st = Exec(core_, upstream_, &config_).Run(*spec, &host_cancel_, &sink);
    why = st.ok() ? sink.reason() : st.error().message;
  } else {
    why = spec.error().message;
  }
  OnHostEnded(why);
}

void WatchHub::OnHostStarted(const std::string& exec_id) {
  std::lock_guard<std::mutex> lock(mu_);
  host_exec_id_ = exec_id;
  changed_.notify_all();
}

void WatchHub::OnHostLines(const std::string& data) {
  Batches batches;
  std::map<std::string, size_t> batch_of;  // watch id → index in batches
  std::unique_lock<std::mutex> lock(mu_);
  size_t at = 0;
  while (at < data.size()) {
    const size_t nl = data.find('\n', at);
    if (nl == std::string::npos) {
      partial_line_ += data.substr(at);
      break;
    }
    std::string line = partial_line_ + data.substr(at, nl - at);
    partial_line_.clear();
    at = nl + 1;
    for (InotifyOutput::Item& item : parser_.Feed(line)) {
      if (item.watch_id.empty()) {
        // inotifywait's own words: they belong to the add in flight (adds go one at a time).
        if (item.text.rfind("Setting up watches", 0) == 0) continue;
        if (item.text.rfind(InotifyDelAnswer(""), 0) == 0) {
          if (!unwatching_id_.empty() && item.text == InotifyDelAnswer(unwatching_id_)) {
            unwatching_id_.clear();
            changed_.notify_all();
          }
          continue;
        }
        // Only a failure that names the path being added is that add's: a recursive watch
        // already running says "Couldn't watch" of a new directory below it too.
        const bool ready = item.text.rfind("Watches established", 0) == 0;
        if (!pending_watch_id_.empty() && add_outcome_.empty() &&
            (ready || item.text.find(pending_path_) != std::string::npos)) {
          add_outcome_ = ready ? "ready" : item.text;
          changed_.notify_all();
        } else {
          log::Info("watch.host_said", {{"sandbox_id", sandbox_id_}, {"line", item.text.substr(0, 200)}});
        }
        continue;
      }
      auto watch = watches_.find(item.watch_id);
      if (watch == watches_.end() || !item.event) continue;
      auto [slot, fresh] = batch_of.emplace(item.watch_id, batches.size());
      if (fresh) batches.push_back({watch->second.listener, {item.watch_id, {}}});
      batches[slot->second].second.second.push_back(*item.event);
    }
  }
  lock.unlock();
  // Outside the lock: a listener that blocks holds up only this stream. This thread is
  // the stream's only reader, so batches keep their order.
  Deliver(std::move(batches));
}

void WatchHub::OnHostEnded(const std::string& why) {
  bool end_watches = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    host_running_ = false;
    host_end_reason_ = why;
    end_watches = !stopping_;
    changed_.notify_all();
  }
  if (end_watches) EndAll(why);
}

Status WatchHub::WriteToHost(const std::string& line, CancelToken* cancel) {
  std::string exec_id;
  {
    std::lock_guard<std::mutex> lock(mu_);
    exec_id = host_exec_id_;
  }
  StdinWrite write{sandbox_id_, exec_id, line, false};
  auto written = ProcessStdin(upstream_, &config_).Write(write, nullptr, cancel);
  if (!written.ok()) return written.error();
  return OkStatus();
}

void WatchHub::ScheduleLease() {
  std::weak_ptr<WatchHub> self = weak_from_this();
  core_->RunInBackgroundAt(std::chrono::steady_clock::now() + std::chrono::seconds(core_->sandbox_lease_seconds()) / 3, [self] {
    auto hub = self.lock();
    if (!hub || hub->core_->Runner().stopping()) return;
    {
      std::lock_guard<std::mutex> lock(hub->mu_);
      if (hub->stopping_ || !hub->host_running_) return;
    }
    CancelToken none;
    hub->WriteToHost(kInotifyPingLine, &none);
    hub->ScheduleLease();
  });
}

Result<std::map<size_t, PollSnapshot>> WatchHub::Look(const std::vector<PollTarget>& targets, CancelToken* cancel) {
  ABX_ASSIGN_OR_RETURN(opensandbox::ExecdClient execd, upstream_->Execd(sandbox_id_, config_, cancel));
  int code = 0;
  ABX_ASSIGN_OR_RETURN(std::string out, RunSandboxScript(execd, PollListingScript(targets), &code, cancel));
  // The script ends with `true`: any other code means it was cut short (execd's timeout,
  // a kill), and a listing cut short would read as paths removed.
  if (code != 0) {
    return MakeError(ErrorCode::kUpstream, "the listing of watched paths ended with code " + std::to_string(code));
  }
  return ParsePollListing(out);
}

void WatchHub::ScheduleLook(std::chrono::steady_clock::time_point at) {
  std::weak_ptr<WatchHub> self = weak_from_this();
  core_->RunInBackgroundAt(at, [self] {
    auto hub = self.lock();
    if (hub && !hub->core_->Runner().stopping()) hub->LookNow();
  });
}

void WatchHub::LookNow() {
  const auto started = std::chrono::steady_clock::now();
  std::vector<std::string> ids;
  std::vector<PollTarget> targets;
  std::map<std::pair<std::string, bool>, size_t> target_of;  // one look per path and depth
  std::vector<size_t> target_index;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (stopping_ || ended_ || watches_.empty()) return;
    for (const auto& [id, watch] : watches_) {
      auto [slot, fresh] = target_of.emplace(std::make_pair(watch.path, watch.recursive), targets.size());
      if (fresh) targets.push_back({watch.path, watch.recursive});
      ids.push_back(id);
      target_index.push_back(slot->second);
    }
  }
  CancelToken none;
  auto looked = Look(targets, &none);
  if (!looked.ok()) {
    if (SandboxGone(looked.error())) return EndAll(looked.error().message);
    log::Info("watch.look_failed", {{"sandbox_id", sandbox_id_}, {"error", looked.error().message}});
  } else {
    Batches batches;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (size_t i = 0; i < ids.size(); ++i) {
        auto watch = watches_.find(ids[i]);
        if (watch == watches_.end()) continue;
        PollSnapshot& now = (*looked)[target_index[i]];
        std::vector<WatchEvent> events = DiffSnapshots(watch->second.snapshot, now);
        watch->second.snapshot = now;
        if (!events.empty()) batches.push_back({watch->second.listener, {ids[i], std::move(events)}});
      }
    }
    Deliver(std::move(batches));
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!stopping_ && !ended_ && !watches_.empty()) {
    ScheduleLook(std::max(started + std::chrono::milliseconds(config_.watch_interval_ms), std::chrono::steady_clock::now()));
  }
}

void WatchHub::EndAll(const std::string& reason) {
  std::map<std::string, Watch> ended;
  {
    std::lock_guard<std::mutex> lock(mu_);
    if (ended_) return;
    ended_ = true;
    ended.swap(watches_);
    // An add still in flight fails by itself: its watch id was never given out.
    if (!pending_watch_id_.empty()) ended.erase(pending_watch_id_);
  }
  for (auto& [id, watch] : ended) watch.listener->OnEnded(id, reason);
}

}  // namespace abx::core
