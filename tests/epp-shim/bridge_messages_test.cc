// The shim's hand-written protobuf codec (epp-shim/proto_wire.h, bridge_messages.h)
// against the classes protoc generates from proto/bridge.proto: what the shim encodes
// must parse, field for field and byte for byte, as the generated code would write it;
// what the generated code writes (unknown fields, repeated fields, groups included) must
// decode as the generated parser reads it.

#include "epp-shim/bridge_messages.h"

#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/zero_copy_stream_impl_lite.h>
#include <google/protobuf/unknown_field_set.h>

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "epp-shim/proto_wire.h"
#include "gtest/gtest.h"
#include "proto/bridge.pb.h"

namespace abx {
namespace {

namespace pb = ::abx::opensandbox::v1;

// The generated serialization with map entries sorted by key (ours are, std::map).
std::string Deterministic(const google::protobuf::Message& message) {
  std::string out;
  google::protobuf::io::StringOutputStream stream(&out);
  google::protobuf::io::CodedOutputStream coded(&stream);
  coded.SetSerializationDeterministic(true);
  message.SerializeToCodedStream(&coded);
  coded.Trim();
  return out;
}

// Adds one unknown field of every wire type, a group with something inside included.
void AddUnknownFields(google::protobuf::Message* message, int base) {
  google::protobuf::UnknownFieldSet* unknown =
      message->GetReflection()->MutableUnknownFields(message);
  unknown->AddVarint(base, 1234567890123ull);
  unknown->AddFixed32(base + 1, 0xdeadbeef);
  unknown->AddFixed64(base + 2, 0x0123456789abcdefull);
  unknown->AddLengthDelimited(base + 3, std::string("unknown \0 bytes", 15));
  google::protobuf::UnknownFieldSet* group = unknown->AddGroup(base + 4);
  group->AddVarint(1, 7);
  group->AddLengthDelimited(2, "inside a group");
  group->AddGroup(3)->AddFixed32(1, 9);
}

TEST(BridgeMessagesTest, HelloRequestIsWhatTheGeneratedCodeWrites) {
  for (const std::string& build_id :
       std::vector<std::string>{"", "7e57b111d0000001", std::string(300, 'b')}) {
    pb::HelloRequest expected;
    expected.set_build_id(build_id);
    const std::string ours = EncodeHelloRequest(build_id);
    EXPECT_EQ(ours, expected.SerializeAsString());
    pb::HelloRequest parsed;
    ASSERT_TRUE(parsed.ParseFromString(ours));
    EXPECT_EQ(parsed.build_id(), build_id);
  }
}

TEST(BridgeMessagesTest, HelloReplyDecodesEveryFieldAndSkipsUnknownOnes) {
  pb::HelloReply reply;
  reply.set_build_id("abcdef0123456789");
  reply.set_version("0.1.0");
  reply.set_pid(-42);  // int32 negatives take ten bytes on the wire
  reply.set_uptime_seconds(int64_t{1} << 40);
  AddUnknownFields(&reply, 100);
  HelloReplyMessage ours;
  ASSERT_TRUE(DecodeHelloReply(reply.SerializeAsString(), &ours));
  EXPECT_EQ(ours.build_id, reply.build_id());
  EXPECT_EQ(ours.version, reply.version());
  EXPECT_EQ(ours.pid, -42);
  EXPECT_EQ(ours.uptime_seconds, int64_t{1} << 40);

  // Defaults are absent on the wire and come out as defaults.
  ASSERT_TRUE(DecodeHelloReply(pb::HelloReply().SerializeAsString(), &ours));
  EXPECT_EQ(ours.build_id, "");
  EXPECT_EQ(ours.pid, 0);
}

TEST(BridgeMessagesTest, LastOccurrenceOfAFieldWinsAsInTheGeneratedParser) {
  pb::HelloReply first, second;
  first.set_build_id("first");
  first.set_pid(1);
  second.set_build_id("second");
  const std::string both = first.SerializeAsString() + second.SerializeAsString();
  pb::HelloReply generated;
  ASSERT_TRUE(generated.ParseFromString(both));
  HelloReplyMessage ours;
  ASSERT_TRUE(DecodeHelloReply(both, &ours));
  EXPECT_EQ(ours.build_id, generated.build_id());
  EXPECT_EQ(ours.pid, generated.pid());
}

TEST(BridgeMessagesTest, SessionStartWithMapsIsByteForByteTheGeneratedOne) {
  SessionStartMessage start;
  start.config = {{"api_key", "k-123"},
                  {"base_url", "http://127.0.0.1:8080"},
                  {"image_aliases", R"({"node":"node:22-slim","é":"ü"})"},
                  {"empty_value", ""},
                  {"", "empty key"}};
  start.config_source = {{"api_key", "env:ABX_OPENSANDBOX_API_KEY"},
                         {"base_url", "file:/home/u/.abx/config.toml"}};
  start.shim_version = "0.1.0";
  start.build_id = "7e57b111d0000001";
  start.shim_pid = 123456;
  start.replay_initialize = std::string("{\"id\":1}\0\xff raw", 14);

  pb::SessionInput expected;
  pb::SessionStart* fields = expected.mutable_start();
  for (const auto& [key, value] : start.config) (*fields->mutable_config())[key] = value;
  for (const auto& [key, value] : start.config_source) {
    (*fields->mutable_config_source())[key] = value;
  }
  fields->set_shim_version(start.shim_version);
  fields->set_build_id(start.build_id);
  fields->set_shim_pid(start.shim_pid);
  fields->set_replay_initialize(start.replay_initialize);

  const std::string ours = EncodeSessionStart(start);
  EXPECT_EQ(ours, Deterministic(expected));
  pb::SessionInput parsed;
  ASSERT_TRUE(parsed.ParseFromString(ours));
  ASSERT_TRUE(parsed.has_start());
  EXPECT_EQ(parsed.start().config().size(), start.config.size());
  for (const auto& [key, value] : start.config) EXPECT_EQ(parsed.start().config().at(key), value);
  EXPECT_EQ(parsed.start().config_source().at("api_key"), "env:ABX_OPENSANDBOX_API_KEY");
  EXPECT_EQ(parsed.start().shim_pid(), 123456);
  EXPECT_EQ(parsed.start().replay_initialize(), start.replay_initialize);
}

TEST(BridgeMessagesTest, EmptySessionStartIsStillAStart) {
  const std::string ours = EncodeSessionStart(SessionStartMessage());
  pb::SessionInput expected;
  expected.mutable_start();
  EXPECT_EQ(ours, expected.SerializeAsString());
  pb::SessionInput parsed;
  ASSERT_TRUE(parsed.ParseFromString(ours));
  EXPECT_TRUE(parsed.has_start());
}

TEST(BridgeMessagesTest, LineHeaderPlusLineIsTheGeneratedSessionInput) {
  // Lengths around every varint width, up to an 8 MiB line.
  for (size_t size : {size_t{0}, size_t{1}, size_t{127}, size_t{128}, size_t{16383},
                      size_t{16384}, size_t{2097151}, size_t{2097152}, size_t{8388608}}) {
    std::string line(size, 'x');
    if (size > 0) line[0] = '\0';
    pb::SessionInput expected;
    expected.set_line(line);
    const std::string ours = SessionInputLineHeader(size) + line;
    ASSERT_EQ(ours, expected.SerializeAsString()) << size;
  }
}

TEST(BridgeMessagesTest, LinePartHeaderPlusPartIsTheGeneratedSessionInput) {
  for (size_t size : {size_t{0}, size_t{127}, size_t{128}, size_t{1} << 20, size_t{8388608}}) {
    std::string part(size, 'p');
    if (size > 0) part[size - 1] = '\0';
    pb::SessionInput expected;
    expected.set_line_part(part);
    const std::string ours = SessionInputLinePartHeader(size) + part;
    ASSERT_EQ(ours, expected.SerializeAsString()) << size;
    pb::SessionInput parsed;
    ASSERT_TRUE(parsed.ParseFromString(ours));
    EXPECT_EQ(parsed.kind_case(), pb::SessionInput::kLinePart);
  }
}

TEST(BridgeMessagesTest, OversizedLineIsTheGeneratedOne) {
  for (int64_t length : {int64_t{0}, int64_t{8388609}, int64_t{1} << 35}) {
    pb::SessionInput expected;
    expected.mutable_oversized()->set_prefix(std::string(65536, 'p'));
    expected.mutable_oversized()->set_length(length);
    EXPECT_EQ(EncodeOversizedLine(std::string(65536, 'p'), length), expected.SerializeAsString());
  }
  pb::SessionInput empty;
  empty.mutable_oversized();
  EXPECT_EQ(EncodeOversizedLine("", 0), empty.SerializeAsString());
}

TEST(BridgeMessagesTest, SessionOutputDecodesAsTheGeneratedParserReadsIt) {
  pb::SessionOutput output;
  output.set_line(std::string("{\"jsonrpc\":\"2.0\",\"id\":7}\0tail", 30));
  output.set_response_id("7");
  // Decoded fields are views into the bytes, which must outlive them.
  const std::string plain = output.SerializeAsString();
  std::string_view line, id, local_file;
  ASSERT_TRUE(DecodeSessionOutput(plain, &line, &id, &local_file));
  EXPECT_EQ(line, output.line());
  EXPECT_EQ(id, "7");

  // Unknown fields around and between the known ones (a newer bridge).
  pb::SessionOutput with_unknown = output;
  AddUnknownFields(&with_unknown, 50);
  std::string bytes = with_unknown.SerializeAsString();
  pb::SessionOutput trailing;
  AddUnknownFields(&trailing, 9000);
  bytes = trailing.SerializeAsString() + bytes + trailing.SerializeAsString();
  ASSERT_TRUE(DecodeSessionOutput(bytes, &line, &id, &local_file));
  EXPECT_EQ(line, output.line());
  EXPECT_EQ(id, "7");

  // A notification has no response_id; an empty message is an empty line.
  pb::SessionOutput notification;
  notification.set_line("{\"method\":\"exec.output\"}");
  const std::string notification_bytes = notification.SerializeAsString();
  ASSERT_TRUE(DecodeSessionOutput(notification_bytes, &line, &id, &local_file));
  EXPECT_EQ(line, notification.line());
  EXPECT_TRUE(id.empty());
  ASSERT_TRUE(DecodeSessionOutput("", &line, &id, &local_file));
  EXPECT_TRUE(line.empty());

  // Two messages run together merge; the later line wins, as in the generated parser.
  pb::SessionOutput later;
  later.set_line("later");
  const std::string merged = output.SerializeAsString() + later.SerializeAsString();
  pb::SessionOutput generated;
  ASSERT_TRUE(generated.ParseFromString(merged));
  ASSERT_TRUE(DecodeSessionOutput(merged, &line, &id, &local_file));
  EXPECT_EQ(line, generated.line());
  EXPECT_EQ(id, generated.response_id());
}

TEST(BridgeMessagesTest, MalformedInputIsRefusedWhereTheGeneratedParserRefusesIt) {
  pb::SessionOutput output;
  output.set_line("a line");
  output.set_response_id("12");
  const std::string good = output.SerializeAsString();
  std::string_view line, id, local_file;
  // Every truncation: where the cut falls inside a field both refuse it, where it falls
  // between fields both accept it.
  for (size_t cut = 1; cut < good.size(); ++cut) {
    const std::string truncated = good.substr(0, cut);
    pb::SessionOutput generated;
    const bool generated_ok = generated.ParseFromString(truncated);
    EXPECT_EQ(DecodeSessionOutput(truncated, &line, &id, &local_file), generated_ok) << "cut at " << cut;
  }
  const std::string cases[] = {
      std::string("\x0a\x05" "abc", 5),          // length past the end
      std::string("\x00\x01", 2),                 // field number 0
      std::string("\x0e\x01", 2),                 // wire type 6
      std::string("\x0f\x01", 2),                 // wire type 7
      std::string("\x24", 1),                     // end group without a start (field 4)
      std::string("\x23\x08\x01", 3),             // start group (field 4) never ended
      std::string("\x23\x2c", 2),                 // group 4 ended as group 5
      std::string("\x08\xff\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 12),  // 11-byte varint
      std::string("\x0d\x01\x02", 3),             // fixed32 cut short
      std::string("\x09\x01\x02\x03\x04", 5),     // fixed64 cut short
  };
  for (const std::string& bytes : cases) {
    pb::SessionOutput generated;
    EXPECT_FALSE(generated.ParseFromString(bytes)) << "case " << testing::PrintToString(bytes);
    EXPECT_FALSE(DecodeSessionOutput(bytes, &line, &id, &local_file)) << testing::PrintToString(bytes);
  }
  HelloReplyMessage reply;
  EXPECT_FALSE(DecodeHelloReply(std::string("\x1a\x09" "short", 7), &reply));
}

TEST(BridgeMessagesTest, RandomMessagesRoundTripBothWays) {
  std::mt19937_64 random(20261203);
  auto random_bytes = [&](size_t max) {
    std::string bytes(random() % (max + 1), '\0');
    for (char& c : bytes) c = static_cast<char>(random());
    return bytes;
  };
  auto random_text = [&](size_t max) {
    std::string text(random() % (max + 1), 'a');
    for (char& c : text) c = static_cast<char>('!' + random() % 90);
    return text;
  };
  for (int round = 0; round < 500; ++round) {
    pb::SessionOutput output;
    output.set_line(random_bytes(round % 50 == 0 ? 70000 : 300));
    if (random() % 2) output.set_response_id(random_text(20));
    if (random() % 4 == 0) AddUnknownFields(&output, 3 + static_cast<int>(random() % 1000));
    const std::string bytes = output.SerializeAsString();
    std::string_view line, id, local_file;
    ASSERT_TRUE(DecodeSessionOutput(bytes, &line, &id, &local_file));
    ASSERT_EQ(line, output.line());
    ASSERT_EQ(id, output.response_id());

    SessionStartMessage start;
    for (int i = static_cast<int>(random() % 6); i > 0; --i) {
      start.config[random_text(12)] = random_text(40);
      start.config_source[random_text(12)] = random_text(40);
    }
    start.shim_pid = static_cast<int32_t>(random());
    start.shim_version = random_text(8);
    start.replay_initialize = random_bytes(100);
    pb::SessionInput parsed;
    ASSERT_TRUE(parsed.ParseFromString(EncodeSessionStart(start)));
    ASSERT_EQ(parsed.start().shim_pid(), start.shim_pid);
    ASSERT_EQ(parsed.start().shim_version(), start.shim_version);
    ASSERT_EQ(parsed.start().replay_initialize(), start.replay_initialize);
    ASSERT_EQ(static_cast<size_t>(parsed.start().config().size()), start.config.size());
    for (const auto& [key, value] : start.config) ASSERT_EQ(parsed.start().config().at(key), value);
    for (const auto& [key, value] : start.config_source) {
      ASSERT_EQ(parsed.start().config_source().at(key), value);
    }
  }
}

TEST(ProtoWireTest, VarintsOfEveryWidth) {
  for (int bits = 0; bits <= 64; ++bits) {
    const uint64_t value = bits == 64 ? ~uint64_t{0} : (uint64_t{1} << bits) - 1;
    std::string bytes;
    wire::AppendVarint(&bytes, value);
    EXPECT_EQ(bytes.size(), google::protobuf::io::CodedOutputStream::VarintSize64(value));
    std::string expected;
    google::protobuf::io::StringOutputStream stream(&expected);
    {
      google::protobuf::io::CodedOutputStream coded(&stream);
      coded.WriteVarint64(value);
    }
    EXPECT_EQ(bytes, expected) << value;
    const std::string message = std::string("\x08", 1) + bytes;  // field 1, varint
    wire::Reader reader(message);
    wire::Field field;
    ASSERT_TRUE(reader.Next(&field));
    EXPECT_EQ(field.varint, value);
    EXPECT_FALSE(reader.Next(&field));
    EXPECT_TRUE(reader.ok());
  }
}

TEST(BridgeMessagesTest, LocalFileRequestDecodesAsTheGeneratedParserReadsIt) {
  pb::SessionOutput output;
  pb::LocalFileRequest* request = output.mutable_local_file();
  request->set_kind(pb::LocalFileRequest::COMMIT);
  request->set_token("0123456789abcdef0123456789abcdef");
  request->set_local_path("/home/u/out.bin");
  request->set_remote_name("out.bin");
  request->set_overwrite(true);
  request->set_size(int64_t{3} << 32);
  request->set_mode(0754);
  request->set_mtime_unix_ns(1764950400123000000);
  request->set_descriptor_socket("/run/user/1/abx/bridge.sock.fd");
  AddUnknownFields(&output, 60);
  const std::string bytes = output.SerializeAsString();
  std::string_view line, id, local_file;
  ASSERT_TRUE(DecodeSessionOutput(bytes, &line, &id, &local_file));
  EXPECT_TRUE(line.empty());
  LocalFileRequestMessage decoded;
  ASSERT_TRUE(DecodeLocalFileRequest(local_file, &decoded));
  EXPECT_EQ(decoded.kind, LocalFileRequestMessage::kCommit);
  EXPECT_EQ(decoded.token, request->token());
  EXPECT_EQ(decoded.local_path, request->local_path());
  EXPECT_EQ(decoded.remote_name, request->remote_name());
  EXPECT_TRUE(decoded.overwrite);
  EXPECT_EQ(decoded.size, request->size());
  EXPECT_EQ(decoded.mode, 0754u);
  EXPECT_EQ(decoded.mtime_unix_ns, request->mtime_unix_ns());
  EXPECT_EQ(decoded.descriptor_socket, request->descriptor_socket());
  EXPECT_EQ(LocalFileRequestMessage::kOpenForDownload, pb::LocalFileRequest::OPEN_FOR_DOWNLOAD);
  EXPECT_EQ(LocalFileRequestMessage::kOpenForUpload, pb::LocalFileRequest::OPEN_FOR_UPLOAD);
  EXPECT_EQ(LocalFileRequestMessage::kDiscard, pb::LocalFileRequest::DISCARD);
}

TEST(BridgeMessagesTest, LocalFileReplyParsesWithTheGeneratedClasses) {
  LocalFileReplyMessage reply;
  reply.token = "tok";
  reply.errno_name = "ENOSPC";
  reply.message = "no room";
  reply.local_path = "/tmp/x";
  reply.size = int64_t{5} << 33;
  reply.mode = 0640;
  pb::SessionInput input;
  ASSERT_TRUE(input.ParseFromString(EncodeLocalFileReply(reply)));
  ASSERT_EQ(input.kind_case(), pb::SessionInput::kLocalFileReply);
  EXPECT_EQ(input.local_file_reply().token(), "tok");
  EXPECT_EQ(input.local_file_reply().errno_name(), "ENOSPC");
  EXPECT_EQ(input.local_file_reply().message(), "no room");
  EXPECT_EQ(input.local_file_reply().local_path(), "/tmp/x");
  EXPECT_EQ(input.local_file_reply().size(), reply.size);
  EXPECT_EQ(input.local_file_reply().mode(), 0640u);
  // An empty reply (a success with nothing to say) is still a local_file_reply.
  ASSERT_TRUE(input.ParseFromString(EncodeLocalFileReply(LocalFileReplyMessage())));
  EXPECT_EQ(input.kind_case(), pb::SessionInput::kLocalFileReply);
}

}  // namespace
}  // namespace abx
