#pragma once
// One terminal the bridge holds (terminals.h): its WebSocket to execd, the output it
// kept (replay_buffer.h), its holder and the hand-over between holders
// (holder_hand_over.h), and the delivery thread that feeds the holder in order.
//
// Longer than the ~300 lines a class here should be, for a reason: the connection and
// the delivery share one lock and one condition, because each decides on the other's
// state. Whether the connection is dropped depends on how far the holder is behind
// (Flow); what the kept output may let go depends on the holder's place; the exit goes
// out only after the last byte received; a restored connection starts at the end of the
// kept output. The parts that need no lock of their own are units of their own: the
// kept output, the hand-over, the frames waiting for a connection (pending_frames.h),
// the registry (terminal_registry.h) and the command (terminal_command.h).

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>

#include "bridge/base/cancel.h"
#include "bridge/base/error.h"
#include "bridge/core/terminals/holder_hand_over.h"
#include "bridge/core/terminals/pending_frames.h"
#include "bridge/core/terminals/replay_buffer.h"
#include "bridge/core/terminals/terminal_holder.h"
#include "bridge/opensandbox/execd_client.h"

namespace abx::core {

// What pty.list shows of a terminal.
struct TerminalInfo {
  std::string pty_id;
  bool running = false;
  uint64_t offset = 0;  // the end of its output
  bool attached = false;
  bool keep = false;
};

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

  ~Terminal();
  Terminal(const Terminal&) = delete;
  Terminal& operator=(const Terminal&) = delete;

  // The output a terminal keeps for a replay (docs/epp1.md §3, pty).
  static constexpr uint64_t kKeptBytes = 1 << 20;
  // Input (and resizes, signals) held while a connection is restored.
  static constexpr size_t kPendingInputBytes = 1 << 20;

  const std::string& sandbox_id() const { return sandbox_id_; }
  const std::string& pty_id() const { return pty_id_; }
  bool keep() const { return keep_; }

  // Output is counted from `offset` on (a terminal this bridge did not open).
  void StartAt(uint64_t offset);

  // Connects from the current end and waits for execd's `connected`.
  Status Connect(bool takeover, CancelToken* cancel, int64_t timeout_ms);

  // Sends a frame to execd. Input is answered once written to the connection (at most
  // `wait_ms`, then E8006: execd does not read, as when the program in the terminal
  // does not); a resize or signal once queued. While the connection is being restored,
  // frames wait in order (at most 1 MiB, then E8008) and go first once it is back;
  // frames a dropped connection did not write wait the same way.
  Status Send(bool text, std::string payload, int64_t wait_ms);

  // Sets the window size. bash's readline reads the size and writes it back each time it
  // shows a prompt (TIOCGWINSZ, then TIOCSWINSZ): a resize that lands in between is
  // undone. The prompt is printed after that write, so the size is sent once more with
  // the next output, which changes nothing unless it had been undone (the kernel signals
  // SIGWINCH only for a new size).
  Status Resize(int cols, int rows);

  // After a resize, waits (at most `timeout_ms`) until the size holds: output followed
  // it, so its repetition is queued ahead of anything sent after this returns. Output
  // already shown before it means the program had set up its terminal: no wait.
  void WaitSizeSettled(int64_t timeout_ms, CancelToken* cancel);

  // A terminal whose connection was given up (taken over elsewhere, or lost): connect
  // again, taking it over, as an attach does. Fine when it is connected or ended.
  Status Restore(CancelToken* cancel, int64_t timeout_ms);

  bool Holds(const TerminalHolder* holder);

  bool ended();

  // `holder` holds the terminal from now on, output replayed from `since`; the earlier
  // holder is told where it stopped. `answer` runs before any replayed byte goes out.
  Status SetHolder(std::shared_ptr<TerminalHolder> holder, std::optional<uint64_t> since,
                   const std::function<void(uint64_t, uint64_t)>& answer);

  // The holder's session ends: nothing reaches it after this returns (a call to it in
  // progress is waited for, a notice still queued for it is dropped).
  void Detach(const TerminalHolder* holder);

  // Nobody holds the terminal any more (it was closed): no call reaches a holder after
  // this returns.
  void DetachAll();

  // Waits until the holder got the exit (or there is none), at most `timeout_ms`.
  void WaitExitDelivered(int64_t timeout_ms);

  // execd deleted the terminal: one with no connection gets no exit frame, so it ends
  // here (exit code unknown).
  void EndIfDisconnected();

  void Abort();

  TerminalInfo Info();

 private:
  void WaitNotCalling(std::unique_lock<std::mutex>& lock, const TerminalHolder* holder);

  // On the WebSocket's thread.
  void OnMessage(uint64_t generation, bool text, std::string payload);

  // On the WebSocket's thread: a frame was written.
  void OnSent(uint64_t generation);

  void OnEnd(uint64_t generation, const http::WebSocketEnd& end);

  void GiveUpLocked(const std::string& reason);

  void RestoreInBackground();

  // Through the server proxy a refused handshake arrives as an accepted upgrade closed
  // before execd's `connected` (docs/opensandbox.md §1.10): the terminal's state, asked
  // of execd through the same proxy, tells what execd refused.
  Error RefusedThroughProxy(int close_code, CancelToken* cancel);

  // A terminal whose shell died of a signal or whose execd stopped answering: when its
  // sandbox has ended, that is why (pty.exit says so). Off the WebSocket's thread.
  void NoteSandboxEnd();

  // execd is asked whether the shell still runs before anything connects: a new
  // connection to an ended terminal would start a new shell under its id.
  Status RestoreFromExecd(CancelToken* cancel, int64_t timeout_ms);

  // A holder kHeldBytes behind has stopped reading: the connection goes, so execd lets
  // the shell run on; once the holder has taken everything held, it comes back.
  void Flow();

  // The delivery thread.
  void Deliver();

  template <typename F>
  void Call(std::unique_lock<std::mutex>& lock, const std::shared_ptr<TerminalHolder>& holder, F&& call) {
    holders_.set_calling(holder.get());
    lock.unlock();
    call(holder.get());
    lock.lock();
    holders_.set_calling(nullptr);
    cv_.notify_all();
  }

  const std::string sandbox_id_;
  const std::string pty_id_;
  const bool keep_;
  opensandbox::ExecdClient execd_;
  const std::function<bool()> sandbox_gone_;

  std::mutex mu_;
  std::condition_variable cv_;
  // The output kept (at most the last kKeptBytes, and all the holder is owed, which
  // Flow bounds to kHeldBytes and a frame: past that the connection is dropped).
  ReplayBuffer kept_{kKeptBytes};
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
  // Frames waiting for a connection: input (and resizes, signals) sent while it is
  // restored, at most kPendingInputBytes.
  PendingFrames pending_{kPendingInputBytes};
  uint64_t frames_queued_ = 0;   // to the connection in use
  uint64_t frames_written_ = 0;  // of those, written
  std::string resize_to_repeat_;  // the last resize, until output followed it (Resize)
  uint64_t output_at_resize_ = 0;
  uint64_t exit_offset_ = 0;
  bool sandbox_checked_ = false;
  bool exit_offset_checked_ = false;
  std::thread restorer_;
  bool parked_ = false;       // connection dropped until the holder has caught up
  bool parked_socket_open_ = false;  // until its on_end has given back what it did not write
  HolderHandOver holders_;
  bool stopping_ = false;
  std::thread deliverer_;
};

}  // namespace abx::core
