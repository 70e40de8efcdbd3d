#pragma once
// The baseline of the terminal rows: a terminal of execd's reached directly, as a
// client of its own would: POST /pty, then its WebSocket on Boost.Beast, frames read
// and written on the caller's thread.

#include <memory>
#include <string>

namespace abx::bench {

class DirectTerminal {
 public:
  DirectTerminal();
  ~DirectTerminal();

  // A new terminal of execd at `execd_base` (http://host:port[/prefix]), connected.
  bool Open(const std::string& execd_base, std::string* error);
  void Type(const std::string& bytes);
  // Reads output frames until `needle` shows in them (any output when empty); the
  // output bytes read. *found is false on a timeout or a closed connection.
  long long ReadUntil(const std::string& needle, int timeout_ms, bool* found);
  void Close();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace abx::bench
