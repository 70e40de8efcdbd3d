#pragma once
// A fresh directory for one test, removed with everything in it when the object goes.
// Under /tmp, not TEST_TMPDIR: a Unix socket path must fit in 108 bytes, which a path
// under Bazel's test directory may not.

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <system_error>

namespace abx::testing {

class TempDir {
 public:
  // `prefix` names the test in the directory's name: /tmp/<prefix>-XXXXXX.
  explicit TempDir(const std::string& prefix = "abxt") {
    std::string pattern = "/tmp/" + prefix + "-XXXXXX";
    if (::mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  // Empty when the directory could not be made.
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

}  // namespace abx::testing
