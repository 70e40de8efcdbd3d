#include "tests/fake-opensandbox/http_forwarder.h"

#include <algorithm>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <thread>

#include "tests/fake-opensandbox/upstream_client.h"

namespace fake_opensandbox {
namespace {

constexpr size_t kHighWaterBytes = 4 << 20;

bool SameName(const std::string& a, const std::string& b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return tolower(static_cast<unsigned char>(x)) == tolower(static_cast<unsigned char>(y));
         });
}

bool IsHopByHop(const std::string& name) {
  for (const char* hop : {"Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
                          "TE", "Trailer", "Transfer-Encoding", "Upgrade", "Content-Length",
                          "Host", "Proxy-Connection"}) {
    if (SameName(name, hop)) return true;
  }
  return false;
}

struct ForwardState {
  std::mutex mutex;
  std::condition_variable cv;
  bool headers_ready = false;
  bool finished = false;
  bool cancelled = false;
  bool upstream_ok = false;  // the whole answer arrived
  int status = 0;
  httplib::Headers headers;
  std::string buffer;
  std::string outgoing;  // the reader's side; swapped with `buffer` so both keep capacity
};

// httplib copies every write into fresh strings; moderate pieces stay off mmap.
constexpr size_t kMaxWriteBytes = 64 << 10;

bool WriteInPieces(httplib::DataSink& sink, const std::string& data) {
  for (size_t at = 0; at < data.size(); at += kMaxWriteBytes) {
    if (!sink.write(data.data() + at, std::min(kMaxWriteBytes, data.size() - at))) return false;
  }
  return true;
}

}  // namespace

std::string RawQuery(const httplib::Request& req) {
  size_t q = req.target.find('?');
  return q == std::string::npos ? "" : req.target.substr(q);
}

httplib::Headers ForwardedHeaders(const httplib::Request& req, const ForwardTarget& target) {
  httplib::Headers headers;
  for (const auto& [name, value] : req.headers) {
    if (IsHopByHop(name)) continue;
    // httplib adds these itself on the server side; they are not the client's.
    if (SameName(name, "REMOTE_ADDR") || SameName(name, "REMOTE_PORT") ||
        SameName(name, "LOCAL_ADDR") || SameName(name, "LOCAL_PORT")) {
      continue;
    }
    bool dropped = false;
    for (const auto& drop : target.dropped_headers) dropped = dropped || SameName(name, drop);
    if (dropped) continue;
    headers.emplace(SameName(name, kProxiedContentTypeHeader) ? "Content-Type" : name, value);
  }
  for (const auto& [name, value] : target.added_headers) {
    if (!req.has_header(name.c_str())) headers.emplace(name, value);
  }
  return headers;
}

bool ForwardRequest(const httplib::Request& req, httplib::Response& res,
                    const ForwardTarget& target) {
  auto state = std::make_shared<ForwardState>();
  UpstreamRequest upstream;
  upstream.method = req.method;
  upstream.path_and_query = target.path_and_query;
  upstream.headers = ForwardedHeaders(req, target);
  upstream.body = req.body;
  UpstreamHandlers handlers;
  handlers.on_head = [state](int status, const httplib::Headers& headers) {
    std::lock_guard<std::mutex> lock(state->mutex);
    state->status = status;
    state->headers = headers;
    state->headers_ready = true;
    state->cv.notify_all();
    return true;
  };
  handlers.on_body = [state](const char* data, size_t size) {
    std::unique_lock<std::mutex> lock(state->mutex);
    state->cv.wait(lock,
                   [&] { return state->cancelled || state->buffer.size() < kHighWaterBytes; });
    if (state->cancelled) return false;
    bool was_empty = state->buffer.empty();
    state->buffer.append(data, size);
    if (was_empty) state->cv.notify_all();  // the reader may be waiting
    return true;
  };
  if (target.connection_counter) target.connection_counter->fetch_add(1);
  std::thread([state, upstream = std::move(upstream), handlers = std::move(handlers),
               port = target.port] {
    bool ok = SendUpstream(port, upstream, handlers);
    std::lock_guard<std::mutex> lock(state->mutex);
    state->upstream_ok = ok;
    state->finished = true;
    state->cv.notify_all();
  }).detach();

  {
    std::unique_lock<std::mutex> lock(state->mutex);
    state->cv.wait(lock, [&] { return state->headers_ready || state->finished; });
    if (!state->headers_ready) return false;
  }

  res.status = state->status;
  std::string content_type;
  long long content_length = -1;
  for (const auto& [name, value] : state->headers) {
    if (SameName(name, "Content-Length")) content_length = atoll(value.c_str());
    if (SameName(name, "Content-Type")) content_type = value;
    if (IsHopByHop(name) || SameName(name, "Content-Type")) continue;
    res.headers.emplace(name, value);
  }
  auto releaser = [state](bool) {
    std::lock_guard<std::mutex> lock(state->mutex);
    state->cancelled = true;
    state->buffer.clear();
    state->cv.notify_all();
  };
  bool no_body = req.method == "HEAD" || res.status == 204 || res.status == 304 ||
                 (res.status >= 100 && res.status < 200) || content_length == 0;
  if (no_body) {
    if (!content_type.empty()) res.set_header("Content-Type", content_type);
    releaser(true);
    return true;
  }
  // 1: data in state->outgoing; 0: the upstream answer ended cleanly; -1: it broke off.
  auto take = [state]() {
    std::unique_lock<std::mutex> lock(state->mutex);
    state->cv.wait(lock, [&] { return !state->buffer.empty() || state->finished; });
    state->outgoing.clear();
    state->outgoing.swap(state->buffer);
    state->cv.notify_all();
    if (!state->outgoing.empty()) return 1;
    return state->upstream_ok ? 0 : -1;
  };
  if (content_type.empty()) content_type = "application/octet-stream";
  if (content_length > 0) {
    res.set_content_provider(
        static_cast<size_t>(content_length), content_type,
        [take, state](size_t, size_t, httplib::DataSink& sink) {
          if (take() != 1) return false;  // upstream ended early: cut the answer
          return WriteInPieces(sink, state->outgoing);
        },
        releaser);
  } else {
    res.set_chunked_content_provider(
        content_type,
        [take, state](size_t, httplib::DataSink& sink) {
          int got = take();
          if (got < 0) return false;  // relay an abrupt end as an abrupt end
          if (got == 0) {
            sink.done();
            return true;
          }
          return WriteInPieces(sink, state->outgoing);
        },
        releaser);
  }
  return true;
}

void HideContentTypeFromBodyParsing(httplib::Request& req) {
  auto it = req.headers.find("Content-Type");
  if (it == req.headers.end()) return;
  std::string value = it->second;
  req.headers.erase(it);
  req.headers.emplace(kProxiedContentTypeHeader, value);
}

}  // namespace fake_opensandbox
