#include "bridge/core/files/old_execd_files.h"

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <map>
#include <string_view>

#include "bridge/core/exec/sandbox_script.h"
#include "bridge/core/shell_quote.h"

namespace abx::core {
namespace {

// Paths per /files/info request: a long listing costs one request per this many entries,
// and the query stays far below any proxy's URL limit for ordinary names.
constexpr size_t kStatBatch = 64;

// Each entry `find` prints starts with this byte, so a name that holds a newline (it
// arrives as two lines) is put back together.
constexpr char kEntryMark = '\036';

std::vector<std::string> SplitEntries(const std::string& output) {
  std::vector<std::string> entries;
  size_t at = 0;
  while (at < output.size()) {
    size_t end = output.find('\n', at);
    if (end == std::string::npos) end = output.size();
    const std::string line = output.substr(at, end - at);
    if (!line.empty() && line[0] == kEntryMark) {
      entries.push_back(line.substr(1));
    } else if (!entries.empty()) {
      entries.back() += "\n" + line;
    }
    at = end + 1;
  }
  return entries;
}

// The /files/info of each path; one that vanished since `find` saw it is left out, as a
// listing made a moment later would leave it out.
Result<std::vector<opensandbox::FileInfo>> StatAll(opensandbox::ExecdClient& execd,
                                                   const std::vector<std::string>& paths,
                                                   const CancelToken* cancel) {
  std::vector<opensandbox::FileInfo> infos;
  for (size_t at = 0; at < paths.size(); at += kStatBatch) {
    const std::vector<std::string> batch(paths.begin() + at,
                                         paths.begin() + std::min(paths.size(), at + kStatBatch));
    auto many = execd.StatMany(batch, cancel);
    if (many.ok()) {
      for (const std::string& path : batch) infos.push_back(std::move(many->at(path)));
      continue;
    }
    if (many.error().code != ErrorCode::kNotFound) return many.error();
    for (const std::string& path : batch) {
      auto one = execd.Stat(path, cancel);
      if (one.ok()) {
        infos.push_back(std::move(one).value());
      } else if (one.error().code != ErrorCode::kNotFound) {
        return one.error();
      }
    }
  }
  return infos;
}

// The error a chown, chgrp or chmod in the sandbox printed, as the host should see it.
Error ChangeFailed(const std::string& what, const std::string& output, const std::string& owner,
                   const std::string& group) {
  auto says = [&output](const char* a, const char* b) {
    return output.find(a) != std::string::npos || output.find(b) != std::string::npos;
  };
  if (says("invalid user", "unknown user")) {
    return InvalidParams("owner", "the sandbox has no user " + owner);
  }
  if (says("invalid group", "unknown group")) {
    return InvalidParams("group", "the sandbox has no group " + group);
  }
  std::string text = output;
  while (!text.empty() && text.back() == '\n') text.pop_back();
  if (says("No such file", "no such file")) return MakeError(ErrorCode::kNotFound, what + ": " + text);
  return MakeError(ErrorCode::kUpstream, what + " failed" + (text.empty() ? "" : ": " + text));
}

// The type `find` or the shell test names by its letter.
std::string TypeOfLetter(char letter) {
  switch (letter) {
    case 'd': return "directory";
    case 'l': return "symlink";
    case 'f': return "file";
    default: return "other";
  }
}

// One letter per type: the tests run in this order, so a symlink to a directory is `l`.
const char kTypeTests[] =
    "if [ -L \"$p\" ]; then t=l; elif [ -d \"$p\" ]; then t=d; elif [ -f \"$p\" ]; then t=f; "
    "elif [ -e \"$p\" ]; then t=o; else t=-; fi";

// A symlink as execd 1.0.19 describes one (itself, not what it leads to), from the
// fields `stat -c '%s %a %Y %U %G'` printed for it: size, octal mode, mtime in seconds,
// owner, group. False when they do not read so.
bool LinkFromStat(const std::string& fields, const std::string& path, opensandbox::FileInfo* info) {
  char owner[256] = "", group[256] = "";
  long long size = 0, seconds = 0;
  unsigned mode = 0;
  if (std::sscanf(fields.c_str(), "%lld %o %lld %255s %255s", &size, &mode, &seconds, owner, group) < 3) {
    return false;
  }
  info->path = path;
  info->type = "symlink";
  info->size = size;
  char octal[8];
  std::snprintf(octal, sizeof octal, "%o", mode);
  info->mode = octal;
  const std::time_t t = static_cast<std::time_t>(seconds);
  std::tm utc{};
  gmtime_r(&t, &utc);
  char when[32];
  std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &utc);
  info->modified_at = when;
  info->owner = owner;
  info->group = group;
  return true;
}

}  // namespace

Result<opensandbox::FileInfo> StatWithType(opensandbox::ExecdClient& execd, const std::string& path,
                                           const CancelToken* cancel) {
  Result<opensandbox::FileInfo> stated = execd.Stat(path, cancel);
  if (!stated.ok()) {
    // Before 1.0.19 execd follows a symlink, so a dangling one is "file not found" (a 500;
    // 1.0.19 answers a missing path 404): the sandbox's shell says whether a link is there.
    const Error& e = stated.error();
    if (e.code != ErrorCode::kNotFound || e.http_status != 500 || path.empty() || path[0] != '/') return e;
    int exit_code = -1;
    ABX_ASSIGN_OR_RETURN(std::string output,
                         RunSandboxScript(execd,
                                          "p=" + ShellQuote(path) +
                                              "; if [ -L \"$p\" ]; then echo \"l $(stat -c '%s %a %Y %U %G' -- \"$p\" "
                                              "2>/dev/null)\"; else echo -; fi",
                                          &exit_code, cancel));
    opensandbox::FileInfo link;
    if (exit_code == 0 && output.size() > 2 && output[0] == 'l' && LinkFromStat(output.substr(2), path, &link)) {
      return link;
    }
    return e;
  }
  opensandbox::FileInfo info = std::move(*stated);
  if (!info.type.empty()) return info;
  int exit_code = -1;
  ABX_ASSIGN_OR_RETURN(std::string output,
                       RunSandboxScript(execd,
                                        "p=" + ShellQuote(info.path) + "; " + kTypeTests +
                                            "; s=; if [ $t = l ]; then s=$(stat -c '%s %a %Y %U %G' -- \"$p\" "
                                            "2>/dev/null); fi; echo \"$t $s\"",
                                        &exit_code, cancel));
  if (exit_code != 0 || output.empty()) {
    return MakeError(ErrorCode::kUpstream, "stat " + path + ": the sandbox's shell did not say what it is");
  }
  if (output[0] == '-') return MakeError(ErrorCode::kNotFound, "stat " + path + ": no such file or directory");
  // A symlink as itself: execd described what it leads to.
  opensandbox::FileInfo link;
  if (output[0] == 'l' && output.size() > 2 && LinkFromStat(output.substr(2), info.path, &link)) return link;
  info.type = TypeOfLetter(output[0]);
  return info;
}

bool ListingOrder(const std::string& a, const std::string& b) {
  auto components = [](const std::string& path) {
    std::vector<std::string_view> parts;
    size_t at = 0;
    while (at <= path.size()) {
      size_t end = path.find('/', at);
      if (end == std::string::npos) end = path.size();
      parts.emplace_back(path.data() + at, end - at);
      at = end + 1;
    }
    return parts;
  };
  const auto left = components(a), right = components(b);
  return std::lexicographical_compare(left.begin(), left.end(), right.begin(), right.end());
}

Result<std::vector<opensandbox::FileInfo>> ListWithoutListRoute(opensandbox::ExecdClient& execd,
                                                                const std::string& path, int depth,
                                                                const CancelToken* cancel) {
  // execd's own /files/info resolves the path (~, $VAR, relative) and says what it is.
  ABX_ASSIGN_OR_RETURN(opensandbox::FileInfo root, execd.Stat(path, cancel));
  const bool typeless = root.type.empty();
  if (typeless) {
    ABX_ASSIGN_OR_RETURN(root, StatWithType(execd, path, cancel));
  }
  if (root.type != "directory") {
    return MakeError(ErrorCode::kUpstream, "list " + path + ": " +
                                               (root.type == "symlink" ? "path is a symlink" : "path is not a directory"));
  }
  if (depth <= 0) return std::vector<opensandbox::FileInfo>{};
  // Each entry as its type's letter, for a symlink its own `stat` fields, and its path
  // (absolute, so it starts at the first '/'): what execd before 1.0.19 does not say.
  // `find` batches the paths it hands the loop within the system's argument limits.
  const std::string script =
      "command -v find >/dev/null 2>&1 || { echo 'the sandbox has no find'; exit 127; }\n"
      "find " + ShellQuote(root.path) + " -mindepth 1 -maxdepth " + std::to_string(depth) +
      " -exec sh -c 'for p; do " + std::string(kTypeTests) +
      "; s=; if [ $t = l ]; then s=$(stat -c \"%s %a %Y %U %G\" -- \"$p\" 2>/dev/null); fi; "
      "printf \"\\036%s %s %s\\n\" \"$t\" \"$s\" \"$p\"; done' sh {} +"
      " 2>/dev/null\nexit 0";
  int exit_code = -1;
  ABX_ASSIGN_OR_RETURN(std::string output, RunSandboxScript(execd, script, &exit_code, cancel));
  if (exit_code != 0) return ChangeFailed("list " + path, output, "", "");
  std::vector<std::string> entries;
  std::map<std::string, char> letters;
  std::map<std::string, std::string> link_fields;
  for (const std::string& entry : SplitEntries(output)) {
    const size_t slash = entry.find('/');
    if (entry.size() < 3 || entry[1] != ' ' || entry[0] == '-' || slash == std::string::npos) continue;
    const std::string entry_path = entry.substr(slash);
    entries.push_back(entry_path);
    letters[entry_path] = entry[0];
    if (entry[0] == 'l') link_fields[entry_path] = entry.substr(2, slash - 2);
  }
  std::sort(entries.begin(), entries.end(), ListingOrder);
  // An execd that says no type (before 1.0.19) describes a link by what it leads to, and
  // cannot describe one that leads nowhere: links are described by the sandbox instead.
  std::vector<std::string> stat_paths;
  std::vector<opensandbox::FileInfo> links;
  for (const std::string& entry : entries) {
    opensandbox::FileInfo link;
    if (typeless && letters[entry] == 'l') {
      if (LinkFromStat(link_fields[entry], entry, &link)) links.push_back(std::move(link));
      continue;  // without its fields it vanished since `find` saw it
    }
    stat_paths.push_back(entry);
  }
  ABX_ASSIGN_OR_RETURN(std::vector<opensandbox::FileInfo> infos, StatAll(execd, stat_paths, cancel));
  for (opensandbox::FileInfo& info : infos) {
    auto letter = letters.find(info.path);
    if (info.type.empty()) info.type = letter == letters.end() ? "other" : TypeOfLetter(letter->second);
  }
  for (opensandbox::FileInfo& link : links) infos.push_back(std::move(link));
  std::sort(infos.begin(), infos.end(), [](const opensandbox::FileInfo& a, const opensandbox::FileInfo& b) {
    return ListingOrder(a.path, b.path);
  });
  return infos;
}

Status ChmodInSandbox(opensandbox::ExecdClient& execd, const std::string& path, int mode,
                      const std::string& owner, const std::string& group, const CancelToken* cancel) {
  const std::string quoted = ShellQuote(path);
  std::string steps;
  if (!owner.empty()) {
    steps = "chown -- " + ShellQuote(group.empty() ? owner : owner + ":" + group) + " " + quoted;
  } else if (!group.empty()) {
    steps = "chgrp -- " + ShellQuote(group) + " " + quoted;
  }
  if (mode >= 0) {
    char octal[8];
    std::snprintf(octal, sizeof octal, "%04o", mode & 07777);
    steps += (steps.empty() ? "" : " && ") + std::string("chmod -- ") + octal + " " + quoted;
  }
  if (steps.empty()) return OkStatus();  // an empty owner or group names nothing to change
  int exit_code = -1;
  ABX_ASSIGN_OR_RETURN(std::string output,
                       RunSandboxScript(execd, "{ " + steps + "; } 2>&1", &exit_code, cancel));
  if (exit_code != 0) return ChangeFailed("chmod " + path, output, owner, group);
  return OkStatus();
}

Result<std::optional<opensandbox::FileOwner>> OwnerBehindLink(opensandbox::ExecdClient& execd,
                                                              const std::string& path,
                                                              const CancelToken* cancel) {
  int exit_code = -1;
  ABX_ASSIGN_OR_RETURN(std::string output,
                       RunSandboxScript(execd, "stat -L -c '%u %g' -- " + ShellQuote(path) + " 2>/dev/null",
                                        &exit_code, cancel));
  const size_t space = output.find(' ');
  if (exit_code != 0 || space == std::string::npos) return std::optional<opensandbox::FileOwner>();
  std::string gid = output.substr(space + 1);
  while (!gid.empty() && (gid.back() == '\n' || gid.back() == '\r')) gid.pop_back();
  return std::optional<opensandbox::FileOwner>(opensandbox::FileOwner{output.substr(0, space), gid});
}

Status RestoreOwner(opensandbox::ExecdClient& execd, const std::string& path, const std::string& owner,
                    const std::string& group, const CancelToken* cancel) {
  int exit_code = -1;
  ABX_ASSIGN_OR_RETURN(std::string output,
                       RunSandboxScript(execd, "chown -- " + ShellQuote(owner + ":" + group) + " " + ShellQuote(path) + " 2>&1",
                                        &exit_code, cancel));
  if (exit_code != 0) return ChangeFailed("keep the owner of " + path, output, owner, group);
  return OkStatus();
}

}  // namespace abx::core
