// POST /files/upload (docs/opensandbox.md §2.10): multipart parts `metadata` and `file`, paired in
// order. Like Go's form parser, only parts with a filename count as files, so a
// `metadata` part sent as a plain form value is ignored and the upload fails with
// INVALID_FILE_METADATA. File parts are streamed to temp files (no size limit, no
// copy in memory) and renamed into place.

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

#include "rapidjson/document.h"
#include "tests/fake-opensandbox/execd_routes.h"
#include "tests/fake-opensandbox/ids.h"
#include "tests/fake-opensandbox/multipart_stream.h"
#include "tests/fake-opensandbox/sandbox_paths.h"

namespace fake_opensandbox {
namespace {

constexpr size_t kMaxMetadataBytes = 1 << 20;
// The multipart reader hands a file's bytes over a few KiB at a time (its socket reads);
// they are gathered into writes of this size, as Go's io.Copy does with its 32 KiB
// buffer, instead of one write(2) each.
constexpr size_t kWriteBufferBytes = 1 << 20;

bool WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    ssize_t n = write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

struct UploadParts {
  std::vector<std::string> metadata;     // contents of `metadata` file parts
  std::vector<std::string> temp_files;   // one per `file` file part
  int current_fd = -1;
  std::string pending;                   // bytes of the current file not yet written
  std::string* current_metadata = nullptr;
  bool write_failed = false;

  ~UploadParts() {
    CloseCurrent();
    for (const auto& path : temp_files) {
      if (!path.empty()) unlink(path.c_str());
    }
  }
  bool Write(const char* data, size_t size) {
    if (pending.size() + size > kWriteBufferBytes && !Flush()) return false;
    if (size >= kWriteBufferBytes) return WriteAll(current_fd, data, size);
    pending.append(data, size);
    return true;
  }
  bool Flush() {
    const bool ok = pending.empty() || WriteAll(current_fd, pending.data(), pending.size());
    pending.clear();
    return ok;
  }
  void CloseCurrent() {
    if (current_fd >= 0) {
      if (!Flush()) write_failed = true;
      close(current_fd);
    }
    current_fd = -1;
    current_metadata = nullptr;
  }
};

// Moves `temp` to `target`, falling back to a copy across filesystems.
// The umask the fake's process runs with, read without changing it (umask(2) would,
// for every thread at once).
mode_t ProcessUmask() {
  static const mode_t mask = [] {
    mode_t found = 022;
    if (FILE* status = fopen("/proc/self/status", "re")) {
      char line[256];
      while (fgets(line, sizeof line, status)) {
        unsigned value;
        if (sscanf(line, "Umask: %o", &value) == 1) found = static_cast<mode_t>(value);
      }
      fclose(status);
    }
    return found;
  }();
  return mask;
}

// The host path of what `sandbox_path` leads to, its symlinks read as the sandbox sees
// them (an absolute target is under the sandbox's root, never the host's); "" for a loop.
std::string FollowLinksInSandbox(const SandboxPaths& paths, std::string sandbox_path, bool* read_only) {
  for (int hop = 0; hop < 40; ++hop) {
    const std::string host = paths.HostOf(sandbox_path, read_only);
    // The links of /proc (a process's fd/N) are the kernel's to follow: they name open
    // files, not paths.
    if (host.rfind("/proc/", 0) == 0) return host;
    struct stat st;
    if (lstat(host.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return host;
    char buffer[4096];
    const ssize_t n = readlink(host.c_str(), buffer, sizeof buffer);
    if (n <= 0) return host;
    std::string target(buffer, static_cast<size_t>(n));
    if (target[0] != '/') target = sandbox_path.substr(0, sandbox_path.find_last_of('/') + 1) + target;
    bool escaped = false;
    sandbox_path = CleanAbsolutePath(target, &escaped);  // ".." above "/" stays at "/", as in the sandbox
  }
  return "";
}

// Copies `temp` into `target` opened for writing, as execd writes every upload (os.OpenFile
// with O_WRONLY|O_CREATE|O_TRUNC, then a copy): for a pipe, a plain write.
bool CopyInPlace(const std::string& temp, const std::string& target) {
  int in = open(temp.c_str(), O_RDONLY | O_CLOEXEC);
  int out = open(target.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  bool ok = in >= 0 && out >= 0;
  std::vector<char> buf(1 << 20);
  while (ok) {
    ssize_t n = read(in, buf.data(), buf.size());
    if (n == 0) break;
    ok = n > 0 && WriteAll(out, buf.data(), static_cast<size_t>(n));
  }
  if (in >= 0) close(in);
  if (out >= 0) close(out);
  unlink(temp.c_str());
  return ok;
}

bool MoveIntoPlace(const std::string& temp, const std::string& target) {
  // What is not a regular file (a FIFO, a process's open pipe under /proc) is written in
  // place; a rename would replace it.
  struct stat st;
  if (stat(target.c_str(), &st) == 0 && !S_ISREG(st.st_mode)) return CopyInPlace(temp, target);
  if (rename(temp.c_str(), target.c_str()) == 0) return true;
  if (errno != EXDEV) return false;
  return CopyInPlace(temp, target);
}

void HandleUpload(const httplib::Request& req, httplib::Response& res,
                  const httplib::ContentReader& content_reader, ExecdContext* context) {
  if (!req.is_multipart_form_data()) {
    content_reader([](const char*, size_t) { return true; });
    SendExecdError(res, 400, "INVALID_FILE",
                   "error parsing multipart form: request Content-Type isn't multipart/form-data");
    return;
  }
  UploadParts parts;
  const std::string boundary = MultipartBoundary(req.get_header_value("Content-Type"));
  if (boundary.empty()) {
    content_reader([](const char*, size_t) { return true; });
    SendExecdError(res, 400, "INVALID_FILE", "error parsing multipart form: no multipart boundary in Content-Type");
    return;
  }
  MultipartStreamReader multipart(
      boundary,
      [&](const MultipartPartHeader& header) {
        parts.CloseCurrent();
        if (header.filename.empty()) return true;  // a plain value: ignored, like Go
        if (header.name == "metadata") {
          parts.metadata.emplace_back();
          parts.current_metadata = &parts.metadata.back();
        } else if (header.name == "file") {
          std::string temp = context->staging_dir + "/upload-" + NewUuid4Hex();
          parts.current_fd = open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
          if (parts.current_fd < 0) {
            parts.write_failed = true;
            return false;
          }
          parts.temp_files.push_back(temp);
        }
        return true;
      },
      [&](const char* data, size_t size) {
        if (parts.current_metadata) {
          if (parts.current_metadata->size() + size > kMaxMetadataBytes) return false;
          parts.current_metadata->append(data, size);
        } else if (parts.current_fd >= 0 && !parts.Write(data, size)) {
          parts.write_failed = true;
          return false;
        }
        return true;
      });
  // cpp-httplib hands a multipart/form-data body only to its own multipart reader, chosen
  // by the request's Content-Type when the body is read. The request it lends the handler
  // is its own, non-const object: with that header renamed, the raw bytes come here.
  auto& request = const_cast<httplib::Request&>(req);
  const std::string content_type = req.get_header_value("Content-Type");
  request.headers.erase("Content-Type");  // the header map compares names ignoring case
  request.headers.emplace("X-Fake-Multipart-Content-Type", content_type);
  const Faults faults = context->faults->Get();
  int64_t body_bytes = 0;
  bool cut_by_fault = false;
  bool read_ok = content_reader([&](const char* data, size_t size) {
    body_bytes += static_cast<int64_t>(size);
    if (faults.transfer_ms_per_mib > 0) {  // the pace fault
      std::this_thread::sleep_for(
          std::chrono::microseconds(faults.transfer_ms_per_mib * 1000 * static_cast<int64_t>(size) / (1 << 20)));
    }
    if (faults.upload_fail_after_bytes > 0 && body_bytes >= faults.upload_fail_after_bytes) {
      cut_by_fault = true;  // upload_fail_after_bytes: execd fails half way
      return false;
    }
    return multipart.Feed(data, size);
  });
  if (cut_by_fault) parts.write_failed = true;
  // A body not read to its end cannot be followed by another request on the connection;
  // Go's server closes it too (more than 256 KiB left unread).
  if (!read_ok || parts.write_failed) res.set_header("Connection", "close");
  read_ok = read_ok && multipart.Finish();
  parts.CloseCurrent();
  if (parts.write_failed) {
    SendExecdError(res, 500, "RUNTIME_ERROR", "error saving uploaded file");
    return;
  }
  if (!read_ok) {
    SendExecdError(res, 400, "INVALID_FILE", "error parsing multipart form");
    return;
  }
  if (parts.metadata.empty()) {
    SendExecdError(res, 400, "INVALID_FILE_METADATA", "metadata file is missing");
    return;
  }
  if (parts.temp_files.empty()) {
    SendExecdError(res, 400, "INVALID_FILE_CONTENT", "file is missing");
    return;
  }
  if (parts.metadata.size() != parts.temp_files.size()) {
    SendExecdError(res, 400, "INVALID_FILE", "metadata and file count mismatch");
    return;
  }
  for (size_t i = 0; i < parts.metadata.size(); ++i) {
    rapidjson::Document meta;
    meta.Parse(parts.metadata[i].c_str(), parts.metadata[i].size());
    if (meta.HasParseError() || !meta.IsObject()) {
      SendExecdError(res, 400, "INVALID_FILE_METADATA", "invalid metadata: not a JSON object");
      return;
    }
    auto get_string = [&meta](const char* key) -> std::string {
      auto it = meta.FindMember(key);
      return it != meta.MemberEnd() && it->value.IsString() ? it->value.GetString() : "";
    };
    std::string path = get_string("path");
    if (path.empty()) {
      SendExecdError(res, 400, "INVALID_FILE_METADATA", "invalid metadata: path is empty");
      return;
    }
    long long mode = 0;
    auto mode_it = meta.FindMember("mode");
    if (mode_it != meta.MemberEnd() && !mode_it->value.IsNull()) {
      if (!mode_it->value.IsInt64()) {
        SendExecdError(res, 400, "INVALID_FILE_METADATA", "invalid metadata: mode must be a number");
        return;
      }
      mode = mode_it->value.GetInt64();
    }
    SandboxPaths::Mapped mapped;
    if (!MapWritablePathOrReject(context, path, "opening destination file", &mapped, res)) return;
    // os.OpenFile follows a symlink: the file it leads to is written.
    mapped.host = FollowLinksInSandbox(context->paths, mapped.sandbox, &mapped.read_only);
    if (mapped.host.empty()) {
      SendExecdError(res, 500, "RUNTIME_ERROR", "error opening destination file " + path + ": too many levels of symbolic links");
      return;
    }
    if (mapped.read_only) {  // a link that leads onto a read-only volume
      SendExecdError(res, 500, "RUNTIME_ERROR", "error opening destination file " + path + ": read-only file system");
      return;
    }
    size_t slash = mapped.host.find_last_of('/');
    if (slash != std::string::npos && slash > 0 &&
        !MakeDirectories(mapped.host.substr(0, slash), 0755)) {
      SendExecdError(res, 500, "RUNTIME_ERROR",
                     "error creating directory for " + path + ": " + strerror(errno));
      return;
    }
    // An existing file is overwritten but keeps its mode and owner, as with O_TRUNC.
    struct stat old;
    bool existed = stat(mapped.host.c_str(), &old) == 0;
    if (existed && S_ISDIR(old.st_mode)) {
      SendExecdError(res, 500, "RUNTIME_ERROR", "error writing " + path + ": is a directory");
      return;
    }
    if (!MoveIntoPlace(parts.temp_files[i], mapped.host)) {
      SendExecdError(res, 500, "RUNTIME_ERROR", "error writing " + path + ": " + strerror(errno));
      return;
    }
    parts.temp_files[i].clear();
    if (existed && !S_ISREG(old.st_mode)) {
      // Written in place: nothing about it changes.
    } else if (existed) {
      chmod(mapped.host.c_str(), old.st_mode & 07777);
      if (lchown(mapped.host.c_str(), old.st_uid, old.st_gid) != 0) {
        // Not fatal: a non-root fake cannot give files away.
      }
    } else {
      // filesystem_upload.go opens a new file with os.ModePerm: 0777 less the umask.
      chmod(mapped.host.c_str(), 0777 & ~ProcessUmask());
    }
    // Then ChmodFile, as for /files/permissions: before 1.0.19 that always chowns.
    std::string error;
    if (!ApplyOwnershipAndMode(mapped.host, get_string("owner"), get_string("group"), mode,
                               context->release, &error)) {
      SendExecdError(res, 500, "RUNTIME_ERROR", "error setting permissions of " + path + ": " + error);
      return;
    }
  }
  res.status = 200;
}

}  // namespace

void RegisterUploadRoute(httplib::Server& server, ExecdContext* context) {
  server.Post(std::string(kExecdRoutePrefix) + "/files/upload",
              [context](const httplib::Request& req, httplib::Response& res,
                        const httplib::ContentReader& content_reader) {
                HandleUpload(req, res, content_reader, context);
              });
}

}  // namespace fake_opensandbox
