#pragma once
// What the stream scenario's host needs of each line the shim writes while a command
// streams: whether it is exec.output (and how many bytes its `data` decodes to) or
// exec.exit (and its code). Read in place at memory speed, as a host written for
// throughput would: the scenario times the provider up to the host's pipe, and the
// direct baseline does not parse its stream at all.

#include <cstddef>

namespace abx::bench {

struct NotificationFacts {
  enum class Kind { kOther, kOutput, kExit };
  Kind kind = Kind::kOther;
  size_t data_bytes = 0;   // kOutput: length of `data` once unescaped
  bool has_exit_code = false;
  int exit_code = 0;       // kExit, when `exit_code` is an integer
};

// `line` is NUL-terminated and is changed in place; the buffer it lies in must hold 15
// bytes past the terminator (the reader's buffer does).
NotificationFacts ReadNotification(char* line);

}  // namespace abx::bench
