#pragma once
// A multipart/form-data body read as it arrives, the way Go's mime/multipart.Reader
// (which execd uses) reads it: each part is announced with its Content-Disposition name
// and filename, then its data is handed over in pieces and never held whole.
//
// Delimiters (RFC 2046 as Go reads them): the first "--boundary" opens the body at its
// start or after a preamble line; inside a part, data runs to the next CRLF
// "--boundary" that ends its line ("--" for the closing one, else optional blanks and
// CRLF); anything else after it is data. Part headers are at most kMaxHeaderBytes.
//
// The fake's own reader rather than cpp-httplib's: that one looks for the delimiter one
// byte at a time, which was a third of the fake's time on large uploads; this one lets
// memchr find each CR. Nor the bridge's (bridge/opensandbox/multipart.h), although they
// share small helpers: a double that reads bodies with the product's own code would
// accept whatever mistakes that code makes in writing them.

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>

namespace fake_opensandbox {

// The boundary parameter of a multipart Content-Type, unquoted; "" when there is none.
std::string MultipartBoundary(std::string_view content_type);

struct MultipartPartHeader {
  std::string name;          // Content-Disposition name
  std::string filename;      // Content-Disposition filename; "" when absent
  std::string content_type;  // "" when absent
};

class MultipartStreamReader {
 public:
  static constexpr size_t kMaxHeaderBytes = 16 << 10;

  // Each callback returns false to stop reading (Feed then returns false).
  using OnPart = std::function<bool(const MultipartPartHeader& header)>;
  using OnData = std::function<bool(const char* data, size_t size)>;

  MultipartStreamReader(std::string boundary, OnPart on_part, OnData on_data);

  // Reads the next piece of the body; false when the body is malformed (error() says
  // how) or a callback stopped it.
  bool Feed(const char* data, size_t size);
  // The end of the body: true when the closing delimiter was seen.
  bool Finish();
  const std::string& error() const { return error_; }

 private:
  enum class State { kPreamble, kDelimiterLine, kHeaders, kData, kEpilogue, kFailed };

  // Each step consumes from buffer_ at pos_ and returns false when it needs more bytes.
  bool StepPreamble();
  bool StepDelimiterLine();
  bool StepHeaders();
  bool StepData();
  bool Fail(std::string error);
  // At `at` (just after "--boundary"): 1 the line ends a delimiter (sets closing_ and
  // the position after it), 0 it does not, -1 not enough bytes to tell yet.
  int DelimiterEndsAt(size_t at, size_t* after);

  const std::string delimiter_;        // "--" boundary
  const std::string inner_delimiter_;  // CRLF "--" boundary
  OnPart on_part_;
  OnData on_data_;
  State state_ = State::kPreamble;
  std::string buffer_;  // bytes received and not yet consumed, from pos_
  size_t pos_ = 0;
  size_t scan_ = 0;     // kData: where the search for the next CR resumes
  bool at_body_start_ = true;
  bool closing_ = false;
  bool stopped_ = false;
  std::string error_;
};

}  // namespace fake_opensandbox
