#include "bridge/core/exec/output_assembler.h"

namespace abx::core {

size_t Utf8CutPoint(std::string_view text, size_t limit) {
  if (limit >= text.size()) return text.size();
  size_t cut = limit;
  // Step back over continuation bytes (10xxxxxx) to the start of a sequence; a run of
  // more than 3 is not UTF-8, so cut where asked rather than loop.
  for (int i = 0; i < 4 && cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80; ++i) {
    --cut;
  }
  if (cut == 0 || (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) return limit;
  return cut;
}

void OutputAssembler::AddLine(OutputStream stream, std::string_view text) {
  if (text == "\n") {
    Append(stream, "\n");
    return;
  }
  Append(stream, text);
  Append(stream, "\n");
}

void OutputAssembler::AddRaw(OutputStream stream, std::string_view bytes) { Append(stream, bytes); }

void OutputAssembler::Recycle(std::string buffer) {
  // Only buffers of a chunk's size: a sink that took the bytes leaves an empty string.
  if (spare_.size() >= kSpareBuffers || buffer.capacity() < max_chunk_ / 2 ||
      buffer.capacity() > 2 * max_chunk_) {
    return;
  }
  buffer.clear();
  spare_.push_back(std::move(buffer));
}

std::string OutputAssembler::NewChunkBuffer() {
  if (spare_.empty()) return std::string();
  std::string buffer = std::move(spare_.back());
  spare_.pop_back();
  return buffer;
}

void OutputAssembler::Append(OutputStream stream, std::string_view bytes) {
  while (!bytes.empty()) {
    if (chunks_.empty() || chunks_.back().stream != stream ||
        chunks_.back().data.size() >= max_chunk_) {
      chunks_.push_back(OutputChunk{stream, NewChunkBuffer()});
    }
    std::string& data = chunks_.back().data;
    const size_t room = max_chunk_ - data.size();
    size_t n = Utf8CutPoint(bytes, room);
    if (n == 0 && data.empty()) n = room;  // a sequence longer than a chunk cannot be kept whole
    if (n == 0) {
      chunks_.push_back(OutputChunk{stream, NewChunkBuffer()});
      continue;
    }
    data.append(bytes.substr(0, n));
    bytes.remove_prefix(n);
  }
}

std::vector<OutputChunk> OutputAssembler::Take() {
  std::vector<OutputChunk> out;
  out.swap(chunks_);
  return out;
}

}  // namespace abx::core
