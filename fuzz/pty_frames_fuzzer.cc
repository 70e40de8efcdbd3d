// The frames of execd's terminal WebSocket (bridge/opensandbox/pty_frames.h) as any server
// could send them: the first input byte says text or binary, the rest is the payload.
// Invariants: decoding never crashes and is deterministic; output frames carry exactly
// the payload after their prefix; a replay's offset is its 8 big-endian bytes; text that
// decodes has the kind its type names. The frames the bridge makes decode as JSON
// objects (resize, signal) or carry the bytes after a zero (stdin).

#include <fuzzer/FuzzedDataProvider.h>

#include <rapidjson/document.h>

#include <cstdint>
#include <string>

#include "bridge/opensandbox/pty_frames.h"
#include "fuzz/check.h"

using abx::fuzz::Printable;
using abx::opensandbox::DecodePtyFrame;
using abx::opensandbox::PtyFrame;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const bool text = data[0] & 1;
  const std::string payload(reinterpret_cast<const char*>(data + 1), size - 1);
  auto once = DecodePtyFrame(text, payload);
  auto twice = DecodePtyFrame(text, payload);
  FUZZ_CHECK(once.ok() == twice.ok(), "decoding is not deterministic: %s", Printable(payload).c_str());
  if (once.ok()) {
    FUZZ_CHECK(once->kind == twice->kind && once->data == twice->data, "decoding is not deterministic");
    if (!text && !payload.empty() && (payload[0] == 1 || payload[0] == 2)) {
      FUZZ_CHECK(once->data == payload.substr(1), "output bytes changed: %s", Printable(payload).c_str());
    }
    if (once->kind == PtyFrame::Kind::kReplay) {
      uint64_t offset = 0;
      for (int i = 1; i <= 8; ++i) offset = (offset << 8) | static_cast<unsigned char>(payload[i]);
      FUZZ_CHECK(once->replay_offset == offset && once->data == payload.substr(9), "replay misread");
    }
    if (text) FUZZ_CHECK(once->kind != PtyFrame::Kind::kOutput, "text decoded as output");
  } else {
    FUZZ_CHECK(once.error().code == abx::ErrorCode::kUpstream, "a refused frame is not E8010");
  }

  // What the bridge sends.
  const std::string stdin_frame = abx::opensandbox::PtyStdinFrame(payload);
  FUZZ_CHECK(stdin_frame.size() == payload.size() + 1 && stdin_frame[0] == '\0' &&
                 stdin_frame.compare(1, std::string::npos, payload) == 0,
             "stdin frame");
  FuzzedDataProvider more(data, size);
  const int cols = more.ConsumeIntegral<int>(), rows = more.ConsumeIntegral<int>();
  for (const std::string& json : {abx::opensandbox::PtyResizeFrame(cols, rows),
                                  abx::opensandbox::PtySignalFrame(payload)}) {
    rapidjson::Document doc;
    doc.Parse(json.c_str(), json.size());
    FUZZ_CHECK(!doc.HasParseError() && doc.IsObject() && doc.HasMember("type"), "not a JSON frame: %s",
               Printable(json).c_str());
  }
  return 0;
}
