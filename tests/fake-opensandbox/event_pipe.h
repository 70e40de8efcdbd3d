#pragma once

// Carries a foreground command's encoded events from its pump thread to the HTTP stream.
//
// Backpressure: while more than `high_water` bytes wait, the pump stops reading the
// command's pipes, so a slow client slows the command instead of growing our memory.
// When the client goes away (Detach), everything is dropped from then on and the pump
// never waits again: upstream keeps a foreground command running after a disconnect.

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <mutex>
#include <string>

namespace fake_opensandbox {

class EventPipe {
 public:
  using SteadyTime = std::chrono::steady_clock::time_point;

  explicit EventPipe(size_t high_water = 8 << 20) : high_water_(high_water) {}

  // Producer side. Takes the bytes and leaves `bytes` empty; buffers are swapped
  // rather than reallocated, so a long stream recycles the same few allocations.
  void Append(std::string& bytes);
  void Append(std::string&& bytes) { Append(bytes); }
  // Waits until the backlog is under the high-water mark, the reader detached, or
  // `until`. Returns false only on reaching `until` with the backlog still high.
  bool WaitForRoom(SteadyTime until);
  // The terminal event has been appended; nothing follows.
  void Close();

  // Consumer side.
  enum class ReadResult { kData, kClosed, kTimeout };
  // Moves everything pending into *out (kData), or reports end of stream / a timeout.
  // *out's old capacity goes back to the producer.
  ReadResult Read(std::string* out, SteadyTime until);
  void Detach();

 private:
  const size_t high_water_;
  std::mutex mutex_;
  std::condition_variable cv_;
  std::string pending_;
  bool closed_ = false;
  bool detached_ = false;
};

}  // namespace fake_opensandbox
