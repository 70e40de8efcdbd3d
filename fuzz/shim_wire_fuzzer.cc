// The shim's reading of what the bridge sends (epp-shim/grpc_protocol.h MessageAssembler,
// epp-shim/bridge_messages.h decoders on epp-shim/proto_wire.h) and its encoding of what
// it sends. Invariants: a gRPC byte stream cut into fuzzer-chosen chunks gives the same
// messages, and fails at the same point, as fed whole; a decoded SessionOutput's fields
// are views into the message and are the last occurrences of fields 1 and 2 that a walk
// of the message finds; decoding never reads outside the input; SessionStart and line
// messages built from fuzzed fields read back as those fields.

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "epp-shim/bridge_messages.h"
#include "epp-shim/grpc_protocol.h"
#include "epp-shim/proto_wire.h"
#include "fuzz/check.h"

namespace {

using abx::fuzz::Printable;
namespace grpc_protocol = abx::grpc_protocol;
namespace wire = abx::wire;

struct Cut {
  std::vector<std::string> messages;
  bool ok = true;
};

Cut Assemble(const std::string& stream, const std::vector<size_t>& chunks, size_t max_message) {
  grpc_protocol::MessageAssembler assembler(max_message);
  Cut cut;
  grpc_protocol::Status error;
  size_t at = 0;
  for (size_t i = 0; at < stream.size(); ++i) {
    const size_t size = chunks.empty() ? stream.size() : std::min(chunks[i % chunks.size()],
                                                                  stream.size() - at);
    if (!assembler.Feed(stream.data() + at, size,
                        [&](std::string_view m) { cut.messages.emplace_back(m); }, &error)) {
      cut.ok = false;
      return cut;
    }
    at += size;
  }
  return cut;
}

bool Inside(std::string_view part, std::string_view whole) {
  return part.empty() ||
         (part.data() >= whole.data() && part.data() + part.size() <= whole.data() + whole.size());
}

void CheckSessionOutput(const std::string& message) {
  std::string_view line, id, local_file;
  const bool ok = abx::DecodeSessionOutput(message, &line, &id, &local_file);
  // The reference: walk every field, keep the last length-delimited 1 and 2.
  wire::Reader reader(message);
  wire::Field field;
  std::string_view last_line, last_id, last_local_file;
  while (reader.Next(&field)) {
    FUZZ_CHECK(field.type != wire::kLengthDelimited || Inside(field.bytes, message),
               "a field outside its message");
    if (field.type != wire::kLengthDelimited) continue;
    if (field.number == 1) last_line = field.bytes;
    if (field.number == 2) last_id = field.bytes;
    if (field.number == 3) last_local_file = field.bytes;
  }
  FUZZ_CHECK(ok == reader.ok(), "decoder and walk disagree on %s", Printable(message).c_str());
  if (!ok) return;
  FUZZ_CHECK(Inside(line, message) && Inside(id, message), "a view outside the message");
  FUZZ_CHECK(line == last_line && id == last_id && local_file == last_local_file,
             "not the last fields 1, 2 and 3 of %s", Printable(message).c_str());
  abx::LocalFileRequestMessage request;
  abx::DecodeLocalFileRequest(message, &request);  // must not crash or read outside
  abx::HelloReplyMessage reply;
  abx::DecodeHelloReply(message, &reply);  // must not crash or read outside
}

void CheckEncoders(FuzzedDataProvider* provider) {
  abx::SessionStartMessage start;
  const int entries = provider->ConsumeIntegralInRange<int>(0, 4);
  for (int i = 0; i < entries; ++i) {
    start.config[provider->ConsumeRandomLengthString(40)] = provider->ConsumeRandomLengthString(200);
  }
  start.shim_pid = provider->ConsumeIntegral<int32_t>();
  start.replay_initialize = provider->ConsumeRandomLengthString(300);
  const std::string encoded = abx::EncodeSessionStart(start);
  wire::Reader outer(encoded);
  wire::Field field;
  FUZZ_CHECK(outer.Next(&field) && field.number == 1 && field.type == wire::kLengthDelimited,
             "SessionInput without its start");
  wire::Reader inner(field.bytes);
  std::map<std::string, std::string> config;
  int32_t pid = 0;
  std::string replay;
  wire::Field inner_field;
  while (inner.Next(&inner_field)) {
    if (inner_field.number == 1) {
      wire::Reader entry(inner_field.bytes);
      wire::Field part;
      std::string key, value;
      while (entry.Next(&part)) {
        if (part.number == 1) key.assign(part.bytes);
        if (part.number == 2) value.assign(part.bytes);
      }
      FUZZ_CHECK(entry.ok(), "a malformed map entry");
      config[key] = value;
    } else if (inner_field.number == 5) {
      pid = static_cast<int32_t>(inner_field.varint);
    } else if (inner_field.number == 6) {
      replay.assign(inner_field.bytes);
    }
  }
  FUZZ_CHECK(inner.ok() && !outer.Next(&field) && outer.ok(), "SessionStart does not parse");
  FUZZ_CHECK(config == start.config, "config came back different");
  FUZZ_CHECK(pid == start.shim_pid, "shim_pid %d came back as %d", start.shim_pid, pid);
  FUZZ_CHECK(replay == start.replay_initialize, "replay_initialize came back different");

  const std::string line = provider->ConsumeRandomLengthString(1000);
  const std::string message = abx::SessionInputLineHeader(line.size()) + line;
  wire::Reader reader(message);
  FUZZ_CHECK(reader.Next(&field) && field.number == 2 && field.bytes == line &&
                 !reader.Next(&field) && reader.ok(),
             "a line message does not read back as its line");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider provider(data, size);
  CheckEncoders(&provider);
  const size_t max_message = provider.ConsumeBool()
                                 ? size_t{32} << 20
                                 : provider.ConsumeIntegralInRange<size_t>(0, 200);
  std::vector<size_t> chunks(provider.ConsumeIntegralInRange<size_t>(1, 8));
  for (size_t& chunk : chunks) chunk = provider.ConsumeIntegralInRange<size_t>(1, 64);
  const std::string stream = provider.ConsumeRemainingBytesAsString();

  const Cut whole = Assemble(stream, {}, max_message);
  const Cut chunked = Assemble(stream, chunks, max_message);
  FUZZ_CHECK(whole.ok == chunked.ok, "chunking changed whether the stream fails");
  FUZZ_CHECK(whole.messages == chunked.messages, "chunking changed the messages (%zu vs %zu)",
             whole.messages.size(), chunked.messages.size());
  for (const std::string& message : whole.messages) CheckSessionOutput(message);
  // The stream's bytes taken as one message too: any byte string is a message body.
  CheckSessionOutput(stream);
  return 0;
}
