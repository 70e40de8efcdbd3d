#include "bridge/opensandbox/pty_frames.h"

#include <rapidjson/document.h>

#include "bridge/base/json.h"

namespace abx::opensandbox {
namespace {

Error NotAFrame(const std::string& why) {
  return MakeError(ErrorCode::kUpstream, "execd's terminal sent a frame that is not its protocol: " + why);
}

}  // namespace

Result<PtyFrame> DecodePtyFrame(bool text, std::string payload) {
  PtyFrame frame;
  if (!text) {
    if (payload.empty()) return frame;
    const unsigned char prefix = static_cast<unsigned char>(payload[0]);
    if (prefix == 0x01 || prefix == 0x02) {
      frame.kind = prefix == 0x01 ? PtyFrame::Kind::kOutput : PtyFrame::Kind::kStderr;
      frame.data = payload.substr(1);
    } else if (prefix == 0x03) {
      if (payload.size() < 9) return NotAFrame("a replay frame shorter than its offset");
      frame.kind = PtyFrame::Kind::kReplay;
      for (int i = 1; i <= 8; ++i) frame.replay_offset = (frame.replay_offset << 8) | static_cast<unsigned char>(payload[i]);
      frame.data = payload.substr(9);
    }
    return frame;
  }
  rapidjson::Document doc;
  doc.Parse<json::kParseFlags>(payload.c_str(), payload.size());
  if (doc.HasParseError() || !doc.IsObject()) return NotAFrame("text that is not a JSON object");
  const std::string type = json::GetString(doc, "type").value_or("");
  if (type == "connected") {
    frame.kind = PtyFrame::Kind::kConnected;
    frame.mode = json::GetString(doc, "mode").value_or("pty");
  } else if (type == "exit") {
    const rapidjson::Value* code = json::GetMember(doc, "exit_code");
    if (code == nullptr || !code->IsInt()) return NotAFrame("an exit frame without exit_code");
    frame.kind = PtyFrame::Kind::kExit;
    frame.exit_code = code->GetInt();
  } else if (type == "error") {
    frame.kind = PtyFrame::Kind::kError;
    frame.error = json::GetString(doc, "error").value_or("");
    frame.code = json::GetString(doc, "code").value_or("");
  } else if (type == "pong") {
    frame.kind = PtyFrame::Kind::kPong;
  } else if (type.empty()) {
    return NotAFrame("a JSON frame without type");
  }
  return frame;
}

std::string PtyStdinFrame(std::string_view bytes) {
  std::string frame(1, '\0');
  frame.append(bytes);
  return frame;
}

std::string PtyResizeFrame(int cols, int rows) {
  return "{\"type\":\"resize\",\"cols\":" + std::to_string(cols) + ",\"rows\":" + std::to_string(rows) + "}";
}

std::string PtySignalFrame(const std::string& name) {
  return "{\"type\":\"signal\",\"signal\":" + json::Quote(name) + "}";
}

}  // namespace abx::opensandbox
