#pragma once

// Helpers for the fake's own tests: an in-process fake on a free port with its own
// temp root, a sandbox in it, and parsing of execd event streams.

#include <httplib.h>

#include <memory>
#include <string>
#include <vector>

#include "rapidjson/document.h"
#include "tests/fake-opensandbox/fake_server.h"

namespace fake_opensandbox {

// Test defaults: port 0, execd ready at once, a short stream grace period.
FakeConfig TestConfig();

struct TestFake {
  std::unique_ptr<FakeServer> server;
  std::unique_ptr<httplib::Client> lifecycle;  // 127.0.0.1:<lifecycle port>

  explicit TestFake(const FakeConfig& config = TestConfig());
  // Creates an image sandbox; returns its id ("" on failure).
  std::string CreateSandbox(const std::string& extra_fields = "");
  // The execd endpoint for port 44772 as returned by the fake (no scheme).
  std::string ExecdEndpoint(const std::string& id, bool server_proxy = false);
};

// A client for an endpoint "host:port[/prefix]" plus the prefix to put before paths.
struct EndpointClient {
  std::unique_ptr<httplib::Client> client;
  std::string host;
  int port = 0;
  std::string prefix;
  explicit EndpointClient(const std::string& endpoint);
  std::string Path(const std::string& path) const { return prefix + path; }
};

struct StreamEvent {
  std::string type;
  std::string text;
  std::string evalue;
  std::string traceback;
  std::string raw;
};

// Splits an execd stream body into its events; *well_framed is false if any event is
// not followed by "\n\n" or is not a JSON object.
std::vector<StreamEvent> ParseEvents(const std::string& body, bool* well_framed = nullptr);
// The text of every stdout (or stderr) event, in order.
std::vector<std::string> OutputTexts(const std::vector<StreamEvent>& events, const char* type);

rapidjson::Document ParseJson(const std::string& text);
// `text` as a JSON string (quotes and backslashes escaped; the tests send nothing else).
std::string JsonQuoted(const std::string& text);
// The built fake-opensandbox binary (a data dependency of the test).
std::string FakeBinaryPath();

// True if a live process has exactly this command line (argv joined by spaces).
bool ProcessRunning(const std::string& command_line);

}  // namespace fake_opensandbox
