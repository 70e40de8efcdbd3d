#pragma once
// Files in a sandbox over execd's files and directories API, with EPP/1's semantics on
// top: reads by offset/length capped at 4 MiB, a missing path is E8005 everywhere, modes
// as octal strings, append, non-recursive remove and mkdir without parents. On every
// execd release a method changes only the path it names (old_execd_files.h).

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "bridge/base/cancel.h"
#include "bridge/base/error.h"
#include "bridge/core/config.h"
#include "bridge/core/endpoint_cache.h"
#include "common/limits.h"

namespace abx::core {

struct FileEntry {
  std::string path, name;
  std::string type;  // file, dir, symlink
  int64_t size = 0;
  std::string mode;  // "0644"
  std::string modified_at;
};

// Where a files.write's bytes go, found before they are sent (Files::PrepareWrite).
struct WriteTarget {
  opensandbox::ExecdClient execd;
  std::string path;          // the file written
  std::string upload_path;   // where the bytes are uploaded: `path`, or a part file
  int upload_mode = 0;       // the upload's mode (0 = leave as is)
  bool append_existing = false;  // the part is then added to `path` (CompleteWrite)
  int64_t existing_size = 0;
  // Before execd 1.0.19 an upload gives the file to execd's own user unless it names an
  // owner: the owner of the file replaced, named in the upload (upload_owner) or, where
  // the sandbox knows the owner only by its id, put back after it (restore_owner).
  opensandbox::FileOwner upload_owner;
  opensandbox::FileOwner restore_owner;
  std::string owner_path;  // `path` as execd resolved it (~, $VAR, relative), for restore_owner
};

struct FileRead {
  std::string data;  // raw bytes
  int64_t offset = 0;
  int64_t size = 0;  // the whole file's
  bool eof = false;
};

class Files {
 public:
  Files(EndpointCache* upstream, const ProviderConfig* config) : upstream_(upstream), config_(config) {}

  // `length` ≤ 0 or above the cap reads up to the cap.
  Result<FileRead> Read(const std::string& sandbox_id, const std::string& path, int64_t offset,
                        int64_t length, CancelToken* cancel);
  // Returns the file's size after the write. `mode` is the permission bits (e.g. 0644).
  Result<int64_t> Write(const std::string& sandbox_id, const std::string& path,
                        std::string_view data, std::optional<int> mode, bool append,
                        CancelToken* cancel);
  // files.write in steps, for bytes uploaded while they still arrive: where they go
  // (for an append, whether the file exists), the upload to target.upload_path (by the
  // caller), then what completes it (an append adds the part). Write is the three in one.
  Result<WriteTarget> PrepareWrite(const std::string& sandbox_id, const std::string& path,
                                   std::optional<int> mode, bool append, CancelToken* cancel);
  Result<int64_t> CompleteWrite(WriteTarget& target, int64_t size, std::optional<int> mode,
                                CancelToken* cancel);
  Result<std::vector<FileEntry>> List(const std::string& sandbox_id, const std::string& path,
                                      int depth, CancelToken* cancel);
  Result<FileEntry> Stat(const std::string& sandbox_id, const std::string& path,
                         CancelToken* cancel);
  Status Mkdir(const std::string& sandbox_id, const std::string& path, std::optional<int> mode,
               bool parents, CancelToken* cancel);
  Status Remove(const std::string& sandbox_id, const std::string& path, bool recursive,
                CancelToken* cancel);
  Status Move(const std::string& sandbox_id, const std::string& from, const std::string& to,
              CancelToken* cancel);
  // Regular files under `path` whose base name matches the glob (execd's semantics).
  Result<std::vector<std::string>> Search(const std::string& sandbox_id, const std::string& path,
                                          const std::string& pattern, CancelToken* cancel);
  Status Chmod(const std::string& sandbox_id, const std::string& path, std::optional<int> mode,
               const std::string& owner, const std::string& group, CancelToken* cancel);

 private:
  Result<opensandbox::ExecdClient> Execd(const std::string& sandbox_id, CancelToken* cancel);
  // Whether the sandbox's execd predates 1.0.19 (docs/opensandbox.md, "execd releases"),
  // learned once per sandbox and cached with its endpoint.
  Result<bool> Before1019(const std::string& sandbox_id, opensandbox::ExecdClient& execd,
                          CancelToken* cancel);
  Result<std::vector<opensandbox::FileInfo>> ListEntries(const std::string& sandbox_id,
                                                         opensandbox::ExecdClient& execd,
                                                         const std::string& path, int depth,
                                                         CancelToken* cancel);
  EndpointCache* upstream_;
  const ProviderConfig* config_;
};

// "0644" / "644" / "0o644" → 0644; nullopt when not an octal mode.
std::optional<int> ParseOctalMode(const std::string& text);
// 0644 → "0644"
std::string FormatOctalMode(int mode);
// execd's decimal-written octal ("644", or the number 644) → 0644.
std::optional<int> ParseExecdMode(const std::string& text);
FileEntry ToEntry(const opensandbox::FileInfo& info);

}  // namespace abx::core
