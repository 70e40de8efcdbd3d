#pragma once
// State a capability keeps beside an object of the core's root (the BridgeCore, an
// EndpointCache) without the root naming it: the root sits below the capabilities
// (docs/ARCHITECTURE.md, "core/ by capability"), so it holds their state as Parts, made on
// first use by the capability's own accessor (WarmPoolOf, WatchesOf, TerminalsOf).
//
// Parts are stopped (Stop, newest first) by the BridgeCore as it starts to go, its own and
// each EndpointCache's, while what they use still exists; each holder destroys its parts
// in the same order.

#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace abx::core {

class Part {
 public:
  virtual ~Part() = default;
  // The core is going: end what runs in the background. May come more than once (the
  // daemon's orderly stop shuts the pool down first).
  virtual void Stop() {}
};

class Parts {
 public:
  Parts() = default;
  Parts(const Parts&) = delete;
  Parts& operator=(const Parts&) = delete;
  ~Parts() {
    while (!parts_.empty()) parts_.pop_back();
  }

  // The part of type T, made by `make()` on first use; the same one after.
  template <class T, class Make>
  T& Get(Make make) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [key, part] : parts_) {
      if (key == KeyOf<T>()) return static_cast<T&>(*part);
    }
    std::unique_ptr<T> made = make();
    T& out = *made;
    parts_.emplace_back(KeyOf<T>(), std::move(made));
    return out;
  }

  // Stops every part, newest first. A part made after this is not stopped.
  void StopAll() {
    std::vector<Part*> stopping;
    {
      std::lock_guard<std::mutex> lock(mu_);
      for (auto& entry : parts_) stopping.push_back(entry.second.get());
    }
    for (auto it = stopping.rbegin(); it != stopping.rend(); ++it) (*it)->Stop();
  }

 private:
  // One address per type, the same in every translation unit (an inline function's static).
  template <class T>
  static const void* KeyOf() {
    static const char key = 0;
    return &key;
  }

  std::mutex mu_;
  std::vector<std::pair<const void*, std::unique_ptr<Part>>> parts_;
};

}  // namespace abx::core
