#include "tests/fake-opensandbox/multipart_stream.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bridge/opensandbox/multipart.h"

namespace fake_opensandbox {
namespace {

struct ReadPart {
  std::string name, filename, content_type, data;
};

// Feeds `body` in pieces of the sizes `next_size` gives; the parts read, or an error.
bool ReadAll(const std::string& boundary, const std::string& body, std::vector<ReadPart>* parts,
             const std::function<size_t()>& next_size, std::string* error) {
  parts->clear();
  MultipartStreamReader reader(
      boundary,
      [&](const MultipartPartHeader& h) {
        parts->push_back({h.name, h.filename, h.content_type, ""});
        return true;
      },
      [&](const char* data, size_t size) {
        if (parts->empty()) return false;
        parts->back().data.append(data, size);
        return true;
      });
  for (size_t pos = 0; pos < body.size();) {
    const size_t n = std::min(body.size() - pos, std::max<size_t>(1, next_size()));
    if (!reader.Feed(body.data() + pos, n)) {
      *error = reader.error();
      return false;
    }
    pos += n;
  }
  const bool ok = reader.Finish();
  *error = reader.error();
  return ok;
}

TEST(MultipartStreamTest, ReadsWhatTheBridgeWritesInAnyChunking) {
  uint64_t x = 0x2545F4914F6CDD1DULL;
  auto random = [&] {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    return x;
  };
  for (int round = 0; round < 300; ++round) {
    // Data full of CRs, LFs and dashes, so near-delimiters occur often.
    std::vector<std::string> contents;
    std::vector<abx::opensandbox::UploadFile> files;
    const int count = 1 + static_cast<int>(random() % 3);
    for (int f = 0; f < count; ++f) {
      std::string data(random() % 5000, '\0');
      for (char& c : data) c = "\r\n-abx-form\0\xff"[random() % 13];
      contents.push_back(std::move(data));
    }
    for (int f = 0; f < count; ++f) {
      files.push_back({"/d/file" + std::to_string(f), contents[f], 0644, "", ""});
    }
    const abx::opensandbox::MultipartBody body = abx::opensandbox::BuildUploadBody(files);
    EXPECT_EQ(MultipartBoundary(body.content_type), body.boundary);
    std::vector<ReadPart> parts;
    std::string error;
    const size_t max_piece = 1 + random() % 700;
    ASSERT_TRUE(ReadAll(body.boundary, body.body, &parts, [&] { return random() % max_piece; }, &error))
        << error;
    ASSERT_EQ(parts.size(), files.size() * 2);
    for (int f = 0; f < count; ++f) {
      EXPECT_EQ(parts[2 * f].name, "metadata");
      EXPECT_EQ(parts[2 * f].filename, "metadata");
      EXPECT_EQ(parts[2 * f].data, abx::opensandbox::UploadMetadataJson(files[f]));
      EXPECT_EQ(parts[2 * f + 1].name, "file");
      EXPECT_EQ(parts[2 * f + 1].filename, "file" + std::to_string(f));
      EXPECT_EQ(parts[2 * f + 1].content_type, "application/octet-stream");
      EXPECT_EQ(parts[2 * f + 1].data, contents[f]);
    }
  }
}

TEST(MultipartStreamTest, PreambleEpilogueBlanksAndNearDelimiters) {
  const std::string body =
      "preamble line\r\n--B  \r\n"
      "Content-Disposition: form-data; name=\"a\"; filename=\"x\\\"y\"\r\n\r\n"
      "one\r\n--Bx not a delimiter\r\n--B\t\r\n"
      "\r\n"
      "two\r\n--B--epilogue ignored";
  std::vector<ReadPart> parts;
  std::string error;
  for (size_t piece : {1u, 2u, 3u, 7u, 1000u}) {
    ASSERT_TRUE(ReadAll("B", body, &parts, [&] { return piece; }, &error)) << error;
    ASSERT_EQ(parts.size(), 2u);
    EXPECT_EQ(parts[0].name, "a");
    EXPECT_EQ(parts[0].filename, "x\"y");
    EXPECT_EQ(parts[0].data, "one\r\n--Bx not a delimiter");
    EXPECT_EQ(parts[1].name, "");
    EXPECT_EQ(parts[1].data, "two");
  }
}

TEST(MultipartStreamTest, RefusesBrokenBodies) {
  std::vector<ReadPart> parts;
  std::string error;
  auto whole = [] { return size_t{1} << 20; };
  EXPECT_FALSE(ReadAll("B", "no delimiter at all", &parts, whole, &error));
  EXPECT_FALSE(ReadAll("B", "--B\r\nContent-Disposition: form-data; name=a\r\n\r\ncut", &parts, whole,
                       &error));
  EXPECT_FALSE(ReadAll("B", "--B\r\nbroken header\r\n\r\nx\r\n--B--", &parts, whole, &error));
  EXPECT_FALSE(ReadAll("B", "--B\r\n" + std::string(MultipartStreamReader::kMaxHeaderBytes + 10, 'h'),
                       &parts, whole, &error));
  EXPECT_EQ(error, "part headers are too large");
  EXPECT_TRUE(ReadAll("B", "--B--", &parts, whole, &error)) << error;
  EXPECT_TRUE(parts.empty());
}

}  // namespace
}  // namespace fake_opensandbox
