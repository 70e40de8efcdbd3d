#pragma once

// One sandbox on the real fake OpenSandbox server (a child process), and a client of its
// execd: for tests of what talks to execd below the core (a terminal, the WebSocket
// client), which need a real execd peer and nothing above it.

#include <memory>
#include <optional>
#include <string>

#include "bridge/base/cancel.h"
#include "bridge/opensandbox/execd_client.h"
#include "bridge/opensandbox/http_caller.h"
#include "tests/common/temp_dir.h"
#include "tests/e2e/fake_server.h"

namespace abx::bridge_test {

class FakeSandbox {
 public:
  // Starts the fake, creates a sandbox and waits until its execd answers; null (and
  // `error`) when any step fails.
  static std::unique_ptr<FakeSandbox> Start(std::string* error);
  // Its connections first, then the fake (which ends everything in the sandbox).
  ~FakeSandbox();

  const std::string& sandbox_id() const { return sandbox_id_; }
  // execd's base URL (http://host:port/prefix).
  const std::string& execd_url() const { return execd_url_; }
  opensandbox::ExecdClient& execd() { return *execd_; }
  e2e::FakeServer& fake() { return *fake_; }
  // The end of the fake's log, for a failed test's output.
  std::string LogTail(size_t bytes = 4000) const;

 private:
  FakeSandbox() = default;

  std::unique_ptr<abx::testing::TempDir> dir_;
  std::unique_ptr<e2e::FakeServer> fake_;
  std::string sandbox_id_;
  std::string execd_url_;
  std::unique_ptr<opensandbox::HttpCaller> http_;
  std::optional<opensandbox::ExecdClient> execd_;
};

}  // namespace abx::bridge_test
