#pragma once
// Who holds a terminal and what each holder is owed (docs/epp1.md §3, pty): one holder
// at a time, fed from the first byte it has not had; a holder replaced by another
// session's attach, or let go when the connection was taken over or lost, is owed a
// notice of the first byte it did not get, delivered before anything else goes out. The
// terminal's delivery thread works through it (terminal.cc, Deliver).
//
// Not locked: the terminal's lock guards it (terminal.h).

#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>

#include "bridge/core/terminals/terminal_holder.h"

namespace abx::core {

class HolderHandOver {
 public:
  struct Notice {
    std::shared_ptr<TerminalHolder> holder;
    uint64_t offset;     // the first byte it did not get
    std::string reason;  // "taken_over" or "lost"
  };

  const std::shared_ptr<TerminalHolder>& holder() const { return holder_; }
  bool Holds(const TerminalHolder* holder) const { return holder_ && holder_.get() == holder; }
  // The first byte the holder has yet to get.
  uint64_t next() const { return next_; }
  void set_next(uint64_t next) { next_ = next; }
  // next() while there is a holder: what the kept output must not drop (replay_buffer.h).
  std::optional<uint64_t> owed_from() const;
  // How far the holder is behind `end` (0 without one).
  uint64_t Lag(uint64_t end) const;

  // `holder` holds from `offset` on, its exit still owed; an earlier, other holder is owed
  // a "taken_over" notice and returned (null when there was none). Delivery pauses until
  // Resume, so the attach is answered before the first byte goes out.
  std::shared_ptr<TerminalHolder> Take(std::shared_ptr<TerminalHolder> holder, uint64_t offset);
  void Resume() { paused_ = false; }
  bool paused() const { return paused_; }
  // The holder is let go with `reason`: it is owed the notice.
  void GiveUp(const std::string& reason);
  // `holder`'s session ends: the notices queued for it go, and it holds no more. (A call
  // to it under way is the terminal's to wait for.)
  void DropNoticesFor(const TerminalHolder* holder);
  void Release(const TerminalHolder* holder);
  // Nobody holds it, nobody is owed anything.
  void ReleaseAll();

  bool has_notice() const { return !notices_.empty(); }
  Notice PopNotice();
  // Whether `holder` still has a notice coming: queued, or being delivered.
  bool NoticeWaitingFor(const TerminalHolder* holder) const;

  // The holder called now, with the lock let go (null: none).
  const TerminalHolder* calling() const { return calling_; }
  void set_calling(const TerminalHolder* holder) { calling_ = holder; }

  // The exit: owed once to each holder, called at most once at a time.
  bool exit_delivered() const { return exit_delivered_; }
  void set_exit_delivered() { exit_delivered_ = true; }
  bool exit_calling() const { return exit_calling_; }
  void set_exit_calling(bool calling) { exit_calling_ = calling; }

 private:
  std::shared_ptr<TerminalHolder> holder_;
  uint64_t next_ = 0;
  bool paused_ = false;
  bool exit_delivered_ = false;
  bool exit_calling_ = false;
  std::deque<Notice> notices_;
  const TerminalHolder* calling_ = nullptr;
};

}  // namespace abx::core
