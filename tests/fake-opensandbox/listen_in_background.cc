#include "tests/fake-opensandbox/listen_in_background.h"

#include <atomic>
#include <chrono>
#include <memory>

namespace fake_opensandbox {

std::thread ListenInBackground(httplib::Server& server) {
  auto ended = std::make_shared<std::atomic<bool>>(false);
  std::thread loop([&server, ended] {
    server.listen_after_bind();
    ended->store(true);
  });
  // No deadline: the loop either begins (is_running) or returns (ended), and either one
  // comes as soon as the thread is scheduled.
  while (!server.is_running() && !ended->load()) std::this_thread::sleep_for(std::chrono::microseconds(200));
  return loop;
}

}  // namespace fake_opensandbox
