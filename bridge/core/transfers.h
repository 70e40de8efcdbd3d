#pragma once
// Files of any size out of a sandbox, streamed (docs/epp1.md "files.transfer"; the
// typed Files.Download): the bytes go to the caller's sink as execd sends them, never
// held whole. A stream that breaks is resumed with Range from the next byte, at most
// kResumes times, and only while the file is unchanged, so the caller gets the whole
// file or an error, never a short one.

#include <cstdint>
#include <functional>
#include <string>

#include "bridge/base/cancel.h"
#include "bridge/base/error.h"
#include "bridge/core/config.h"
#include "bridge/core/endpoint_cache.h"
#include "bridge/core/files.h"

namespace abx::core {

// Where a download's bytes go, in order, from offset 0. An error stops the download.
class DownloadSink {
 public:
  virtual ~DownloadSink() = default;
  virtual Status Start(const FileEntry& file) = 0;  // once, before any byte
  virtual Status Write(int64_t offset, const char* data, size_t size) = 0;
};

class Transfers {
 public:
  static constexpr int kResumes = 3;

  Transfers(EndpointCache* upstream, const ProviderConfig* config) : upstream_(upstream), config_(config) {}

  // Downloads the regular file at `path` (anything else is E8007 naming `path`) into
  // `sink`. `progress(bytes, total)` follows the bytes written (may be null). A file
  // whose size or modification time changes before a resume is E8007 ("file changed
  // during download"); a stream broken more than kResumes times is the last break's error.
  Result<FileEntry> Download(const std::string& sandbox_id, const std::string& path, DownloadSink* sink,
                             const std::function<void(int64_t bytes, int64_t total)>& progress,
                             CancelToken* cancel);

 private:
  EndpointCache* upstream_;
  const ProviderConfig* config_;
};

}  // namespace abx::core
