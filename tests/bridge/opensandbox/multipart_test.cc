#include "bridge/opensandbox/multipart.h"

#include <rapidjson/document.h>

#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace abx::opensandbox {
namespace {

// Bytes designed to break a careless multipart writer or reader.
std::string NastyBytes() {
  std::string data = "--\r\n--\r\n\r\n--abx-form-\r\n-- boundary --\r\n\r\n";
  for (int c = 0; c < 256; ++c) data += static_cast<char>(c);
  data += "\r\n--";
  return data;
}

std::vector<MultipartPart> ParseOrFail(const MultipartBody& body) {
  std::vector<MultipartPart> parts;
  std::string error;
  EXPECT_EQ(BoundaryFromContentType(body.content_type), body.boundary);
  EXPECT_TRUE(ParseMultipart(body.boundary, body.body, &parts, &error)) << error;
  return parts;
}

TEST(MultipartTest, UploadBodyRoundTrips) {
  const std::string binary = NastyBytes();
  const std::string empty;
  const std::string text = "hello\n";
  std::vector<UploadFile> files = {
      {"/tmp/dir/data.bin", binary, 755, "root", "wheel"},
      {"relative/empty", empty, 0, "", ""},
      {"/home/u/notes.txt", text, 644, "", ""},
  };
  MultipartBody body = BuildUploadBody(files);
  EXPECT_EQ(body.content_type, "multipart/form-data; boundary=" + body.boundary);
  std::vector<MultipartPart> parts = ParseOrFail(body);
  ASSERT_EQ(parts.size(), 6u);
  for (size_t i = 0; i < files.size(); ++i) {
    const MultipartPart& metadata = parts[2 * i];
    const MultipartPart& file = parts[2 * i + 1];
    // execd only sees the metadata part when it is a file part.
    EXPECT_EQ(metadata.name, "metadata");
    EXPECT_TRUE(metadata.has_filename);
    EXPECT_EQ(metadata.filename, "metadata");
    EXPECT_EQ(metadata.content_type, "application/json");
    EXPECT_EQ(metadata.headers.Get("content-disposition"),
              "form-data; name=\"metadata\"; filename=\"metadata\"");
    EXPECT_EQ(file.name, "file");
    EXPECT_EQ(file.content_type, "application/octet-stream");
    EXPECT_EQ(file.data, files[i].data) << "file " << i;

    rapidjson::Document json;
    json.Parse(metadata.data.data(), metadata.data.size());
    ASSERT_FALSE(json.HasParseError()) << metadata.data;
    EXPECT_EQ(std::string(json["path"].GetString()), files[i].path);
    EXPECT_EQ(json.HasMember("mode"), files[i].mode != 0);
    EXPECT_EQ(json.HasMember("owner"), !files[i].owner.empty());
    EXPECT_EQ(json.HasMember("group"), !files[i].group.empty());
  }
  EXPECT_EQ(parts[1].filename, "data.bin");
  EXPECT_EQ(parts[3].filename, "empty");
  EXPECT_EQ(parts[5].filename, "notes.txt");
}

TEST(MultipartTest, MetadataJsonMatchesExecd) {
  EXPECT_EQ(UploadMetadataJson({"/a/b", {}, 755, "alice", "staff"}),
            "{\"path\":\"/a/b\",\"owner\":\"alice\",\"group\":\"staff\",\"mode\":755}");
  EXPECT_EQ(UploadMetadataJson({"/a \"q\"\n", {}, 0, "", ""}), "{\"path\":\"/a \\\"q\\\"\\n\"}");
}

TEST(MultipartTest, BaseNames) {
  EXPECT_EQ(BaseName("/a/b/c.txt"), "c.txt");
  EXPECT_EQ(BaseName("c.txt"), "c.txt");
  EXPECT_EQ(BaseName("/a/dir/"), "dir");
  EXPECT_EQ(BaseName("/"), "file");
  EXPECT_EQ(BaseName(""), "file");
}

TEST(MultipartTest, BoundaryThatOccursInTheDataIsReplaced) {
  const std::string data = "abc\r\n--collide\r\nxyz";
  int asked = 0;
  auto generator = [&] {
    ++asked;
    return asked == 1 ? std::string("collide") : std::string("fresh");
  };
  MultipartBody body = BuildMultipart({{"file", "f", "", data}}, generator);
  EXPECT_EQ(asked, 2);
  EXPECT_EQ(body.boundary, "fresh");
  std::vector<MultipartPart> parts = ParseOrFail(body);
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].data, data);
  EXPECT_TRUE(parts[0].content_type.empty());
}

TEST(MultipartTest, RandomBoundariesDiffer) {
  std::string a = RandomBoundary();
  std::string b = RandomBoundary();
  EXPECT_NE(a, b);
  EXPECT_GE(a.size(), 32u);
  EXPECT_LE(a.size(), 70u);  // RFC 2046 limit
}

TEST(MultipartTest, FilenamesCannotBreakTheHeader) {
  const std::string data = "x";
  MultipartBody body = BuildMultipart({{"file", "a\"b\r\nc.txt", "text/plain", data}});
  std::vector<MultipartPart> parts = ParseOrFail(body);
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_EQ(parts[0].filename, "a%22b%0D%0Ac.txt");
  EXPECT_EQ(parts[0].data, "x");
}

TEST(MultipartTest, PlainValuePartHasNoFilename) {
  const std::string data = "v";
  std::vector<MultipartPart> parts = ParseOrFail(BuildMultipart({{"field", "", "", data}}));
  ASSERT_EQ(parts.size(), 1u);
  EXPECT_FALSE(parts[0].has_filename);
  EXPECT_EQ(parts[0].name, "field");
}

TEST(MultipartReaderTest, HandlesPreambleEpilogueAndPadding) {
  std::string body =
      "preamble line\r\n"
      "--B  \r\n"
      "content-disposition: form-data; name=file; filename=\"q\\\"uoted\"\r\n"
      "\r\n"
      "data with \r\n--Bnot-a-boundary inside\r\n"
      "--B\r\n"
      "\r\n"
      "no headers\r\n"
      "--B--\r\n"
      "epilogue";
  std::vector<MultipartPart> parts;
  std::string error;
  ASSERT_TRUE(ParseMultipart("B", body, &parts, &error)) << error;
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].name, "file");
  EXPECT_EQ(parts[0].filename, "q\"uoted");
  EXPECT_EQ(parts[0].data, "data with \r\n--Bnot-a-boundary inside");
  EXPECT_TRUE(parts[1].headers.empty());
  EXPECT_EQ(parts[1].data, "no headers");
}

TEST(MultipartReaderTest, RejectsMalformedBodies) {
  std::vector<MultipartPart> parts;
  std::string error;
  EXPECT_FALSE(ParseMultipart("B", "no delimiter here", &parts, &error));
  EXPECT_FALSE(ParseMultipart("", "--\r\n", &parts, &error));
  EXPECT_FALSE(ParseMultipart("B", "--B\r\nName: v\r\n\r\ndata without end", &parts, &error));
  EXPECT_NE(error.find("no closing boundary"), std::string::npos) << error;
  EXPECT_FALSE(ParseMultipart("B", "--B\r\nno colon\r\n\r\nx\r\n--B--", &parts, &error));
  EXPECT_FALSE(ParseMultipart("B", "--B\r\nName: v", &parts, &error));
  EXPECT_FALSE(ParseMultipart("B", "--Bx\r\n", &parts, &error));
  EXPECT_TRUE(ParseMultipart("B", "--B--", &parts, &error)) << error;
  EXPECT_TRUE(parts.empty());
}

TEST(MultipartReaderTest, BoundaryFromContentType) {
  EXPECT_EQ(BoundaryFromContentType("multipart/form-data; boundary=abc"), "abc");
  EXPECT_EQ(BoundaryFromContentType("multipart/form-data;charset=utf-8; BOUNDARY=\"a b\""), "a b");
  EXPECT_EQ(BoundaryFromContentType("multipart/form-data"), "");
  EXPECT_EQ(BoundaryFromContentType("text/plain; charset=utf-8"), "");
}

TEST(MultipartTest, LargeUploadIsBuiltAtItsFinalSize) {
  std::string data(8 << 20, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<char>((i * 2654435761u) >> 13);
  MultipartBody body = BuildUploadBody({{"/big", data, 0, "", ""}});
  EXPECT_LT(body.body.capacity() - body.body.size(), 64u);
  std::vector<MultipartPart> parts = ParseOrFail(body);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_TRUE(parts[1].data == data);
}

}  // namespace
}  // namespace abx::opensandbox
