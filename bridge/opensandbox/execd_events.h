#pragma once
// Incremental parser of execd's event streams (POST /command, /session/{id}/run, /code,
// GET /metrics/watch). execd does not speak standard SSE: every event is one compact JSON
// object on its own line, followed by "\n\n" (a single "\n" for metrics), with no "data:"
// prefix. The parser is as lenient as the official JS SDK so that a proxy or a future execd
// that adds SSE framing still works: it splits on "\n", trims "\r", spaces and tabs, skips
// empty lines and lines starting with ":", "event:", "id:" or "retry:", and strips an
// optional "data:" prefix. Unlike the SDK it does not drop unparsable lines silently: they
// are reported, so a stream of garbage can be treated as an upstream error.
//
// Bytes may arrive split anywhere (inside a UTF-8 sequence, inside "\n\n"). A complete line
// in one chunk is parsed in place; only a line spread over chunks is copied, and appending
// to it is amortised linear, so multi-MiB events cost O(size).

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace abx::opensandbox {

// The "error" object of an event: {ename, evalue, traceback[]}. For a command that exited
// non-zero, ename is "CommandExecError" and evalue the exit code as a decimal string ("-1"
// for a signal); for a start failure evalue is the OS error text.
struct ExecdError {
  std::string ename;
  std::string evalue;
  std::vector<std::string> traceback;
};

enum class ExecdEventKind {
  kTyped,    // an object with a "type": every normal event
  kUntyped,  // an object without "type", e.g. {"code":"RUNTIME_ERROR","message":"..."} that
             // execd appends to a session stream on timeout
};

struct ExecdEvent {
  ExecdEventKind kind = ExecdEventKind::kTyped;
  // "init", "ping", "stdout", "stderr", "execution_complete", "error", and for /code
  // "status", "execution_count", "result". Empty for kUntyped.
  std::string type;
  std::string text;  // init: command id; stdout/stderr: one line without terminator
  std::optional<int64_t> execution_time_ms;  // absent when execd omitted it (0 ms)
  std::optional<int64_t> execution_count;
  int64_t timestamp_ms = 0;                  // Unix ms; 0 when absent
  std::optional<ExecdError> error;
  // Top-level "code" and "message", as in the untyped error objects. A top-level "error"
  // that is a string (GET /metrics/watch on a read error) also lands in `message`.
  std::string code;
  std::string message;
  // The "results" object (/code only) re-serialised compactly; "" when absent.
  std::string results_json;

  // error.evalue and error.traceback; empty when the event has no error object.
  const std::string& error_value() const;
  const std::vector<std::string>& traceback() const;
};

class ExecdEventParser {
 public:
  // Both callbacks return false to stop parsing: Feed and Finish then return false and
  // every later call is ignored.
  using EventCallback = std::function<bool(const ExecdEvent& event)>;
  // `line` is the offending line (trimmed, at most kGarbageExcerptBytes of it); `reason` a
  // short phrase such as "not JSON" or "not a JSON object".
  using GarbageCallback = std::function<bool(std::string_view line, std::string_view reason)>;

  static constexpr size_t kDefaultMaxLineBytes = 64 << 20;
  static constexpr size_t kGarbageExcerptBytes = 256;

  // `on_garbage` may be null (garbage is then only counted). A line longer than
  // `max_line_bytes` is reported as garbage once and skipped up to its newline.
  explicit ExecdEventParser(EventCallback on_event, GarbageCallback on_garbage = nullptr,
                     size_t max_line_bytes = kDefaultMaxLineBytes);
  ~ExecdEventParser();
  ExecdEventParser(const ExecdEventParser&) = delete;
  ExecdEventParser& operator=(const ExecdEventParser&) = delete;

  // Consumes the next bytes of the stream. False once a callback has asked to stop.
  bool Feed(const char* data, size_t size);
  bool Feed(std::string_view data) { return Feed(data.data(), data.size()); }

  // The stream ended: parses a last line that had no newline. False if a callback stopped.
  bool Finish();

  size_t events() const { return events_; }
  size_t garbage_lines() const { return garbage_lines_; }
  // Comment and SSE field lines (":", "event:", "id:", "retry:") that were skipped.
  size_t ignored_lines() const { return ignored_lines_; }
  // Bytes of an unfinished line held back until its newline.
  size_t pending_bytes() const { return pending_.size(); }

 private:
  class JsonHandler;

  // One line without its "\n". Returns false when a callback asked to stop.
  bool HandleLine(const char* data, size_t size);
  bool ReportGarbage(std::string_view line, std::string_view reason);

  EventCallback on_event_;
  GarbageCallback on_garbage_;
  const size_t max_line_bytes_;
  std::unique_ptr<JsonHandler> handler_;
  std::string pending_;       // start of a line whose newline has not arrived yet
  bool skipping_long_line_ = false;
  bool stopped_ = false;
  size_t events_ = 0;
  size_t garbage_lines_ = 0;
  size_t ignored_lines_ = 0;
};

}  // namespace abx::opensandbox
