// The HTTP client's I/O thread (http_client.h): libcurl's callbacks, the options of each
// transfer, and the event loop that drives every transfer of the client over one epoll set.

#include <curl/curl.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <string_view>
#include <utility>

#include "bridge/http/client_internals.h"
#include "bridge/http/header_map.h"

namespace abx::http {
namespace {

constexpr int64_t kPollMs = 1000;  // the I/O thread is woken on demand; this is only a backstop

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

bool HasHeader(const HeaderList& headers, std::string_view name) {
  for (const auto& header : headers) {
    if (EqualsIgnoreCase(header.first, name)) return true;
  }
  return false;
}

}  // namespace

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
  } else if (!streaming && request.idle_timeout_ms > 0) {
    ABX_SET(CURLOPT_LOW_SPEED_LIMIT, 1L);
    ABX_SET(CURLOPT_LOW_SPEED_TIME, static_cast<long>((request.idle_timeout_ms + 999) / 1000));
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
