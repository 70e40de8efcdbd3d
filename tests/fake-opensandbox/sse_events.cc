#include "tests/fake-opensandbox/sse_events.h"

#include "tests/fake-opensandbox/go_json.h"

namespace fake_opensandbox {
namespace {

void AppendInt(std::string* out, int64_t value) {
  char buf[24];
  char* end = buf + sizeof(buf);
  char* p = end;
  bool negative = value < 0;
  uint64_t v = negative ? static_cast<uint64_t>(-(value + 1)) + 1 : static_cast<uint64_t>(value);
  do {
    *--p = static_cast<char>('0' + v % 10);
    v /= 10;
  } while (v != 0);
  if (negative) *--p = '-';
  out->append(p, static_cast<size_t>(end - p));
}

void AppendTimestampAndEnd(std::string* out, int64_t timestamp_ms) {
  if (timestamp_ms != 0) {
    out->append(",\"timestamp\":");
    AppendInt(out, timestamp_ms);
  }
}

}  // namespace

void AppendInitEvent(std::string* out, std::string_view command_id, int64_t timestamp_ms) {
  out->append("{\"type\":\"init\",\"text\":");
  AppendGoJsonString(out, command_id);
  AppendTimestampAndEnd(out, timestamp_ms);
  out->append("}\n\n");
}

void AppendPingEvent(std::string* out, int64_t timestamp_ms) {
  out->append("{\"type\":\"ping\",\"text\":\"pong\"");
  AppendTimestampAndEnd(out, timestamp_ms);
  out->append("}\n\n");
}

void AppendOutputEvent(std::string* out, bool is_stderr, std::string_view text,
                       int64_t timestamp_ms) {
  out->append(is_stderr ? "{\"type\":\"stderr\",\"text\":" : "{\"type\":\"stdout\",\"text\":");
  AppendGoJsonString(out, text);
  AppendTimestampAndEnd(out, timestamp_ms);
  out->append("}\n\n");
}

OutputEventWriter::OutputEventWriter(int64_t timestamp_ms) {
  AppendTimestampAndEnd(&suffix_, timestamp_ms);
  suffix_.append("}\n\n");
}

void OutputEventWriter::Append(std::string* out, bool is_stderr, std::string_view text) const {
  out->append(is_stderr ? "{\"type\":\"stderr\",\"text\":" : "{\"type\":\"stdout\",\"text\":");
  AppendGoJsonString(out, text);
  out->append(suffix_);
}

void AppendCompleteEvent(std::string* out, int64_t execution_time_ms, int64_t timestamp_ms) {
  out->append("{\"type\":\"execution_complete\"");
  if (execution_time_ms != 0) {
    out->append(",\"execution_time\":");
    AppendInt(out, execution_time_ms);
  }
  AppendTimestampAndEnd(out, timestamp_ms);
  out->append("}\n\n");
}

void AppendErrorEvent(std::string* out, std::string_view evalue, std::string_view traceback,
                      int64_t timestamp_ms) {
  out->append("{\"type\":\"error\"");
  AppendTimestampAndEnd(out, timestamp_ms);
  out->append(",\"error\":{\"ename\":\"CommandExecError\",\"evalue\":");
  AppendGoJsonString(out, evalue);
  out->append(",\"traceback\":[");
  AppendGoJsonString(out, traceback);
  out->append("]}}\n\n");
}

}  // namespace fake_opensandbox
