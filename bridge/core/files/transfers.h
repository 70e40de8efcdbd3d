#pragma once
// Files of any size between a sandbox and the caller, streamed (docs/epp1.md
// "files.transfer"; the typed Files.Download and Files.Upload): the bytes go as execd
// sends or takes them, never held whole.
// - A download that breaks is resumed with Range from the next byte, at most kResumes
//   times, and only while the file is unchanged, so the caller gets the whole file or
//   an error, never a short one.
// - An upload lands beside its target under a temporary name and is moved into place
//   once complete (`mv -f` through /command: execd's own move refuses an existing
//   target), so a failure or a cancel leaves the target as it was and no temporary file.

#include <cstdint>
#include <functional>
#include <string>

#include <memory>
#include <optional>

#include "bridge/base/body_source.h"
#include "bridge/base/cancel.h"
#include "bridge/base/error.h"
#include "bridge/core/config.h"
#include "bridge/core/endpoint_cache.h"
#include "bridge/core/files/files.h"

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

  // Uploads what `source` makes to `path` (parent directories created; an existing
  // file replaced), with `mode` (nullopt: execd's default). `size` (called once the
  // source is done) is how many bytes it made; the result is that size.
  Result<int64_t> Upload(const std::string& sandbox_id, const std::string& path, std::optional<int> mode,
                         std::shared_ptr<BodySource> source, const std::function<int64_t()>& size,
                         CancelToken* cancel);

 private:
  EndpointCache* upstream_;
  const ProviderConfig* config_;
};

}  // namespace abx::core
