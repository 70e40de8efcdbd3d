#include "bridge/core/terminals/terminals.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <deque>
#include <functional>
#include <thread>

#include "bridge/base/log.h"
#include "bridge/core/endpoint_cache.h"
#include "bridge/core/execd_release.h"
#include "bridge/core/shell_quote.h"
#include "bridge/opensandbox/pty_frames.h"
#include "common/limits.h"

namespace abx::core {
namespace {

using opensandbox::PtyFrame;

// Output held for a holder that does not take it: at this much the bridge drops its
// connection to execd, so the shell runs on (execd keeps its last 1 MiB; a client that
// stalled execd's writes for 10 s would end execd's output pump instead), and connects
// again from the next byte owed once the holder has taken everything held.
constexpr uint64_t kHeldBytes = kPtyBufferBytes;
// One pty.output carries at most this much.
constexpr size_t kChunkBytes = 64 << 10;
// execd's close code for a client another one took over from.
constexpr int kTakenOverCode = 4001;
// The server proxy accepts every upgrade and then closes with these when execd refused
// the handshake (1008: its 401, 404 or 409) or could not be reached (1011).
constexpr int kProxyRefusedCode = 1008;
constexpr int kProxyUnreachableCode = 1011;
// Two drops within this long: the connection is given up as lost.
constexpr auto kDropWindow = std::chrono::seconds(10);
constexpr int64_t kRestoreTimeoutMs = 15000;
// Input (and resizes, signals) held while a connection is restored.
constexpr size_t kPendingInputBytes = 1 << 20;
// How long a new holder's attach waits for the earlier holder to be told.
constexpr auto kDetachNoticeWait = std::chrono::seconds(5);
// How long pty.open waits for a terminal opened at another size to settle (Resize).
constexpr int64_t kSizeSettleMs = 1000;
// A restore that fails is tried again after these pauses before the terminal counts as lost.
constexpr int kRestoreRetryMs[] = {500, 1500};
// execd drops a connection silent for 60 s; before that, one without takeover answers
// a new connection to the terminal with 409. A restore that meets it tries this long,
// every kHeldRetryMs.
constexpr int64_t kHeldByOldExecdMs = 65000;
constexpr int64_t kHeldRetryMs = 1000;

}  // namespace

class Terminal;

namespace {

// A handler on the WebSocket's thread may hold a terminal's last reference (the
// registry let go meanwhile): ~Terminal joins the delivery thread, which may be in a
// slow call to its holder, and would stall every WebSocket. It goes on a thread of its
// own instead.
void LetGoOffThisThread(std::shared_ptr<Terminal> terminal) {
  if (terminal.use_count() == 1) std::thread([last = std::move(terminal)] {}).detach();
}

}  // namespace

// One terminal: its WebSocket, the output it kept, its holder and the delivery thread.
class Terminal : public std::enable_shared_from_this<Terminal> {
 public:
  // `sandbox_gone` asks the server whether the sandbox has ended (bounded by a request).
  Terminal(std::string sandbox_id, std::string pty_id, bool keep, opensandbox::ExecdClient execd,
           std::function<bool()> sandbox_gone)
      : sandbox_id_(std::move(sandbox_id)),
        pty_id_(std::move(pty_id)),
        keep_(keep),
        execd_(std::move(execd)),
        sandbox_gone_(std::move(sandbox_gone)) {}

  ~Terminal() {
    {
      std::lock_guard<std::mutex> lock(mu_);
      stopping_ = true;
    }
    cv_.notify_all();
    if (deliverer_.joinable()) deliverer_.join();
    if (restorer_.joinable()) {
      // The restorer holds the terminal while it works: the last reference may be its own.
      if (restorer_.get_id() == std::this_thread::get_id()) {
        restorer_.detach();
      } else {
        restorer_.join();
      }
    }
    if (socket_) socket_->Abort();
  }

  const std::string& sandbox_id() const { return sandbox_id_; }
  const std::string& pty_id() const { return pty_id_; }
  bool keep() const { return keep_; }

  // Output is counted from `offset` on (a terminal this bridge did not open).
  void StartAt(uint64_t offset) {
    std::lock_guard<std::mutex> lock(mu_);
    kept_from_ = end_ = offset;
  }

  // Connects from the current end and waits for execd's `connected`.
  Status Connect(bool takeover, CancelToken* cancel, int64_t timeout_ms) {
    std::weak_ptr<Terminal> weak = weak_from_this();
    uint64_t since, generation;
    {
      std::lock_guard<std::mutex> lock(mu_);
      since = end_;
      generation = ++generation_;  // what an earlier connection still says is stale
      connected_ = false;
      connect_failed_ = false;
      proxy_refusal_ = 0;
      start_error_.reset();
      if (!deliverer_.joinable()) deliverer_ = std::thread([this] { Deliver(); });
    }
    http::WebSocket::Handlers handlers;
    handlers.on_message = [weak, generation](bool text, std::string payload) {
      if (auto self = weak.lock()) {
        self->OnMessage(generation, text, std::move(payload));
        LetGoOffThisThread(std::move(self));
      }
    };
    handlers.on_end = [weak, generation](const http::WebSocketEnd& end) {
      if (auto self = weak.lock()) {
        self->OnEnd(generation, end);
        LetGoOffThisThread(std::move(self));
      }
    };
    handlers.on_sent = [weak, generation] {
      if (auto self = weak.lock()) {
        self->OnSent(generation);
        LetGoOffThisThread(std::move(self));
      }
    };
    ABX_ASSIGN_OR_RETURN(std::shared_ptr<http::WebSocket> socket,
                         execd_.OpenPty(pty_id_, since, takeover, std::move(handlers), cancel));
    std::unique_lock<std::mutex> lock(mu_);
    // In slices: a cancel does not notify cv_.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    bool got = false;
    while (!got && !cancel->cancelled() && std::chrono::steady_clock::now() < deadline) {
      got = cv_.wait_for(lock, std::chrono::milliseconds(50),
                         [&] { return connected_ || ended_ || dropped_ || connect_failed_; });
    }
    if (connected_ && !dropped_ && !connect_failed_ && generation == generation_) {
      ever_connected_ = true;
      parked_ = false;
      if (ended_) {  // it ended at once (exit frame and close already came): nothing to use
        lock.unlock();
        socket->Abort();
        return OkStatus();
      }
      // In use from now on, what waited while the connection was being restored first
      // (in order: Send queues behind it until socket_ is set, under the same lock).
      socket_ = socket;
      frames_queued_ = frames_written_ = 0;
      for (auto& [text, frame] : pending_) {
        socket->Send(text, std::move(frame));
        ++frames_queued_;
      }
      pending_.clear();
      pending_bytes_ = 0;
      Flow();
      return OkStatus();
    }
    if (proxy_refusal_ != 0 && !connected_) {
      const int code = proxy_refusal_;
      lock.unlock();
      socket->Abort();
      return RefusedThroughProxy(code, cancel);
    }
    if (start_error_) return *start_error_;
    if (ended_ && end_error_) return *end_error_;
    lock.unlock();
    socket->Abort();
    if (cancel->cancelled()) return MakeError(ErrorCode::kCancelled, "connecting to terminal " + pty_id_ + " was cancelled");
    return MakeError(got ? ErrorCode::kUnreachable : ErrorCode::kTimeout,
                     "terminal " + pty_id_ + ": execd did not confirm the connection");
  }

  // Sends a frame to execd. Input is answered once written to the connection (at most
  // `wait_ms`, then E8006: execd does not read, as when the program in the terminal
  // does not); a resize or signal once queued. While the connection is being restored,
  // frames wait in order (at most 1 MiB, then E8008) and go first once it is back;
  // frames a dropped connection did not write wait the same way.
  Status Send(bool text, std::string payload, int64_t wait_ms) {
    std::unique_lock<std::mutex> lock(mu_);
    if (!socket_) {
      if (ended_) return MakeError(ErrorCode::kInvalidState, "terminal " + pty_id_ + " has ended");
      if (pending_bytes_ + payload.size() > kPendingInputBytes) {
        return MakeError(ErrorCode::kTooLarge,
                         "terminal " + pty_id_ + " is reconnecting and already has 1 MiB of input waiting");
      }
      pending_bytes_ += payload.size();
      pending_.emplace_back(text, std::move(payload));
      return OkStatus();
    }
    const std::shared_ptr<http::WebSocket> socket = socket_;
    socket->Send(text, std::move(payload));
    const uint64_t mine = ++frames_queued_;
    if (text) return OkStatus();
    const bool written = cv_.wait_for(lock, std::chrono::milliseconds(wait_ms), [&] {
      return socket_ != socket || frames_written_ >= mine || ended_ || stopping_;
    });
    if (!written) {
      return MakeError(ErrorCode::kTimeout, "terminal " + pty_id_ + ": execd has not read its input for " +
                                                std::to_string(wait_ms / 1000) +
                                                " s (the program in it does not read); it stays queued");
    }
    return OkStatus();
  }

  // Sets the window size. bash's readline reads the size and writes it back each time it
  // shows a prompt (TIOCGWINSZ, then TIOCSWINSZ): a resize that lands in between is
  // undone. The prompt is printed after that write, so the size is sent once more with
  // the next output, which changes nothing unless it had been undone (the kernel signals
  // SIGWINCH only for a new size).
  Status Resize(int cols, int rows) {
    const std::string frame = opensandbox::PtyResizeFrame(cols, rows);
    {
      // Before the frame goes: output that follows it must find this set.
      std::lock_guard<std::mutex> lock(mu_);
      resize_to_repeat_ = frame;
      output_at_resize_ = end_;
    }
    Status sent = Send(true, frame, 0);
    if (!sent.ok()) {  // refused (ended, or too much waiting): not repeated either
      std::lock_guard<std::mutex> lock(mu_);
      if (resize_to_repeat_ == frame) resize_to_repeat_.clear();
    }
    return sent;
  }

  // After a resize, waits (at most `timeout_ms`) until the size holds: output followed
  // it, so its repetition is queued ahead of anything sent after this returns. Output
  // already shown before it means the program had set up its terminal: no wait.
  void WaitSizeSettled(int64_t timeout_ms, CancelToken* cancel) {
    std::unique_lock<std::mutex> lock(mu_);
    if (output_at_resize_ > 0) return;
    // In slices: a cancel does not notify cv_.
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
    while (!cancel->cancelled() && std::chrono::steady_clock::now() < deadline) {
      if (cv_.wait_for(lock, std::chrono::milliseconds(50),
                       [&] { return resize_to_repeat_.empty() || ended_ || stopping_; })) {
        return;
      }
    }
  }

  // A terminal whose connection was given up (taken over elsewhere, or lost): connect
  // again, taking it over, as an attach does. Fine when it is connected or ended.
  Status Restore(CancelToken* cancel, int64_t timeout_ms) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (socket_ || ended_ || restoring_) return OkStatus();
      restoring_ = true;
      dropped_ = false;
    }
    Status st = RestoreFromExecd(cancel, timeout_ms);
    std::lock_guard<std::mutex> lock(mu_);
    restoring_ = false;
    cv_.notify_all();
    return st;
  }

  bool Holds(const TerminalHolder* holder) {
    std::lock_guard<std::mutex> lock(mu_);
    return holder_ && holder_.get() == holder;
  }

  bool ended() {
    std::lock_guard<std::mutex> lock(mu_);
    return ended_;
  }

  // `holder` holds the terminal from now on, output replayed from `since`; the earlier
  // holder is told where it stopped. `answer` runs before any replayed byte goes out.
  Status SetHolder(std::shared_ptr<TerminalHolder> holder, std::optional<uint64_t> since,
                   const std::function<void(uint64_t, uint64_t)>& answer) {
    uint64_t offset, lost;
    {
      std::unique_lock<std::mutex> lock(mu_);
      const uint64_t from = since.value_or(end_);
      if (from > end_) {
        return InvalidParams("since", "since is beyond the end of the terminal's output (" + std::to_string(end_) + ")");
      }
      offset = std::max(from, kept_from_);
      lost = offset - from;
      std::shared_ptr<TerminalHolder> earlier;
      if (holder_ && holder_ != holder) {
        earlier = holder_;
        detached_.push_back({holder_, holder_next_, "taken_over"});
      }
      // From now on nothing new goes to the earlier holder: only a call already under
      // way, then its notice.
      holder_ = std::move(holder);
      holder_next_ = offset;
      exit_delivered_ = false;
      hold_delivery_ = true;
      Flow();  // a connection dropped for an earlier holder's lag comes back
      cv_.notify_all();
      if (earlier) {
        // Answered once the earlier holder was told (bounded: it may not be reading).
        cv_.wait_for(lock, kDetachNoticeWait, [&] { return !NoticeWaitingFor(earlier.get()) || stopping_; });
      }
    }
    answer(offset, lost);
    {
      std::lock_guard<std::mutex> lock(mu_);
      hold_delivery_ = false;
    }
    cv_.notify_all();
    return OkStatus();
  }

  // The holder's session ends: nothing reaches it after this returns (a call to it in
  // progress is waited for, a notice still queued for it is dropped).
  void Detach(const TerminalHolder* holder) {
    std::unique_lock<std::mutex> lock(mu_);
    for (auto it = detached_.begin(); it != detached_.end();) {
      it = it->holder.get() == holder ? detached_.erase(it) : std::next(it);
    }
    WaitNotCalling(lock, holder);
    if (holder_ && holder_.get() == holder) holder_.reset();
    Flow();
  }

  // Nobody holds the terminal any more (it was closed): no call reaches a holder after
  // this returns.
  void DetachAll() {
    std::unique_lock<std::mutex> lock(mu_);
    detached_.clear();
    holder_.reset();
    cv_.wait(lock, [&] { return calling_ == nullptr; });
  }

  // Waits until the holder got the exit (or there is none), at most `timeout_ms`.
  void WaitExitDelivered(int64_t timeout_ms) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
                 [&] { return ended_ && (!holder_ || exit_delivered_); });
  }

  // execd deleted the terminal: one with no connection gets no exit frame, so it ends
  // here (exit code unknown).
  void EndIfDisconnected() {
    std::lock_guard<std::mutex> lock(mu_);
    if (socket_ || ended_) return;
    ended_ = true;
    cv_.notify_all();
  }

  void Abort() {
    std::shared_ptr<http::WebSocket> socket;
    {
      std::lock_guard<std::mutex> lock(mu_);
      closing_ = true;
      socket = socket_;
    }
    if (socket) socket->Abort();
  }

  TerminalInfo Info() {
    std::lock_guard<std::mutex> lock(mu_);
    return TerminalInfo{pty_id_, !ended_, end_, holder_ != nullptr, keep_};
  }

 private:
  struct DetachNotice {
    std::shared_ptr<TerminalHolder> holder;
    uint64_t offset;
    std::string reason;
  };

  void WaitNotCalling(std::unique_lock<std::mutex>& lock, const TerminalHolder* holder) {
    cv_.wait(lock, [&] { return calling_ == nullptr || calling_ != holder; });
  }

  // A detach notice for `holder` still queued, or being delivered.
  bool NoticeWaitingFor(const TerminalHolder* holder) const {
    if (calling_ == holder) return true;
    for (const DetachNotice& notice : detached_) {
      if (notice.holder.get() == holder) return true;
    }
    return false;
  }

  // On the WebSocket's thread.
  void OnMessage(uint64_t generation, bool text, std::string payload) {
    auto frame = opensandbox::DecodePtyFrame(text, std::move(payload));
    std::lock_guard<std::mutex> lock(mu_);
    if (generation != generation_) return;
    if (!frame.ok()) {
      log::Warn("pty.bad_frame", {{"pty_id", pty_id_}, {"error", frame.error().message}});
      return;
    }
    switch (frame->kind) {
      case PtyFrame::Kind::kReplay:
        if (frame->replay_offset > end_) {  // execd's window began past what we have
          kept_.clear();
          kept_from_ = end_ = frame->replay_offset;
        }
        if (frame->replay_offset + frame->data.size() > end_) {
          AppendLocked(frame->data.substr(static_cast<size_t>(end_ - frame->replay_offset)));
        }
        break;
      case PtyFrame::Kind::kOutput:
      case PtyFrame::Kind::kStderr:
        AppendLocked(frame->data);
        if (!resize_to_repeat_.empty() && socket_) {
          socket_->Send(true, std::move(resize_to_repeat_));
          ++frames_queued_;
          resize_to_repeat_.clear();
        }
        break;
      case PtyFrame::Kind::kConnected:
        connected_ = true;
        break;
      case PtyFrame::Kind::kExit:
        ended_ = true;
        if (frame->exit_code >= 0) exit_code_ = frame->exit_code;
        break;
      case PtyFrame::Kind::kError:
        if (frame->code == "START_FAILED" || frame->code == "ALREADY_CONNECTED") {
          start_error_ = MakeError(frame->code == "START_FAILED" ? ErrorCode::kUpstream : ErrorCode::kInvalidState,
                                   "terminal " + pty_id_ + ": " + frame->error);
        }
        break;
      default:
        break;
    }
    cv_.notify_all();
  }

  // On the WebSocket's thread: a frame was written.
  void OnSent(uint64_t generation) {
    std::lock_guard<std::mutex> lock(mu_);
    if (generation != generation_) return;
    ++frames_written_;
    cv_.notify_all();
  }

  void OnEnd(uint64_t generation, const http::WebSocketEnd& end) {
    std::lock_guard<std::mutex> lock(mu_);
    if (generation != generation_) return;
    const bool was_in_use = socket_ != nullptr || parked_;
    socket_.reset();
    // Frames it never began to write wait for the next connection, first.
    for (auto it = end.unsent.rbegin(); it != end.unsent.rend(); ++it) {
      pending_bytes_ += it->second.size();
      pending_.push_front(*it);
    }
    if (parked_ && !ended_ && !closing_) {  // dropped on purpose (kHeldBytes)
      parked_socket_open_ = false;
      Flow();  // the holder may have caught up already
      cv_.notify_all();
      return;
    }
    if (ended_ || closing_) {
      ended_ = true;
    } else if (!connected_ || !was_in_use) {
      if (!connected_ && (end.close_code == kProxyRefusedCode || end.close_code == kProxyUnreachableCode)) {
        proxy_refusal_ = end.close_code;
      }
      // While connecting: Connect reports it. A terminal that ran before is not ended by
      // a connection that failed to come up; a first one that fails ends it.
      connect_failed_ = true;
      if (!ever_connected_) {
        ended_ = true;
        end_error_ = MakeError(ErrorCode::kUnreachable, "the connection to terminal " + pty_id_ + " ended at once" +
                                                            (end.error.empty() ? "" : " (" + end.error + ")"));
      }
    } else if (end.close_code == kTakenOverCode) {
      // Another client has it now: the holder is told; an attach takes it back.
      GiveUpLocked("taken_over");
    } else {
      // Dropped while the shell lives: restored from the next byte owed, unless that
      // keeps happening (execd's takeover code can be missed).
      const auto now = std::chrono::steady_clock::now();
      while (!drops_.empty() && now - drops_.front() > kDropWindow) drops_.pop_front();
      drops_.push_back(now);
      if (drops_.size() >= 2) {
        GiveUpLocked("lost");
      } else if (!restoring_) {
        restoring_ = true;
        if (restorer_.joinable()) restorer_.detach();  // finished: it cleared restoring_
        restorer_ = std::thread([self = shared_from_this()] { self->RestoreInBackground(); });
      }
    }
    cv_.notify_all();
  }

  void GiveUpLocked(const std::string& reason) {
    dropped_ = true;
    parked_ = false;
    pending_.clear();  // the holder's keystrokes go with it
    pending_bytes_ = 0;
    if (holder_) {
      detached_.push_back({holder_, holder_next_, reason});
      holder_.reset();
    }
  }

  void RestoreInBackground() {
    CancelToken never;
    const auto started = std::chrono::steady_clock::now();
    Status st = RestoreFromExecd(&never, kRestoreTimeoutMs);
    auto stop_trying = [&] {
      std::lock_guard<std::mutex> lock(mu_);
      return ended_ || closing_ || stopping_;
    };
    for (int pause_ms : kRestoreRetryMs) {
      if (st.ok() || st.error().code == ErrorCode::kNotFound || stop_trying()) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
      st = RestoreFromExecd(&never, kRestoreTimeoutMs);
    }
    // An execd without takeover (before 1.0.19) answers 409 while it still holds the
    // dropped connection, until its read deadline lets it go.
    while (!st.ok() && st.error().http_status == 409 && !stop_trying() &&
           std::chrono::steady_clock::now() - started < std::chrono::milliseconds(kHeldByOldExecdMs)) {
      std::this_thread::sleep_for(std::chrono::milliseconds(kHeldRetryMs));
      st = RestoreFromExecd(&never, kRestoreTimeoutMs);
    }
    if (!st.ok() && st.error().code != ErrorCode::kNotFound && sandbox_gone_ && sandbox_gone_()) {
      std::lock_guard<std::mutex> lock(mu_);
      ended_ = true;
      end_error_ = MakeError(ErrorCode::kNotFound, "terminal " + pty_id_ + " ended with its sandbox " + sandbox_id_);
      restoring_ = false;
      cv_.notify_all();
      return;
    }
    std::lock_guard<std::mutex> lock(mu_);
    restoring_ = false;
    if (!st.ok() && !ended_) {
      log::Warn("pty.restore_failed", {{"pty_id", pty_id_}, {"error", st.error().message}});
      GiveUpLocked("lost");
    }
  }

  // Through the server proxy a refused handshake arrives as an accepted upgrade closed
  // before execd's `connected` (docs/opensandbox.md §1.10): the terminal's state, asked
  // of execd through the same proxy, tells what execd refused.
  Error RefusedThroughProxy(int close_code, CancelToken* cancel) {
    const std::string what = "terminal " + pty_id_ + ": the server proxy closed the connection (" +
                             std::to_string(close_code) + ")";
    auto status = execd_.GetPty(pty_id_, cancel);
    if (!status.ok()) {
      Error e = status.error();  // gone (E8005), a refused token (E8003), unreachable (E8002)
      return e.Within(what);
    }
    if (close_code == kProxyUnreachableCode) {
      return MakeError(ErrorCode::kUnreachable, what + ": it could not reach the sandbox's execd");
    }
    if (!status->running) return MakeError(ErrorCode::kNotFound, what + ": the terminal has ended");
    Error held = MakeError(ErrorCode::kInvalidState, "terminal " + pty_id_ + " is held by another client");
    held.http_status = 409;  // as execd's own answer: a restore waits it out (RestoreInBackground)
    return held;
  }

  // A terminal whose shell died of a signal or whose execd stopped answering: when its
  // sandbox has ended, that is why (pty.exit says so). Off the WebSocket's thread.
  void NoteSandboxEnd() {
    if (!sandbox_gone_ || !sandbox_gone_()) return;
    std::lock_guard<std::mutex> lock(mu_);
    if (!end_error_) end_error_ = MakeError(ErrorCode::kNotFound, "terminal " + pty_id_ + " ended with its sandbox " + sandbox_id_);
    cv_.notify_all();
  }

  // execd is asked whether the shell still runs before anything connects: a new
  // connection to an ended terminal would start a new shell under its id.
  Status RestoreFromExecd(CancelToken* cancel, int64_t timeout_ms) {
    auto status = execd_.GetPty(pty_id_, cancel);
    if (!status.ok()) {
      if (status.error().code != ErrorCode::kNotFound) return status.error();
      std::lock_guard<std::mutex> lock(mu_);
      ended_ = true;
      end_error_ = MakeError(ErrorCode::kNotFound, "terminal " + pty_id_ + " is gone from its sandbox");
      cv_.notify_all();
      return OkStatus();
    }
    if (!status->running) {
      std::lock_guard<std::mutex> lock(mu_);
      ended_ = true;  // its exit code went with the connection
      exit_offset_ = std::max(end_, status->output_offset);
      cv_.notify_all();
      return OkStatus();
    }
    return Connect(/*takeover=*/true, cancel, timeout_ms);
  }

  // Kept: the last 1 MiB, and all the holder is still owed (at most kHeldBytes and
  // one frame: past that the connection is paused, then dropped).
  void AppendLocked(const std::string& data) {
    kept_ += data;
    end_ += data.size();
    const uint64_t window_from = end_ > Terminals::kKeptBytes ? end_ - Terminals::kKeptBytes : 0;
    const uint64_t owed_from = holder_ ? std::min(holder_next_, end_) : end_;
    const uint64_t keep_from = std::max(kept_from_, std::min(window_from, owed_from));
    if (keep_from - kept_from_ > (Terminals::kKeptBytes >> 2)) {  // erased in batches
      kept_.erase(0, static_cast<size_t>(keep_from - kept_from_));
      kept_from_ = keep_from;
    }
    Flow();
  }

  // A holder kHeldBytes behind has stopped reading: the connection goes, so execd lets
  // the shell run on; once the holder has taken everything held, it comes back.
  void Flow() {
    const uint64_t lag = holder_ ? end_ - std::min(end_, holder_next_) : 0;
    if (socket_ && lag >= kHeldBytes) {
      parked_ = true;
      parked_socket_open_ = true;
      log::Info("pty.parked", {{"pty_id", pty_id_}, {"held_bytes", std::to_string(lag)}});
      socket_->Abort();  // its on_end keeps what it did not write
      socket_.reset();
    } else if (parked_ && !parked_socket_open_ && lag == 0 && !restoring_ && !ended_ && !closing_) {
      restoring_ = true;
      if (restorer_.joinable()) restorer_.detach();  // finished: it cleared restoring_
      restorer_ = std::thread([self = shared_from_this()] { self->RestoreInBackground(); });
    }
  }

  // The delivery thread.
  void Deliver() {
    std::unique_lock<std::mutex> lock(mu_);
    for (;;) {
      cv_.wait(lock, [&] {
        if (stopping_) return true;
        if (!detached_.empty()) return true;
        if (hold_delivery_ || !holder_) return false;
        return holder_next_ < end_ || (ended_ && !exit_delivered_ && !exit_calling_);
      });
      if (stopping_) return;
      if (!detached_.empty()) {
        DetachNotice notice = std::move(detached_.front());
        detached_.pop_front();
        Call(lock, notice.holder, [&](TerminalHolder* h) { h->OnDetached(pty_id_, notice.offset, notice.reason); });
        continue;
      }
      std::shared_ptr<TerminalHolder> holder = holder_;
      if (holder_next_ < end_) {
        holder_next_ = std::max(holder_next_, kept_from_);  // a gap shows in the offsets
        const uint64_t offset = holder_next_;
        const size_t size = static_cast<size_t>(std::min<uint64_t>(kChunkBytes, end_ - offset));
        std::string chunk = kept_.substr(static_cast<size_t>(offset - kept_from_), size);
        holder_next_ += size;
        Flow();
        Call(lock, holder, [&](TerminalHolder* h) { h->OnOutput(pty_id_, offset, chunk); });
        continue;
      }
      if (!exit_code_ && !end_error_ && !sandbox_checked_) {
        // A signal ended it: was it its sandbox's end? (Asked once, off the lock.)
        sandbox_checked_ = true;
        lock.unlock();
        NoteSandboxEnd();
        lock.lock();
        continue;
      }
      if (!end_error_ && !exit_offset_checked_) {
        // execd's exit frame can overtake the last output: its count of the output
        // shows what was lost, as an exit offset past the last byte. (Asked once.)
        exit_offset_checked_ = true;
        lock.unlock();
        CancelToken uncancellable;  // bounded by request_timeout
        auto status = execd_.GetPty(pty_id_, &uncancellable);
        lock.lock();
        if (status.ok()) exit_offset_ = std::max(exit_offset_, status->output_offset);
        continue;
      }
      const std::optional<int> code = exit_code_;
      const std::optional<Error> error = end_error_;
      // Output lost with a dropped connection shows as an end beyond the last byte.
      const uint64_t offset = std::max(end_, exit_offset_);
      exit_calling_ = true;  // not again while the call is under way
      Call(lock, holder, [&](TerminalHolder* h) { h->OnExit(pty_id_, code, offset, error); });
      exit_calling_ = false;
      if (holder_ == holder) exit_delivered_ = true;  // a new holder gets its own
      cv_.notify_all();
    }
  }

  template <typename F>
  void Call(std::unique_lock<std::mutex>& lock, const std::shared_ptr<TerminalHolder>& holder, F&& call) {
    calling_ = holder.get();
    lock.unlock();
    call(holder.get());
    lock.lock();
    calling_ = nullptr;
    cv_.notify_all();
  }

  const std::string sandbox_id_;
  const std::string pty_id_;
  const bool keep_;
  opensandbox::ExecdClient execd_;
  const std::function<bool()> sandbox_gone_;

  std::mutex mu_;
  std::condition_variable cv_;
  std::string kept_;         // output [kept_from_, end_)
  uint64_t kept_from_ = 0;
  uint64_t end_ = 0;
  bool connected_ = false;
  bool ended_ = false;       // the shell exited, or the connection ended for good
  bool closing_ = false;     // the bridge itself ends the connection
  std::optional<int> exit_code_;
  std::optional<Error> start_error_;
  std::optional<Error> end_error_;
  std::shared_ptr<http::WebSocket> socket_;
  uint64_t generation_ = 0;  // of the connection in use; older ones are ignored
  bool ever_connected_ = false;
  bool connect_failed_ = false;  // the connection being made ended before it was in use
  int proxy_refusal_ = 0;        // its close code, when the server proxy refused it
  bool dropped_ = false;     // given up: taken over elsewhere, or lost; an attach restores it
  bool restoring_ = false;
  std::deque<std::chrono::steady_clock::time_point> drops_;  // within kDropWindow
  std::deque<std::pair<bool, std::string>> pending_;  // frames (text?, payload) waiting for a connection
  size_t pending_bytes_ = 0;
  uint64_t frames_queued_ = 0;   // to the connection in use
  uint64_t frames_written_ = 0;  // of those, written
  std::string resize_to_repeat_;  // the last resize, until output followed it (Resize)
  uint64_t output_at_resize_ = 0;
  bool exit_calling_ = false;
  uint64_t exit_offset_ = 0;
  bool sandbox_checked_ = false;
  bool exit_offset_checked_ = false;
  std::thread restorer_;
  bool parked_ = false;       // connection dropped until the holder has caught up
  bool parked_socket_open_ = false;  // until its on_end has given back what it did not write
  std::shared_ptr<TerminalHolder> holder_;
  uint64_t holder_next_ = 0;
  bool exit_delivered_ = false;
  bool hold_delivery_ = false;
  std::deque<DetachNotice> detached_;
  const TerminalHolder* calling_ = nullptr;
  bool stopping_ = false;
  std::thread deliverer_;
};

TerminalRegistry::~TerminalRegistry() = default;

TerminalRegistry& TerminalsOf(EndpointCache& cache) {
  return cache.parts().Get<TerminalRegistry>([] { return std::make_unique<TerminalRegistry>(); });
}

namespace {
std::string Key(const std::string& sandbox_id, const std::string& pty_id) { return sandbox_id + "\n" + pty_id; }
}  // namespace

std::shared_ptr<Terminal> TerminalRegistry::Find(const std::string& sandbox_id, const std::string& pty_id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = terminals_.find(Key(sandbox_id, pty_id));
  return it == terminals_.end() ? nullptr : it->second;
}

void TerminalRegistry::Add(std::shared_ptr<Terminal> terminal) {
  std::lock_guard<std::mutex> lock(mu_);
  terminals_[Key(terminal->sandbox_id(), terminal->pty_id())] = std::move(terminal);
}

void TerminalRegistry::Remove(const Terminal* terminal) {
  std::shared_ptr<Terminal> removed;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = terminals_.find(Key(terminal->sandbox_id(), terminal->pty_id()));
    if (it == terminals_.end() || it->second.get() != terminal) return;
    removed = std::move(it->second);
    terminals_.erase(it);
  }
}

std::vector<std::shared_ptr<Terminal>> TerminalRegistry::Of(const std::string& sandbox_id) {
  std::vector<std::shared_ptr<Terminal>> out;
  std::lock_guard<std::mutex> lock(mu_);
  const std::string prefix = sandbox_id + "\n";
  for (auto& [key, terminal] : terminals_) {
    if (sandbox_id.empty() || key.compare(0, prefix.size(), prefix) == 0) out.push_back(terminal);
  }
  return out;
}

std::optional<TerminalSignal> TerminalSignalFor(const std::string& signal) {
  std::string name;
  for (char c : signal) name += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (name.rfind("SIG", 0) == 0) name = name.substr(3);
  static const std::map<std::string, std::string> kNumbers = {{"1", "HUP"},  {"2", "INT"},  {"3", "QUIT"},
                                                             {"9", "KILL"}, {"15", "TERM"}, {"20", "TSTP"}};
  if (auto it = kNumbers.find(name); it != kNumbers.end()) name = it->second;
  if (name == "INT") return TerminalSignal{"\x03", ""};
  if (name == "QUIT") return TerminalSignal{"\x1c", ""};
  if (name == "TSTP") return TerminalSignal{"\x1a", ""};
  if (name == "TERM" || name == "KILL" || name == "HUP") return TerminalSignal{"", "SIG" + name};
  return std::nullopt;
}

std::string TerminalCommand(const TerminalOpenSpec& spec) {
  std::string settings = "TERM=" + ShellQuote(spec.term.empty() ? "xterm-256color" : spec.term);
  for (const auto& [key, value] : spec.env) settings += " " + ShellQuote(key + "=" + value);
  // A command runs as execd would run it itself (bash -c), so the settings reach all of it.
  const std::string program = "bash --norc --noprofile" + (spec.command.empty() ? "" : " -c " + ShellQuote(spec.command));
  // A Docker sandbox's execd is started in the background of a non-interactive sh
  // (bootstrap.sh's `$EXECD &`), so it and the shells it starts have SIGINT and SIGQUIT
  // ignored, and a program cannot undo an ignore it inherited: ^C would stop nothing.
  // GNU env (coreutils 8.31 and newer) starts its program with them at their defaults;
  // where env lacks the option the terminal starts as before (docs/mapping.md, pty.open).
  return "if env --default-signal=INT,QUIT true 2>/dev/null; then exec env --default-signal=INT,QUIT " +
         settings + " " + program + "; fi; exec env " + settings + " " + program;
}

std::function<bool()> Terminals::SandboxGone(const std::string& sandbox_id) const {
  EndpointCache* upstream = upstream_;
  ProviderConfig config = *config_;
  return [upstream, config, sandbox_id] {
    CancelToken uncancellable;  // bounded by request_timeout
    auto record = upstream->Lifecycle(config).Get(sandbox_id, &uncancellable);
    if (!record.ok()) return record.error().code == ErrorCode::kNotFound;
    return record->state == "Terminated" || record->state == "Failed" || record->state == "Stopping";
  };
}

Status Terminals::PlainHttpServer() const {
  // Endpoints take the server's scheme; the bridge's WebSocket client has no TLS.
  if (config_->lifecycle_url.rfind("https://", 0) != 0) return OkStatus();
  return MakeError(ErrorCode::kUnsupported,
                   "terminals need a plain http:// server: the bridge's WebSocket client has no TLS");
}

Result<std::string> Terminals::Open(const TerminalOpenSpec& spec, std::shared_ptr<TerminalHolder> holder,
                                    const std::function<void(const std::string&)>& answer, CancelToken* cancel) {
  if (Status plain = PlainHttpServer(); !plain.ok()) return plain.error();
  ABX_ASSIGN_OR_RETURN(opensandbox::ExecdClient execd, upstream_->Execd(spec.sandbox_id, *config_, cancel));
  if (!spec.term.empty() || !spec.env.empty() || !spec.command.empty()) {
    // Before 1.0.19 execd drops the `command` field that carries them and starts a plain
    // shell: refused by name rather than ignored (docs/epp1.md §3, pty).
    ABX_ASSIGN_OR_RETURN(bool before, ExecdBefore1019(*upstream_, spec.sandbox_id, execd, cancel));
    if (before) {
      // An execd without terminals at all (before 1.0.10) is "too old" first.
      auto probe = execd.GetPty("abx-terminal-route-probe", cancel);
      if (!probe.ok() && probe.error().code != ErrorCode::kNotFound) return probe.error();
      const char* option = !spec.command.empty() ? "command" : !spec.env.empty() ? "env" : "term";
      Error e = MakeError(ErrorCode::kUnsupported,
                          std::string("the sandbox's execd is older than 1.0.19 and would ignore the terminal's ") +
                              option + " (it starts a plain shell with its own environment); open it without " +
                              "term, env and command, or use a sandbox with execd 1.0.19 or newer");
      e.field = option;
      return e;
    }
  }
  ABX_ASSIGN_OR_RETURN(std::string pty_id, execd.CreatePty(spec.cwd, TerminalCommand(spec), cancel));
  auto terminal = std::make_shared<Terminal>(spec.sandbox_id, pty_id, spec.keep, execd, SandboxGone(spec.sandbox_id));
  const int64_t timeout_ms = RequestTimeoutMs();
  Status connected = terminal->Connect(false, cancel, timeout_ms);
  if (!connected.ok()) {
    CancelToken uncancellable;
    execd.DeletePty(pty_id, &uncancellable);
    return connected.error().Within("open terminal");
  }
  if (spec.cols != 80 || spec.rows != 24) {
    // Answered once the terminal runs at its size (docs/epp1.md §3, pty.open): a shell
    // shows its prompt within milliseconds; a program that prints nothing costs the bound.
    terminal->Resize(spec.cols, spec.rows);
    terminal->WaitSizeSettled(kSizeSettleMs, cancel);
    if (cancel->cancelled()) {
      terminal->Abort();
      CancelToken uncancellable;
      execd.DeletePty(pty_id, &uncancellable);
      return MakeError(ErrorCode::kCancelled, "opening terminal " + pty_id + " was cancelled");
    }
  }
  TerminalsOf(*upstream_).Add(terminal);
  if (holder) {
    terminal->SetHolder(std::move(holder), 0, [&](uint64_t, uint64_t) { answer(pty_id); });
  } else {
    answer(pty_id);
  }
  return pty_id;
}

Status Terminals::Attach(const std::string& sandbox_id, const std::string& pty_id, std::optional<uint64_t> since,
                         std::shared_ptr<TerminalHolder> holder,
                         const std::function<void(uint64_t, uint64_t)>& answer, CancelToken* cancel) {
  if (Status plain = PlainHttpServer(); !plain.ok()) return plain;
  std::shared_ptr<Terminal> terminal = TerminalsOf(*upstream_).Find(sandbox_id, pty_id);
  if (!terminal) {
    // One this bridge does not hold (another daemon opened it, or this one restarted):
    // execd's window of it. A shell that already ended is never started again.
    ABX_ASSIGN_OR_RETURN(opensandbox::ExecdClient execd, upstream_->Execd(sandbox_id, *config_, cancel));
    ABX_ASSIGN_OR_RETURN(opensandbox::PtyStatus status, execd.GetPty(pty_id, cancel));
    if (since && *since > status.output_offset) {
      return InvalidParams("since", "since is beyond the end of the terminal's output (" +
                                        std::to_string(status.output_offset) + ")");
    }
    if (!status.running) {
      return MakeError(ErrorCode::kNotFound, "terminal " + pty_id + " has ended and this bridge kept nothing of it");
    }
    terminal = std::make_shared<Terminal>(sandbox_id, pty_id, /*keep=*/true, execd, SandboxGone(sandbox_id));
    terminal->StartAt(since.value_or(status.output_offset));
    Status connected = terminal->Connect(true, cancel, RequestTimeoutMs());
    if (!connected.ok()) return connected.error().Within("attach terminal");
    TerminalsOf(*upstream_).Add(terminal);
    return terminal->SetHolder(std::move(holder), since, answer);
  }
  {
    Status restored = terminal->Restore(cancel, RequestTimeoutMs());
    if (!restored.ok()) return restored.error().Within("attach terminal");
  }
  const bool ended = terminal->ended();
  Status held = terminal->SetHolder(holder, since, answer);
  if (!held.ok()) return held;
  if (ended) {
    // What it kept, then its exit; after that the terminal is gone.
    terminal->WaitExitDelivered(RequestTimeoutMs());
    TerminalsOf(*upstream_).Remove(terminal.get());
  }
  return OkStatus();
}

namespace {

Result<std::shared_ptr<Terminal>> Held(EndpointCache* upstream, const std::string& sandbox_id,
                                       const std::string& pty_id, const TerminalHolder* holder) {
  std::shared_ptr<Terminal> terminal = TerminalsOf(*upstream).Find(sandbox_id, pty_id);
  if (!terminal) {
    Error e = MakeError(ErrorCode::kNotFound, "terminal " + pty_id + " is not open in sandbox " + sandbox_id);
    e.field = "pty_id";
    return e;
  }
  if (!terminal->Holds(holder)) {
    return MakeError(ErrorCode::kInvalidState,
                     "terminal " + pty_id + " is not attached to this session; pty.attach it first");
  }
  return terminal;
}

}  // namespace

Status Terminals::Input(const std::string& sandbox_id, const std::string& pty_id, const TerminalHolder* holder,
                        std::string bytes) {
  ABX_ASSIGN_OR_RETURN(std::shared_ptr<Terminal> terminal, Held(upstream_, sandbox_id, pty_id, holder));
  return terminal->Send(false, opensandbox::PtyStdinFrame(bytes), RequestTimeoutMs());
}

Status Terminals::Resize(const std::string& sandbox_id, const std::string& pty_id, const TerminalHolder* holder,
                         int cols, int rows) {
  ABX_ASSIGN_OR_RETURN(std::shared_ptr<Terminal> terminal, Held(upstream_, sandbox_id, pty_id, holder));
  return terminal->Resize(cols, rows);
}

Status Terminals::Signal(const std::string& sandbox_id, const std::string& pty_id, const TerminalHolder* holder,
                         const std::string& signal) {
  auto what = TerminalSignalFor(signal);
  if (!what) {
    Error e = MakeError(ErrorCode::kUnsupported, "signal " + signal +
                                                     " cannot reach a terminal: SIGINT, SIGQUIT, SIGTSTP, SIGTERM, "
                                                     "SIGKILL and SIGHUP can");
    e.field = "signal";
    return e;
  }
  ABX_ASSIGN_OR_RETURN(std::shared_ptr<Terminal> terminal, Held(upstream_, sandbox_id, pty_id, holder));
  if (!what->input.empty()) return terminal->Send(false, opensandbox::PtyStdinFrame(what->input), RequestTimeoutMs());
  return terminal->Send(true, opensandbox::PtySignalFrame(what->frame), 0);
}

Result<bool> Terminals::Close(const std::string& sandbox_id, const std::string& pty_id, CancelToken* cancel) {
  ABX_ASSIGN_OR_RETURN(opensandbox::ExecdClient execd, upstream_->Execd(sandbox_id, *config_, cancel));
  ABX_ASSIGN_OR_RETURN(bool deleted, execd.DeletePty(pty_id, cancel));
  std::shared_ptr<Terminal> terminal = TerminalsOf(*upstream_).Find(sandbox_id, pty_id);
  if (!terminal) return deleted;
  // execd's exit frame reaches the holder before the answer.
  terminal->EndIfDisconnected();
  terminal->WaitExitDelivered(RequestTimeoutMs());
  terminal->Abort();
  TerminalsOf(*upstream_).Remove(terminal.get());
  terminal->DetachAll();  // a holder's session may end any time now
  return deleted;
}

std::vector<TerminalInfo> Terminals::List(const std::string& sandbox_id) {
  std::vector<TerminalInfo> out;
  for (const auto& terminal : TerminalsOf(*upstream_).Of(sandbox_id)) out.push_back(terminal->Info());
  return out;
}

void Terminals::Detach(const TerminalHolder* holder) {
  for (const auto& terminal : TerminalsOf(*upstream_).Of("")) terminal->Detach(holder);
}

void Terminals::Release(const TerminalHolder* holder) {
  for (const auto& terminal : TerminalsOf(*upstream_).Of("")) {
    const bool held = terminal->Holds(holder);
    terminal->Detach(holder);
    if (!held || terminal->keep()) continue;
    CancelToken uncancellable;  // bounded by request_timeout
    auto closed = Close(terminal->sandbox_id(), terminal->pty_id(), &uncancellable);
    if (!closed.ok()) {
      log::Warn("pty.cleanup_failed", {{"pty_id", terminal->pty_id()}, {"error", closed.error().message}});
    }
  }
}

}  // namespace abx::core
