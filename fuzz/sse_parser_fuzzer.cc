// execd's event streams (bridge/opensandbox/execd_events.h) as any server or proxy could send
// them, delivered in fuzzer-chosen chunks. Invariant: the chunking changes nothing —
// the same events, the same garbage reports, the same counters and the same stop as
// when the whole stream arrives at once; and what is held back for an unfinished line
// never exceeds the line limit.

#include <fuzzer/FuzzedDataProvider.h>

#include <cstdint>
#include <string>
#include <vector>

#include "bridge/opensandbox/execd_events.h"
#include "fuzz/check.h"
#include "fuzz/hostile_text.h"

namespace {

using abx::fuzz::Printable;
using abx::opensandbox::ExecdEvent;
using abx::opensandbox::ExecdEventParser;

constexpr char kTooLong[] = "G line longer than the limit ";

std::string Describe(const ExecdEvent& e) {
  std::string out = e.kind == abx::opensandbox::ExecdEventKind::kTyped ? "typed" : "untyped";
  auto add = [&out](const char* name, const std::string& value) {
    out += std::string(" ") + name + "=" + std::to_string(value.size()) + ":" + value;
  };
  add("type", e.type);
  add("text", e.text);
  if (e.execution_time_ms) add("time", std::to_string(*e.execution_time_ms));
  if (e.execution_count) add("count", std::to_string(*e.execution_count));
  add("ts", std::to_string(e.timestamp_ms));
  if (e.error) {
    add("ename", e.error->ename);
    add("evalue", e.error->evalue);
    for (const std::string& line : e.error->traceback) add("tb", line);
  }
  add("code", e.code);
  add("message", e.message);
  add("results", e.results_json);
  return out;
}

struct Outcome {
  std::vector<std::string> log;  // "E <event>" or "G <reason> <line>", in order
  bool last_feed = true, finish = true;
  size_t events = 0, garbage = 0, ignored = 0;
};

// Runs the parser over `stream` cut at `cuts` (offsets), stopping at callback `stop_at`
// (0: never).
Outcome Run(const std::string& stream, const std::vector<size_t>& cuts, size_t max_line,
            size_t stop_at) {
  Outcome out;
  size_t calls = 0;
  ExecdEventParser parser(
      [&](const ExecdEvent& event) {
        out.log.push_back("E " + Describe(event));
        return ++calls != stop_at;
      },
      [&](std::string_view line, std::string_view reason) {
        FUZZ_CHECK(line.size() <= ExecdEventParser::kGarbageExcerptBytes, "garbage excerpt of %zu bytes",
                   line.size());
        out.log.push_back("G " + std::string(reason) + " " + std::string(line));
        return ++calls != stop_at;
      },
      max_line);
  size_t at = 0;
  for (size_t cut : cuts) {
    out.last_feed = parser.Feed(stream.data() + at, cut - at);
    FUZZ_CHECK(parser.pending_bytes() <= max_line, "%zu bytes held back, limit %zu",
               parser.pending_bytes(), max_line);
    at = cut;
  }
  out.last_feed = parser.Feed(stream.data() + at, stream.size() - at);
  out.finish = parser.Finish();
  out.events = parser.events();
  out.garbage = parser.garbage_lines();
  out.ignored = parser.ignored_lines();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider provider(data, size);
  const bool small_limit = provider.ConsumeBool();
  const size_t max_line = small_limit ? provider.ConsumeIntegralInRange<size_t>(0, 300)
                                      : ExecdEventParser::kDefaultMaxLineBytes;
  const size_t stop_at = provider.ConsumeIntegralInRange<size_t>(0, 8);
  const bool expand = provider.ConsumeBool();
  const std::string raw = provider.ConsumeRandomLengthString(1 << 20);
  const std::string stream = expand ? abx::fuzz::ExpandRepeats(raw) : raw;
  std::vector<size_t> cuts;
  size_t at = 0;
  while (provider.remaining_bytes() > 0 && at < stream.size()) {
    at += provider.ConsumeIntegralInRange<size_t>(0, stream.size() - at);
    cuts.push_back(at);
  }

  const Outcome whole = Run(stream, {}, max_line, stop_at);
  const Outcome chunked = Run(stream, cuts, max_line, stop_at);
  FUZZ_CHECK(whole.log.size() == chunked.log.size(), "%zu callbacks whole, %zu in %zu chunks",
             whole.log.size(), chunked.log.size(), cuts.size() + 1);
  for (size_t i = 0; i < whole.log.size(); ++i) {
    // An over-long line is reported when the limit is crossed, with the bytes that had
    // arrived by then: in chunks, its excerpt may be shorter (a prefix), never different.
    const bool too_long = whole.log[i].rfind(kTooLong, 0) == 0;
    FUZZ_CHECK(too_long ? whole.log[i].rfind(chunked.log[i], 0) == 0 &&
                              chunked.log[i].rfind(kTooLong, 0) == 0
                        : whole.log[i] == chunked.log[i],
               "callback %zu: whole [%s], chunked [%s]", i, Printable(whole.log[i]).c_str(),
               Printable(chunked.log[i]).c_str());
  }
  FUZZ_CHECK(whole.events == chunked.events && whole.garbage == chunked.garbage &&
                 whole.ignored == chunked.ignored,
             "counters differ: events %zu/%zu garbage %zu/%zu ignored %zu/%zu", whole.events,
             chunked.events, whole.garbage, chunked.garbage, whole.ignored, chunked.ignored);
  FUZZ_CHECK(whole.finish == chunked.finish, "Finish: whole %d, chunked %d", whole.finish,
             chunked.finish);
  FUZZ_CHECK(whole.events + whole.garbage == whole.log.size(), "counted %zu+%zu, saw %zu",
             whole.events, whole.garbage, whole.log.size());
  return 0;
}
