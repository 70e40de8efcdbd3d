#include "tests/fake-opensandbox/code_events.h"

#include <algorithm>
#include <vector>

#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"
#include "tests/fake-opensandbox/go_json.h"

namespace fake_opensandbox {
namespace {

void AppendTimestamp(std::string* out, int64_t timestamp_ms) {
  if (timestamp_ms != 0) out->append(",\"timestamp\":" + std::to_string(timestamp_ms));
}

std::string_view Text(const rapidjson::Value& v) {
  return std::string_view(v.GetString(), v.GetStringLength());
}

}  // namespace

void AppendGoJsonValue(std::string* out, const rapidjson::Value& value) {
  if (value.IsString()) {
    AppendGoJsonString(out, Text(value));
  } else if (value.IsObject()) {
    std::vector<const rapidjson::Value::Member*> members;
    for (const auto& m : value.GetObject()) members.push_back(&m);
    std::sort(members.begin(), members.end(), [](const auto* a, const auto* b) {
      return Text(a->name) < Text(b->name);
    });
    out->push_back('{');
    for (size_t i = 0; i < members.size(); ++i) {
      if (i) out->push_back(',');
      AppendGoJsonString(out, Text(members[i]->name));
      out->push_back(':');
      AppendGoJsonValue(out, members[i]->value);
    }
    out->push_back('}');
  } else if (value.IsArray()) {
    out->push_back('[');
    bool first = true;
    for (const auto& item : value.GetArray()) {
      if (!first) out->push_back(',');
      first = false;
      AppendGoJsonValue(out, item);
    }
    out->push_back(']');
  } else {
    rapidjson::StringBuffer text;
    rapidjson::Writer<rapidjson::StringBuffer> w(text);
    value.Accept(w);
    out->append(text.GetString(), text.GetSize());
  }
}

void AppendExecutionCountEvent(std::string* out, int64_t execution_count, int64_t timestamp_ms) {
  out->append("{\"type\":\"execution_count\",\"execution_count\":" + std::to_string(execution_count));
  AppendTimestamp(out, timestamp_ms);
  out->append("}\n\n");
}

void AppendResultEvent(std::string* out, const rapidjson::Value& data, int64_t timestamp_ms) {
  out->append("{\"type\":\"result\"");
  AppendTimestamp(out, timestamp_ms);
  out->append(",\"results\":");
  std::vector<std::pair<std::string_view, const rapidjson::Value*>> items;
  if (data.IsObject()) {
    for (const auto& m : data.GetObject()) {
      std::string_view key = Text(m.name);
      items.emplace_back(key == "text/plain" ? std::string_view("text") : key, &m.value);
    }
  }
  std::sort(items.begin(), items.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  out->push_back('{');
  for (size_t i = 0; i < items.size(); ++i) {
    if (i) out->push_back(',');
    AppendGoJsonString(out, items[i].first);
    out->push_back(':');
    AppendGoJsonValue(out, *items[i].second);
  }
  out->append("}}\n\n");
}

void AppendErrorStatusEvent(std::string* out, int64_t timestamp_ms) {
  out->append("{\"type\":\"status\",\"text\":\"error\"");
  AppendTimestamp(out, timestamp_ms);
  out->append("}\n\n");
}

void AppendKernelErrorEvent(std::string* out, std::string_view ename, std::string_view evalue,
                            const rapidjson::Value* traceback, int64_t timestamp_ms) {
  out->append("{\"type\":\"error\"");
  AppendTimestamp(out, timestamp_ms);
  out->append(",\"error\":{\"ename\":");
  AppendGoJsonString(out, ename);
  out->append(",\"evalue\":");
  AppendGoJsonString(out, evalue);
  out->append(",\"traceback\":");
  if (traceback != nullptr && traceback->IsArray()) {
    AppendGoJsonValue(out, *traceback);
  } else {
    out->append("null");
  }
  out->append("}}\n\n");
}

}  // namespace fake_opensandbox
