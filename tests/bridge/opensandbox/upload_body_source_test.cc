#include "bridge/opensandbox/upload_body_source.h"

#include <deque>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace abx::opensandbox {
namespace {

// Hands out its pieces one per Read (cut to the room given), then waits or ends.
class PieceSource : public BodySource {
 public:
  std::deque<std::string> pieces;
  bool ended = false;
  bool aborted = false;

  size_t Read(char* out, size_t size) override {
    if (aborted) return kAbort;
    if (pieces.empty()) return ended ? 0 : kWait;
    std::string& piece = pieces.front();
    const size_t n = std::min(size, piece.size());
    piece.copy(out, n);
    piece.erase(0, n);
    if (piece.empty()) pieces.pop_front();
    return n;
  }
  void SetResume(std::function<void()>) override {}
};

// Reads `body` `room` bytes at a time until it ends or answers something else.
size_t ReadAll(UploadBodySource& body, size_t room, std::string* out) {
  std::vector<char> buffer(room);
  for (;;) {
    const size_t n = body.Read(buffer.data(), room);
    if (n == 0 || n == BodySource::kWait || n == BodySource::kAbort) return n;
    out->append(buffer.data(), n);
  }
}

UploadFile File() {
  UploadFile file;
  file.path = "/data/out.bin";
  file.mode = 640;
  return file;
}

TEST(UploadBodySourceTest, MakesTheSameFormAsAWholeBody) {
  std::string bytes;
  for (int i = 0; i < 100000; ++i) bytes += static_cast<char>(i * 7919 >> 3);
  for (size_t room : {size_t{1}, size_t{7}, size_t{4096}, size_t{1} << 20}) {
    auto data = std::make_shared<PieceSource>();
    for (size_t at = 0; at < bytes.size(); at += 999) data->pieces.push_back(bytes.substr(at, 999));
    data->ended = true;
    UploadBodySource body(File(), data, [] { return std::string("b0undary"); });
    std::string made;
    EXPECT_FALSE(body.complete());
    EXPECT_EQ(ReadAll(body, room, &made), 0u);
    EXPECT_TRUE(body.complete());

    UploadFile whole = File();
    whole.data = bytes;
    MultipartBody expected = BuildUploadBody({whole}, [] { return std::string("b0undary"); });
    EXPECT_EQ(body.content_type(), expected.content_type);
    EXPECT_TRUE(made == expected.body) << "room " << room;
  }
}

TEST(UploadBodySourceTest, WaitsWithItsSourceAndEndsOnlyAfterIt) {
  auto data = std::make_shared<PieceSource>();
  data->pieces.push_back("abc");
  UploadBodySource body(File(), data, [] { return std::string("b0undary"); });
  std::string made;
  EXPECT_EQ(ReadAll(body, 64, &made), BodySource::kWait);
  EXPECT_FALSE(body.complete());
  EXPECT_NE(made.find("abc"), std::string::npos);
  EXPECT_EQ(made.find("b0undary--"), std::string::npos);  // not the end yet
  data->pieces.push_back("def");
  data->ended = true;
  EXPECT_EQ(ReadAll(body, 64, &made), 0u);
  EXPECT_TRUE(body.complete());
  EXPECT_NE(made.find("abcdef\r\n--b0undary--\r\n"), std::string::npos);
}

TEST(UploadBodySourceTest, AbortsWhenItsSourceDoes) {
  auto data = std::make_shared<PieceSource>();
  data->pieces.push_back("abc");
  data->aborted = true;
  UploadBodySource body(File(), data, [] { return std::string("b0undary"); });
  std::string made;
  EXPECT_EQ(ReadAll(body, 64, &made), BodySource::kAbort);
  EXPECT_FALSE(body.complete());
}

// The file's bytes are not known when the boundary is chosen: one holding "--boundary"
// would end the part early, so the form is abandoned, wherever the reads cut it.
TEST(UploadBodySourceTest, AbortsWhenTheBytesHoldTheBoundary) {
  const std::vector<std::vector<std::string>> holding = {
      {"xx--b0undaryxx"}, {"xx-", "-b0undary"}, {"xx--b0un", "dary"}, {"-", "-", "b0undar", "y"}};
  for (const auto& pieces : holding) {
    auto data = std::make_shared<PieceSource>();
    data->pieces.assign(pieces.begin(), pieces.end());
    data->ended = true;
    UploadBodySource body(File(), data, [] { return std::string("b0undary"); });
    std::string made;
    EXPECT_EQ(ReadAll(body, 64, &made), BodySource::kAbort) << pieces.front();
    EXPECT_FALSE(body.complete());
  }
  const std::vector<std::vector<std::string>> near = {
      {"--b0undar", "x"}, {"-b0undary"}, {"-", "b0undary"}, {"--b0", "", "undarx"}};
  for (const auto& pieces : near) {
    auto data = std::make_shared<PieceSource>();
    data->pieces.assign(pieces.begin(), pieces.end());
    data->ended = true;
    UploadBodySource body(File(), data, [] { return std::string("b0undary"); });
    std::string made;
    EXPECT_EQ(ReadAll(body, 64, &made), 0u) << pieces.front();
    EXPECT_TRUE(body.complete());
  }
}

}  // namespace
}  // namespace abx::opensandbox
