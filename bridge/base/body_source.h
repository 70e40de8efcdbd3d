#pragma once
// A request body made while it is sent, for an upload that starts before all of its bytes
// exist (files.write while the host is still writing its line). The HTTP client sends it
// with chunked transfer encoding and asks for more as the connection takes it.

#include <cstddef>
#include <functional>

namespace abx {

class BodySource {
 public:
  // Read's answers besides a byte count.
  static constexpr size_t kWait = static_cast<size_t>(-1);   // nothing ready yet
  static constexpr size_t kAbort = static_cast<size_t>(-2);  // drop the request

  virtual ~BodySource() = default;

  // Writes up to `size` next bytes of the body at `out` and returns how many; 0 once the
  // body is complete. kWait when none are ready yet: the source calls the resume hook once
  // some are. kAbort ends the request at once, so the server sees a body cut short (for
  // an upload, a form without its end: nothing is written). Called on the client's I/O
  // thread: must not block.
  virtual size_t Read(char* out, size_t size) = 0;

  // The hook that resumes a waiting request: set when the request starts, cleared (empty)
  // when it ends. May be called from any thread.
  virtual void SetResume(std::function<void()> resume) = 0;
};

}  // namespace abx
