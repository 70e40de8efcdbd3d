#pragma once

// execd's stream events (docs/opensandbox.md §2.4–2.6): one compact Go-style JSON object followed by
// "\n\n", no `data:` prefix. Keys in execd's order: type, text, execution_count,
// execution_time, timestamp, results, error; zero values omitted.

#include <cstdint>
#include <string>
#include <string_view>

namespace fake_opensandbox {

void AppendInitEvent(std::string* out, std::string_view command_id, int64_t timestamp_ms);
void AppendPingEvent(std::string* out, int64_t timestamp_ms);
// type "stdout" or "stderr"; `text` is one line without its terminator (or "\n").
void AppendOutputEvent(std::string* out, bool is_stderr, std::string_view text,
                       int64_t timestamp_ms);
// The hot path: many stdout/stderr events of one read share a timestamp, so its JSON
// tail is formatted once.
class OutputEventWriter {
 public:
  explicit OutputEventWriter(int64_t timestamp_ms);
  void Append(std::string* out, bool is_stderr, std::string_view text) const;

 private:
  std::string suffix_;  // ,"timestamp":N}\n\n
};

void AppendCompleteEvent(std::string* out, int64_t execution_time_ms, int64_t timestamp_ms);
// ename "CommandExecError"; `evalue` the exit code ("3", "-1") or a start error text.
void AppendErrorEvent(std::string* out, std::string_view evalue, std::string_view traceback,
                      int64_t timestamp_ms);

}  // namespace fake_opensandbox
