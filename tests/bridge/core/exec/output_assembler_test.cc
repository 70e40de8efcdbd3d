#include "bridge/core/exec/output_assembler.h"

#include <gtest/gtest.h>

namespace abx::core {
namespace {

TEST(OutputAssemblerTest, EachLineGetsItsNewlineBack) {
  OutputAssembler a;
  a.AddLine(OutputStream::kStdout, "a");
  a.AddLine(OutputStream::kStdout, "b");
  auto chunks = a.Take();
  ASSERT_EQ(chunks.size(), 1u);
  EXPECT_EQ(chunks[0].data, "a\nb\n");
}

TEST(OutputAssemblerTest, BlankLineEventIsOneNewline) {
  OutputAssembler a;
  a.AddLine(OutputStream::kStdout, "a");
  a.AddLine(OutputStream::kStdout, "\n");
  a.AddLine(OutputStream::kStdout, "b");
  EXPECT_EQ(a.Take()[0].data, "a\n\nb\n");
}

TEST(OutputAssemblerTest, StreamsAreNotMerged) {
  OutputAssembler a;
  a.AddLine(OutputStream::kStdout, "out");
  a.AddLine(OutputStream::kStderr, "err");
  a.AddLine(OutputStream::kStdout, "out2");
  auto chunks = a.Take();
  ASSERT_EQ(chunks.size(), 3u);
  EXPECT_EQ(chunks[1].stream, OutputStream::kStderr);
  EXPECT_EQ(chunks[1].data, "err\n");
  EXPECT_TRUE(a.Take().empty());
}

TEST(OutputAssemblerTest, ChunksNeverSplitUtf8) {
  OutputAssembler a(/*max_chunk_bytes=*/5);
  a.AddLine(OutputStream::kStdout, "ab\xE6\x97\xA5\xE6\x9C\xAC");  // "ab日本"
  std::string joined;
  for (const auto& chunk : a.Take()) {
    EXPECT_LE(chunk.data.size(), 5u);
    // No chunk may start with a continuation byte.
    ASSERT_FALSE(chunk.data.empty());
    EXPECT_NE(static_cast<unsigned char>(chunk.data[0]) & 0xC0, 0x80) << chunk.data;
    joined += chunk.data;
  }
  EXPECT_EQ(joined, "ab\xE6\x97\xA5\xE6\x9C\xAC\n");
}

TEST(OutputAssemblerTest, CutPoint) {
  const std::string s = "a\xC3\xA9z";  // a é z
  EXPECT_EQ(Utf8CutPoint(s, 1), 1u);
  EXPECT_EQ(Utf8CutPoint(s, 2), 1u);  // inside é: back to its start
  EXPECT_EQ(Utf8CutPoint(s, 3), 3u);
  EXPECT_EQ(Utf8CutPoint(s, 10), 4u);
}

// A stream makes thousands of chunks: a chunk's buffer, handed back once its bytes are
// out, holds the next chunk's bytes instead of a fresh allocation.
TEST(OutputAssemblerTest, RecycledBuffersHoldTheNextChunks) {
  OutputAssembler assembler(1024);
  const std::string line(700, 'x');
  assembler.AddLine(OutputStream::kStdout, line);
  std::vector<OutputChunk> first = assembler.Take();
  ASSERT_EQ(first.size(), 1u);
  const char* buffer = first[0].data.data();
  assembler.Recycle(std::move(first[0].data));
  assembler.AddLine(OutputStream::kStderr, "second");
  std::vector<OutputChunk> second = assembler.Take();
  ASSERT_EQ(second.size(), 1u);
  EXPECT_EQ(second[0].stream, OutputStream::kStderr);
  EXPECT_EQ(second[0].data, "second\n");
  EXPECT_EQ(second[0].data.data(), buffer);
  // What a sink took leaves nothing to keep; a huge buffer is not kept either.
  assembler.Recycle(std::string());
  assembler.Recycle(std::string(1 << 20, 'h'));
  assembler.AddLine(OutputStream::kStdout, "third");
  EXPECT_EQ(assembler.Take()[0].data, "third\n");
}

}  // namespace
}  // namespace abx::core
