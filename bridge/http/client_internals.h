#pragma once
// What the two halves of the HTTP client share (http_client.h): http_client.cc, the
// callers' side (submit a transfer, wait for it, turn its end into a result), and
// curl_io.cc, the I/O thread (libcurl's handles, callbacks and event loop). Not for use
// outside bridge/http.

#include <curl/curl.h>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "bridge/http/http_client.h"

namespace abx::http {

// Size of the blocks a stream's bytes are handed over in. Small writes from curl (one SSE
// event per HTTP chunk is typical) are packed into the current block, so a fast stream of
// small events costs one lock and one memcpy per write, not an allocation.
inline constexpr size_t kBlockBytes = 256 << 10;

// kDrain: the caller has what it wanted, but the rest of the response is read (and
// dropped) so the connection survives; see Request::drain_ms.
enum class StopReason : int { kNone = 0, kCancelled, kIdleTimeout, kCallback, kShutdown, kDrain };

inline int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
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

}  // namespace abx::http
