#include "bridge/core/files/files.h"

#include <cstdio>
#include <cstdlib>
#include <random>

#include "bridge/base/json.h"
#include "bridge/base/time_util.h"
#include "bridge/core/exec/sandbox_script.h"
#include "bridge/core/execd_release.h"
#include "bridge/core/files/old_execd_files.h"
#include "bridge/core/shell_quote.h"
#include "bridge/opensandbox/error_body.h"

namespace abx::core {
namespace {

// The append command ends at once; only a stuck sandbox keeps it silent this long.
constexpr int64_t kAppendIdleTimeoutMs = 20000;

// An owner or group the sandbox knows by id only: execd's FileInfo gives the id as digits
// where it finds no name, and execd's lookups take names only.
bool IsId(const std::string& name) {
  return !name.empty() && name.find_first_not_of("0123456789") == std::string::npos;
}

// execd 1.0.19's answer to an unknown owner or group, as the host should see it.
Error UnknownNameOr(Error e, const std::string& owner, const std::string& group) {
  if (e.http_status != 500) return e;
  if (e.message.find("unknown user") != std::string::npos) {
    return InvalidParams("owner", "the sandbox has no user " + owner);
  }
  if (e.message.find("unknown group") != std::string::npos) {
    return InvalidParams("group", "the sandbox has no group " + group);
  }
  return e;
}

}  // namespace

std::optional<int> ParseOctalMode(const std::string& text) {
  std::string t = text;
  if (t.rfind("0o", 0) == 0 || t.rfind("0O", 0) == 0) t = t.substr(2);
  if (t.empty() || t.size() > 5) return std::nullopt;
  int mode = 0;
  for (char c : t) {
    if (c < '0' || c > '7') return std::nullopt;
    mode = mode * 8 + (c - '0');
  }
  if (mode > 07777) return std::nullopt;
  return mode;
}

std::string FormatOctalMode(int mode) {
  char out[8];
  std::snprintf(out, sizeof out, "%04o", mode & 07777);
  return out;
}

std::optional<int> ParseExecdMode(const std::string& text) { return ParseOctalMode(text); }

FileEntry ToEntry(const opensandbox::FileInfo& info) {
  FileEntry e;
  e.path = info.path;
  const size_t slash = info.path.find_last_of('/');
  e.name = slash == std::string::npos ? info.path : info.path.substr(slash + 1);
  if (e.name.empty()) e.name = info.path;
  e.type = info.type == "directory" ? "dir" : info.type == "symlink" ? "symlink" : "file";
  e.size = info.size;
  e.mode = FormatOctalMode(ParseExecdMode(info.mode).value_or(0));
  e.modified_at = NormalizeRfc3339(info.modified_at);
  return e;
}

Result<opensandbox::ExecdClient> Files::Execd(const std::string& sandbox_id, CancelToken* cancel) {
  return upstream_->Execd(sandbox_id, *config_, cancel);
}

Result<bool> Files::Before1019(const std::string& sandbox_id, opensandbox::ExecdClient& execd,
                               CancelToken* cancel) {
  return ExecdBefore1019(*upstream_, sandbox_id, execd, cancel);
}

Result<std::vector<opensandbox::FileInfo>> Files::ListEntries(const std::string& sandbox_id,
                                                              opensandbox::ExecdClient& execd,
                                                              const std::string& path, int depth,
                                                              CancelToken* cancel) {
  const std::optional<bool> known = upstream_->KnownBefore1019(sandbox_id);
  if (!known.value_or(false)) {
    auto listed = execd.ListDirectory(path, depth, cancel);
    if (listed.ok()) upstream_->NoteBefore1019(sandbox_id, false);
    if (listed.ok() || !opensandbox::IsRouteMissing(listed.error())) return listed;
    upstream_->NoteBefore1019(sandbox_id, true);
  }
  return ListWithoutListRoute(execd, path, depth, cancel);
}

Result<FileRead> Files::Read(const std::string& sandbox_id, const std::string& path,
                             int64_t offset, int64_t length, CancelToken* cancel) {
  ABX_ASSIGN_OR_RETURN(opensandbox::ExecdClient execd, Execd(sandbox_id, cancel));
  ABX_ASSIGN_OR_RETURN(opensandbox::FileInfo info, StatWithType(execd, path, cancel));
  if (info.type == "directory") {
    return MakeError(ErrorCode::kInvalidState, path + " is a directory");
  }
  if (length <= 0 || length > static_cast<int64_t>(kMaxReadBytes)) length = kMaxReadBytes;
  FileRead read;
  read.offset = offset;
  read.size = info.size;
  if (offset < info.size) {
    const int64_t n = std::min(length, info.size - offset);
    ABX_ASSIGN_OR_RETURN(read.data, execd.Download(path, offset, n, cancel));
  }
  read.eof = offset + static_cast<int64_t>(read.data.size()) >= info.size;
  return read;
}

Result<int64_t> Files::Write(const std::string& sandbox_id, const std::string& path,
                             std::string_view data, std::optional<int> mode, bool append,
                             CancelToken* cancel) {
  ABX_ASSIGN_OR_RETURN(WriteTarget target, PrepareWrite(sandbox_id, path, mode, append, cancel));
  if (target.append_existing && data.empty() && !mode) return target.existing_size;
  Status st = target.execd.Upload(target.upload_path, data, target.upload_mode, cancel, target.upload_owner);
  if (!st.ok()) return st.error();
  return CompleteWrite(target, static_cast<int64_t>(data.size()), mode, cancel);
}

// execd has no append and no ranged upload: the new bytes go to a file of their own next
// to the target and a shell in the sandbox appends them. Each append then moves only its
// own bytes (downloading the file and uploading it whole again made a run of appends
// quadratic), and `>>` appends in place, so the file keeps its inode, owner and mode.
Result<WriteTarget> Files::PrepareWrite(const std::string& sandbox_id, const std::string& path,
                                        std::optional<int> mode, bool append,
                                        CancelToken* cancel) {
  ABX_ASSIGN_OR_RETURN(opensandbox::ExecdClient execd, Execd(sandbox_id, cancel));
  WriteTarget target{std::move(execd), path, path, mode.value_or(0)};
  if (!append) {
    ABX_ASSIGN_OR_RETURN(bool before, Before1019(sandbox_id, target.execd, cancel));
    if (before) {  // the file replaced keeps its owner (WriteTarget::upload_owner)
      auto existing = StatWithType(target.execd, path, cancel);
      if (!existing.ok() && existing.error().code != ErrorCode::kNotFound) return existing.error();
      if (existing.ok() && existing->type == "file") {
        opensandbox::FileOwner& keep =
            IsId(existing->owner) || IsId(existing->group) ? target.restore_owner : target.upload_owner;
        keep = {existing->owner, existing->group};
        target.owner_path = existing->path;
      } else if (existing.ok() && existing->type == "symlink") {
        // The upload writes through the link; the file behind it keeps its owner.
        ABX_ASSIGN_OR_RETURN(std::optional<opensandbox::FileOwner> behind,
                             OwnerBehindLink(target.execd, existing->path, cancel));
        if (behind) {
          target.restore_owner = *behind;
          target.owner_path = existing->path;
        }
      }
    }
  }
  if (append) {
    auto existing = StatWithType(target.execd, path, cancel);
    if (!existing.ok() && existing.error().code != ErrorCode::kNotFound) return existing.error();
    if (existing.ok()) {
      std::random_device random;
      char suffix[32];
      std::snprintf(suffix, sizeof suffix, ".abx-append-%08x%08x", random(), random());
      target.upload_path = path + suffix;
      target.upload_mode = 0600;
      target.append_existing = true;
      target.existing_size = existing->size;
    }
  }
  return target;
}

Result<int64_t> Files::CompleteWrite(WriteTarget& target, int64_t size, std::optional<int> mode,
                                     CancelToken* cancel) {
  if (!target.restore_owner.owner.empty()) {
    Status kept = RestoreOwner(target.execd, target.owner_path, target.restore_owner.owner,
                               target.restore_owner.group, cancel);
    if (!kept.ok()) return kept.error();
  }
  if (!target.append_existing) return size;
  opensandbox::ExecdClient& execd = target.execd;
  const std::string& path = target.path;
  const std::string& part = target.upload_path;
  std::string script = "cat -- " + ShellQuote(part) + " >> " + ShellQuote(path) +
                       "; rc=$?; rm -f -- " + ShellQuote(part);
  if (mode) {
    script += "; [ $rc -ne 0 ] || chmod " + FormatOctalMode(*mode) + " -- " + ShellQuote(path) +
              " || rc=$?";
  }
  script += "; exit $rc";
  std::optional<int> code;
  std::string stderr_text;
  Status st = execd.RunCommand(
      "{\"command\":" + json::Quote(script) + ",\"background\":false}", cancel,
      kAppendIdleTimeoutMs,
      [&](const opensandbox::ExecdEvent& e) {
        if (e.type == "stderr" && stderr_text.size() < 1024) stderr_text += e.text + "\n";
        if (e.type == "execution_complete") code = 0;
        if (e.type == "error") code = std::atoi(e.error_value().c_str());
        return !code.has_value();
      },
      [] {});
  if (!st.ok() || code != 0) {
    execd.RemoveFile(part, nullptr);  // best effort: the shell may not have run at all
    if (!st.ok()) return st.error().Within("append to " + path);
    while (!stderr_text.empty() && stderr_text.back() == '\n') stderr_text.pop_back();
    return MakeError(ErrorCode::kUpstream,
                     "append to " + path + " failed" +
                         (stderr_text.empty() ? std::string() : ": " + stderr_text));
  }
  return target.existing_size + size;
}

Result<std::vector<FileEntry>> Files::List(const std::string& sandbox_id, const std::string& path,
                                           int depth, CancelToken* cancel) {
  ABX_ASSIGN_OR_RETURN(opensandbox::ExecdClient execd, Execd(sandbox_id, cancel));
  ABX_ASSIGN_OR_RETURN(std::vector<opensandbox::FileInfo> infos, ListEntries(sandbox_id, execd, path, depth, cancel));
  std::vector<FileEntry> entries;
  for (const opensandbox::FileInfo& info : infos) entries.push_back(ToEntry(info));
  return entries;
}

Result<FileEntry> Files::Stat(const std::string& sandbox_id, const std::string& path,
                              CancelToken* cancel) {
  ABX_ASSIGN_OR_RETURN(opensandbox::ExecdClient execd, Execd(sandbox_id, cancel));
  ABX_ASSIGN_OR_RETURN(opensandbox::FileInfo info, StatWithType(execd, path, cancel));
  return ToEntry(info);
}

Status Files::Mkdir(const std::string& sandbox_id, const std::string& path,
                    std::optional<int> mode, bool parents, CancelToken* cancel) {
  ABX_ASSIGN_OR_RETURN(opensandbox::ExecdClient execd, Execd(sandbox_id, cancel));
  if (!parents) {
    std::string parent = path.substr(0, path.find_last_of('/'));
    if (!parent.empty()) {
      auto info = StatWithType(execd, parent, cancel);
      if (!info.ok()) return info.error().Within("parent of " + path);
    }
  }
  ABX_ASSIGN_OR_RETURN(bool before, Before1019(sandbox_id, execd, cancel));
  if (before) {
    // There execd chmods and chowns a directory that exists, also one a symlink leads
    // to (its chmod follows links; /files/info does not): one is left as it is.
    auto existing = StatWithType(execd, path, cancel);
    if (existing.ok() && existing->type == "directory") return OkStatus();
    if (existing.ok() && existing->type == "symlink") {
      int not_a_directory = -1;
      ABX_ASSIGN_OR_RETURN(std::string ignored,
                           RunSandboxScript(execd, "test -d " + ShellQuote(existing->path), &not_a_directory, cancel));
      if (not_a_directory == 0) return OkStatus();
    }
  }
  return execd.MakeDirectory(path, mode.value_or(0755), cancel);
}

Status Files::Remove(const std::string& sandbox_id, const std::string& path, bool recursive,
                     CancelToken* cancel) {
  ABX_ASSIGN_OR_RETURN(opensandbox::ExecdClient execd, Execd(sandbox_id, cancel));
  ABX_ASSIGN_OR_RETURN(opensandbox::FileInfo info, StatWithType(execd, path, cancel));  // missing: E8005
  // execd's file removal looks through a symlink (every release): a dangling one is "gone
  // already" and stays, one to a directory is "a directory". Its directory removal
  // unlinks a link itself and never follows it.
  if (info.type == "symlink") return execd.RemoveDirectory(path, cancel);
  if (info.type != "directory") return execd.RemoveFile(path, cancel);
  if (!recursive) {
    ABX_ASSIGN_OR_RETURN(std::vector<opensandbox::FileInfo> children, ListEntries(sandbox_id, execd, path, 1, cancel));
    if (!children.empty()) {
      return MakeError(ErrorCode::kInvalidState,
                       path + " is a directory that is not empty; pass recursive to remove it");
    }
  }
  return execd.RemoveDirectory(path, cancel);
}

Status Files::Move(const std::string& sandbox_id, const std::string& from, const std::string& to,
                   CancelToken* cancel) {
  ABX_ASSIGN_OR_RETURN(opensandbox::ExecdClient execd, Execd(sandbox_id, cancel));
  return execd.Move(from, to, cancel);
}

Result<std::vector<std::string>> Files::Search(const std::string& sandbox_id,
                                               const std::string& path, const std::string& pattern,
                                               CancelToken* cancel) {
  ABX_ASSIGN_OR_RETURN(opensandbox::ExecdClient execd, Execd(sandbox_id, cancel));
  ABX_ASSIGN_OR_RETURN(std::vector<opensandbox::FileInfo> infos, execd.Search(path, pattern, cancel));
  std::vector<std::string> matches;
  for (const opensandbox::FileInfo& info : infos) matches.push_back(info.path);
  return matches;
}

Status Files::Chmod(const std::string& sandbox_id, const std::string& path,
                    std::optional<int> mode, const std::string& owner, const std::string& group,
                    CancelToken* cancel) {
  ABX_ASSIGN_OR_RETURN(opensandbox::ExecdClient execd, Execd(sandbox_id, cancel));
  ABX_ASSIGN_OR_RETURN(opensandbox::FileInfo info, StatWithType(execd, path, cancel));  // missing: E8005
  ABX_ASSIGN_OR_RETURN(bool before, Before1019(sandbox_id, execd, cancel));
  // Before 1.0.19 execd chowns whatever it chmods, and takes an unknown name for its own
  // user; its lookups take no ids on any release, and it reads a mode of 0 as "no
  // chmod". chown and chmod in the sandbox do none of that.
  if (before || IsId(owner) || IsId(group) || mode == 0) {
    return ChmodInSandbox(execd, info.path, mode.value_or(-1), owner, group, cancel);  // as execd resolved it
  }
  // One change after the other, so that an unknown name fails before the mode changes
  // (execd chmods first, then looks the names up). A mode of 0 tells execd "no chmod".
  if (!owner.empty() || !group.empty()) {
    Status owned = execd.SetPermissions(path, 0, owner, group, cancel);
    if (!owned.ok()) return UnknownNameOr(owned.error(), owner, group);
  }
  if (!mode) return OkStatus();
  return execd.SetPermissions(path, *mode, "", "", cancel);
}

}  // namespace abx::core
