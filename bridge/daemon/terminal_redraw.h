#pragma once
// What the CLI's reattach (`abx-opensandbox-bridge pty SANDBOX PTY_ID`) shows before the
// live output, so that the screen comes back as `tmux attach` brings it back: the recent
// output from the last full-screen clear or the last 64 KiB, whichever is later, then a
// resize round trip that makes the program draw itself again (SIGWINCH).

#include <cstddef>
#include <string_view>

namespace abx::daemon {

inline constexpr size_t kRedrawWindowBytes = 64 * 1024;

// Where in `replay` (a terminal's output up to now) the redraw starts: the last
// full-screen clear (ED 2, RIS, an alternate screen entered) or the start of the last
// kRedrawWindowBytes, whichever is later; a start inside the window moves to the next
// line, so no escape sequence or character is cut.
size_t RedrawStart(std::string_view replay);

}  // namespace abx::daemon
