#pragma once
// Bytes handed from one thread to an upload's body as they arrive (the typed
// Files.Upload: gRPC reads in, the HTTP client's I/O thread out), bounded: past
// kCapacity the producer is told to wait, and `on_room` runs once there is room again.

#include <cstddef>
#include <deque>
#include <functional>
#include <mutex>
#include <string>

#include "bridge/base/body_source.h"

namespace abx {

class BytePipe final : public BodySource {
 public:
  static constexpr size_t kCapacity = 1 << 20;

  // The producer's side. Push returns false when the pipe is full: push no more until
  // `on_room` (set with SetOnRoom) runs. End: no more bytes (Read then answers 0).
  // Abort: the body is cut (Read answers kAbort).
  bool Push(std::string bytes);
  void End();
  void Abort();
  void SetOnRoom(std::function<void()> on_room);
  size_t pushed() const;

  // BodySource, on the I/O thread.
  size_t Read(char* out, size_t size) override;
  void SetResume(std::function<void()> resume) override;

 private:
  mutable std::mutex mu_;
  std::deque<std::string> chunks_;
  size_t front_used_ = 0;  // bytes of chunks_.front() already read
  size_t queued_ = 0;
  size_t pushed_ = 0;
  bool ended_ = false;
  bool aborted_ = false;
  bool producer_waits_ = false;
  std::function<void()> on_room_;
  std::function<void()> resume_;
  bool reader_waits_ = false;
};

}  // namespace abx
