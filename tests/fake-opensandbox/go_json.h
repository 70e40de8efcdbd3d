#pragma once

// JSON as Go's encoding/json writes it, for everything execd answers:
//   * compact, keys in the order they are written;
//   * `<`, `>`, `&` as \u003c \u003e \u0026, U+2028/U+2029 as \u2028/\u2029;
//   * \b \f \n \r \t short escapes (Go >= 1.22), other control bytes as \u00XX;
//   * invalid UTF-8 replaced by \ufffd, one per bad byte, as utf8.DecodeRune does.
// AppendGoJsonString is on the hot path of command output (every line of a 256 MiB
// stream goes through it), so it copies runs of plain bytes in bulk.

#include <cstdint>
#include <string>
#include <string_view>

namespace fake_opensandbox {

// Appends `text` as a quoted, escaped JSON string.
void AppendGoJsonString(std::string* out, std::string_view text);

// A minimal streaming writer that inserts the commas itself.
class GoJsonWriter {
 public:
  GoJsonWriter& StartObject();
  GoJsonWriter& EndObject();
  GoJsonWriter& StartArray();
  GoJsonWriter& EndArray();
  GoJsonWriter& Key(std::string_view key);
  GoJsonWriter& String(std::string_view value);
  GoJsonWriter& Int(int64_t value);
  GoJsonWriter& Uint(uint64_t value);
  GoJsonWriter& Double(double value);
  GoJsonWriter& Bool(bool value);

  const std::string& str() const { return out_; }
  std::string Take() { return std::move(out_); }

 private:
  void BeforeValue();

  std::string out_;
  bool need_comma_ = false;
};

// `{"code":..,"message":..}` with Go's omitempty on both keys.
std::string GoErrorBody(std::string_view code, std::string_view message);

}  // namespace fake_opensandbox
