#include "epp-shim/grpc_protocol.h"

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace abx::grpc_protocol {
namespace {

TEST(GrpcProtocolTest, HttpStatusesMapAsGrpcMapsThem) {
  EXPECT_EQ(CodeForHttpStatus(400), kInternal);
  EXPECT_EQ(CodeForHttpStatus(401), kUnauthenticated);
  EXPECT_EQ(CodeForHttpStatus(403), kPermissionDenied);
  EXPECT_EQ(CodeForHttpStatus(404), kUnimplemented);
  EXPECT_EQ(CodeForHttpStatus(503), kUnavailable);
  EXPECT_EQ(CodeForHttpStatus(500), kUnknown);
}

TEST(GrpcProtocolTest, TimeoutHeaderHasAtMostEightDigits) {
  EXPECT_EQ(TimeoutHeader(2000), "2000m");
  EXPECT_EQ(TimeoutHeader(0), "1m");
  EXPECT_EQ(TimeoutHeader(99999999), "99999999m");
  EXPECT_EQ(TimeoutHeader(100000000), "100000S");
  EXPECT_EQ(TimeoutHeader(int64_t{1} << 62), "99999999S");
}

TEST(GrpcProtocolTest, MessagePrefixIsFlagAndBigEndianLength) {
  EXPECT_EQ(MessagePrefix(0), std::string("\0\0\0\0\0", 5));
  EXPECT_EQ(MessagePrefix(0x01020304), std::string("\0\x01\x02\x03\x04", 5));
}

// Messages of several sizes (empty, small, one over the 64 KiB mark) fed in every
// chunking from single bytes to all at once come out whole, in order.
TEST(GrpcProtocolTest, AssemblerCutsAnyChunkingIntoTheSameMessages) {
  const std::vector<std::string> messages = {"", "a", std::string(70000, 'b'), "cd",
                                             std::string(300, '\0')};
  std::string stream;
  for (const std::string& m : messages) stream += MessagePrefix(m.size()) + m;
  for (size_t chunk : {size_t{1}, size_t{2}, size_t{5}, size_t{7}, size_t{4096},
                       size_t{65536}, stream.size()}) {
    MessageAssembler assembler(1 << 20);
    std::vector<std::string> got;
    Status error;
    for (size_t at = 0; at < stream.size(); at += chunk) {
      const size_t size = std::min(chunk, stream.size() - at);
      ASSERT_TRUE(assembler.Feed(stream.data() + at, size,
                                 [&](std::string_view m) { got.emplace_back(m); }, &error))
          << error.message;
    }
    EXPECT_EQ(got, messages) << "chunk " << chunk;
    EXPECT_EQ(assembler.pending_bytes(), 0u);
  }
}

TEST(GrpcProtocolTest, AssemblerRefusesCompressedAndOversizedMessages) {
  Status error;
  MessageAssembler compressed(100);
  const std::string flagged = std::string("\x01\0\0\0\x01", 5) + "x";
  EXPECT_FALSE(compressed.Feed(flagged.data(), flagged.size(), [](std::string_view) {}, &error));
  EXPECT_EQ(error.code, kInternal);
  EXPECT_NE(error.message.find("compressed"), std::string::npos);

  MessageAssembler small(100);
  const std::string big = MessagePrefix(101);
  int seen = 0;
  // The prefix alone is enough to refuse it, even cut in two.
  EXPECT_TRUE(small.Feed(big.data(), 3, [&](std::string_view) { ++seen; }, &error));
  EXPECT_FALSE(small.Feed(big.data() + 3, 2, [&](std::string_view) { ++seen; }, &error));
  EXPECT_EQ(error.code, kResourceExhausted);
  EXPECT_EQ(seen, 0);
}

}  // namespace
}  // namespace abx::grpc_protocol
