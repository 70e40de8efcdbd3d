#pragma once
// A local file uploaded into a sandbox by files.upload and templates.build: the shim opens
// it with the host's rights and hands the bridge its descriptor (local_files.h); the
// bytes go from that descriptor to execd (core/files/transfers.h).

#include <unistd.h>

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "bridge/api/epp/session.h"
#include "bridge/base/cancel.h"
#include "bridge/base/error.h"

namespace abx::epp {

struct OpenedLocalFile {
  int fd = -1;           // owned until an upload takes it
  int64_t size = 0;      // when it was opened
  int local_mode = 0;    // its permission bits
  std::string local_path;
  // Where a build puts it in the sandbox, and with which mode (nullopt: the local one).
  std::string path;
  std::optional<int> mode;

  OpenedLocalFile() = default;
  OpenedLocalFile(const OpenedLocalFile&) = delete;
  OpenedLocalFile& operator=(const OpenedLocalFile&) = delete;
  ~OpenedLocalFile() {
    if (fd >= 0) close(fd);
  }
};

// Asks the shim to open `local_path` for reading. A directory or a file that is not
// regular is -32602 (local_path); a missing one E8005, as files.upload answers.
Result<std::shared_ptr<OpenedLocalFile>> OpenLocalForUpload(Request& req, const std::string& local_path,
                                                            CancelToken* cancel);

// Uploads the opened file to `path` in the sandbox (replacing it only once whole), with
// `mode` or else the local file's permission bits; `on_bytes` sees the bytes read so far.
// The descriptor is used up.
Status UploadOpened(Request& req, OpenedLocalFile& file, const std::string& sandbox_id, const std::string& path,
                    std::optional<int> mode, CancelToken* cancel, std::function<void(int64_t)> on_bytes = {});

// The same to file.path with file.mode.
inline Status UploadOpenedFile(Request& req, OpenedLocalFile& file, const std::string& sandbox_id,
                               CancelToken* cancel) {
  return UploadOpened(req, file, sandbox_id, file.path, file.mode, cancel);
}

}  // namespace abx::epp
