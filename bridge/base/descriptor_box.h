#pragma once
// Open descriptors handed to the bridge beside gRPC, each under a token the bridge made
// up and sent to the one peer it expects the descriptor from (files.transfer: the shim
// opens the host's local file and passes it over the bridge's descriptor socket).
//
// Only expected tokens are kept: a descriptor under any other token is closed at once,
// so a peer cannot make the bridge hold descriptors it never asked for.

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <string>

#include "bridge/base/cancel.h"

namespace abx {

class DescriptorBox {
 public:
  DescriptorBox() = default;
  DescriptorBox(const DescriptorBox&) = delete;
  DescriptorBox& operator=(const DescriptorBox&) = delete;
  ~DescriptorBox();  // closes what was delivered and never taken

  // From now on a descriptor under `token` is kept until taken or forgotten.
  void Expect(const std::string& token);
  // A descriptor arrived. Takes ownership: kept when `token` is expected and has none
  // yet, else closed. Returns whether it was kept.
  bool Deliver(const std::string& token, int fd);
  // The descriptor under `token`, waiting up to `timeout` for it; -1 when it did not come
  // in time or `cancel` was set. The token is forgotten either way; the caller owns the
  // descriptor returned.
  int Take(const std::string& token, std::chrono::milliseconds timeout, CancelToken* cancel);
  // Stops expecting `token`, closing its descriptor if one came.
  void Forget(const std::string& token);

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, int> slots_;  // -1 while expected and not yet delivered
};

}  // namespace abx
