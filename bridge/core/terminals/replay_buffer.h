#pragma once
// A terminal's kept output: the bytes [kept_from(), end()) of all the terminal printed,
// offsets counted from pty.open. It keeps the last `window` bytes, from which a session
// that attaches is replayed, and everything the holder is still owed, however much
// (the terminal bounds that: terminal.cc, kHeldBytes). Bytes fall out in batches of a
// quarter window, so an append does not move the window each time.
//
// Not locked: the terminal's lock guards it (terminal.h).

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>

namespace abx::core {

class ReplayBuffer {
 public:
  explicit ReplayBuffer(uint64_t window) : window_(window) {}

  uint64_t end() const { return end_; }
  uint64_t kept_from() const { return kept_from_; }

  // Output is counted from `offset` on, nothing kept before it: a terminal this bridge
  // did not open starts where execd's count is.
  void StartAt(uint64_t offset);
  // Appends `data`. `owed_from`: the first byte the holder has yet to get (nullopt: no
  // holder), kept past the window.
  void Append(const std::string& data, std::optional<uint64_t> owed_from);
  // execd's replay of its own window, which begins at `offset`, on a new connection: what
  // lies past end() is appended; a window that begins past end() (output lost while no
  // connection was up) starts the kept output there. True when anything was appended.
  bool AppendReplay(uint64_t offset, const std::string& data, std::optional<uint64_t> owed_from);
  // Up to `max` bytes from `offset`, which is at least kept_from() and at most end().
  std::string Read(uint64_t offset, size_t max) const;

 private:
  const uint64_t window_;
  std::string kept_;  // output [kept_from_, end_)
  uint64_t kept_from_ = 0;
  uint64_t end_ = 0;
};

}  // namespace abx::core
