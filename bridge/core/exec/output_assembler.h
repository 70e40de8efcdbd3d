#pragma once
// Turns execd's line events back into output bytes, as docs/epp1.md §3 defines: execd sends one
// event per line with the terminator removed (a blank line as exactly "\n" from v1.0.17
// on; dropped by v1.0.16 and older), so each line gets its "\n" back. Consecutive events
// of one stream are merged into one chunk up to a size limit, and chunks are cut only
// between UTF-8 sequences, so an exec.output never splits a character.

#include <string>
#include <string_view>
#include <vector>

namespace abx::core {

enum class OutputStream { kStdout, kStderr };

struct OutputChunk {
  OutputStream stream;
  std::string data;
};

class OutputAssembler {
 public:
  // 256 KiB: each chunk becomes one exec.output line, so a bulk stream pays a gRPC
  // message, a shim write and a host read per chunk, each a thread handover or a system
  // call. The limit was 48 KiB while the bridge ran on glibc's malloc, whose blocks from
  // 64 KiB up were fresh mappings faulted in for every chunk; jemalloc
  // (bridge/daemon/allocator_jemalloc.cc) reuses freed pages of any size, and with 256 KiB the
  // stream went 1.17x faster (three alternating pairs) while the soak's bridge RSS stayed
  // where it was (docs/PERFORMANCE.md, "Stream"). Chunks are not waited for: what one
  // network read brought goes out at once, up to this size.
  explicit OutputAssembler(size_t max_chunk_bytes = 256 << 10) : max_chunk_(max_chunk_bytes) {}

  // One stdout/stderr event's `text`.
  void AddLine(OutputStream stream, std::string_view text);
  // Bytes that are already exact (exec.logs of background commands).
  void AddRaw(OutputStream stream, std::string_view bytes);
  // The chunks gathered since the last call, in order.
  std::vector<OutputChunk> Take();
  bool empty() const { return chunks_.empty(); }
  // A chunk's buffer, once its bytes have gone out: the next chunks are gathered in it
  // instead of in a fresh allocation, which would also grow step by step (a stream makes
  // thousands of chunks).
  void Recycle(std::string buffer);

 private:
  void Append(OutputStream stream, std::string_view bytes);
  // A buffer for a new chunk: a recycled one when there is one.
  std::string NewChunkBuffer();

  const size_t max_chunk_;
  std::vector<OutputChunk> chunks_;
  std::vector<std::string> spare_;  // at most kSpareBuffers, empty, with their capacity
  static constexpr size_t kSpareBuffers = 2;
};

// Largest n ≤ limit such that cutting `text` after n bytes splits no UTF-8 sequence.
size_t Utf8CutPoint(std::string_view text, size_t limit);

}  // namespace abx::core
