#include "common/line_id.h"

#include <rapidjson/memorystream.h>
#include <rapidjson/reader.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include <cstdint>

namespace abx {
namespace {

// Stops at the first member that settles the answer: returning false ends the parse.
class CutLineIdHandler
    : public rapidjson::BaseReaderHandler<rapidjson::UTF8<>, CutLineIdHandler> {
 public:
  CutLineIdHandler(const rapidjson::MemoryStream* stream, size_t size)
      : stream_(stream), size_(size) {}

  bool found() const { return found_; }
  const std::string& id_json() const { return id_json_; }

  bool Null() { return Scalar([](Writer* w) { w->Null(); }); }
  bool Bool(bool) { return depth_ == 1 && key_ == "id" ? false : depth_ != 0; }
  bool Int(int v) { return Scalar([&](Writer* w) { w->Int(v); }); }
  bool Uint(unsigned v) { return Scalar([&](Writer* w) { w->Uint(v); }); }
  bool Int64(int64_t v) { return Scalar([&](Writer* w) { w->Int64(v); }); }
  bool Uint64(uint64_t v) { return Scalar([&](Writer* w) { w->Uint64(v); }); }
  bool Double(double v) { return Scalar([&](Writer* w) { w->Double(v); }); }
  bool String(const char* text, rapidjson::SizeType length, bool) {
    return Scalar([&](Writer* w) { w->String(text, length); });
  }
  bool Key(const char* text, rapidjson::SizeType length, bool) {
    key_.assign(text, length);
    return true;
  }
  // The root object opens; anything nested in it ends the search.
  bool StartObject() { return depth_++ == 0; }
  bool StartArray() { return false; }
  bool EndObject(rapidjson::SizeType) { return false; }

 private:
  using Writer = rapidjson::Writer<rapidjson::StringBuffer>;

  template <typename WriteValue>
  bool Scalar(WriteValue write_value) {
    if (depth_ != 1) return false;  // a scalar root: no id
    if (key_ != "id") return true;
    if (stream_->Tell() < size_) {
      rapidjson::StringBuffer buffer;
      Writer writer(buffer);
      write_value(&writer);
      // Nothing when the writer refused the value (a too-large number read as infinity).
      if (buffer.GetSize() > 0) {
        id_json_.assign(buffer.GetString(), buffer.GetSize());
        found_ = true;
      }
    }
    return false;
  }

  const rapidjson::MemoryStream* stream_;
  const size_t size_;
  int depth_ = 0;
  std::string key_;
  bool found_ = false;
  std::string id_json_;
};

}  // namespace

bool ReadCutLineId(std::string_view prefix, std::string* id_json) {
  rapidjson::MemoryStream stream(prefix.data(), prefix.size());
  CutLineIdHandler handler(&stream, prefix.size());
  rapidjson::Reader reader;
  // Iterative: 8 MiB of '[' must not exhaust the stack. Validating: the cut may fall
  // inside a character, and the parser's own check stops there.
  reader.Parse<rapidjson::kParseIterativeFlag | rapidjson::kParseValidateEncodingFlag>(stream,
                                                                                        handler);
  if (!handler.found()) return false;
  *id_json = handler.id_json();
  return true;
}

}  // namespace abx
