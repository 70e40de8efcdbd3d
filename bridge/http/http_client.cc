#include "bridge/http/http_client.h"

#include <curl/curl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <utility>

#include "bridge/http/client_internals.h"
#include "bridge/http/url.h"

// The callers' side of the client: starting and stopping it, handing transfers to the
// I/O thread (curl_io.cc) and waiting for them, and what their ends mean.

namespace abx::http {
namespace {

std::once_flag g_global_init_once;
CURLcode g_global_init_result = CURLE_OK;

bool HasLineBreakOrNul(std::string_view s) {
  return s.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos;
}

// Header names and values go into the request head verbatim; a line break would let one
// header smuggle others. Only the name is named in the error: values may be secrets.
std::optional<TransportError> CheckRequest(const Request& request) {
  auto invalid = [&](const std::string& what) {
    return TransportError{TransportErrorKind::kOther,
                          request.method + " " + UrlForMessages(request.url) + ": " + what, 0};
  };
  if (request.method.empty() || HasLineBreakOrNul(request.method) ||
      request.method.find(' ') != std::string::npos) {
    return invalid("invalid HTTP method");
  }
  if (HasLineBreakOrNul(request.url)) return invalid("invalid URL");
  for (const auto& [name, value] : request.headers) {
    if (name.empty() || HasLineBreakOrNul(name) || name.find(':') != std::string::npos) {
      return invalid("invalid header name");
    }
    if (HasLineBreakOrNul(value)) return invalid("header " + name + " has a line break in its value");
  }
  return std::nullopt;
}

}  // namespace

HttpClient::HttpClient(const HttpClientOptions& options) : options_(options) {}

std::unique_ptr<HttpClient> HttpClient::Create(const HttpClientOptions& options,
                                               std::string* error) {
  std::call_once(g_global_init_once,
                 [] { g_global_init_result = curl_global_init(CURL_GLOBAL_DEFAULT); });
  if (g_global_init_result != CURLE_OK) {
    *error = std::string("libcurl could not be initialised: ") +
             curl_easy_strerror(g_global_init_result);
    return nullptr;
  }
  std::unique_ptr<HttpClient> client(new HttpClient(options));
  if (!client->Start(error)) return nullptr;
  return client;
}

bool HttpClient::Start(std::string* error) {
  curl_ = std::make_unique<Curl>();
  curl_->multi = curl_multi_init();
  curl_->share = curl_share_init();
  if (curl_->multi == nullptr || curl_->share == nullptr) {
    *error = "libcurl could not create its handles (out of memory)";
    return false;
  }
  curl_->epoll_fd = epoll_create1(EPOLL_CLOEXEC);
  curl_->wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  epoll_event wake = {};
  wake.events = EPOLLIN;
  wake.data.fd = curl_->wake_fd;
  if (curl_->epoll_fd < 0 || curl_->wake_fd < 0 ||
      epoll_ctl(curl_->epoll_fd, EPOLL_CTL_ADD, curl_->wake_fd, &wake) != 0) {
    *error = std::string("the HTTP client's event loop could not be set up: ") + strerror(errno);
    return false;
  }
  curl_multi_setopt(curl_->multi, CURLMOPT_SOCKETFUNCTION, &Curl::OnSocket);
  curl_multi_setopt(curl_->multi, CURLMOPT_SOCKETDATA, curl_.get());
  curl_multi_setopt(curl_->multi, CURLMOPT_TIMERFUNCTION, &Curl::OnTimer);
  curl_multi_setopt(curl_->multi, CURLMOPT_TIMERDATA, curl_.get());
  curl_multi_setopt(curl_->multi, CURLMOPT_MAXCONNECTS,
                    static_cast<long>(options_.connection_cache_size));
  curl_multi_setopt(curl_->multi, CURLMOPT_PIPELINING, CURLPIPE_NOTHING);
  curl_share_setopt(curl_->share, CURLSHOPT_LOCKFUNC, &Curl::Lock);
  curl_share_setopt(curl_->share, CURLSHOPT_UNLOCKFUNC, &Curl::Unlock);
  curl_share_setopt(curl_->share, CURLSHOPT_USERDATA, curl_.get());
  curl_share_setopt(curl_->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
  curl_share_setopt(curl_->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
  thread_ = std::thread([this] { Run(); });
  return true;
}

HttpClient::~HttpClient() {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) {
    Wake();
    thread_.join();
  }
}

void HttpClient::Wake() {
  // An eventfd counts; a full counter (never, in practice) still leaves it readable.
  const uint64_t one = 1;
  ssize_t written = write(curl_->wake_fd, &one, sizeof one);
  (void)written;
}

bool HttpClient::Submit(const std::shared_ptr<Transfer>& transfer) {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    if (!stopping_) {
      queue_.push_back(transfer);
      counters_.requests_sent.fetch_add(1, std::memory_order_relaxed);
    } else {
      std::lock_guard<std::mutex> transfer_lock(transfer->mu);
      transfer->finished = true;
      transfer->stopped_by = StopReason::kShutdown;
      return false;
    }
  }
  Wake();
  return true;
}

TransportResult<Response> HttpClient::Send(const Request& request, const CancelFlag* cancel) {
  if (auto invalid = CheckRequest(request)) return *invalid;
  auto transfer = std::make_shared<Transfer>(request, /*streaming=*/false, 0);
  Transfer& t = *transfer;
  if (cancel != nullptr && cancel->is_set()) return Cancelled(t);
  if (t.request.body_source != nullptr) {
    // Resuming a body that waited for bytes: the I/O thread unpauses the transfer.
    std::weak_ptr<Transfer> weak = transfer;
    t.request.body_source->SetResume([this, weak] {
      if (auto resumed = weak.lock()) {
        resumed->unpause.store(true);
        Wake();
      }
    });
  }
  {
    // Ends with this block, while no lock is held (see cancel_flag.h).
    CancelFlag::Watch watch(cancel, [this, &t] { StopForCancel(&t); });
    if (Submit(transfer)) {
      std::unique_lock<std::mutex> lock(t.mu);
      t.cv.wait(lock, [&] { return t.finished; });
    }
  }
  if (t.request.body_source != nullptr) t.request.body_source->SetResume(nullptr);
  std::lock_guard<std::mutex> lock(t.mu);
  if (t.result != CURLE_OK || t.stopped_by != StopReason::kNone) return ErrorOf(t);
  Response response;
  response.status = t.status;
  response.headers = std::move(t.headers);
  response.body = std::move(t.body);
  return response;
}

void HttpClient::StopForCancel(Transfer* t) {
  int none = static_cast<int>(StopReason::kNone);
  if (t->stop.compare_exchange_strong(none, static_cast<int>(StopReason::kCancelled))) Wake();
}

TransportError HttpClient::Cancelled(Transfer& t) const {
  std::lock_guard<std::mutex> lock(t.mu);
  t.finished = true;
  t.stopped_by = StopReason::kCancelled;
  return ErrorOf(t);
}

TransportResult<StreamSummary> HttpClient::Stream(const Request& request,
                                                  const HeadersCallback& on_headers,
                                                  const DataCallback& on_data,
                                                  const CancelFlag* cancel) {
  if (auto invalid = CheckRequest(request)) return *invalid;
  if (request.body_source != nullptr) {
    return TransportError{TransportErrorKind::kOther,
                          request.method + " " + UrlForMessages(request.url) +
                              ": a made body is sent by Send only", 0};
  }
  auto transfer = std::make_shared<Transfer>(request, /*streaming=*/true,
                                             std::max<size_t>(options_.stream_queue_bytes, 1));
  Transfer& t = *transfer;
  t.pauses = &counters_.stream_pauses;
  t.last_activity_ms.store(NowMs());
  if (cancel != nullptr && cancel->is_set()) return Cancelled(t);
  // Lives until the call returns, after `lock` below is released (see cancel_flag.h).
  CancelFlag::Watch watch(cancel, [this, &t] { StopForCancel(&t); });
  if (!Submit(transfer)) return ErrorOf(t);

  StreamSummary summary;
  bool headers_delivered = false;
  std::deque<std::string> taken;
  // Stops the transfer and waits until the I/O thread has let go of it (the request and
  // its body must stay valid until then).
  auto stop = [&](std::unique_lock<std::mutex>& lock, StopReason reason) {
    t.stop.store(static_cast<int>(reason));
    Wake();
    t.cv.wait(lock, [&] { return t.finished; });
  };
  // The caller is done. With drain_ms the rest is read on the I/O thread, which owns the
  // transfer from here on (its request is a copy); the callbacks are never called again.
  auto stop_by_callback = [&](std::unique_lock<std::mutex>& lock) {
    summary.stopped = true;
    if (request.drain_ms > 0 && !t.finished) {
      t.stop.store(static_cast<int>(StopReason::kDrain));
      Wake();
      return;
    }
    stop(lock, StopReason::kCallback);
  };

  std::unique_lock<std::mutex> lock(t.mu);
  for (;;) {
    // Dropped on purpose (cancel, idle limit): nothing more is handed out.
    if (t.finished && t.stopped_by != StopReason::kNone) break;
    // Whatever arrived is handed out, even when the transfer failed later: the output an
    // exec produced before its stream broke is still its output.
    if (!headers_delivered && (t.head_done || (t.finished && t.result == CURLE_OK))) {
      headers_delivered = true;
      summary.status = t.status;
      summary.headers = std::move(t.headers);  // the I/O thread is done with them
      lock.unlock();
      bool go_on = !on_headers || on_headers(summary.status, summary.headers);
      lock.lock();
      if (!go_on) {
        stop_by_callback(lock);
        return summary;
      }
      continue;
    }
    if (!t.blocks.empty() && headers_delivered) {
      taken.swap(t.blocks);
      t.queued_bytes = 0;
      if (t.paused) {
        t.paused = false;
        t.last_activity_ms.store(NowMs());
        t.unpause.store(true);
        Wake();
      }
      lock.unlock();
      bool go_on = true;
      for (std::string& block : taken) {
        if (go_on) {
          summary.body_bytes += block.size();
          go_on = on_data(block.data(), block.size());
        }
        block.clear();
      }
      lock.lock();
      const size_t keep_spare = t.queue_limit / kBlockBytes + 2;
      while (!taken.empty()) {
        if (t.spare.size() < keep_spare && taken.front().capacity() <= kBlockBytes) {
          t.spare.push_back(std::move(taken.front()));
        }
        taken.pop_front();
      }
      if (!go_on) {
        stop_by_callback(lock);
        return summary;
      }
      continue;
    }
    if (t.finished) break;
    // A cancel needs no look here: the watch has the I/O thread drop the transfer, which
    // finishes it and wakes this wait. If it completed just before, the rest is still
    // handed out.
    if (request.idle_timeout_ms == 0) {
      t.cv.wait(lock);
      continue;
    }
    const int64_t idle_until =
        t.last_activity_ms.load(std::memory_order_relaxed) + request.idle_timeout_ms;
    const int64_t now_ms = NowMs();
    if (now_ms > idle_until) {
      stop(lock, StopReason::kIdleTimeout);
      continue;
    }
    // Activity does not wake this wait (only data, the head and the end do), so it
    // wakes when the limit would be due and looks again.
    t.cv.wait_for(lock, std::chrono::milliseconds(idle_until - now_ms + 1));
  }
  if (t.result != CURLE_OK || t.stopped_by != StopReason::kNone) return ErrorOf(t);
  return summary;
}

TransportError HttpClient::ErrorOf(const Transfer& t) const {
  TransportError error;
  error.status = t.head_done ? t.status : 0;
  const Request& request = t.request;
  std::string prefix = request.method + " " + UrlForMessages(request.url) + ": ";
  std::string detail = t.detail.empty() ? "" : " (" + t.detail + ")";
  switch (t.stopped_by) {
    case StopReason::kCancelled:
    case StopReason::kCallback:
    case StopReason::kDrain:
      error.kind = TransportErrorKind::kCancelled;
      error.message = prefix + "cancelled";
      return error;
    case StopReason::kShutdown:
      error.kind = TransportErrorKind::kCancelled;
      error.message = prefix + "the HTTP client is shutting down";
      return error;
    case StopReason::kIdleTimeout:
      error.kind = TransportErrorKind::kTimeout;
      error.message = prefix + "no data from the server for " +
                      std::to_string(request.idle_timeout_ms) + " ms";
      return error;
    case StopReason::kNone:
      break;
  }
  switch (t.result) {
    case CURLE_COULDNT_RESOLVE_HOST:
    case CURLE_COULDNT_RESOLVE_PROXY:
      error.kind = TransportErrorKind::kUnreachable;
      error.message = prefix + "could not resolve the host" + detail;
      break;
    case CURLE_COULDNT_CONNECT:
      error.kind = TransportErrorKind::kUnreachable;
      error.message = prefix + "could not connect" + detail;
      break;
    case CURLE_OPERATION_TIMEDOUT:
      if (t.was_connected) {
        error.kind = TransportErrorKind::kTimeout;
        error.message = prefix + "no complete answer within " +
                        std::to_string(request.timeout_ms) + " ms" + detail;
      } else {
        error.kind = TransportErrorKind::kUnreachable;
        error.message = prefix + "could not connect in time" + detail;
      }
      break;
    case CURLE_GOT_NOTHING:
      error.kind = TransportErrorKind::kBrokenStream;
      error.message = prefix + "the server closed the connection without answering" + detail;
      break;
    case CURLE_RECV_ERROR:
    case CURLE_SEND_ERROR:
    case CURLE_PARTIAL_FILE:
      error.kind = TransportErrorKind::kBrokenStream;
      error.message = prefix + "the connection broke before the response was complete" + detail;
      break;
    default:
      error.kind = TransportErrorKind::kOther;
      error.message = prefix + "the request failed" + detail;
      break;
  }
  return error;
}

}  // namespace abx::http
