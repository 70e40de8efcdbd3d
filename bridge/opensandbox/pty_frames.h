#pragma once
// The frames of execd's terminal WebSocket (docs/opensandbox.md §2.16): what the server
// sends, decoded, and what the bridge sends, made. Exposed for tests and the fuzzer.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "bridge/base/error.h"

namespace abx::opensandbox {

struct PtyFrame {
  enum class Kind {
    kOutput,     // 0x01: the terminal's output (stdout in pipe mode)
    kStderr,     // 0x02: pipe mode only
    kReplay,     // 0x03 + 8-byte big-endian offset: buffered output from that offset
    kConnected,  // {"type":"connected","session_id","mode"}
    kExit,       // {"type":"exit","exit_code"}: -1 when a signal ended the process
    kError,      // {"type":"error","error","code"}
    kPong,       // {"type":"pong"}
    kIgnored,    // a frame the bridge has no use for (an unknown binary prefix, say)
  };
  Kind kind = Kind::kIgnored;
  std::string data;             // kOutput, kStderr, kReplay: the bytes
  uint64_t replay_offset = 0;   // kReplay
  std::string mode;             // kConnected: "pty" or "pipe"
  int exit_code = 0;            // kExit
  std::string error, code;      // kError
};

// One server frame. Text that is not JSON of a known shape is E8010.
Result<PtyFrame> DecodePtyFrame(bool text, std::string payload);

// Client frames: stdin as a binary frame (0x00 + bytes), resize and signal as JSON text.
std::string PtyStdinFrame(std::string_view bytes);
std::string PtyResizeFrame(int cols, int rows);
std::string PtySignalFrame(const std::string& name);

}  // namespace abx::opensandbox
