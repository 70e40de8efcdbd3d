#include "tests/fake-opensandbox/stream_events.h"

#include <algorithm>
#include <chrono>

#include "tests/fake-opensandbox/sse_events.h"

namespace fake_opensandbox {
namespace {

using SteadyClock = std::chrono::steady_clock;
constexpr auto kPingInterval = std::chrono::seconds(3);

struct Stream {
  std::string id;
  std::shared_ptr<EventPipe> events;
  std::string refusal;
  std::function<void()> on_client_gone;
  std::string buffer;
  bool started = false;
  bool ended = false;
  SteadyClock::time_point next_ping;
  int64_t events_left = -1;  // reset_stream_after_events
};

bool Write(Stream& stream, httplib::DataSink& sink, const std::string& bytes) {
  return WriteEvents(&stream.events_left, sink, bytes);
}

// httplib copies each write twice into fresh strings, and big ones would each cost an
// mmap and its page faults: moderate slices.
constexpr size_t kMaxWriteBytes = 64 << 10;

}  // namespace

bool WriteEvents(int64_t* events_left, httplib::DataSink& sink, const std::string& bytes) {
  if (bytes.empty()) return true;
  if (*events_left < 0) {
    for (size_t at = 0; at < bytes.size(); at += kMaxWriteBytes) {
      const size_t n = std::min(kMaxWriteBytes, bytes.size() - at);
      if (!sink.write(bytes.data() + at, n)) return false;
    }
    return true;
  }
  size_t end = 0;
  while (*events_left > 0) {
    const size_t next = bytes.find("\n\n", end);
    if (next == std::string::npos) break;
    end = next + 2;
    --*events_left;
  }
  if (*events_left > 0 || end == bytes.size()) {
    if (!sink.write(bytes.data(), bytes.size())) return false;
    return *events_left > 0;
  }
  if (end > 0) sink.write(bytes.data(), end);
  return false;  // cut the connection without the final chunk
}

void StreamEvents(const std::string& id, std::shared_ptr<EventPipe> events, std::string refusal,
                  std::function<void()> on_client_gone, ExecdContext* context, httplib::Response& res) {
  res.status = 200;
  res.set_header("Cache-Control", "no-cache");
  res.set_header("Connection", "keep-alive");
  res.set_header("X-Accel-Buffering", "no");
  auto stream = std::make_shared<Stream>();
  stream->id = id;
  stream->events = std::move(events);
  stream->refusal = std::move(refusal);
  stream->on_client_gone = std::move(on_client_gone);
  const int64_t reset_after = context->faults->Get().reset_stream_after_events;
  if (reset_after > 0) stream->events_left = reset_after;
  ServerClock clock = context->clock;
  res.set_chunked_content_provider(
      "text/event-stream",
      [stream, clock](size_t, httplib::DataSink& sink) {
        if (!stream->started) {
          stream->started = true;
          std::string head;
          AppendInitEvent(&head, stream->id, clock.NowUnixMillis());
          AppendPingEvent(&head, clock.NowUnixMillis());
          stream->next_ping = SteadyClock::now() + kPingInterval;
          if (!stream->events) {
            head += stream->refusal;
            if (!Write(*stream, sink, head)) return false;
            stream->ended = true;
            sink.done();
            return true;
          }
          return Write(*stream, sink, head);
        }
        switch (stream->events->Read(&stream->buffer, stream->next_ping)) {
          case EventPipe::ReadResult::kData:
            return Write(*stream, sink, stream->buffer);
          case EventPipe::ReadResult::kTimeout: {
            std::string ping;
            AppendPingEvent(&ping, clock.NowUnixMillis());
            stream->next_ping += kPingInterval;
            return Write(*stream, sink, ping);
          }
          case EventPipe::ReadResult::kClosed:
            stream->ended = true;
            sink.done();
            return true;
        }
        return false;
      },
      [stream](bool) {
        if (stream->events) stream->events->Detach();
        if (!stream->ended && stream->on_client_gone) stream->on_client_gone();
      });
}

}  // namespace fake_opensandbox
