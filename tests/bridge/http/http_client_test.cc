#include "bridge/http/http_client.h"

#include <httplib.h>
#include <netinet/tcp.h>
#include <sys/socket.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <random>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "gtest/gtest.h"
#include "tests/bridge/http/raw_server.h"

namespace abx::http {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;
using testing::RawServer;
using testing::RefusingPort;

int64_t MillisSince(steady_clock::time_point start) {
  return std::chrono::duration_cast<milliseconds>(steady_clock::now() - start).count();
}

// The byte at `offset` of the test streams: position-dependent, so a lost, repeated or
// reordered byte is caught.
char StreamByte(uint64_t offset) { return static_cast<char>((offset * 2654435761u) >> 13); }

uint64_t Fnv1a(const char* data, size_t size, uint64_t hash = 1469598103934665603ull) {
  for (size_t i = 0; i < size; ++i) {
    hash ^= static_cast<unsigned char>(data[i]);
    hash *= 1099511628211ull;
  }
  return hash;
}

// An in-process cpp-httplib server on 127.0.0.1, port 0. Register routes on http(), then
// Start(). Handlers that must hang wait in WaitReleased(), which teardown ends.
class TestServer {
 public:
  TestServer() {
    server_.set_keep_alive_max_count(1000);
    server_.set_keep_alive_timeout(30);
    // Accepted sockets inherit TCP_NODELAY. Without it cpp-httplib's separate writes of
    // head and body meet the client's delayed ACK: 40 ms per reused-connection request.
    server_.set_socket_options([](socket_t fd) {
      int yes = 1;
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof(yes));
      setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &yes, sizeof(yes));
    });
  }
  ~TestServer() {
    Release();
    server_.stop();
    if (thread_.joinable()) thread_.join();
  }

  httplib::Server& http() { return server_; }

  void Start() {
    port_ = server_.bind_to_any_port("127.0.0.1");
    ASSERT_GT(port_, 0);
    thread_ = std::thread([this] {
      server_.listen_after_bind();
      loop_ended_ = true;
    });
    // httplib's stop() does nothing until the accept loop has begun: no deadline here, or
    // a loop that begins after it would never be stopped and the join would hang.
    while (!server_.is_running() && !loop_ended_) std::this_thread::sleep_for(milliseconds(1));
    ASSERT_TRUE(server_.is_running());
  }

  std::string Url(const std::string& path) const {
    return "http://127.0.0.1:" + std::to_string(port_) + path;
  }

  // Blocks a handler until Release() or `limit`; true when released.
  bool WaitReleased(milliseconds limit = milliseconds(5000)) {
    std::unique_lock<std::mutex> lock(mu_);
    return cv_.wait_for(lock, limit, [this] { return released_; });
  }
  void Release() {
    std::lock_guard<std::mutex> lock(mu_);
    released_ = true;
    cv_.notify_all();
  }

  // Client ports seen, one per TCP connection.
  void NoteConnection(const httplib::Request& request) {
    std::lock_guard<std::mutex> lock(mu_);
    client_ports_.insert(request.remote_port);
  }
  size_t connections_seen() {
    std::lock_guard<std::mutex> lock(mu_);
    return client_ports_.size();
  }

 private:
  httplib::Server server_;
  std::atomic<bool> loop_ended_{false};
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::condition_variable cv_;
  bool released_ = false;
  std::set<int> client_ports_;
};

std::unique_ptr<HttpClient> MakeClient(HttpClientOptions options = {}) {
  options.use_environment_proxy = false;  // hermetic, whatever http_proxy says
  std::string error;
  auto client = HttpClient::Create(options, &error);
  EXPECT_NE(client, nullptr) << error;
  return client;
}

Request Get(const std::string& url) {
  Request request;
  request.url = url;
  return request;
}

// Headers and a URL holding secrets, which no error message may repeat.
const char* const kSecrets[] = {"sk-secret-api-key-123", "execd-token-456", "query-token-789",
                                "userpass-0"};

Request WithSecrets(Request request) {
  request.headers = {{"OPEN-SANDBOX-API-KEY", kSecrets[0]}, {"X-EXECD-ACCESS-TOKEN", kSecrets[1]}};
  size_t scheme_end = request.url.find("://") + 3;
  request.url.insert(scheme_end, std::string("user:") + kSecrets[3] + "@");
  request.url += std::string(request.url.find('?') == std::string::npos ? "?" : "&") +
                 "token=" + kSecrets[2];
  return request;
}

void ExpectNoSecrets(const TransportError& error) {
  for (const char* secret : kSecrets) {
    EXPECT_EQ(error.message.find(secret), std::string::npos) << error.message;
  }
}

TEST(HttpClientTest, StatusHeadersAndBody) {
  TestServer server;
  server.http().Get("/hello", [](const httplib::Request& request, httplib::Response& response) {
    response.status = 201;
    response.set_header("X-Request-ID", "req-42");
    response.set_header("X-Multi", "one");
    response.set_header("X-Multi", "two");
    response.set_content("hi " + request.get_header_value("X-Name"), "text/plain");
  });
  server.Start();
  auto client = MakeClient();
  Request request = Get(server.Url("/hello"));
  request.headers = {{"X-Name", "bridge"}};
  auto response = client->Send(request, nullptr);
  ASSERT_TRUE(response.ok()) << response.error().message;
  EXPECT_EQ(response->status, 201);
  EXPECT_EQ(response->Header("x-request-id"), "req-42");
  EXPECT_EQ(response->Header("X-REQUEST-ID"), "req-42");
  EXPECT_EQ(response->headers.GetAll("x-multi"), (std::vector<std::string>{"one", "two"}));
  EXPECT_EQ(response->Header("content-type"), "text/plain");
  EXPECT_EQ(response->Header("absent"), "");
  EXPECT_EQ(response->body, "hi bridge");
  EXPECT_EQ(client->counters().requests_sent.load(), 1);
}

TEST(HttpClientTest, SendsHeadersAsGiven) {
  RawServer server([](int fd) {
    RawServer::WriteAll(fd, "HTTP/1.1 204 No Content\r\n\r\n");
    return true;
  });
  auto client = MakeClient();
  Request request = Get("http://127.0.0.1:" + std::to_string(server.port()) + "/x?a=1");
  request.headers = {{"OPEN-SANDBOX-API-KEY", "k"}, {"X-Empty", ""}, {"Accept", "text/event-stream"}};
  auto response = client->Send(request, nullptr);
  ASSERT_TRUE(response.ok()) << response.error().message;
  EXPECT_EQ(response->status, 204);
  ASSERT_EQ(server.request_heads().size(), 1u);
  const std::string head = server.request_heads()[0];
  EXPECT_EQ(head.rfind("GET /x?a=1 HTTP/1.1\r\n", 0), 0u) << head;
  EXPECT_NE(head.find("\r\nOPEN-SANDBOX-API-KEY: k\r\n"), std::string::npos) << head;
  EXPECT_NE(head.find("\r\nX-Empty:\r\n"), std::string::npos) << head;
  EXPECT_NE(head.find("\r\nAccept: text/event-stream\r\n"), std::string::npos) << head;
  EXPECT_EQ(head.find("Accept: */*"), std::string::npos) << head;
  EXPECT_EQ(head.find("Expect"), std::string::npos) << head;
}

TEST(HttpClientTest, MethodsAndBodies) {
  TestServer server;
  auto echo = [](const httplib::Request& request, httplib::Response& response) {
    response.set_content(request.method + " [" + request.body + "] type=" +
                             request.get_header_value("Content-Type") +
                             " expect=" + request.get_header_value("Expect"),
                         "text/plain");
  };
  server.http().Post("/echo", echo);
  server.http().Put("/echo", echo);
  server.http().Patch("/echo", echo);
  server.http().Delete("/echo", echo);
  server.http().Get("/echo", echo);
  server.Start();
  auto client = MakeClient();

  Request post = Get(server.Url("/echo"));
  post.method = "POST";
  post.body = "{\"command\":\"ls\"}";
  post.headers = {{"Content-Type", "application/json"}};
  EXPECT_EQ(client->Send(post, nullptr)->body,
            "POST [{\"command\":\"ls\"}] type=application/json expect=");

  // No body given: still a POST with Content-Length 0, and no made-up form type.
  Request empty_post = Get(server.Url("/echo"));
  empty_post.method = "POST";
  EXPECT_EQ(client->Send(empty_post, nullptr)->body, "POST [] type= expect=");

  for (const char* method : {"PUT", "PATCH", "DELETE"}) {
    Request request = Get(server.Url("/echo"));
    request.method = method;
    request.body = "b";
    EXPECT_EQ(client->Send(request, nullptr)->body, std::string(method) + " [b] type= expect=");
  }
  Request bodiless_delete = Get(server.Url("/echo"));
  bodiless_delete.method = "DELETE";
  EXPECT_EQ(client->Send(bodiless_delete, nullptr)->body, "DELETE [] type= expect=");

  Request head = Get(server.Url("/echo"));
  head.method = "HEAD";
  auto head_response = client->Send(head, nullptr);
  ASSERT_TRUE(head_response.ok()) << head_response.error().message;
  EXPECT_EQ(head_response->status, 200);
  EXPECT_EQ(head_response->body, "");
}

TEST(HttpClientTest, LargeBorrowedUploadIsSentIntact) {
  TestServer server;
  server.http().Post("/upload", [](const httplib::Request& request, httplib::Response& response) {
    response.set_content(std::to_string(request.body.size()) + " " +
                             std::to_string(Fnv1a(request.body.data(), request.body.size())) +
                             " expect=" + request.get_header_value("Expect"),
                         "text/plain");
  });
  server.Start();
  auto client = MakeClient();
  std::string data(12 << 20, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = StreamByte(i);
  Request request = Get(server.Url("/upload"));
  request.method = "POST";
  request.borrowed_body = std::string_view(data);
  request.headers = {{"Content-Type", "application/octet-stream"}};
  auto response = client->Send(request, nullptr);
  ASSERT_TRUE(response.ok()) << response.error().message;
  EXPECT_EQ(response->body, std::to_string(data.size()) + " " +
                                std::to_string(Fnv1a(data.data(), data.size())) + " expect=");
}

// A body made while it is sent: pieces fed from another thread, the request waiting for
// each (BodySource::kWait) until the feeder resumes it.
class FedSource : public BodySource {
 public:
  void Feed(std::string piece) {
    std::lock_guard<std::mutex> lock(mu_);
    pieces_.push_back(std::move(piece));
    ResumeLocked();
  }
  void End(bool abort) {
    std::lock_guard<std::mutex> lock(mu_);
    (abort ? aborted_ : ended_) = true;
    ResumeLocked();
  }
  int waits() {
    std::lock_guard<std::mutex> lock(mu_);
    return waits_;
  }
  size_t Read(char* out, size_t size) override {
    std::lock_guard<std::mutex> lock(mu_);
    if (aborted_) return kAbort;
    if (pieces_.empty()) {
      if (ended_) return 0;
      ++waits_;
      waiting_ = true;
      return kWait;
    }
    std::string& piece = pieces_.front();
    const size_t n = std::min(size, piece.size());
    piece.copy(out, n);
    piece.erase(0, n);
    if (piece.empty()) pieces_.erase(pieces_.begin());
    return n;
  }
  void SetResume(std::function<void()> resume) override {
    std::lock_guard<std::mutex> lock(mu_);
    resume_ = std::move(resume);
    ResumeLocked();
  }

 private:
  void ResumeLocked() {
    if (waiting_ && resume_) {
      waiting_ = false;
      resume_();
    }
  }
  std::mutex mu_;
  std::vector<std::string> pieces_;
  bool ended_ = false, aborted_ = false, waiting_ = false;
  int waits_ = 0;
  std::function<void()> resume_;
};

TEST(HttpClientTest, MadeBodyIsSentInChunksAsItIsMade) {
  TestServer server;
  server.http().Post("/upload", [](const httplib::Request& request, httplib::Response& response) {
    response.set_content(std::to_string(request.body.size()) + " " +
                             std::to_string(Fnv1a(request.body.data(), request.body.size())) +
                             " " + request.get_header_value("Transfer-Encoding"),
                         "text/plain");
  });
  server.Start();
  auto client = MakeClient();
  std::string data(6 << 20, '\0');
  for (size_t i = 0; i < data.size(); ++i) data[i] = StreamByte(i);
  auto source = std::make_shared<FedSource>();
  std::thread feeder([&] {
    for (size_t at = 0; at < data.size(); at += 1 << 20) {
      std::this_thread::sleep_for(milliseconds(20));  // the request has to wait for each
      source->Feed(data.substr(at, 1 << 20));
    }
    source->End(/*abort=*/false);
  });
  Request request = Get(server.Url("/upload"));
  request.method = "POST";
  request.body_source = source;
  request.headers = {{"Content-Type", "application/octet-stream"}};
  auto response = client->Send(request, nullptr);
  feeder.join();
  ASSERT_TRUE(response.ok()) << response.error().message;
  EXPECT_EQ(response->body, std::to_string(data.size()) + " " +
                                std::to_string(Fnv1a(data.data(), data.size())) + " chunked");
  EXPECT_GE(source->waits(), 3);  // it did wait for pieces, and was resumed each time
}

TEST(HttpClientTest, AbortedMadeBodyFailsTheRequestAndTheServerHandlesNothing) {
  TestServer server;
  std::atomic<int> handled{0};
  server.http().Post("/upload", [&](const httplib::Request&, httplib::Response& response) {
    ++handled;
    response.set_content("ok", "text/plain");
  });
  server.Start();
  auto client = MakeClient();
  auto source = std::make_shared<FedSource>();
  source->Feed(std::string(100000, 'x'));
  std::thread feeder([&] {
    std::this_thread::sleep_for(milliseconds(50));
    source->End(/*abort=*/true);
  });
  Request request = Get(server.Url("/upload"));
  request.method = "POST";
  request.body_source = source;
  auto response = client->Send(request, nullptr);
  feeder.join();
  EXPECT_FALSE(response.ok());
  // The server saw a chunked body without its end: no request to handle.
  std::this_thread::sleep_for(milliseconds(100));
  EXPECT_EQ(handled.load(), 0);
  // The client goes on: the next request gets a connection of its own.
  Request next = Get(server.Url("/upload"));
  next.method = "POST";
  next.body = "y";
  auto answered = client->Send(next, nullptr);
  ASSERT_TRUE(answered.ok()) << answered.error().message;
  EXPECT_EQ(answered->body, "ok");
}

TEST(HttpClientTest, ReusesConnectionsAcrossRequestsAndThreads) {
  TestServer server;
  server.http().Get("/ping", [&](const httplib::Request& request, httplib::Response& response) {
    server.NoteConnection(request);
    response.set_content("pong", "text/plain");
  });
  server.Start();
  auto client = MakeClient();
  auto ping = [&] {
    auto response = client->Send(Get(server.Url("/ping")), nullptr);
    ASSERT_TRUE(response.ok()) << response.error().message;
    EXPECT_EQ(response->body, "pong");
  };
  ping();
  ping();
  EXPECT_EQ(client->counters().connections_opened.load(), 1);
  std::thread first(ping);
  first.join();
  std::thread second(ping);
  second.join();
  EXPECT_EQ(client->counters().connections_opened.load(), 1);
  EXPECT_EQ(server.connections_seen(), 1u);
  EXPECT_EQ(client->counters().requests_sent.load(), 4);

  // Two threads at once need at most two connections between them.
  std::vector<std::thread> threads;
  for (int t = 0; t < 2; ++t) {
    threads.emplace_back([&] {
      for (int i = 0; i < 20; ++i) ping();
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_LE(client->counters().connections_opened.load(), 2);
  EXPECT_LE(server.connections_seen(), 2u);
  EXPECT_EQ(client->counters().requests_sent.load(), 44);
  EXPECT_EQ(client->counters().transfers_active.load(), 0);
}

TEST(HttpClientTest, StreamDeliversDataAsItArrives) {
  TestServer server;
  std::mutex mu;
  std::condition_variable cv;
  bool first_seen = false;
  server.http().Get("/sse", [&](const httplib::Request&, httplib::Response& response) {
    response.set_header("X-Request-ID", "stream-1");
    response.set_chunked_content_provider(
        "text/event-stream", [&](size_t offset, httplib::DataSink& sink) {
          if (offset == 0) {
            std::string first = "{\"type\":\"init\",\"text\":\"abc\"}\n\n";
            sink.write(first.data(), first.size());
            return true;
          }
          // The second event is sent only once the client has seen the first: a client
          // that buffers the body would never get here.
          std::unique_lock<std::mutex> lock(mu);
          bool seen = cv.wait_for(lock, milliseconds(5000), [&] { return first_seen; });
          std::string second = seen ? "{\"type\":\"execution_complete\"}\n\n" : "timeout\n";
          sink.write(second.data(), second.size());
          sink.done();
          return true;
        });
  });
  server.Start();
  auto client = MakeClient();
  int header_calls = 0;
  std::string received;
  auto summary = client->Stream(
      Get(server.Url("/sse")),
      [&](int status, const HeaderMap& headers) {
        ++header_calls;
        EXPECT_EQ(status, 200);
        EXPECT_EQ(headers.Get("x-request-id"), "stream-1");
        EXPECT_EQ(headers.Get("content-type"), "text/event-stream");
        EXPECT_TRUE(received.empty());
        return true;
      },
      [&](const char* data, size_t size) {
        received.append(data, size);
        if (received.find("\n\n") != std::string::npos) {
          std::lock_guard<std::mutex> lock(mu);
          first_seen = true;
          cv.notify_all();
        }
        return true;
      },
      nullptr);
  ASSERT_TRUE(summary.ok()) << summary.error().message;
  EXPECT_EQ(header_calls, 1);
  EXPECT_EQ(summary->status, 200);
  EXPECT_FALSE(summary->stopped);
  EXPECT_EQ(received, "{\"type\":\"init\",\"text\":\"abc\"}\n\n{\"type\":\"execution_complete\"}\n\n");
  EXPECT_EQ(summary->body_bytes, received.size());
}

TEST(HttpClientTest, LargeStreamWithASlowConsumerArrivesIntact) {
  // A small queue and a consumer that stalls at first force the pause/unpause path.
  const char* size_env = std::getenv("ABX_STREAM_BENCH_MIB");
  const uint64_t total = (size_env ? std::strtoull(size_env, nullptr, 10) : 64) << 20;
  TestServer server;
  server.http().Get("/big", [&](const httplib::Request&, httplib::Response& response) {
    response.set_chunked_content_provider(
        "text/event-stream", [&, random = std::mt19937(7), piece = std::string()](
                                 size_t offset, httplib::DataSink& sink) mutable {
          if (offset >= total) {
            sink.done();
            return true;
          }
          size_t size = std::min<uint64_t>(1 + random() % (300 << 10), total - offset);
          piece.resize(size);
          for (size_t i = 0; i < size; ++i) piece[i] = StreamByte(offset + i);
          return sink.write(piece.data(), piece.size());
        });
  });
  server.Start();
  HttpClientOptions options;
  options.stream_queue_bytes = 512 << 10;
  auto client = MakeClient(options);
  uint64_t at = 0;
  uint64_t mismatches = 0;
  int calls = 0;
  auto start = steady_clock::now();
  auto summary = client->Stream(
      Get(server.Url("/big")), nullptr,
      [&](const char* data, size_t size) {
        if (++calls == 1) {
          // Hold on until the queue has filled and the transfer is paused.
          auto deadline = steady_clock::now() + milliseconds(5000);
          while (client->counters().stream_pauses.load() == 0 && steady_clock::now() < deadline) {
            std::this_thread::sleep_for(milliseconds(1));
          }
        } else if (calls < 20) {
          std::this_thread::sleep_for(milliseconds(2));
        }
        for (size_t i = 0; i < size; ++i) mismatches += data[i] != StreamByte(at + i);
        at += size;
        return true;
      },
      nullptr);
  int64_t elapsed_ms = MillisSince(start);
  ASSERT_TRUE(summary.ok()) << summary.error().message;
  EXPECT_EQ(summary->body_bytes, total);
  EXPECT_EQ(at, total);
  EXPECT_EQ(mismatches, 0u);
  EXPECT_GT(client->counters().stream_pauses.load(), 0);
  std::printf("streamed %llu MiB in %lld ms (%d callbacks, %lld pauses)\n",
              static_cast<unsigned long long>(total >> 20), static_cast<long long>(elapsed_ms),
              calls, static_cast<long long>(client->counters().stream_pauses.load()));
}

TEST(HttpClientTest, NonSuccessStatusIsStreamedToo) {
  TestServer server;
  server.http().Post("/command", [](const httplib::Request&, httplib::Response& response) {
    response.status = 400;
    response.set_content("{\"code\":\"INVALID_REQUEST_BODY\",\"message\":\"no\"}", "application/json");
  });
  server.Start();
  auto client = MakeClient();
  Request request = Get(server.Url("/command"));
  request.method = "POST";
  int status = 0;
  std::string body;
  auto summary = client->Stream(
      request,
      [&](int s, const HeaderMap&) {
        status = s;
        return true;
      },
      [&](const char* data, size_t size) {
        body.append(data, size);
        return true;
      },
      nullptr);
  ASSERT_TRUE(summary.ok()) << summary.error().message;
  EXPECT_EQ(status, 400);
  EXPECT_EQ(summary->status, 400);
  EXPECT_EQ(body, "{\"code\":\"INVALID_REQUEST_BODY\",\"message\":\"no\"}");
}

TEST(HttpClientTest, CallbacksCanStopTheStream) {
  TestServer server;
  server.http().Get("/endless", [&](const httplib::Request&, httplib::Response& response) {
    response.set_chunked_content_provider("text/event-stream",
                                          [&](size_t, httplib::DataSink& sink) {
                                            std::string event = "{\"type\":\"ping\"}\n\n";
                                            std::this_thread::sleep_for(milliseconds(1));
                                            return sink.write(event.data(), event.size());
                                          });
  });
  server.Start();
  auto client = MakeClient();

  int data_calls = 0;
  auto refused = client->Stream(
      Get(server.Url("/endless")), [](int, const HeaderMap&) { return false; },
      [&](const char*, size_t) {
        ++data_calls;
        return true;
      },
      nullptr);
  ASSERT_TRUE(refused.ok()) << refused.error().message;
  EXPECT_TRUE(refused->stopped);
  EXPECT_EQ(data_calls, 0);

  size_t bytes = 0;
  auto stopped = client->Stream(
      Get(server.Url("/endless")), nullptr,
      [&](const char*, size_t size) {
        bytes += size;
        return bytes < 1000;
      },
      nullptr);
  ASSERT_TRUE(stopped.ok()) << stopped.error().message;
  EXPECT_TRUE(stopped->stopped);
  EXPECT_GE(bytes, 1000u);
  EXPECT_EQ(stopped->body_bytes, bytes);
}

// A stream stopped at its "last event" while the server still holds the response open
// for a grace period (execd's ~1 s): with drain_ms the caller returns at once, the rest
// is read out in the background, and the connection serves the next request.
TEST(HttpClientTest, StoppedStreamIsDrainedAndItsConnectionReused) {
  TestServer server;
  server.http().Get("/graceful", [&](const httplib::Request& request, httplib::Response& response) {
    server.NoteConnection(request);
    auto sent = std::make_shared<bool>(false);
    response.set_chunked_content_provider("text/event-stream",
                                          [sent](size_t, httplib::DataSink& sink) {
                                            if (*sent) {
                                              std::this_thread::sleep_for(milliseconds(300));
                                              sink.done();
                                              return true;
                                            }
                                            *sent = true;
                                            std::string event = "{\"type\":\"done\"}\n\n";
                                            return sink.write(event.data(), event.size());
                                          });
  });
  server.http().Get("/ping", [&](const httplib::Request& request, httplib::Response& response) {
    server.NoteConnection(request);
    response.set_content("pong", "text/plain");
  });
  server.Start();
  auto client = MakeClient();

  Request request = Get(server.Url("/graceful"));
  request.drain_ms = 3000;
  const auto start = steady_clock::now();
  auto stopped = client->Stream(request, nullptr, [](const char*, size_t) { return false; }, nullptr);
  ASSERT_TRUE(stopped.ok()) << stopped.error().message;
  EXPECT_TRUE(stopped->stopped);
  EXPECT_LT(MillisSince(start), 250) << "the caller waited for the grace period";

  // Once the server has ended the response, the drained connection is the one reused.
  for (int i = 0; i < 200 && client->counters().drains_completed.load() == 0; ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_EQ(client->counters().drains_completed.load(), 1);
  auto ping = client->Send(Get(server.Url("/ping")), nullptr);
  ASSERT_TRUE(ping.ok()) << ping.error().message;
  EXPECT_EQ(client->counters().connections_opened.load(), 1);
  EXPECT_EQ(server.connections_seen(), 1u);
  EXPECT_EQ(client->counters().transfers_active.load(), 0);
}

// A stream that does not end within drain_ms is dropped (its connection closed).
TEST(HttpClientTest, DrainGivesUpAfterItsBound) {
  TestServer server;
  server.http().Get("/endless", [&](const httplib::Request&, httplib::Response& response) {
    response.set_chunked_content_provider("text/event-stream",
                                          [&](size_t, httplib::DataSink& sink) {
                                            std::string event = "{\"type\":\"ping\"}\n\n";
                                            std::this_thread::sleep_for(milliseconds(5));
                                            return sink.write(event.data(), event.size());
                                          });
  });
  server.Start();
  auto client = MakeClient();
  Request request = Get(server.Url("/endless"));
  request.drain_ms = 200;
  auto stopped = client->Stream(request, nullptr, [](const char*, size_t) { return false; }, nullptr);
  ASSERT_TRUE(stopped.ok()) << stopped.error().message;
  for (int i = 0; i < 300 && client->counters().transfers_active.load() > 0; ++i) {
    std::this_thread::sleep_for(milliseconds(10));
  }
  EXPECT_EQ(client->counters().transfers_active.load(), 0);
  EXPECT_EQ(client->counters().drains_abandoned.load(), 1);
  EXPECT_EQ(client->counters().drains_completed.load(), 0);
}

TEST(HttpClientTest, IdleStreamTimesOut) {
  TestServer server;
  server.http().Get("/stall", [&](const httplib::Request&, httplib::Response& response) {
    response.set_chunked_content_provider("text/event-stream",
                                          [&](size_t offset, httplib::DataSink& sink) {
                                            if (offset == 0) {
                                              sink.write("{\"type\":\"init\"}\n\n", 17);
                                              return true;
                                            }
                                            server.WaitReleased();
                                            return false;
                                          });
  });
  server.Start();
  auto client = MakeClient();
  Request request = WithSecrets(Get(server.Url("/stall")));
  request.idle_timeout_ms = 300;
  std::string received;
  auto start = steady_clock::now();
  auto summary = client->Stream(
      request, nullptr,
      [&](const char* data, size_t size) {
        received.append(data, size);
        return true;
      },
      nullptr);
  int64_t elapsed = MillisSince(start);
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.error().kind, TransportErrorKind::kTimeout);
  EXPECT_EQ(summary.error().status, 200);
  EXPECT_NE(summary.error().message.find("300 ms"), std::string::npos) << summary.error().message;
  ExpectNoSecrets(summary.error());
  EXPECT_EQ(received, "{\"type\":\"init\"}\n\n");  // what came before the stall is kept
  EXPECT_GE(elapsed, 300);
  EXPECT_LT(elapsed, 1500);
}

TEST(HttpClientTest, SendTimesOut) {
  TestServer server;
  server.http().Get("/slow", [&](const httplib::Request&, httplib::Response& response) {
    server.WaitReleased();
    response.set_content("late", "text/plain");
  });
  server.Start();
  auto client = MakeClient();
  Request request = WithSecrets(Get(server.Url("/slow")));
  request.timeout_ms = 300;
  auto start = steady_clock::now();
  auto response = client->Send(request, nullptr);
  int64_t elapsed = MillisSince(start);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, TransportErrorKind::kTimeout) << response.error().message;
  ExpectNoSecrets(response.error());
  EXPECT_GE(elapsed, 290);
  EXPECT_LT(elapsed, 1500);
}

// Sets `flag` after `delay` on another thread; returns when it was set.
class DelayedCancel {
 public:
  DelayedCancel(CancelFlag* flag, milliseconds delay)
      : thread_([this, flag, delay] {
          std::this_thread::sleep_for(delay);
          set_at_ = steady_clock::now();
          flag->Set();
        }) {}
  ~DelayedCancel() {
    if (thread_.joinable()) thread_.join();
  }
  steady_clock::time_point set_at() {
    thread_.join();
    return set_at_;
  }

 private:
  steady_clock::time_point set_at_;
  std::thread thread_;
};

TEST(HttpClientTest, CancelAbortsABlockedStreamPromptly) {
  TestServer server;
  server.http().Get("/stall", [&](const httplib::Request&, httplib::Response& response) {
    response.set_chunked_content_provider("text/event-stream",
                                          [&](size_t offset, httplib::DataSink& sink) {
                                            if (offset == 0) {
                                              sink.write("{\"type\":\"init\"}\n\n", 17);
                                              return true;
                                            }
                                            server.WaitReleased();
                                            return false;
                                          });
  });
  server.Start();
  auto client = MakeClient();
  int64_t worst_ms = 0;
  for (int round = 0; round < 5; ++round) {
    CancelFlag cancel;
    Request request = WithSecrets(Get(server.Url("/stall")));
    request.idle_timeout_ms = 0;
    DelayedCancel canceller(&cancel, milliseconds(150));
    auto summary = client->Stream(request, nullptr, [](const char*, size_t) { return true; }, &cancel);
    auto returned_at = steady_clock::now();
    int64_t latency =
        std::chrono::duration_cast<milliseconds>(returned_at - canceller.set_at()).count();
    worst_ms = std::max(worst_ms, latency);
    ASSERT_FALSE(summary.ok());
    EXPECT_EQ(summary.error().kind, TransportErrorKind::kCancelled);
    ExpectNoSecrets(summary.error());
  }
  std::printf("stream cancel latency, worst of 5: %lld ms\n", static_cast<long long>(worst_ms));
  EXPECT_LT(worst_ms, 250);  // under 1 ms when the machine is idle; slack for a loaded one
}

TEST(HttpClientTest, CancelAbortsAWaitingSendPromptly) {
  TestServer server;
  server.http().Get("/slow", [&](const httplib::Request&, httplib::Response& response) {
    server.WaitReleased();
    response.set_content("late", "text/plain");
  });
  server.Start();
  auto client = MakeClient();
  CancelFlag cancel;
  DelayedCancel canceller(&cancel, milliseconds(150));
  auto response = client->Send(Get(server.Url("/slow")), &cancel);
  auto returned_at = steady_clock::now();
  int64_t latency =
      std::chrono::duration_cast<milliseconds>(returned_at - canceller.set_at()).count();
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, TransportErrorKind::kCancelled);
  std::printf("send cancel latency: %lld ms\n", static_cast<long long>(latency));
  EXPECT_LT(latency, 250);

  // Already cancelled: fails without waiting for anything.
  auto start = steady_clock::now();
  auto again = client->Send(Get(server.Url("/slow")), &cancel);
  EXPECT_FALSE(again.ok());
  EXPECT_EQ(again.error().kind, TransportErrorKind::kCancelled);
  EXPECT_LT(MillisSince(start), 1000);  // nothing to wait for: only a busy machine's delay
}

// Voluntary context switches of the calling thread so far (its own /proc entry).
int64_t VoluntarySwitchesOfThisThread() {
  FILE* status = std::fopen("/proc/thread-self/status", "r");
  if (status == nullptr) return -1;
  char line[256];
  int64_t switches = -1;
  while (std::fgets(line, sizeof line, status) != nullptr) {
    if (std::sscanf(line, "voluntary_ctxt_switches: %lld",
                    reinterpret_cast<long long*>(&switches)) == 1) {
      break;
    }
  }
  std::fclose(status);
  return switches;
}

// A caller waiting on a slow server with a cancel flag that is never set sleeps until its
// transfer moves: it used to wake every 20 ms to look at the flag (~30 times in 600 ms).
TEST(HttpClientTest, WaitingCallerSleepsUntilItsTransferMoves) {
  TestServer server;
  server.http().Get("/slow", [&](const httplib::Request&, httplib::Response& response) {
    std::this_thread::sleep_for(milliseconds(600));
    response.set_content("late", "text/plain");
  });
  server.http().Get("/slow-stream", [&](const httplib::Request&, httplib::Response& response) {
    response.set_chunked_content_provider("text/event-stream",
                                          [&](size_t offset, httplib::DataSink& sink) {
                                            if (offset == 0) {
                                              sink.write("a", 1);
                                              return true;
                                            }
                                            std::this_thread::sleep_for(milliseconds(600));
                                            sink.write("b", 1);
                                            sink.done();
                                            return true;
                                          });
  });
  server.Start();
  auto client = MakeClient();
  CancelFlag never;

  const int64_t before_send = VoluntarySwitchesOfThisThread();
  ASSERT_GE(before_send, 0);
  auto response = client->Send(Get(server.Url("/slow")), &never);
  const int64_t send_switches = VoluntarySwitchesOfThisThread() - before_send;
  ASSERT_TRUE(response.ok()) << response.error().message;
  EXPECT_EQ(response->body, "late");

  std::string received;
  const int64_t before_stream = VoluntarySwitchesOfThisThread();
  auto summary = client->Stream(
      Get(server.Url("/slow-stream")), nullptr,
      [&](const char* data, size_t size) {
        received.append(data, size);
        return true;
      },
      &never);
  const int64_t stream_switches = VoluntarySwitchesOfThisThread() - before_stream;
  ASSERT_TRUE(summary.ok()) << summary.error().message;
  EXPECT_EQ(received, "ab");
  std::printf("wake-ups while waiting 600 ms: send %lld, stream %lld\n",
              static_cast<long long>(send_switches), static_cast<long long>(stream_switches));
  // A handful: the head, each piece of data, the end (and the odd page fault or lock, more
  // on a busy machine); waking every 20 ms to look would be 30.
  EXPECT_LT(send_switches, 20);
  EXPECT_LT(stream_switches, 22);
}

// One flag watched by several calls at once (a request whose work runs transfers in
// parallel) cancels all of them, and the client serves the next call normally.
TEST(HttpClientTest, OneCancelStopsEveryTransferWatchingIt) {
  TestServer server;
  std::mutex arrived_mu;
  std::condition_variable arrived_cv;
  int arrived = 0;
  server.http().Get("/slow", [&](const httplib::Request&, httplib::Response& response) {
    {
      std::lock_guard<std::mutex> lock(arrived_mu);
      ++arrived;
    }
    arrived_cv.notify_all();
    server.WaitReleased();
    response.set_content("late", "text/plain");
  });
  server.http().Get("/quick", [&](const httplib::Request&, httplib::Response& response) {
    response.set_content("quick", "text/plain");
  });
  server.Start();
  auto client = MakeClient();
  CancelFlag cancel;
  constexpr int kCalls = 6;  // below cpp-httplib's 8 worker threads
  std::vector<TransportErrorKind> kinds(kCalls, TransportErrorKind::kOther);
  std::vector<char> failed(kCalls, 0);  // not vector<bool>: its elements share words
  std::vector<std::thread> callers;
  for (int i = 0; i < kCalls; ++i) {
    callers.emplace_back([&, i] {
      if (i % 2 == 0) {
        auto response = client->Send(Get(server.Url("/slow")), &cancel);
        failed[i] = !response.ok();
        if (!response.ok()) kinds[i] = response.error().kind;
      } else {
        auto summary = client->Stream(Get(server.Url("/slow")), nullptr,
                                      [](const char*, size_t) { return true; }, &cancel);
        failed[i] = !summary.ok();
        if (!summary.ok()) kinds[i] = summary.error().kind;
      }
    });
  }
  {
    // Every call is at the server (each on a connection of its own) before the cancel.
    std::unique_lock<std::mutex> lock(arrived_mu);
    ASSERT_TRUE(
        arrived_cv.wait_for(lock, std::chrono::seconds(10), [&] { return arrived == kCalls; }));
  }
  cancel.Set();
  for (std::thread& caller : callers) caller.join();
  for (int i = 0; i < kCalls; ++i) {
    EXPECT_TRUE(failed[i]) << "call " << i;
    EXPECT_EQ(kinds[i], TransportErrorKind::kCancelled) << "call " << i;
  }
  EXPECT_EQ(client->counters().transfers_active.load(), 0);
  server.Release();  // the server's handlers of the dropped calls end
  auto after = client->Send(Get(server.Url("/quick")), nullptr);
  ASSERT_TRUE(after.ok()) << after.error().message;
  EXPECT_EQ(after->body, "quick");
}

TEST(HttpClientTest, RefusedConnectionIsUnreachable) {
  RefusingPort port;
  auto client = MakeClient();
  Request request = WithSecrets(Get("http://127.0.0.1:" + std::to_string(port.port()) + "/v1/sandboxes"));
  auto response = client->Send(request, nullptr);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, TransportErrorKind::kUnreachable) << response.error().message;
  EXPECT_EQ(response.error().status, 0);
  EXPECT_NE(response.error().message.find("GET http://127.0.0.1:" + std::to_string(port.port()) +
                                          "/v1/sandboxes: could not connect"),
            std::string::npos)
      << response.error().message;
  ExpectNoSecrets(response.error());

  auto summary = client->Stream(request, nullptr, [](const char*, size_t) { return true; }, nullptr);
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.error().kind, TransportErrorKind::kUnreachable);
  EXPECT_EQ(TransportErrorKindName(summary.error().kind), std::string("unreachable"));
}

TEST(HttpClientTest, BodyCutShortIsABrokenStream) {
  RawServer server([](int fd) {
    RawServer::WriteAll(fd, "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n0123456789");
    return true;
  });
  auto client = MakeClient();
  auto response =
      client->Send(WithSecrets(Get("http://127.0.0.1:" + std::to_string(server.port()) + "/x")), nullptr);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, TransportErrorKind::kBrokenStream) << response.error().message;
  EXPECT_EQ(response.error().status, 200);
  ExpectNoSecrets(response.error());
}

TEST(HttpClientTest, ChunkedStreamCutShortIsABrokenStreamAfterItsData) {
  RawServer server([](int fd) {
    RawServer::WriteAll(fd,
                        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                        "Transfer-Encoding: chunked\r\n\r\n"
                        "11\r\n{\"type\":\"init\"}\n\n\r\n");
    return true;
  });
  auto client = MakeClient();
  std::string received;
  auto summary = client->Stream(
      Get("http://127.0.0.1:" + std::to_string(server.port()) + "/command"), nullptr,
      [&](const char* data, size_t size) {
        received.append(data, size);
        return true;
      },
      nullptr);
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.error().kind, TransportErrorKind::kBrokenStream) << summary.error().message;
  EXPECT_EQ(summary.error().status, 200);
  EXPECT_EQ(received, "{\"type\":\"init\"}\n\n");
}

TEST(HttpClientTest, ResetMidBodyIsABrokenStream) {
  RawServer server([](int fd) {
    RawServer::WriteAll(fd,
                        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n");
    std::this_thread::sleep_for(milliseconds(50));
    RawServer::Reset(fd);
    return false;
  });
  auto client = MakeClient();
  std::string received;
  auto summary = client->Stream(
      Get("http://127.0.0.1:" + std::to_string(server.port()) + "/x"), nullptr,
      [&](const char* data, size_t size) {
        received.append(data, size);
        return true;
      },
      nullptr);
  ASSERT_FALSE(summary.ok());
  EXPECT_EQ(summary.error().kind, TransportErrorKind::kBrokenStream) << summary.error().message;
  EXPECT_EQ(received, "hello");
}

TEST(HttpClientTest, CloseWithoutAnswerIsABrokenStream) {
  RawServer server([](int) { return true; });
  auto client = MakeClient();
  auto response = client->Send(Get("http://127.0.0.1:" + std::to_string(server.port()) + "/x"), nullptr);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, TransportErrorKind::kBrokenStream) << response.error().message;
  EXPECT_EQ(response.error().status, 0);
}

TEST(HttpClientTest, NonHttpReplyIsOther) {
  RawServer server([](int fd) {
    RawServer::WriteAll(fd, "SSH-2.0-OpenSSH_9.2\r\n");
    return true;
  });
  auto client = MakeClient();
  auto response = client->Send(Get("http://127.0.0.1:" + std::to_string(server.port()) + "/x"), nullptr);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, TransportErrorKind::kOther) << response.error().message;
}

TEST(HttpClientTest, HeaderInjectionIsRefusedWithoutEchoingTheValue) {
  auto client = MakeClient();
  Request request = Get("http://127.0.0.1:1/x");
  request.headers = {{"X-Token", "secret-value\r\nX-Evil: 1"}};
  auto response = client->Send(request, nullptr);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, TransportErrorKind::kOther);
  EXPECT_EQ(response.error().message.find("secret-value"), std::string::npos);
  EXPECT_NE(response.error().message.find("X-Token"), std::string::npos);
  EXPECT_EQ(client->counters().requests_sent.load(), 0);

  Request bad_method = Get("http://127.0.0.1:1/x");
  bad_method.method = "GET /other HTTP/1.1\r\n";
  EXPECT_FALSE(client->Send(bad_method, nullptr).ok());
}

TEST(HttpClientTest, MalformedUrlIsOther) {
  auto client = MakeClient();
  auto response = client->Send(Get("ftp://127.0.0.1/x"), nullptr);
  ASSERT_FALSE(response.ok());
  EXPECT_EQ(response.error().kind, TransportErrorKind::kOther) << response.error().message;
  response = client->Send(Get("not a url"), nullptr);
  ASSERT_FALSE(response.ok());
}

}  // namespace
}  // namespace abx::http
