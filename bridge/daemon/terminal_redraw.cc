#include "bridge/daemon/terminal_redraw.h"

namespace abx::daemon {

size_t RedrawStart(std::string_view replay) {
  size_t start = 0;
  if (replay.size() > kRedrawWindowBytes) {
    start = replay.size() - kRedrawWindowBytes;
    const size_t line = replay.find('\n', start);
    start = line == std::string_view::npos ? replay.size() : line + 1;
  }
  // The sequences that wipe the whole screen: what comes after one of them draws all of it.
  constexpr std::string_view kClears[] = {"\x1b[2J", "\x1b" "c", "\x1b[?1049h", "\x1b[?1047h", "\x1b[?47h"};
  for (std::string_view clear : kClears) {
    const size_t at = replay.rfind(clear);
    if (at != std::string_view::npos && at > start) start = at;
  }
  return start;
}

}  // namespace abx::daemon
