#pragma once

// httplib hands every accepted connection to its TaskQueue exactly once, so a queue
// that counts enqueue() calls counts accepted TCP connections. It also runs each
// connection on its own thread instead of httplib's fixed pool (8 threads here): long
// SSE streams and idle keep-alive connections would otherwise starve new clients.
//
// shutdown() (called when a listener stops) waits for the running connections, which
// is why a sandbox's execd listener is torn down off the request path.

#include <httplib.h>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>

namespace fake_opensandbox {

class CountingTaskQueue : public httplib::TaskQueue {
 public:
  // `owner` keeps the counter alive as long as connections may still run.
  CountingTaskQueue(std::shared_ptr<void> owner, std::atomic<uint64_t>* accepted);

  void enqueue(std::function<void()> fn) override;
  void shutdown() override;

 private:
  struct Live {
    std::mutex mutex;
    std::condition_variable cv;
    int running = 0;
  };
  std::shared_ptr<void> owner_;
  std::atomic<uint64_t>* accepted_;
  std::shared_ptr<Live> live_ = std::make_shared<Live>();
};

}  // namespace fake_opensandbox
