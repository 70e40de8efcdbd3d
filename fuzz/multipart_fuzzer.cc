// multipart/form-data (bridge/opensandbox/multipart.h). Three modes, chosen by the first
// byte: (0) a form built from fuzzed parts, with fuzzed (and colliding) boundary
// candidates, reads back as the same parts; (1) an upload body built from fuzzed files
// reads back as metadata/file pairs whose JSON names each file's path, owner, group and
// mode; (2) arbitrary bodies and Content-Types are read without harm, every part's data
// lying inside the body.

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <rapidjson/document.h>

#include "bridge/opensandbox/multipart.h"
#include "fuzz/check.h"

namespace {

using abx::fuzz::Printable;
using namespace abx::opensandbox;

// A boundary the writer can put in its Content-Type unquoted: RFC 2046 boundary
// characters that are also token characters (RandomBoundary's hex are).
std::string FuzzedBoundary(FuzzedDataProvider* provider) {
  static constexpr char kChars[] =
      "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'+_-.";
  const size_t length = provider->ConsumeIntegralInRange<size_t>(1, 8);
  std::string out;
  for (size_t i = 0; i < length; ++i) {
    out += kChars[provider->ConsumeIntegralInRange<size_t>(0, sizeof kChars - 2)];
  }
  return out;
}

// Short candidates that may well occur in the data first, then random ones.
BoundaryGenerator Candidates(std::vector<std::string> candidates) {
  auto next = std::make_shared<size_t>(0);
  return [candidates = std::move(candidates), next]() {
    return *next < candidates.size() ? candidates[(*next)++] : RandomBoundary();
  };
}

// What the reader gives back for a Content-Disposition parameter the writer quoted.
std::string AsWritten(const std::string& value) {
  std::string out;
  for (char c : value) {
    if (c == '"') {
      out += "%22";
    } else if (c == '\r') {
      out += "%0D";
    } else if (c == '\n') {
      out += "%0A";
    } else if (c == '\\') {
      out += "%5C";
    } else {
      out += c;
    }
  }
  return out;
}

// Header values are trimmed of blanks when read; a content type is one header line.
std::string HeaderSafe(std::string value) {
  for (char& c : value) {
    if (c == '\r' || c == '\n') c = '_';
  }
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.erase(0, 1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.pop_back();
  return value;
}

std::vector<MultipartPart> ReadBack(const MultipartBody& body) {
  FUZZ_CHECK(BoundaryFromContentType(body.content_type) == body.boundary,
             "Content-Type [%s] does not give boundary [%s]",
             Printable(body.content_type).c_str(), Printable(body.boundary).c_str());
  std::vector<MultipartPart> parts;
  std::string error;
  FUZZ_CHECK(ParseMultipart(body.boundary, body.body, &parts, &error),
             "a built body does not parse (%s): [%s]", error.c_str(),
             Printable(body.body, 600).c_str());
  return parts;
}

void BuiltFormReadsBack(FuzzedDataProvider* provider) {
  std::vector<std::string> candidates;
  const size_t candidate_count = provider->ConsumeIntegralInRange<size_t>(0, 3);
  for (size_t i = 0; i < candidate_count; ++i) candidates.push_back(FuzzedBoundary(provider));
  std::vector<std::string> names, filenames, types, datas;
  const size_t count = provider->ConsumeIntegralInRange<size_t>(0, 5);
  for (size_t i = 0; i < count; ++i) {
    names.push_back(provider->ConsumeRandomLengthString(40));
    filenames.push_back(provider->ConsumeRandomLengthString(40));
    types.push_back(HeaderSafe(provider->ConsumeRandomLengthString(40)));
    datas.push_back(provider->ConsumeRandomLengthString(4096));
  }
  std::vector<FormPart> parts;
  for (size_t i = 0; i < count; ++i) parts.push_back({names[i], filenames[i], types[i], datas[i]});
  const MultipartBody body = BuildMultipart(parts, Candidates(candidates));
  const std::vector<MultipartPart> read = ReadBack(body);
  FUZZ_CHECK(read.size() == count, "%zu parts written, %zu read", count, read.size());
  for (size_t i = 0; i < count; ++i) {
    FUZZ_CHECK(read[i].name == AsWritten(names[i]), "part %zu: name [%s] read as [%s]", i,
               Printable(names[i]).c_str(), Printable(read[i].name).c_str());
    FUZZ_CHECK(read[i].has_filename == !filenames[i].empty() &&
                   read[i].filename == AsWritten(filenames[i]),
               "part %zu: filename [%s] read as [%s]", i, Printable(filenames[i]).c_str(),
               Printable(read[i].filename).c_str());
    FUZZ_CHECK(read[i].content_type == types[i], "part %zu: type [%s] read as [%s]", i,
               Printable(types[i]).c_str(), Printable(read[i].content_type).c_str());
    FUZZ_CHECK(read[i].data == datas[i], "part %zu: %zu data bytes read as %zu", i,
               datas[i].size(), read[i].data.size());
  }
}

void UploadBodyReadsBack(FuzzedDataProvider* provider) {
  std::vector<std::string> datas;
  std::vector<UploadFile> files;
  const size_t count = provider->ConsumeIntegralInRange<size_t>(0, 4);
  for (size_t i = 0; i < count; ++i) {
    UploadFile file;
    file.path = provider->ConsumeRandomLengthString(60);
    file.owner = provider->ConsumeRandomLengthString(12);
    file.group = provider->ConsumeRandomLengthString(12);
    file.mode = provider->ConsumeIntegralInRange<int>(0, 7777);
    datas.push_back(provider->ConsumeRandomLengthString(4096));
    files.push_back(file);
  }
  for (size_t i = 0; i < count; ++i) files[i].data = datas[i];
  const MultipartBody body = BuildUploadBody(files);
  const std::vector<MultipartPart> read = ReadBack(body);
  FUZZ_CHECK(read.size() == 2 * count, "%zu files, %zu parts", count, read.size());
  for (size_t i = 0; i < count; ++i) {
    const MultipartPart& meta = read[2 * i];
    const MultipartPart& file = read[2 * i + 1];
    FUZZ_CHECK(meta.name == "metadata" && meta.has_filename && file.name == "file" &&
                   file.has_filename,
               "file %zu: parts [%s] and [%s], both need a filename", i,
               Printable(meta.name).c_str(), Printable(file.name).c_str());
    FUZZ_CHECK(file.filename == AsWritten(BaseName(files[i].path)),
               "file %zu: filename [%s] for path [%s]", i, Printable(file.filename).c_str(),
               Printable(files[i].path).c_str());
    FUZZ_CHECK(file.data == datas[i], "file %zu: data differs", i);
    rapidjson::Document doc;
    doc.Parse(meta.data.data(), meta.data.size());
    FUZZ_CHECK(!doc.HasParseError() && doc.IsObject() && doc.HasMember("path") &&
                   doc["path"].IsString() &&
                   std::string(doc["path"].GetString(), doc["path"].GetStringLength()) ==
                       files[i].path,
               "file %zu: metadata [%s] does not name path [%s]", i,
               Printable(std::string(meta.data)).c_str(), Printable(files[i].path).c_str());
    const bool has_mode = doc.HasMember("mode");
    FUZZ_CHECK(has_mode == (files[i].mode != 0) &&
                   (!has_mode || (doc["mode"].IsInt() && doc["mode"].GetInt() == files[i].mode)),
               "file %zu: metadata [%s], mode %d", i, Printable(std::string(meta.data)).c_str(),
               files[i].mode);
  }
}

void ArbitraryBodyIsRead(FuzzedDataProvider* provider) {
  const std::string content_type = provider->ConsumeRandomLengthString(100);
  const std::string boundary_text = BoundaryFromContentType(content_type);
  const std::string boundary =
      provider->ConsumeBool() ? boundary_text : provider->ConsumeRandomLengthString(20);
  const std::string body = provider->ConsumeRemainingBytesAsString();
  std::vector<MultipartPart> parts;
  std::string error;
  if (!ParseMultipart(boundary, body, &parts, &error)) {
    FUZZ_CHECK(!error.empty(), "refused without a reason");
    return;
  }
  for (const MultipartPart& part : parts) {
    FUZZ_CHECK(part.data.data() >= body.data() &&
                   part.data.data() + part.data.size() <= body.data() + body.size(),
               "a part's data lies outside the body");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider provider(data, size);
  switch (provider.ConsumeIntegralInRange<int>(0, 2)) {
    case 0:
      BuiltFormReadsBack(&provider);
      break;
    case 1:
      UploadBodyReadsBack(&provider);
      break;
    default:
      ArbitraryBodyIsRead(&provider);
      break;
  }
  return 0;
}
