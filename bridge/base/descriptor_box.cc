#include "bridge/base/descriptor_box.h"

#include <unistd.h>

namespace abx {

DescriptorBox::~DescriptorBox() {
  for (const auto& [token, fd] : slots_) {
    if (fd >= 0) close(fd);
  }
}

void DescriptorBox::Expect(const std::string& token) {
  std::lock_guard<std::mutex> lock(mu_);
  slots_.emplace(token, -1);
}

bool DescriptorBox::Deliver(const std::string& token, int fd) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto slot = slots_.find(token);
    if (slot != slots_.end() && slot->second < 0) {
      slot->second = fd;
      cv_.notify_all();
      return true;
    }
  }
  close(fd);
  return false;
}

int DescriptorBox::Take(const std::string& token, std::chrono::milliseconds timeout, CancelToken* cancel) {
  // A cancel wakes the wait (the hook may run after this call returned: it only notifies).
  cancel->OnCancel([this] {
    std::lock_guard<std::mutex> lock(mu_);
    cv_.notify_all();
  });
  std::unique_lock<std::mutex> lock(mu_);
  auto slot = slots_.find(token);
  if (slot == slots_.end()) return -1;
  cv_.wait_for(lock, timeout, [&] { return slot->second >= 0 || cancel->cancelled(); });
  const int fd = slot->second;
  slots_.erase(slot);
  if (fd >= 0 && cancel->cancelled()) {
    close(fd);
    return -1;
  }
  return fd;
}

void DescriptorBox::Forget(const std::string& token) {
  std::lock_guard<std::mutex> lock(mu_);
  auto slot = slots_.find(token);
  if (slot == slots_.end()) return;
  if (slot->second >= 0) close(slot->second);
  slots_.erase(slot);
}

}  // namespace abx
