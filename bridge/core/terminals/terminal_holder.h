#pragma once
// The session holding a terminal (docs/epp1.md §3, pty: one holder at a time).

#include <cstdint>
#include <optional>
#include <string>

#include "bridge/base/error.h"

namespace abx::core {

// Calls come in order, from the terminal's delivery thread, never after the holder was
// detached (Terminal::Detach waits for a call in progress).
class TerminalHolder {
 public:
  virtual ~TerminalHolder() = default;
  virtual void OnOutput(const std::string& pty_id, uint64_t offset, const std::string& data) = 0;
  virtual void OnExit(const std::string& pty_id, std::optional<int> exit_code, uint64_t offset,
                      const std::optional<Error>& error) = 0;
  virtual void OnDetached(const std::string& pty_id, uint64_t offset, const std::string& reason) = 0;
};

}  // namespace abx::core
