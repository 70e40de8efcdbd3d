#include "bridge/api/epp/write_prefix.h"

#include <string>

#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>

namespace abx::epp {
namespace {

// Follows the request object's members until params' "data" key, and stops the reader
// there (by returning false); anything that rules the line out stops it too.
class PrefixHandler : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, PrefixHandler> {
 public:
  bool reached_data() const { return reached_data_; }
  const WritePrefix& prefix() const { return prefix_; }

  bool Key(const char* text, rapidjson::SizeType length, bool) {
    key_.assign(text, length);
    if (depth_ == 2 && in_params_ && key_ == "data") {
      reached_data_ = have_sandbox_ && have_path_;
      return false;
    }
    return true;
  }
  bool String(const char* text, rapidjson::SizeType length, bool) {
    const std::string value(text, length);
    if (depth_ == 1 && key_ == "method") is_write_ = value == "files.write";
    if (depth_ != 2 || !in_params_) return true;
    if (key_ == "sandbox_id") {
      prefix_.sandbox_id = value;
      have_sandbox_ = true;
    } else if (key_ == "path") {
      prefix_.path = value;
      have_path_ = true;
    } else if (key_ == "mode") {
      prefix_.mode = value;
    } else if (key_ == "encoding") {
      prefix_.encoding = value;
    } else if (key_ == "append") {
      return false;  // a type the handler refuses
    }
    return true;
  }
  bool Bool(bool value) {
    if (depth_ != 2 || !in_params_ || key_ != "append") return Other();
    prefix_.append = value;
    return true;
  }
  // Numbers and null: fine anywhere but as one of the members read above.
  bool Default() { return Other(); }
  bool StartObject() {
    if (depth_ == 1 && key_ == "params") {
      if (!is_write_) return false;  // not a files.write, or its method comes later
      in_params_ = true;
    } else if (depth_ == 2 && in_params_) {
      if (!Other()) return false;
    }
    ++depth_;
    return true;
  }
  bool EndObject(rapidjson::SizeType) {
    --depth_;
    return depth_ != 1 || !in_params_;  // params ended without data
  }
  bool StartArray() {
    if (depth_ == 2 && in_params_ && !Other()) return false;
    if (depth_ == 0) return false;  // not an object
    ++depth_;
    return true;
  }
  bool EndArray(rapidjson::SizeType) {
    --depth_;
    return true;
  }

 private:
  // Any other value: refused for the members read above (a type the handler refuses;
  // it answers that), fine for the rest.
  bool Other() const {
    if (depth_ != 2 || !in_params_) return true;
    return key_ != "sandbox_id" && key_ != "path" && key_ != "mode" && key_ != "encoding" &&
           key_ != "append";
  }

  WritePrefix prefix_;
  std::string key_;  // the last key read, at whatever depth
  int depth_ = 0;    // 1 inside the request object, 2 inside params (or another member)
  bool is_write_ = false;
  bool in_params_ = false;
  bool have_sandbox_ = false;
  bool have_path_ = false;
  bool reached_data_ = false;
};

bool IsBlank(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

}  // namespace

std::optional<WritePrefix> ReadWritePrefix(std::string_view prefix) {
  rapidjson::MemoryStream stream(prefix.data(), prefix.size());
  PrefixHandler handler;
  rapidjson::Reader reader;
  // Iterative: a prefix of the host's may nest deeply before its data.
  reader.Parse<rapidjson::kParseIterativeFlag>(stream, handler);
  if (!handler.reached_data()) return std::nullopt;
  // The reader stopped just after the "data" key: then ':' and the string's quote.
  size_t pos = stream.Tell();
  while (pos < prefix.size() && IsBlank(prefix[pos])) ++pos;
  if (pos >= prefix.size() || prefix[pos] != ':') return std::nullopt;
  ++pos;
  while (pos < prefix.size() && IsBlank(prefix[pos])) ++pos;
  if (pos >= prefix.size() || prefix[pos] != '"') return std::nullopt;
  WritePrefix out = handler.prefix();
  out.data_begin = pos + 1;
  return out;
}

}  // namespace abx::epp
