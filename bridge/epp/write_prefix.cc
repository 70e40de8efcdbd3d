#include "bridge/epp/write_prefix.h"

namespace abx::epp {
namespace {

// A cursor over the prefix. Every read fails (returns false) at anything it does not
// take, including the prefix's end.
class Cursor {
 public:
  explicit Cursor(std::string_view text) : text_(text) {}

  size_t pos() const { return pos_; }

  bool Take(char c) {
    SkipBlanks();
    if (pos_ >= text_.size() || text_[pos_] != c) return false;
    ++pos_;
    return true;
  }
  // A string without escapes or control bytes (the line is checked whole later).
  bool String(std::string* out) {
    if (!Take('"')) return false;
    const size_t begin = pos_;
    while (pos_ < text_.size() && text_[pos_] != '"') {
      const unsigned char c = static_cast<unsigned char>(text_[pos_]);
      if (c == '\\' || c < 0x20) return false;
      ++pos_;
    }
    if (pos_ >= text_.size()) return false;
    *out = std::string(text_.substr(begin, pos_ - begin));
    ++pos_;
    return true;
  }
  // A number, true, false or null: its text.
  bool Scalar(std::string* out) {
    SkipBlanks();
    const size_t begin = pos_;
    while (pos_ < text_.size() && (IsWordByte(text_[pos_]))) ++pos_;
    if (pos_ == begin || pos_ >= text_.size()) return false;  // the end may cut it
    *out = std::string(text_.substr(begin, pos_ - begin));
    return true;
  }
  // Any plain value: a string as above or a scalar.
  bool Value(std::string* out, bool* is_string) {
    SkipBlanks();
    *is_string = pos_ < text_.size() && text_[pos_] == '"';
    return *is_string ? String(out) : Scalar(out);
  }
  bool Peek(char c) {
    SkipBlanks();
    return pos_ < text_.size() && text_[pos_] == c;
  }

 private:
  static bool IsWordByte(char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || c == '-' || c == '+' ||
           c == '.' || c == 'E';
  }
  void SkipBlanks() {
    while (pos_ < text_.size() &&
           (text_[pos_] == ' ' || text_[pos_] == '\t' || text_[pos_] == '\r' || text_[pos_] == '\n')) {
      ++pos_;
    }
  }

  std::string_view text_;
  size_t pos_ = 0;
};

// Reads params' members up to "data"; true with `out` filled when it is reached.
bool ReadParams(Cursor& in, WritePrefix* out) {
  if (!in.Take('{')) return false;
  bool have_sandbox = false, have_path = false;
  for (bool first = true;; first = false) {
    if (!first && !in.Take(',')) return false;
    std::string key, value;
    bool is_string = false;
    if (!in.String(&key) || !in.Take(':')) return false;
    if (key == "data") {
      if (!have_sandbox || !have_path || !in.Peek('"')) return false;
      in.Take('"');
      out->data_begin = in.pos();
      return true;
    }
    if (!in.Value(&value, &is_string)) return false;
    if (key == "sandbox_id" && is_string) {
      out->sandbox_id = value;
      have_sandbox = true;
    } else if (key == "path" && is_string) {
      out->path = value;
      have_path = true;
    } else if (key == "mode" && is_string) {
      out->mode = value;
    } else if (key == "encoding" && is_string) {
      out->encoding = value;
    } else if (key == "append" && (value == "true" || value == "false")) {
      out->append = value == "true";
    } else if (key == "sandbox_id" || key == "path" || key == "mode" || key == "encoding" ||
               key == "append") {
      return false;  // a type the handler refuses: it answers that
    }
  }
}

}  // namespace

std::optional<WritePrefix> ReadWritePrefix(std::string_view prefix) {
  Cursor in(prefix);
  if (!in.Take('{')) return std::nullopt;
  bool is_write = false;
  for (bool first = true;; first = false) {
    if (!first && !in.Take(',')) return std::nullopt;
    std::string key, value;
    bool is_string = false;
    if (!in.String(&key) || !in.Take(':')) return std::nullopt;
    if (key == "params") {
      WritePrefix out;
      if (!is_write || !ReadParams(in, &out)) return std::nullopt;
      return out;
    }
    if (!in.Value(&value, &is_string)) return std::nullopt;
    if (key == "method") is_write = is_string && value == "files.write";
  }
}

}  // namespace abx::epp
