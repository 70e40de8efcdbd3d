#pragma once
// Work on the host's local files (files.transfer), which only the shim may do: the shared
// bridge never opens a path the host named (docs/ARCHITECTURE.md "Local files"). The
// session asks its shim through the LineSink (session.h); an opened file's descriptor
// comes back beside gRPC, over the bridge's descriptor socket.

#include <cstdint>
#include <string>

namespace abx::epp {

struct LocalFileRequest {
  enum class Kind {
    kOpenForDownload,  // a new file beside the target, its descriptor handed over
    kOpenForUpload,    // the file, read-only, its descriptor handed over
    kCommit,           // the download is whole: check, set mode and time, rename
    kDiscard,          // the download failed: remove the new file (not answered)
  };
  Kind kind = Kind::kOpenForDownload;
  std::string token;
  std::string local_path;
  std::string remote_name;  // download: the name a directory target gets
  bool overwrite = false;
  int64_t size = 0;          // download: the remote size
  uint32_t mode = 0;         // commit: the remote permission bits
  int64_t mtime_unix_ns = 0; // commit: the remote modification time
};

struct LocalFileReply {
  std::string errno_name;  // empty: it worked
  std::string message;
  std::string local_path;  // the target (download) or the file opened (upload)
  int64_t size = 0;        // upload: the size at open
  uint32_t mode = 0;       // upload: the permission bits at open
  int fd = -1;             // open: the descriptor, owned by the caller
};

}  // namespace abx::epp
