#pragma once

// A minimal HTTP/1.1 client for one request to 127.0.0.1:<port>, made for relaying:
// it reads with large buffers and hands the body over as it arrives (chunked,
// Content-Length or close-delimited). httplib's client reads 4 KiB per call, which
// made the server proxy path several times slower than a direct execd stream.

#include <httplib.h>

#include <functional>
#include <string>

namespace fake_opensandbox {

struct UpstreamRequest {
  std::string method;
  std::string path_and_query;  // sent as is
  httplib::Headers headers;    // Host, Content-Length and Connection are added
  std::string body;
};

struct UpstreamHandlers {
  // Status and headers; return false to stop.
  std::function<bool(int status, const httplib::Headers& headers)> on_head;
  // A piece of the (de-chunked) body; return false to stop.
  std::function<bool(const char* data, size_t size)> on_body;
};

// Returns true when the whole answer was read.
bool SendUpstream(int port, const UpstreamRequest& request, const UpstreamHandlers& handlers);

}  // namespace fake_opensandbox
