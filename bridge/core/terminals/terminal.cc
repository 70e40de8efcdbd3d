#include "bridge/core/terminals/terminal.h"

#include <algorithm>

#include "bridge/base/log.h"
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
// How long a new holder's attach waits for the earlier holder to be told.
constexpr auto kDetachNoticeWait = std::chrono::seconds(5);
// A restore that fails is tried again after these pauses before the terminal counts as lost.
constexpr int kRestoreRetryMs[] = {500, 1500};
// execd drops a connection silent for 60 s; before that, one without takeover answers
// a new connection to the terminal with 409. A restore that meets it tries this long,
// every kHeldRetryMs.
constexpr int64_t kHeldByOldExecdMs = 65000;
constexpr int64_t kHeldRetryMs = 1000;

// A handler on the WebSocket's thread may hold a terminal's last reference (the
// registry let go meanwhile): ~Terminal joins the delivery thread, which may be in a
// slow call to its holder, and would stall every WebSocket. It goes on a thread of its
// own instead.
void LetGoOffThisThread(std::shared_ptr<Terminal> terminal) {
  if (terminal.use_count() == 1) std::thread([last = std::move(terminal)] {}).detach();
}

}  // namespace

Terminal::~Terminal() {
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

void Terminal::StartAt(uint64_t offset) {
  std::lock_guard<std::mutex> lock(mu_);
  kept_.StartAt(offset);
}

Status Terminal::Connect(bool takeover, CancelToken* cancel, int64_t timeout_ms) {
  std::weak_ptr<Terminal> weak = weak_from_this();
  uint64_t since, generation;
  {
    std::lock_guard<std::mutex> lock(mu_);
    since = kept_.end();
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
    for (auto& [text, frame] : pending_.TakeAll()) {
      socket->Send(text, std::move(frame));
      ++frames_queued_;
    }
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

Status Terminal::Send(bool text, std::string payload, int64_t wait_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  if (!socket_) {
    if (ended_) return MakeError(ErrorCode::kInvalidState, "terminal " + pty_id_ + " has ended");
    if (!pending_.Push(text, payload)) {
      return MakeError(ErrorCode::kTooLarge,
                       "terminal " + pty_id_ + " is reconnecting and already has 1 MiB of input waiting");
    }
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

Status Terminal::Resize(int cols, int rows) {
  const std::string frame = opensandbox::PtyResizeFrame(cols, rows);
  {
    // Before the frame goes: output that follows it must find this set.
    std::lock_guard<std::mutex> lock(mu_);
    resize_to_repeat_ = frame;
    output_at_resize_ = kept_.end();
  }
  Status sent = Send(true, frame, 0);
  if (!sent.ok()) {  // refused (ended, or too much waiting): not repeated either
    std::lock_guard<std::mutex> lock(mu_);
    if (resize_to_repeat_ == frame) resize_to_repeat_.clear();
  }
  return sent;
}

void Terminal::WaitSizeSettled(int64_t timeout_ms, CancelToken* cancel) {
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

Status Terminal::Restore(CancelToken* cancel, int64_t timeout_ms) {
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

bool Terminal::Holds(const TerminalHolder* holder) {
  std::lock_guard<std::mutex> lock(mu_);
  return holders_.Holds(holder);
}

bool Terminal::ended() {
  std::lock_guard<std::mutex> lock(mu_);
  return ended_;
}

Status Terminal::SetHolder(std::shared_ptr<TerminalHolder> holder, std::optional<uint64_t> since,
                           const std::function<void(uint64_t, uint64_t)>& answer) {
  uint64_t offset, lost;
  {
    std::unique_lock<std::mutex> lock(mu_);
    const uint64_t from = since.value_or(kept_.end());
    if (from > kept_.end()) {
      return InvalidParams("since", "since is beyond the end of the terminal's output (" +
                                        std::to_string(kept_.end()) + ")");
    }
    offset = std::max(from, kept_.kept_from());
    lost = offset - from;
    // From now on nothing new goes to the earlier holder: only a call already under
    // way, then its notice.
    std::shared_ptr<TerminalHolder> earlier = holders_.Take(std::move(holder), offset);
    Flow();  // a connection dropped for an earlier holder's lag comes back
    cv_.notify_all();
    if (earlier) {
      // Answered once the earlier holder was told (bounded: it may not be reading).
      cv_.wait_for(lock, kDetachNoticeWait, [&] { return !holders_.NoticeWaitingFor(earlier.get()) || stopping_; });
    }
  }
  answer(offset, lost);
  {
    std::lock_guard<std::mutex> lock(mu_);
    holders_.Resume();
  }
  cv_.notify_all();
  return OkStatus();
}

void Terminal::Detach(const TerminalHolder* holder) {
  std::unique_lock<std::mutex> lock(mu_);
  holders_.DropNoticesFor(holder);
  WaitNotCalling(lock, holder);
  holders_.Release(holder);
  Flow();
}

void Terminal::DetachAll() {
  std::unique_lock<std::mutex> lock(mu_);
  holders_.ReleaseAll();
  cv_.wait(lock, [&] { return holders_.calling() == nullptr; });
}

void Terminal::WaitExitDelivered(int64_t timeout_ms) {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms),
               [&] { return ended_ && (!holders_.holder() || holders_.exit_delivered()); });
}

void Terminal::EndIfDisconnected() {
  std::lock_guard<std::mutex> lock(mu_);
  if (socket_ || ended_) return;
  ended_ = true;
  cv_.notify_all();
}

void Terminal::Abort() {
  std::shared_ptr<http::WebSocket> socket;
  {
    std::lock_guard<std::mutex> lock(mu_);
    closing_ = true;
    socket = socket_;
  }
  if (socket) socket->Abort();
}

TerminalInfo Terminal::Info() {
  std::lock_guard<std::mutex> lock(mu_);
  return TerminalInfo{pty_id_, !ended_, kept_.end(), holders_.holder() != nullptr, keep_};
}

void Terminal::WaitNotCalling(std::unique_lock<std::mutex>& lock, const TerminalHolder* holder) {
  cv_.wait(lock, [&] { return holders_.calling() == nullptr || holders_.calling() != holder; });
}

void Terminal::OnMessage(uint64_t generation, bool text, std::string payload) {
  auto frame = opensandbox::DecodePtyFrame(text, std::move(payload));
  std::lock_guard<std::mutex> lock(mu_);
  if (generation != generation_) return;
  if (!frame.ok()) {
    log::Warn("pty.bad_frame", {{"pty_id", pty_id_}, {"error", frame.error().message}});
    return;
  }
  switch (frame->kind) {
    case PtyFrame::Kind::kReplay:
      if (kept_.AppendReplay(frame->replay_offset, frame->data, holders_.owed_from())) Flow();
      break;
    case PtyFrame::Kind::kOutput:
    case PtyFrame::Kind::kStderr:
      kept_.Append(frame->data, holders_.owed_from());
      Flow();
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

void Terminal::OnSent(uint64_t generation) {
  std::lock_guard<std::mutex> lock(mu_);
  if (generation != generation_) return;
  ++frames_written_;
  cv_.notify_all();
}

void Terminal::OnEnd(uint64_t generation, const http::WebSocketEnd& end) {
  std::lock_guard<std::mutex> lock(mu_);
  if (generation != generation_) return;
  const bool was_in_use = socket_ != nullptr || parked_;
  socket_.reset();
  // Frames it never began to write wait for the next connection, first.
  pending_.GiveBack(end.unsent);
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

void Terminal::GiveUpLocked(const std::string& reason) {
  dropped_ = true;
  parked_ = false;
  pending_.Clear();  // the holder's keystrokes go with it
  holders_.GiveUp(reason);
}

void Terminal::RestoreInBackground() {
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

Error Terminal::RefusedThroughProxy(int close_code, CancelToken* cancel) {
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

void Terminal::NoteSandboxEnd() {
  if (!sandbox_gone_ || !sandbox_gone_()) return;
  std::lock_guard<std::mutex> lock(mu_);
  if (!end_error_) end_error_ = MakeError(ErrorCode::kNotFound, "terminal " + pty_id_ + " ended with its sandbox " + sandbox_id_);
  cv_.notify_all();
}

Status Terminal::RestoreFromExecd(CancelToken* cancel, int64_t timeout_ms) {
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
    exit_offset_ = std::max(kept_.end(), status->output_offset);
    cv_.notify_all();
    return OkStatus();
  }
  return Connect(/*takeover=*/true, cancel, timeout_ms);
}

void Terminal::Flow() {
  const uint64_t lag = holders_.Lag(kept_.end());
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

void Terminal::Deliver() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] {
      if (stopping_) return true;
      if (holders_.has_notice()) return true;
      if (holders_.paused() || !holders_.holder()) return false;
      return holders_.next() < kept_.end() ||
             (ended_ && !holders_.exit_delivered() && !holders_.exit_calling());
    });
    if (stopping_) return;
    if (holders_.has_notice()) {
      HolderHandOver::Notice notice = holders_.PopNotice();
      Call(lock, notice.holder, [&](TerminalHolder* h) { h->OnDetached(pty_id_, notice.offset, notice.reason); });
      continue;
    }
    std::shared_ptr<TerminalHolder> holder = holders_.holder();
    if (holders_.next() < kept_.end()) {
      const uint64_t offset = std::max(holders_.next(), kept_.kept_from());  // a gap shows in the offsets
      const size_t size = static_cast<size_t>(std::min<uint64_t>(kChunkBytes, kept_.end() - offset));
      std::string chunk = kept_.Read(offset, size);
      holders_.set_next(offset + size);
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
    const uint64_t offset = std::max(kept_.end(), exit_offset_);
    holders_.set_exit_calling(true);  // not again while the call is under way
    Call(lock, holder, [&](TerminalHolder* h) { h->OnExit(pty_id_, code, offset, error); });
    holders_.set_exit_calling(false);
    if (holders_.holder() == holder) holders_.set_exit_delivered();  // a new holder gets its own
    cv_.notify_all();
  }
}

}  // namespace abx::core
