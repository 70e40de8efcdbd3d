#include "bridge/core/files/transfers.h"

#include "bridge/base/log.h"
#include "bridge/core/exec/sandbox_script.h"
#include "bridge/core/files/old_execd_files.h"
#include "bridge/core/random_hex.h"
#include "bridge/core/shell_quote.h"

namespace abx::core {
namespace {

Error NotARegularFile(const std::string& path, const std::string& type) {
  Error e = MakeError(ErrorCode::kInvalidState,
                      path + " is " + (type == "dir" ? "a directory" : "not a regular file") + ": only files download");
  e.field = "path";
  return e;
}

// A break that another try may get past: not a cancel, not an answer about the file.
bool Resumable(const Error& e) {
  return e.code == ErrorCode::kUnreachable || e.code == ErrorCode::kTimeout ||
         (e.code == ErrorCode::kUpstream && (e.http_status == 0 || e.http_status >= 500));
}

}  // namespace

Result<FileEntry> Transfers::Download(const std::string& sandbox_id, const std::string& path, DownloadSink* sink,
                                      const std::function<void(int64_t, int64_t)>& progress,
                                      CancelToken* cancel) {
  ABX_ASSIGN_OR_RETURN(opensandbox::ExecdClient execd, upstream_->Execd(sandbox_id, *config_, cancel));
  ABX_ASSIGN_OR_RETURN(opensandbox::FileInfo info, StatWithType(execd, path, cancel));
  const FileEntry file = ToEntry(info);
  if (file.type != "file") return NotARegularFile(path, file.type);
  if (Status st = sink->Start(file); !st.ok()) return st.error();
  if (progress) progress(0, file.size);
  int64_t written = 0;
  Status sink_status = OkStatus();
  for (int attempt = 0;; ++attempt) {
    auto got = execd.DownloadStream(path, written, [&](const char* data, size_t size) {
      // More than the size it had: it grew, which the next check reports.
      sink_status = sink->Write(written, data, size);
      if (!sink_status.ok()) return false;
      written += static_cast<int64_t>(size);
      if (progress) progress(written, file.size);
      return true;
    }, cancel);
    if (!sink_status.ok()) return sink_status.error();
    if (got.ok() && written == file.size) return file;
    if (!got.ok() && (!Resumable(got.error()) || cancel->cancelled())) return got.error();
    if (attempt == kResumes) {
      if (!got.ok()) {
        Error e = got.error();
        return e.Within("download " + path + " after " + std::to_string(kResumes) + " resumes");
      }
      return MakeError(ErrorCode::kUpstream, "download " + path + ": execd sent " + std::to_string(written) +
                                                 " bytes of " + std::to_string(file.size));
    }
    // Resumed only from the same file: its size and modification time as at the start.
    ABX_ASSIGN_OR_RETURN(opensandbox::FileInfo now, StatWithType(execd, path, cancel));
    const FileEntry again = ToEntry(now);
    if (again.size != file.size || again.modified_at != file.modified_at || written > file.size) {
      Error e = MakeError(ErrorCode::kInvalidState, "file changed during download: " + path);
      e.field = "path";
      return e;
    }
    log::Info("transfer.resume", {{"bytes", std::to_string(written)}, {"total", std::to_string(file.size)}});
  }
}

Result<int64_t> Transfers::Upload(const std::string& sandbox_id, const std::string& path, std::optional<int> mode,
                                  std::shared_ptr<BodySource> source, const std::function<int64_t()>& size,
                                  CancelToken* cancel) {
  if (path.empty() || path[0] != '/' || path.back() == '/') {
    return InvalidParams("path", "path must be an absolute path of a file");
  }
  ABX_ASSIGN_OR_RETURN(opensandbox::ExecdClient execd, upstream_->Execd(sandbox_id, *config_, cancel));
  const size_t slash = path.find_last_of('/');
  const std::string parent = slash == 0 ? "/" : path.substr(0, slash);
  // No POST /directories for the parent: execd's upload makes a missing one itself, and
  // before 1.0.19 that call chmods and chowns a parent that exists (/tmp loses its
  // sticky bit).
  // A file it replaces keeps its owner (docs/epp1.md §3): the part is given it before the
  // move, in the same script. Its mode is the call's, else the local file's (the upload).
  auto replaced = StatWithType(execd, path, cancel);
  if (!replaced.ok() && replaced.error().code != ErrorCode::kNotFound) return replaced.error();
  const std::string keep_owner = replaced.ok() && replaced->type == "file"
                                     ? replaced->owner + ":" + replaced->group
                                     : std::string();
  const std::string part = (parent == "/" ? "" : parent) + "/." + path.substr(slash + 1) + ".abx-" + RandomHex(8) + ".part";
  // Whatever happens from here on, the part file does not stay.
  auto remove_part = [&] {
    CancelToken uncancellable;  // bounded by request_timeout
    Status removed = execd.RemoveFile(part, &uncancellable);
    if (!removed.ok() && removed.error().code != ErrorCode::kNotFound) {
      log::Warn("transfer.part_left", {{"error", removed.error().message}});
    }
  };
  bool complete = false;
  Status uploaded =
      execd.UploadMade(part, std::move(source), mode.value_or(0), &complete, cancel, /*open_ended=*/true);
  if (!uploaded.ok()) {
    if (complete) remove_part();
    return uploaded.error();
  }
  // Once complete, the move is not cancelled: a cancel could not stop a move already
  // started in the sandbox, and the answer must say what happened (execd's own 30 s
  // bound the script). mv onto a directory would move the part into it: refused.
  int exit_code = -1;
  CancelToken uncancellable;
  const std::string quoted = ShellQuote(path);
  // execd takes a mode of 0 for "its default": a file meant to have none gets it here.
  const std::string no_permissions = mode && *mode == 0 ? "chmod 0 -- " + ShellQuote(part) + " && " : "";
  const std::string owned = keep_owner.empty() ? "" : "chown -- " + ShellQuote(keep_owner) + " " + ShellQuote(part) + " && ";
  auto moved = RunSandboxScript(execd,
                                "if [ -d " + quoted + " ]; then echo " + ShellQuote(path + " is a directory") +
                                    "; exit 1; fi\n{ " + no_permissions + owned + "mv -f -- " + ShellQuote(part) + " " +
                                    quoted + "; } 2>&1",
                                &exit_code, &uncancellable);
  if (!moved.ok() || exit_code != 0) {
    remove_part();
    if (!moved.ok()) return moved.error();
    Error e = MakeError(ErrorCode::kInvalidState, "move the upload into " + path + ": " + *moved);
    e.field = "path";
    return e;
  }
  return size();
}

}  // namespace abx::core
