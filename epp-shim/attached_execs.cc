#include "epp-shim/attached_execs.h"

#include "rapidjson/document.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace abx {
namespace {

// How the bridge writes an exec.exit (bridge/api/epp/jsonrpc.cc NotificationStart and
// methods_exec.cc ExitJson); the shim only ever talks to a bridge of its own build.
constexpr char kExitPrefix[] = "{\"jsonrpc\":\"2.0\",\"method\":\"exec.exit\",\"params\":{\"exec_id\":";

std::string Quoted(const std::string& text) {
  rapidjson::StringBuffer buffer;
  rapidjson::Writer<rapidjson::StringBuffer> writer(buffer);
  writer.String(text.data(), static_cast<rapidjson::SizeType>(text.size()));
  return std::string(buffer.GetString(), buffer.GetSize());
}

}  // namespace

void AttachedExecs::OnRequest(const LineMeta& meta, const std::string& line) {
  if (meta.kind != LineMeta::Kind::kRequest || meta.method != "exec.start") return;
  rapidjson::Document doc;
  doc.Parse(line.data(), line.size());
  if (doc.HasParseError() || !doc.IsObject()) return;
  auto params = doc.FindMember("params");
  if (params != doc.MemberEnd() && params->value.IsObject()) {
    auto detached = params->value.FindMember("detached");
    if (detached != params->value.MemberEnd() && detached->value.IsTrue()) return;
  }
  starting_.insert(meta.id_json);
}

void AttachedExecs::OnOutput(std::string_view response_id, std::string_view line) {
  if (!response_id.empty()) {
    auto found = starting_.find(response_id);
    if (found == starting_.end()) return;
    starting_.erase(found);
    rapidjson::Document doc;
    doc.Parse(line.data(), line.size());
    if (doc.HasParseError() || !doc.IsObject()) return;
    auto result = doc.FindMember("result");
    if (result == doc.MemberEnd() || !result->value.IsObject()) return;  // an error answer
    auto exec_id = result->value.FindMember("exec_id");
    if (exec_id != result->value.MemberEnd() && exec_id->value.IsString()) {
      running_.insert(std::string(exec_id->value.GetString(), exec_id->value.GetStringLength()));
    }
    return;
  }
  if (running_.empty() || line.compare(0, sizeof kExitPrefix - 1, kExitPrefix) != 0) return;
  // The exec_id follows as a JSON string; execd's ids are hex, so it has no escapes.
  const size_t open = sizeof kExitPrefix - 1;
  if (open >= line.size() || line[open] != '"') return;
  const size_t close = line.find('"', open + 1);
  if (close == std::string_view::npos) return;
  running_.erase(std::string(line.substr(open + 1, close - open - 1)));
}

std::vector<std::string> AttachedExecs::TakeLostExitLines(const std::string& message) {
  std::set<std::string> lost;
  lost.swap(running_);
  starting_.clear();
  std::vector<std::string> lines;
  for (const std::string& exec_id : lost) {
    lines.push_back(std::string(kExitPrefix) + Quoted(exec_id) +
                    ",\"exit_code\":null,\"signal\":null,\"timed_out\":false,\"cancelled\":false,"
                    "\"error\":{\"code\":\"E8002\",\"message\":" +
                    Quoted(message) + "}}}");
  }
  return lines;
}

}  // namespace abx
