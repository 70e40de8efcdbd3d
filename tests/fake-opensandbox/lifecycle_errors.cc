#include "tests/fake-opensandbox/lifecycle_errors.h"

#include <cstring>

#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace fake_opensandbox {
namespace {

void MaskPasswords(rapidjson::Value& value, rapidjson::Document::AllocatorType& alloc) {
  if (value.IsObject()) {
    for (auto it = value.MemberBegin(); it != value.MemberEnd(); ++it) {
      const bool secret = it->name.IsString() && (strcmp(it->name.GetString(), "password") == 0 ||
                                                  strcmp(it->name.GetString(), "accessKeySecret") == 0);
      if (secret && it->value.IsString()) {
        it->value.SetString("***", alloc);
      } else {
        MaskPasswords(it->value, alloc);
      }
    }
  } else if (value.IsArray()) {
    for (auto& item : value.GetArray()) MaskPasswords(item, alloc);
  }
}

}  // namespace

std::string CodeMessageBody(const std::string& code, const std::string& message) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("code");
  w.String(code.c_str(), static_cast<rapidjson::SizeType>(code.size()));
  w.Key("message");
  w.String(message.c_str(), static_cast<rapidjson::SizeType>(message.size()));
  w.EndObject();
  return buffer.GetString();
}

ValidationErrors::ValidationErrors() { detail_.SetArray(); }

void ValidationErrors::Add(const std::string& type, const Loc& loc, const std::string& msg,
                           const rapidjson::Value* input, const std::string& ctx_json) {
  auto& alloc = detail_.GetAllocator();
  rapidjson::Value error(rapidjson::kObjectType);
  error.AddMember("type", rapidjson::Value(type.c_str(), alloc), alloc);
  rapidjson::Value loc_array(rapidjson::kArrayType);
  for (const auto& part : loc) {
    if (std::holds_alternative<int>(part)) {
      loc_array.PushBack(std::get<int>(part), alloc);
    } else {
      loc_array.PushBack(rapidjson::Value(std::get<std::string>(part).c_str(), alloc), alloc);
    }
  }
  error.AddMember("loc", loc_array, alloc);
  error.AddMember("msg", rapidjson::Value(msg.c_str(), alloc), alloc);
  rapidjson::Value input_copy;
  if (input) {
    input_copy.CopyFrom(*input, alloc);
    MaskPasswords(input_copy, alloc);
  }
  error.AddMember("input", input_copy, alloc);
  if (!ctx_json.empty()) {
    rapidjson::Document ctx;
    ctx.Parse(ctx_json.c_str());
    if (!ctx.HasParseError()) {
      rapidjson::Value ctx_copy;
      ctx_copy.CopyFrom(ctx, alloc);
      error.AddMember("ctx", ctx_copy, alloc);
    }
  }
  detail_.PushBack(error, alloc);
  ++count_;
}

void ValidationErrors::AddWithStringInput(const std::string& type, const Loc& loc,
                                          const std::string& msg, const std::string& input,
                                          const std::string& ctx_json) {
  rapidjson::Value value(input.c_str(), static_cast<rapidjson::SizeType>(input.size()),
                         detail_.GetAllocator());
  Add(type, loc, msg, &value, ctx_json);
}

std::string ValidationErrors::ToJson() const {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> w(buffer);
  w.StartObject();
  w.Key("detail");
  detail_.Accept(w);
  w.EndObject();
  return buffer.GetString();
}

}  // namespace fake_opensandbox
