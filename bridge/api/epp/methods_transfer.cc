// The files.transfer extension (docs/epp1.md "files.transfer"): files.download and
// files.upload between a sandbox and a file on the host. The bytes move between execd
// and a descriptor the shim opened (local_files.h), never through EPP lines; the local
// path is opened, created and renamed only by the shim.
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include <chrono>
#include <mutex>
#include <thread>

#include "bridge/api/epp/local_files.h"
#include "bridge/api/epp/local_upload.h"
#include "bridge/api/epp/methods.h"
#include "bridge/api/epp/params.h"
#include "bridge/api/epp/session.h"
#include "bridge/base/descriptor_feed.h"
#include "bridge/base/json.h"
#include "bridge/base/local_error.h"
#include "bridge/base/time_util.h"
#include "bridge/core/files/files.h"
#include "bridge/core/files/transfers.h"
#include "bridge/core/random_hex.h"

namespace abx::epp {
namespace {

using json::Quote;
using Clock = std::chrono::steady_clock;

// $/progress at most this often (docs/epp1.md).
constexpr auto kProgressInterval = std::chrono::milliseconds(100);

// $/progress {"id","bytes","total"} for one transfer: at most one per kProgressInterval,
// and Finish sends the last, with bytes equal to total, before the response. Called
// from the thread that moves the bytes (the request's, or an upload's reader).
//
// The last one must not come sooner than kProgressInterval after the one before it, so
// a notification shortly before the end would hold the answer back. Update therefore
// skips one when, at the rate so far, the rest of the bytes take less than an interval.
class Progress {
 public:
  explicit Progress(Request* req) : req_(req), start_(Clock::now()), last_(start_) {}

  void Update(int64_t bytes, int64_t total) {
    std::lock_guard<std::mutex> lock(mu_);
    const Clock::time_point now = Clock::now();
    if (now - last_ < kProgressInterval || bytes <= 0) return;
    const auto elapsed = now - start_;
    const auto rest = elapsed * static_cast<double>(total - bytes) / static_cast<double>(bytes);
    if (rest < kProgressInterval) return;
    Send(bytes, total);
  }
  void Finish(int64_t total) {
    std::lock_guard<std::mutex> lock(mu_);
    if (last_bytes_ == total) return;  // the last one sent already says so
    if (sent_any_) std::this_thread::sleep_until(last_ + kProgressInterval);
    Send(total, total);
  }

 private:
  void Send(int64_t bytes, int64_t total) {
    req_->Notify("$/progress", "{\"id\":" + req_->id_json() + ",\"bytes\":" + std::to_string(bytes) +
                                   ",\"total\":" + std::to_string(total) + "}");
    last_ = Clock::now();
    last_bytes_ = bytes;
    sent_any_ = true;
  }

  Request* const req_;
  std::mutex mu_;
  const Clock::time_point start_;
  Clock::time_point last_;
  int64_t last_bytes_ = -1;
  bool sent_any_ = false;
};

Result<std::string> AbsoluteLocalPath(const Params& p) {
  ABX_ASSIGN_OR_RETURN(std::string path, p.RequiredString("local_path"));
  if (path.empty() || path[0] != '/') return InvalidParams("local_path", "local_path must be an absolute path");
  if (path.find('\0') != std::string::npos) return InvalidParams("local_path", "local_path must not hold a NUL");
  return path;
}

Result<std::string> RemotePath(const Params& p) {
  ABX_ASSIGN_OR_RETURN(std::string path, p.RequiredString("path"));
  if (path.empty()) return InvalidParams("path", "path must not be empty");
  return path;
}

Result<LocalFileReply> Ask(Request& req, const LocalFileRequest& request, CancelToken* cancel) {
  ABX_ASSIGN_OR_RETURN(LocalFileReply reply, req.session().sink().AskShim(request, cancel));
  if (!reply.errno_name.empty()) {
    if (reply.fd >= 0) close(reply.fd);
    return LocalFileError(reply.errno_name, reply.message);
  }
  return reply;
}

// A download's bytes into the new file the shim made beside the target, which the
// shim renames onto the target at Commit.
class LocalFileSink : public core::DownloadSink {
 public:
  LocalFileSink(Request* req, std::string local_path, bool overwrite)
      : req_(req), local_path_(std::move(local_path)), overwrite_(overwrite), token_(core::RandomHex(32)) {}
  // A download that did not end in a commit the shim confirmed ends in a discard: the
  // shim removes the new file if it still has it (after a rename, it no longer does).
  ~LocalFileSink() override {
    CloseDescriptor();
    if (opened_ && !committed_) {
      LocalFileRequest discard;
      discard.kind = LocalFileRequest::Kind::kDiscard;
      discard.token = token_;
      req_->session().sink().TellShim(discard);
    }
  }

  Status Start(const core::FileEntry& file) override {
    LocalFileRequest open;
    open.kind = LocalFileRequest::Kind::kOpenForDownload;
    open.token = token_;
    open.local_path = local_path_;
    open.remote_name = file.name;
    open.overwrite = overwrite_;
    open.size = file.size;
    // Asked for even if the answer is an error: a shim that opened and then failed to
    // answer still gets its discard.
    opened_ = true;
    ABX_ASSIGN_OR_RETURN(LocalFileReply reply, Ask(*req_, open, &req_->cancel()));
    fd_ = reply.fd;
    target_ = reply.local_path;
    return OkStatus();
  }

  Status Write(int64_t offset, const char* data, size_t size) override {
    while (size > 0) {
      const ssize_t wrote = pwrite(fd_, data, size, offset);
      if (wrote < 0 && errno == EINTR) continue;
      if (wrote < 0) return LocalFileError(errno, "writing the local file failed");
      data += wrote;
      size -= static_cast<size_t>(wrote);
      offset += wrote;
    }
    return OkStatus();
  }

  // The whole file arrived: the shim checks its size, sets mode and time, renames it.
  Status Commit(const core::FileEntry& file) {
    CloseDescriptor();
    LocalFileRequest commit;
    commit.kind = LocalFileRequest::Kind::kCommit;
    commit.token = token_;
    commit.size = file.size;
    // The permission bits only: a set-user-ID file of the sandbox is not one on the host
    // (as cp does without -p).
    commit.mode = static_cast<uint32_t>(core::ParseOctalMode(file.mode).value_or(0644)) & 0777;
    if (auto millis = ParseRfc3339Millis(file.modified_at)) commit.mtime_unix_ns = *millis * 1000000;
    // The shim answers a failed commit after removing the new file itself. A rename is
    // not cancelled half way: once asked for, the answer says what became of it.
    CancelToken uncancelled;
    ABX_ASSIGN_OR_RETURN(LocalFileReply reply, Ask(*req_, commit, &uncancelled));
    committed_ = true;
    return OkStatus();
  }

  const std::string& target() const { return target_; }

 private:
  void CloseDescriptor() {
    if (fd_ >= 0) close(fd_);
    fd_ = -1;
  }

  Request* const req_;
  const std::string local_path_;
  const bool overwrite_;
  const std::string token_;
  int fd_ = -1;
  bool opened_ = false;
  bool committed_ = false;
  std::string target_;
};

}  // namespace

Result<std::string> FilesDownload(Request& req) {
  if (Status can = req.session().sink().CanReachLocalFiles(); !can.ok()) return can.error();
  Params p(req.params());
  ABX_ASSIGN_OR_RETURN(std::string id, SandboxId(p));
  ABX_ASSIGN_OR_RETURN(std::string path, RemotePath(p));
  ABX_ASSIGN_OR_RETURN(std::string local_path, AbsoluteLocalPath(p));
  ABX_ASSIGN_OR_RETURN(std::optional<bool> overwrite, p.Bool("overwrite"));

  core::Transfers transfers(req.session().upstream().get(), &req.session().config());
  Progress progress(&req);
  LocalFileSink sink(&req, local_path, overwrite.value_or(false));
  ABX_ASSIGN_OR_RETURN(core::FileEntry file,
                       transfers.Download(id, path, &sink, [&](int64_t bytes, int64_t total) {
                         progress.Update(bytes, total);
                       }, &req.cancel()));
  if (Status st = sink.Commit(file); !st.ok()) return st.error();
  progress.Finish(file.size);
  return "{\"path\":" + Quote(file.path) + ",\"local_path\":" + Quote(sink.target()) +
         ",\"size\":" + std::to_string(file.size) + "}";
}

Result<std::shared_ptr<OpenedLocalFile>> OpenLocalForUpload(Request& req, const std::string& local_path,
                                                            CancelToken* cancel) {
  LocalFileRequest open;
  open.kind = LocalFileRequest::Kind::kOpenForUpload;
  open.token = core::RandomHex(32);
  open.local_path = local_path;
  auto opened = Ask(req, open, cancel);
  if (!opened.ok()) {
    Error e = opened.error();
    // Only a regular file uploads: anything else is the params' fault.
    if (e.errno_name == "EISDIR" || e.errno_name == "EINVAL") return InvalidParams("local_path", e.message);
    return e;
  }
  auto file = std::make_shared<OpenedLocalFile>();
  file->fd = opened->fd;
  file->size = opened->size;
  file->local_mode = opened->mode & 0777;
  file->local_path = local_path;
  return file;
}

Status UploadOpened(Request& req, OpenedLocalFile& file, const std::string& sandbox_id, const std::string& path,
                    std::optional<int> mode, CancelToken* cancel, std::function<void(int64_t)> on_bytes) {
  const int64_t size = file.size;
  DescriptorFeed feed(file.fd, size, std::move(on_bytes));
  file.fd = -1;  // the feed owns it now
  feed.Start();
  core::Transfers transfers(req.session().upstream().get(), &req.session().config());
  auto uploaded = transfers.Upload(sandbox_id, path, mode ? mode : std::optional<int>(file.local_mode), feed.body(),
                                   [size] { return size; }, cancel);
  // The local side's error says more than the cut body it caused.
  if (Status read = feed.Finish(); !read.ok()) return read.error();
  if (!uploaded.ok()) return uploaded.error();
  return OkStatus();
}

Result<std::string> FilesUpload(Request& req) {
  if (Status can = req.session().sink().CanReachLocalFiles(); !can.ok()) return can.error();
  Params p(req.params());
  ABX_ASSIGN_OR_RETURN(std::string id, SandboxId(p));
  ABX_ASSIGN_OR_RETURN(std::string local_path, AbsoluteLocalPath(p));
  ABX_ASSIGN_OR_RETURN(std::string path, RemotePath(p));
  ABX_ASSIGN_OR_RETURN(std::optional<int> mode, OctalMode(p, "mode"));
  ABX_ASSIGN_OR_RETURN(std::shared_ptr<OpenedLocalFile> file, OpenLocalForUpload(req, local_path, &req.cancel()));
  const int64_t size = file->size;
  Progress progress(&req);
  Status uploaded = UploadOpened(req, *file, id, path, mode, &req.cancel(),
                                 [&](int64_t bytes) { progress.Update(bytes, size); });
  if (!uploaded.ok()) return uploaded.error();
  progress.Finish(size);
  return "{\"path\":" + Quote(path) + ",\"size\":" + std::to_string(size) + "}";
}

}  // namespace abx::epp
