#pragma once

// Streams one HTTP request to a listener on 127.0.0.1 and its answer back, for the two
// reverse proxies: the lifecycle server's /sandboxes/<id>/proxy/<P>/... and execd's
// /proxy/<P>/.... The answer is relayed as it arrives (SSE keeps its timing): a thread
// runs the upstream request (upstream_client.h) and hands the body over through a
// bounded buffer, so a slow client slows the upstream instead of filling memory.

#include <httplib.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

namespace fake_opensandbox {

// Where a proxied request's Content-Type waits while httplib reads the body raw (see
// HideContentTypeFromBodyParsing); forwarded as Content-Type again.
inline constexpr char kProxiedContentTypeHeader[] = "X-Fake-Proxied-Content-Type";

// httplib parses a multipart body into req.files and leaves req.body empty, which would
// make a proxy forward an empty upload. A proxy's pre-routing handler calls this before
// the body is read: the Content-Type is moved aside, so the body arrives raw, and the
// forwarder puts it back.
void HideContentTypeFromBodyParsing(httplib::Request& req);

struct ForwardTarget {
  int port = 0;
  std::string path_and_query;                      // raw, begins with '/'
  std::vector<std::string> dropped_headers;        // besides hop-by-hop ones
  httplib::Headers added_headers;                  // set only when the request lacks them
  std::atomic<uint64_t>* connection_counter = nullptr;  // counts upstream connections
};

// Returns false when the upstream could not be reached or sent no valid answer; `res`
// is then untouched so the caller can answer 502 in its own format.
bool ForwardRequest(const httplib::Request& req, httplib::Response& res,
                    const ForwardTarget& target);

// The request's headers as a proxy passes them on: without hop-by-hop and dropped ones,
// with the added ones the request lacks (no Host: the upstream request sets its own).
httplib::Headers ForwardedHeaders(const httplib::Request& req, const ForwardTarget& target);

// The raw (still percent-encoded) query of a request, with its '?', or "".
std::string RawQuery(const httplib::Request& req);

}  // namespace fake_opensandbox
