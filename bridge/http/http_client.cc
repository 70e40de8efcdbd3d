#include "bridge/http/http_client.h"

#include <curl/curl.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <condition_variable>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <unordered_map>
#include <utility>

#include "bridge/http/url.h"

namespace abx::http {
namespace {

// Size of the blocks a stream's bytes are handed over in. Small writes from curl (one SSE
// event per HTTP chunk is typical) are packed into the current block, so a fast stream of
// small events costs one lock and one memcpy per write, not an allocation.
constexpr size_t kBlockBytes = 256 << 10;
constexpr int64_t kPollMs = 1000;  // the I/O thread is woken on demand; this is only a backstop

// kDrain: the caller has what it wanted, but the rest of the response is read (and
// dropped) so the connection survives; see Request::drain_ms.
enum class StopReason : int { kNone = 0, kCancelled, kIdleTimeout, kCallback, kShutdown, kDrain };

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

std::once_flag g_global_init_once;
CURLcode g_global_init_result = CURLE_OK;

bool HasLineBreakOrNul(std::string_view s) {
  return s.find_first_of(std::string_view("\r\n\0", 3)) != std::string_view::npos;
}

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsBlank(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsBlank(s.back())) s.remove_suffix(1);
  return s;
}

// "HTTP/1.1 204 No Content" → 204; 0 when unreadable.
int StatusFromStatusLine(std::string_view line) {
  size_t space = line.find(' ');
  if (space == std::string_view::npos) return 0;
  int status = 0;
  for (size_t i = space + 1; i < line.size() && line[i] >= '0' && line[i] <= '9'; ++i) {
    status = status * 10 + (line[i] - '0');
    if (status > 999) return 0;
  }
  return status;
}

}  // namespace

const char* TransportErrorKindName(TransportErrorKind kind) {
  switch (kind) {
    case TransportErrorKind::kUnreachable:
      return "unreachable";
    case TransportErrorKind::kTimeout:
      return "timeout";
    case TransportErrorKind::kCancelled:
      return "cancelled";
    case TransportErrorKind::kBrokenStream:
      return "broken_stream";
    case TransportErrorKind::kOther:
      return "other";
  }
  return "other";
}

// One exchange, shared by the calling thread and the I/O thread.
struct HttpClient::Transfer {
  Transfer(const Request& the_request, bool is_stream, size_t limit)
      : owned(is_stream && the_request.drain_ms > 0 ? OwnedCopy(the_request) : nullptr),
        request(owned ? *owned : the_request),
        streaming(is_stream),
        queue_limit(limit) {}

  // A transfer that may drain outlives its caller's call, so it keeps its own request.
  static std::unique_ptr<Request> OwnedCopy(const Request& request) {
    auto copy = std::make_unique<Request>(request);
    if (copy->borrowed_body) {
      copy->body = std::string(*copy->borrowed_body);
      copy->borrowed_body.reset();
    }
    return copy;
  }

  const std::unique_ptr<Request> owned;
  // Outlives the transfer: the caller waits until it is finished, or `owned` holds it.
  const Request& request;
  const bool streaming;
  const size_t queue_limit;
  std::atomic<int64_t>* pauses = nullptr;  // the client's counter

  // I/O thread only.
  CURL* easy = nullptr;
  curl_slist* header_list = nullptr;
  char error_buffer[CURL_ERROR_SIZE] = {};
  bool connected = false;  // a connection was made or reused (CURLOPT_PREREQFUNCTION)
  curl_off_t uploaded = 0;
  int64_t drain_until_ms = 0;  // draining (stop == kDrain) ends by then

  // Written by the caller, read by the I/O thread.
  std::atomic<int> stop{static_cast<int>(StopReason::kNone)};
  std::atomic<bool> unpause{false};
  // Written by both.
  std::atomic<int64_t> last_activity_ms{0};

  std::mutex mu;
  std::condition_variable cv;
  // Under mu.
  int status = 0;
  HeaderMap headers;
  bool head_done = false;            // the final response's head is complete
  std::deque<std::string> blocks;    // Stream: received, not yet handed to on_data
  size_t queued_bytes = 0;
  bool paused = false;               // Stream: curl holds data back until the queue drains
  // Stream: emptied blocks, reused. As many as a full queue holds, so a fast stream keeps
  // writing into the same few MiB: a fresh 256 KiB block may be fresh pages, and their
  // faults (and giving them back) cost more than the copy itself.
  std::vector<std::string> spare;
  bool finished = false;             // the I/O thread is done with it
  CURLcode result = CURLE_OK;
  StopReason stopped_by = StopReason::kNone;
  bool was_connected = false;
  std::string detail;                // curl's description of a failure

  // Send: the body. Written by the I/O thread only until `finished` is published.
  std::string body;
};

// The libcurl side: handles and callbacks, used by the I/O thread only (the share's locks
// and the wake-up eventfd are the exceptions).
//
// The multi handle is driven by curl's socket interface (curl_multi_socket_action) over an
// epoll set, not by curl_multi_perform + curl_multi_poll: those look at every transfer on
// every turn (each one a poll() of its socket) and pass every socket to poll() again, so
// with 64 transfers in flight a turn cost ~65 system calls, and there is a turn for every
// event of every transfer. With the socket interface a turn touches only the sockets that
// are ready, and curl's timeouts come through its timer callback.
class HttpClient::Curl {
 public:
  ~Curl() {
    if (multi != nullptr) curl_multi_cleanup(multi);
    if (share != nullptr) curl_share_cleanup(share);
    if (epoll_fd >= 0) close(epoll_fd);
    if (wake_fd >= 0) close(wake_fd);
  }

  static void Lock(CURL*, curl_lock_data data, curl_lock_access, void* user) {
    static_cast<Curl*>(user)->locks[static_cast<size_t>(data)].lock();
  }
  static void Unlock(CURL*, curl_lock_data data, void* user) {
    static_cast<Curl*>(user)->locks[static_cast<size_t>(data)].unlock();
  }

  static size_t OnHeader(char* buffer, size_t size, size_t count, void* user);
  static size_t OnBody(char* buffer, size_t size, size_t count, void* user);
  static size_t OnStreamBody(char* buffer, size_t size, size_t count, void* user);
  static size_t OnReadBody(char* buffer, size_t size, size_t count, void* user);
  static int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t uploaded);
  static int OnPrereq(void* user, char*, char*, int, int);
  // curl asks to watch (or forget) a socket: kept in the epoll set.
  static int OnSocket(CURL* easy, curl_socket_t socket, int what, void* user, void* socket_user);
  // curl wants curl_multi_socket_action(CURL_SOCKET_TIMEOUT) after `timeout_ms` (-1: never).
  static int OnTimer(CURLM* multi, long timeout_ms, void* user);

  // Runs curl's timeout if it is due by `now_ms`.
  void RunTimerIfDue(int64_t now_ms);

  CURLM* multi = nullptr;
  CURLSH* share = nullptr;
  int epoll_fd = -1;
  int wake_fd = -1;  // eventfd: written by Wake() from any thread
  int64_t timer_due_ms = -1;  // when curl's timeout is due; -1: none
  std::array<std::mutex, CURL_LOCK_DATA_LAST> locks;
  std::unordered_map<CURL*, std::shared_ptr<Transfer>> active;
};

size_t HttpClient::Curl::OnHeader(char* buffer, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t length = size * count;
  t->last_activity_ms.store(NowMs(), std::memory_order_relaxed);
  std::string_view line(buffer, length);
  while (!line.empty() && (line.back() == '\n' || line.back() == '\r')) line.remove_suffix(1);
  bool notify = false;
  {
    std::lock_guard<std::mutex> lock(t->mu);
    if (t->head_done) return length;  // trailers of a chunked body
    if (line.compare(0, 5, "HTTP/") == 0) {
      // A new status line: an interim (1xx) response's headers are dropped.
      t->headers.Clear();
      t->status = StatusFromStatusLine(line);
    } else if (line.empty()) {
      if (t->status >= 200) {
        t->head_done = true;
        notify = t->streaming;
      }
    } else if (IsBlank(line.front())) {
      // Obsolete line folding: continues the previous value.
      t->headers.ExtendLastValue(Trim(line));
    } else {
      size_t colon = line.find(':');
      if (colon != std::string_view::npos) {
        t->headers.Add(std::string(Trim(line.substr(0, colon))),
                       std::string(Trim(line.substr(colon + 1))));
      }
    }
  }
  if (notify) t->cv.notify_all();
  return length;
}

size_t HttpClient::Curl::OnBody(char* buffer, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t length = size * count;
  if (t->body.empty()) {
    curl_off_t expected = -1;
    if (curl_easy_getinfo(t->easy, CURLINFO_CONTENT_LENGTH_DOWNLOAD_T, &expected) == CURLE_OK &&
        expected > 0 && expected < (curl_off_t{1} << 30)) {
      t->body.reserve(static_cast<size_t>(expected));
    }
  }
  t->body.append(buffer, length);
  return length;
}

size_t HttpClient::Curl::OnStreamBody(char* buffer, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t length = size * count;
  // Draining: nobody reads these bytes any more.
  if (t->stop.load(std::memory_order_relaxed) == static_cast<int>(StopReason::kDrain)) {
    return length;
  }
  bool was_empty;
  {
    std::lock_guard<std::mutex> lock(t->mu);
    if (t->queued_bytes >= t->queue_limit) {
      if (!t->paused && t->pauses != nullptr) t->pauses->fetch_add(1, std::memory_order_relaxed);
      t->paused = true;
      return CURL_WRITEFUNC_PAUSE;  // curl keeps these bytes and offers them again on unpause
    }
    was_empty = t->blocks.empty();
    if (was_empty || t->blocks.back().size() + length > t->blocks.back().capacity()) {
      std::string block;
      if (!t->spare.empty()) {
        block = std::move(t->spare.back());
        t->spare.pop_back();
      }
      block.reserve(std::max(kBlockBytes, length));
      t->blocks.push_back(std::move(block));
    }
    t->blocks.back().append(buffer, length);
    t->queued_bytes += length;
  }
  t->last_activity_ms.store(NowMs(), std::memory_order_relaxed);
  if (was_empty) t->cv.notify_all();
  return length;
}

size_t HttpClient::Curl::OnReadBody(char* buffer, size_t size, size_t count, void* user) {
  auto* t = static_cast<Transfer*>(user);
  const size_t got = t->request.body_source->Read(buffer, size * count);
  if (got == BodySource::kWait) return CURL_READFUNC_PAUSE;  // the source's resume hook wakes it
  if (got == BodySource::kAbort) return CURL_READFUNC_ABORT;
  return got;
}

int HttpClient::Curl::OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t,
                                 curl_off_t uploaded) {
  auto* t = static_cast<Transfer*>(user);
  if (uploaded != t->uploaded) {
    t->uploaded = uploaded;
    t->last_activity_ms.store(NowMs(), std::memory_order_relaxed);
  }
  return 0;
}

int HttpClient::Curl::OnPrereq(void* user, char*, char*, int, int) {
  static_cast<Transfer*>(user)->connected = true;
  return CURL_PREREQFUNC_OK;
}

int HttpClient::Curl::OnSocket(CURL*, curl_socket_t socket, int what, void* user, void*) {
  auto* curl = static_cast<Curl*>(user);
  if (what == CURL_POLL_REMOVE) {
    // The socket may be closed already, which removed it from the set.
    epoll_ctl(curl->epoll_fd, EPOLL_CTL_DEL, socket, nullptr);
    return 0;
  }
  epoll_event event = {};
  event.events = ((what & CURL_POLL_IN) != 0 ? EPOLLIN : 0u) |
                 ((what & CURL_POLL_OUT) != 0 ? EPOLLOUT : 0u);
  event.data.fd = socket;
  // MOD first: a socket curl already watches only changes direction. ENOENT: a new one,
  // or one whose number was closed and reused since.
  if (epoll_ctl(curl->epoll_fd, EPOLL_CTL_MOD, socket, &event) != 0 && errno == ENOENT) {
    epoll_ctl(curl->epoll_fd, EPOLL_CTL_ADD, socket, &event);
  }
  return 0;
}

int HttpClient::Curl::OnTimer(CURLM*, long timeout_ms, void* user) {
  static_cast<Curl*>(user)->timer_due_ms = timeout_ms < 0 ? -1 : NowMs() + timeout_ms;
  return 0;
}

void HttpClient::Curl::RunTimerIfDue(int64_t now_ms) {
  if (timer_due_ms < 0 || timer_due_ms > now_ms) return;
  timer_due_ms = -1;  // curl sets it again from inside the call if it wants
  int running = 0;
  curl_multi_socket_action(multi, CURL_SOCKET_TIMEOUT, 0, &running);
}

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

namespace {

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

bool HasHeader(const HeaderList& headers, std::string_view name) {
  for (const auto& header : headers) {
    if (EqualsIgnoreCase(header.first, name)) return true;
  }
  return false;
}

}  // namespace

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

namespace {

// Configures `easy` for `request`. Returns false with `error` set if curl refuses.
bool Configure(CURL* easy, const Request& request, bool streaming, const HttpClientOptions& options,
               CURLSH* share, curl_slist** header_list, std::string* error) {
  auto set_failed = [&](CURLcode code) {
    *error = std::string("libcurl refused an option: ") + curl_easy_strerror(code);
    return false;
  };
  CURLcode code = CURLE_OK;
#define ABX_SET(option, value)                                        \
  if ((code = curl_easy_setopt(easy, option, value)) != CURLE_OK) { \
    return set_failed(code);                                          \
  }
  ABX_SET(CURLOPT_URL, request.url.c_str());
  ABX_SET(CURLOPT_PROTOCOLS_STR, "http,https");
  ABX_SET(CURLOPT_NOSIGNAL, 1L);
  ABX_SET(CURLOPT_HTTP_VERSION, static_cast<long>(CURL_HTTP_VERSION_1_1));
  ABX_SET(CURLOPT_TCP_NODELAY, 1L);
  ABX_SET(CURLOPT_TCP_KEEPALIVE, 1L);
  ABX_SET(CURLOPT_TCP_KEEPIDLE, static_cast<long>(options.tcp_keepalive_idle_s));
  ABX_SET(CURLOPT_TCP_KEEPINTVL, static_cast<long>(options.tcp_keepalive_idle_s));
  ABX_SET(CURLOPT_BUFFERSIZE, static_cast<long>(options.receive_buffer_bytes));
  ABX_SET(CURLOPT_UPLOAD_BUFFERSIZE, static_cast<long>(options.upload_buffer_bytes));
  ABX_SET(CURLOPT_SHARE, share);
  ABX_SET(CURLOPT_FOLLOWLOCATION, 0L);
  ABX_SET(CURLOPT_SUPPRESS_CONNECT_HEADERS, 1L);
  if (!options.use_environment_proxy) ABX_SET(CURLOPT_PROXY, "");
  if (!options.verify_tls) {
    ABX_SET(CURLOPT_SSL_VERIFYPEER, 0L);
    ABX_SET(CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (request.connect_timeout_ms > 0) {
    ABX_SET(CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(request.connect_timeout_ms));
  }
  if (!streaming && request.timeout_ms > 0) {
    ABX_SET(CURLOPT_TIMEOUT_MS, static_cast<long>(request.timeout_ms));
  }

  const std::string& method = request.method;
  std::string_view body = request.BodyView();
  const bool has_body = !body.empty() || method == "POST" || method == "PUT" || method == "PATCH" ||
                        request.body_source != nullptr;
  if (request.body_source != nullptr) {
    // A body of unknown length: read by OnReadBody, sent in chunks. No rewinding: a
    // made body cannot be made again, so curl fails the call rather than resend it.
    ABX_SET(CURLOPT_POST, 1L);
    if (method != "POST") ABX_SET(CURLOPT_CUSTOMREQUEST, method.c_str());
  } else if (method == "HEAD") {
    ABX_SET(CURLOPT_NOBODY, 1L);
  } else if (method == "GET" && !has_body) {
    ABX_SET(CURLOPT_HTTPGET, 1L);
  } else {
    if (method != "POST") ABX_SET(CURLOPT_CUSTOMREQUEST, method.c_str());
    if (has_body) {
      // Not CURLOPT_COPYPOSTFIELDS: curl reads the caller's bytes in place.
      ABX_SET(CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body.size()));
      ABX_SET(CURLOPT_POSTFIELDS, body.empty() ? "" : body.data());
    }
  }

  curl_slist* list = nullptr;
  auto append = [&](const std::string& line) {
    curl_slist* grown = curl_slist_append(list, line.c_str());
    if (grown == nullptr) return false;
    list = grown;
    return true;
  };
  bool ok = true;
  for (const auto& [name, value] : request.headers) {
    // "Name;" is curl's way to send a header with an empty value ("Name:" would drop it).
    ok = ok && append(value.empty() ? name + ";" : name + ": " + value);
  }
  // No "Expect: 100-continue" round trip before large bodies, and no made-up
  // application/x-www-form-urlencoded type for a body sent without one.
  if (!HasHeader(request.headers, "Expect")) ok = ok && append("Expect:");
  if (has_body && !HasHeader(request.headers, "Content-Type")) ok = ok && append("Content-Type:");
  if (request.body_source != nullptr) ok = ok && append("Transfer-Encoding: chunked");
  *header_list = list;
  if (!ok) {
    *error = "out of memory building the request headers";
    return false;
  }
  ABX_SET(CURLOPT_HTTPHEADER, list);
#undef ABX_SET
  return true;
}

}  // namespace

void HttpClient::Run() {
  Curl& curl = *curl_;
  std::vector<std::shared_ptr<Transfer>> incoming;
  std::vector<std::shared_ptr<Transfer>> to_stop;

  auto finish = [&](const std::shared_ptr<Transfer>& t, CURLcode result, StopReason stopped_by,
                    std::string detail) {
    long connects = 0;
    if (t->easy != nullptr) {
      curl_easy_getinfo(t->easy, CURLINFO_NUM_CONNECTS, &connects);
      if (detail.empty() && result != CURLE_OK) {
        detail = t->error_buffer[0] != '\0' ? t->error_buffer : curl_easy_strerror(result);
      }
      if (curl.active.erase(t->easy) > 0) {
        curl_multi_remove_handle(curl.multi, t->easy);
        counters_.transfers_active.fetch_sub(1, std::memory_order_relaxed);
      }
      curl_easy_cleanup(t->easy);
      t->easy = nullptr;
    }
    curl_slist_free_all(t->header_list);
    t->header_list = nullptr;
    counters_.connections_opened.fetch_add(connects, std::memory_order_relaxed);
    {
      std::lock_guard<std::mutex> lock(t->mu);
      t->finished = true;
      t->result = result;
      t->stopped_by = stopped_by;
      t->was_connected = t->connected;
      t->detail = std::move(detail);
    }
    t->cv.notify_all();
  };

  auto add = [&](const std::shared_ptr<Transfer>& t) {
    t->easy = curl_easy_init();
    if (t->easy == nullptr) {
      finish(t, CURLE_OUT_OF_MEMORY, StopReason::kNone, "out of memory");
      return;
    }
    std::string error;
    if (!Configure(t->easy, t->request, t->streaming, options_, curl.share, &t->header_list,
                   &error)) {
      finish(t, CURLE_FAILED_INIT, StopReason::kNone, error);
      return;
    }
    Transfer* raw = t.get();
    curl_easy_setopt(t->easy, CURLOPT_PRIVATE, raw);
    curl_easy_setopt(t->easy, CURLOPT_ERRORBUFFER, t->error_buffer);
    curl_easy_setopt(t->easy, CURLOPT_HEADERFUNCTION, &Curl::OnHeader);
    curl_easy_setopt(t->easy, CURLOPT_HEADERDATA, raw);
    curl_easy_setopt(t->easy, CURLOPT_WRITEFUNCTION,
                     t->streaming ? &Curl::OnStreamBody : &Curl::OnBody);
    curl_easy_setopt(t->easy, CURLOPT_WRITEDATA, raw);
    curl_easy_setopt(t->easy, CURLOPT_PREREQFUNCTION, &Curl::OnPrereq);
    curl_easy_setopt(t->easy, CURLOPT_PREREQDATA, raw);
    if (t->request.body_source != nullptr) {
      curl_easy_setopt(t->easy, CURLOPT_READFUNCTION, &Curl::OnReadBody);
      curl_easy_setopt(t->easy, CURLOPT_READDATA, raw);
    }
    if (t->streaming && !t->request.BodyView().empty()) {
      // Upload progress counts as activity for the idle limit.
      curl_easy_setopt(t->easy, CURLOPT_NOPROGRESS, 0L);
      curl_easy_setopt(t->easy, CURLOPT_XFERINFOFUNCTION, &Curl::OnProgress);
      curl_easy_setopt(t->easy, CURLOPT_XFERINFODATA, raw);
    }
    CURLMcode added = curl_multi_add_handle(curl.multi, t->easy);
    if (added != CURLM_OK) {
      finish(t, CURLE_FAILED_INIT, StopReason::kNone,
             std::string("libcurl refused the transfer: ") + curl_multi_strerror(added));
      return;
    }
    curl.active.emplace(t->easy, t);
    counters_.transfers_active.fetch_add(1, std::memory_order_relaxed);
  };

  // Finishes the transfers curl reports done.
  auto collect_done = [&] {
    int left = 0;
    while (CURLMsg* message = curl_multi_info_read(curl.multi, &left)) {
      if (message->msg != CURLMSG_DONE) continue;
      auto found = curl.active.find(message->easy_handle);
      if (found == curl.active.end()) continue;
      std::shared_ptr<Transfer> t = found->second;
      if (t->stop.load() == static_cast<int>(StopReason::kDrain)) {
        (message->data.result == CURLE_OK ? counters_.drains_completed
                                          : counters_.drains_abandoned)
            .fetch_add(1, std::memory_order_relaxed);
      }
      finish(t, message->data.result, StopReason::kNone, "");
    }
  };

  std::array<epoll_event, 64> events;
  // Callers' requests (stop, drain, unpause) are looked at when Wake() was called, and
  // when a drain's bound is due; socket events alone never walk the transfers.
  bool look_at_transfers = true;
  int64_t next_drain_due_ms = -1;
  for (;;) {
    bool stopping;
    {
      std::lock_guard<std::mutex> lock(queue_mu_);
      incoming.swap(queue_);
      stopping = stopping_;
    }
    if (stopping) {
      for (auto& t : incoming) finish(t, CURLE_OK, StopReason::kShutdown, "");
      std::vector<std::shared_ptr<Transfer>> remaining;
      for (auto& [easy, t] : curl.active) remaining.push_back(t);
      for (auto& t : remaining) finish(t, CURLE_OK, StopReason::kShutdown, "");
      return;
    }
    for (auto& t : incoming) add(t);  // each sets curl's timer to "now"
    incoming.clear();

    // What callers asked for since the last look: drop transfers, drain or resume
    // paused ones. A drain that outlasts its bound is dropped like a stop.
    int64_t now_ms = NowMs();
    if (next_drain_due_ms >= 0 && now_ms >= next_drain_due_ms) look_at_transfers = true;
    if (look_at_transfers) {
      look_at_transfers = false;
      next_drain_due_ms = -1;
      for (auto& [easy, t] : curl.active) {
        const int stop = t->stop.load();
        if (stop == static_cast<int>(StopReason::kDrain)) {
          if (t->drain_until_ms == 0) {
            t->drain_until_ms = now_ms + t->request.drain_ms;
            // Bytes held back for a slow consumer are dropped now (OnStreamBody).
            curl_easy_pause(easy, CURLPAUSE_CONT);
          }
          if (now_ms >= t->drain_until_ms) {
            counters_.drains_abandoned.fetch_add(1, std::memory_order_relaxed);
            to_stop.push_back(t);
          } else if (next_drain_due_ms < 0 || t->drain_until_ms < next_drain_due_ms) {
            next_drain_due_ms = t->drain_until_ms;
          }
        } else if (stop != static_cast<int>(StopReason::kNone)) {
          to_stop.push_back(t);
        } else if (t->unpause.exchange(false)) {
          // May call OnStreamBody at once with the bytes curl held back (or OnReadBody
          // for more of a made body); curl then asks for its timer to run now, which the
          // next step does.
          curl_easy_pause(easy, CURLPAUSE_CONT);
        }
      }
      for (auto& t : to_stop) finish(t, CURLE_OK, static_cast<StopReason>(t->stop.load()), "");
      to_stop.clear();
    }

    curl.RunTimerIfDue(now_ms);
    collect_done();

    int64_t wait_ms = kPollMs;
    now_ms = NowMs();
    if (curl.timer_due_ms >= 0) {
      wait_ms = std::min(wait_ms, std::max<int64_t>(0, curl.timer_due_ms - now_ms));
    }
    if (next_drain_due_ms >= 0) {
      wait_ms = std::min(wait_ms, std::max<int64_t>(0, next_drain_due_ms - now_ms));
    }
    const int ready =
        epoll_wait(curl.epoll_fd, events.data(), static_cast<int>(events.size()),
                   static_cast<int>(wait_ms));
    for (int i = 0; i < ready; ++i) {
      const int fd = events[i].data.fd;
      if (fd == curl.wake_fd) {
        uint64_t count = 0;
        ssize_t got = read(curl.wake_fd, &count, sizeof count);
        (void)got;
        look_at_transfers = true;
        continue;
      }
      const uint32_t what = events[i].events;
      int action = 0;
      if ((what & EPOLLIN) != 0) action |= CURL_CSELECT_IN;
      if ((what & EPOLLOUT) != 0) action |= CURL_CSELECT_OUT;
      if ((what & (EPOLLERR | EPOLLHUP)) != 0) action |= CURL_CSELECT_ERR;
      int running = 0;
      curl_multi_socket_action(curl.multi, fd, action, &running);
    }
    curl.RunTimerIfDue(NowMs());
    collect_done();
  }
}

}  // namespace abx::http
