#pragma once
// multipart/form-data for execd's POST /files/upload, and a small reader for tests, the fake
// server and fuzzers.
//
// execd pairs the k-th "metadata" part with the k-th "file" part, and it only sees a
// "metadata" part sent as a *file* part (with a filename): Go's form parser files parts
// without one as plain values, which execd ignores ("metadata file is missing"). So both
// parts of a pair carry a filename. The boundary is random and checked against every part,
// so it never occurs in the data, whatever bytes the files hold.

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "bridge/http/header_map.h"

namespace abx::opensandbox {

// One file to upload.
struct UploadFile {
  std::string path;       // where execd writes it (metadata "path")
  std::string_view data;  // the contents; must stay valid until the body is built
  int mode = 0;           // permission as octal digits read as decimal (755); 0 = leave as is
  std::string owner;      // user name; "" = omitted
  std::string group;      // group name; "" = omitted
};

// One part of a form to write.
struct FormPart {
  std::string name;          // Content-Disposition name
  std::string filename;      // "" = no filename parameter (a plain form value)
  std::string content_type;  // "" = no Content-Type header
  std::string_view data;     // must stay valid until the body is built
};

struct MultipartBody {
  std::string content_type;  // "multipart/form-data; boundary=<boundary>"
  std::string boundary;
  std::string body;
};

// Whether `needle` occurs in `haystack` (how a boundary is checked against the bytes).
bool Contains(std::string_view haystack, std::string_view needle);

// Makes a fresh random boundary candidate.
using BoundaryGenerator = std::function<std::string()>;
std::string RandomBoundary();

// The body of one POST /files/upload for `files`, each as a pair of parts: "metadata"
// (filename "metadata", application/json, {"path","owner"?,"group"?,"mode"?}) and "file"
// (filename = the base name of the path, application/octet-stream). The data is copied
// once, into a body allocated at its final size.
MultipartBody BuildUploadBody(const std::vector<UploadFile>& files,
                              const BoundaryGenerator& make_boundary = RandomBoundary);

// The metadata JSON execd expects for `file`.
std::string UploadMetadataJson(const UploadFile& file);

// The base name of a sandbox path ("/a/b.txt" → "b.txt"); "file" when there is none.
std::string BaseName(std::string_view path);

// Any multipart/form-data body. `make_boundary` is asked again until its answer occurs in
// no part (tests inject a colliding one).
MultipartBody BuildMultipart(const std::vector<FormPart>& parts,
                             const BoundaryGenerator& make_boundary = RandomBoundary);

// --- reading ---

struct MultipartPart {
  http::HeaderMap headers;
  std::string name;          // from Content-Disposition
  std::string filename;      // from Content-Disposition; "" when absent
  bool has_filename = false;
  std::string content_type;  // "" when absent
  std::string_view data;     // points into the parsed body
};

// The boundary parameter of a multipart Content-Type, unquoted; "" when there is none.
std::string BoundaryFromContentType(std::string_view content_type);

// Splits `body` into parts (RFC 2046: preamble and epilogue ignored, CRLF line ends).
// False with `error` set when the body is malformed or has no closing delimiter.
bool ParseMultipart(std::string_view boundary, std::string_view body,
                    std::vector<MultipartPart>* parts, std::string* error);

}  // namespace abx::opensandbox
