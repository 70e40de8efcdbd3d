#pragma once
// For the tests of files.*: an initialized shim, a sandbox, and a directory made in it.

#include <string>

#include "tests/e2e/harness.h"

namespace abx::e2e {

class FilesFixture : public TestEnv {
 protected:
  explicit FilesFixture(std::string dir) : dir_(std::move(dir)) {}
  void SetUp() override;

  // `method` with `params` plus this test's sandbox_id; null on timeout (with a failure).
  MessagePtr Call(const std::string& method, JsonObject params);

  const std::string dir_;  // made (with parents) before each test
  EppSession* shim_ = nullptr;
  std::string sandbox_;
};

}  // namespace abx::e2e
