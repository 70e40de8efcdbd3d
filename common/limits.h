#pragma once
// The limits the shim, the bridge and the manifest (abx-provider.toml, [capabilities.limits])
// agree on, written once. docs/protocol.md §8 says how they fit together.

#include <cstddef>

namespace abx {

// The longest EPP/1 line, newline excluded (docs/epp1.md §1); a longer one is answered
// with E8008 by the id at its start.
inline constexpr size_t kMaxLineBytes = 8 << 20;

// How much of an oversized line is kept, to read an `id` that comes early.
inline constexpr size_t kOversizedPrefixBytes = 64 << 10;

// The most bytes one files.read returns (docs/epp1.md §3).
inline constexpr size_t kMaxReadBytes = 4 << 20;

// How much of a code run's stdout and of its stderr the Execution keeps, and the largest
// result it carries (docs/epp1.md §3 code.interpret, limits.code_output_bytes).
inline constexpr size_t kCodeOutputBytes = 2 << 20;
// Output of a terminal held in the bridge for a host that does not read it (declared as
// limits.pty_buffer_bytes): at this mark the bridge lets go of execd's connection so the
// shell runs on (bridge/core/terminals/terminal.cc).
inline constexpr size_t kPtyBufferBytes = 4 << 20;

// The largest piece of output one code.output notification carries.
inline constexpr size_t kCodeOutputChunkBytes = 1 << 20;

// A line still arriving from the host goes to the bridge in parts of at least this much.
inline constexpr size_t kLinePartBytes = 1 << 20;

// The largest gRPC message either side accepts: a whole line and its framing, with room.
inline constexpr size_t kMaxBridgeMessageBytes = 32 << 20;

static_assert(kMaxBridgeMessageBytes > kMaxLineBytes + kOversizedPrefixBytes,
              "a message must carry the longest line");

}  // namespace abx
