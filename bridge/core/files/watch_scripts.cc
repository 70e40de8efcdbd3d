#include "bridge/core/files/watch_scripts.h"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>
#include <cstdlib>

#include "bridge/base/base64.h"
#include "bridge/core/shell_quote.h"

namespace abx::core {
namespace {

constexpr char kRecordEnd[] = "\t/";

bool EndsWithRecordEnd(const std::string& text) {
  return text.size() >= 2 && text.compare(text.size() - 2, 2, kRecordEnd) == 0;
}

// "w-" and hex up to a tab: the start of a record of the host (watch ids, watches.h).
bool StartsWithWatchId(const std::string& line, size_t* tab) {
  if (line.rfind("w-", 0) != 0) return false;
  size_t i = 2;
  while (i < line.size() && std::isxdigit(static_cast<unsigned char>(line[i]))) ++i;
  if (i == 2 || i >= line.size() || line[i] != '\t') return false;
  *tab = i;
  return true;
}

// `text` split at its first `n` tabs: n + 1 fields, the last holding any further tabs.
std::vector<std::string> SplitTabs(const std::string& text, size_t n) {
  std::vector<std::string> fields;
  size_t at = 0;
  while (fields.size() < n) {
    const size_t tab = text.find('\t', at);
    if (tab == std::string::npos) break;
    fields.push_back(text.substr(at, tab - at));
    at = tab + 1;
  }
  fields.push_back(text.substr(at));
  return fields;
}

// A path without its trailing slashes ("/" stays "/").
std::string WithoutTrailingSlash(std::string path) {
  while (path.size() > 1 && path.back() == '/') path.pop_back();
  return path;
}

bool Has(const std::string& names, const char* name) {
  size_t at = 0;
  const std::string wanted(name);
  while (at <= names.size()) {
    size_t comma = names.find(',', at);
    if (comma == std::string::npos) comma = names.size();
    if (names.compare(at, comma - at, wanted) == 0) return true;
    at = comma + 1;
  }
  return false;
}

// Listed and not a zombie (a bridge killed and not yet reaped is gone too).
bool ProcessRunning(pid_t pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  const int fd = open(("/proc/" + std::to_string(pid) + "/stat").c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return true;  // no /proc: the signal's answer stands
  char text[512];
  const ssize_t n = read(fd, text, sizeof text - 1);
  close(fd);
  if (n <= 0) return false;
  const std::string stat(text, static_cast<size_t>(n));
  const size_t paren = stat.rfind(')');
  return paren == std::string::npos || paren + 2 >= stat.size() || stat[paren + 2] != 'Z';
}

}  // namespace

std::string WatchHostMark(const std::string& owner, const std::string& instance) { return owner + ":" + instance; }

std::string WatchModeProbe(const std::string& owner, const std::string& instance) {
  // One grep over every process's environment; only this sandbox's processes count (a
  // sandbox may see others', as the fake's do).
  // Owners and instances are hex, digits and '-': nothing a pattern or the shell reads
  // otherwise.
  const std::string ours = std::string(kWatchHostVariable) + "=" + owner + ":";
  const std::string cleanup =
      "for f in $(grep -l -a -F -e '" + ours + "' /proc/[0-9]*/environ 2>/dev/null); do\n"
      "  p=${f#/proc/}; p=${p%/environ}\n"
      "  [ /proc/$p/root -ef / ] || continue\n"
      "  m=$(tr '\\000' '\\n' < \"$f\" 2>/dev/null | grep -a -m 1 -e '^" + ours + "') || continue\n"
      "  [ \"${m#*:}\" = '" + instance + "' ] || echo \"left $p ${m#*:}\"\n"
      "done\n";
  // bash for the host's read timeout and its table of watches.
  // A program found on PATH, as a regular executable file (bash's `command -v` names a
  // match it cannot run when there is no other).
  return cleanup + "p=$(command -v inotifywait) && [ -f \"$p\" ] && [ -x \"$p\" ] && "
         "command -v bash >/dev/null 2>&1 && echo inotify || echo poll";
}

WatchProbe ParseWatchProbe(const std::string& output) {
  WatchProbe probe;
  size_t at = 0;
  std::string last;
  while (at < output.size()) {
    size_t nl = output.find('\n', at);
    if (nl == std::string::npos) nl = output.size();
    const std::string line = output.substr(at, nl - at);
    at = nl + 1;
    if (line.empty()) continue;
    last = line;
    if (line.rfind("left ", 0) == 0) {
      const size_t space = line.find(' ', 5);
      if (space == std::string::npos) continue;
      const int pid = std::atoi(line.substr(5, space - 5).c_str());
      if (pid > 0) probe.left[line.substr(space + 1)].push_back(pid);
    }
  }
  probe.inotify = last == "inotify";
  return probe;
}

std::vector<std::string> GoneInstances(const std::map<std::string, std::vector<int>>& left) {
  std::vector<std::string> gone;
  for (const auto& [instance, pids] : left) {
    const size_t dash = instance.find('-');
    if (dash == 0 || dash == std::string::npos) continue;
    const long pid = std::strtol(instance.substr(0, dash).c_str(), nullptr, 10);
    if (pid > 0 && !ProcessRunning(static_cast<pid_t>(pid))) gone.push_back(instance);
  }
  return gone;
}

std::string InotifyHostScript(int lease_s) {
  // SIGKILL, which runs no trap: an inotifywait killed by `del` between bash's fork and
  // its exec is still a copy of the host, exit trap and job table included, and a signal
  // it could catch would have it end every other watch of the host as it died.
  return "trap 'kill -9 $(jobs -p) 2>/dev/null' EXIT\n"
         "declare -A w\n"
         "while IFS=' ' read -r -t " + std::to_string(lease_s) + " op id rec p64; do\n"
         "  case $op in\n"
         "  add)\n"
         "    p=$(printf %s \"$p64\" | base64 -d) || continue\n"
         "    r=; [ \"$rec\" = r ] && r=-r\n"
         "    inotifywait -m $r -e create,modify,attrib,delete,delete_self,moved_from,moved_to,move_self "
         "--format \"$id\"$'\\t%e\\t%w%f\\t/' -- \"$p\" 2>&1 &\n"
         "    w[$id]=$!\n"
         "    ;;\n"
         "  del)\n"
         "    [ -n \"${w[$id]}\" ] && kill -9 \"${w[$id]}\" 2>/dev/null && wait \"${w[$id]}\" 2>/dev/null\n"
         "    unset \"w[$id]\"\n"
         "    printf 'unwatched %s\\n' \"$id\"\n"
         "    ;;\n"
         "  esac\n"
         "done\n";
}

std::string InotifyAddLine(const std::string& watch_id, bool recursive, const std::string& path) {
  return "add " + watch_id + (recursive ? " r " : " n ") + Base64Encode(path) + "\n";
}

std::string InotifyDelLine(const std::string& watch_id) { return "del " + watch_id + "\n"; }

std::string InotifyDelAnswer(const std::string& watch_id) { return "unwatched " + watch_id; }

std::vector<InotifyOutput::Item> InotifyOutput::Feed(const std::string& line) {
  std::vector<Item> items;
  size_t tab = 0;
  if (pending_.empty() && !StartsWithWatchId(line, &tab)) {
    Item message;
    message.text = line;
    items.push_back(std::move(message));
    return items;
  }
  pending_ = pending_.empty() ? line : pending_ + "\n" + line;
  if (!EndsWithRecordEnd(pending_)) return items;
  std::string record = std::move(pending_);
  pending_.clear();
  record.resize(record.size() - 2);
  std::vector<std::string> fields = SplitTabs(record, 2);
  if (fields.size() < 3) return items;
  Item item;
  item.watch_id = fields[0];
  item.event = InotifyEvent(fields[1], fields[2]);
  items.push_back(std::move(item));
  return items;
}

std::optional<WatchEvent> InotifyEvent(const std::string& names, const std::string& path) {
  WatchEvent event;
  event.path = WithoutTrailingSlash(path);
  event.is_dir = Has(names, "ISDIR");
  if (Has(names, "CREATE") || Has(names, "MOVED_TO")) {
    event.type = "create";
  } else if (Has(names, "DELETE") || Has(names, "DELETE_SELF")) {
    event.type = "remove";
  } else if (Has(names, "MOVED_FROM") || Has(names, "MOVE_SELF")) {
    event.type = "rename";
  } else if (Has(names, "MODIFY")) {
    event.type = "write";
  } else if (Has(names, "ATTRIB")) {
    event.type = "chmod";
  } else {
    return std::nullopt;  // IGNORED, UNMOUNT, Q_OVERFLOW: nothing a host is told
  }
  return event;
}

std::string PollListingScript(const std::vector<PollTarget>& targets) {
  // One `stat` per directory (every entry at once), none per file; `look` states the
  // watched path itself (its removal and its mode are changes too), then lists it.
  std::string script =
      "s() { stat -c '%F\t%s\t%.9Y\t%a\t%n\t/' -- \"$@\" 2>/dev/null; }\n"
      "walk() {\n"
      "  s \"$1\"/* \"$1\"/.[!.]* \"$1\"/..?*\n"
      "  [ \"$2\" = 1 ] || return 0\n"
      "  for f in \"$1\"/* \"$1\"/.[!.]* \"$1\"/..?*; do\n"
      "    if [ -d \"$f\" ] && [ ! -L \"$f\" ]; then walk \"$f\" 1; fi\n"
      "  done\n"
      "}\n"
      "look() {\n"
      "  printf '=%s\\t/\\n' \"$1\"\n"
      "  s \"$2\" || return 0\n"
      "  if [ -d \"$2\" ] && [ ! -L \"$2\" ]; then walk \"$3\" \"$4\"; fi\n"
      "}\n";
  for (size_t i = 0; i < targets.size(); ++i) {
    const std::string path = WithoutTrailingSlash(targets[i].path);
    // The prefix entries are joined to: "" for "/", so that they read "/bin", not "//bin".
    const std::string prefix = path == "/" ? "" : path;
    script += "look " + std::to_string(i) + " " + ShellQuote(path) + " " + ShellQuote(prefix) +
              (targets[i].recursive ? " 1\n" : " 0\n");
  }
  return script + "true\n";
}

std::map<size_t, PollSnapshot> ParsePollListing(const std::string& output) {
  std::map<size_t, PollSnapshot> blocks;
  PollSnapshot* current = nullptr;
  std::string record;
  size_t at = 0;
  while (at < output.size()) {
    size_t nl = output.find('\n', at);
    if (nl == std::string::npos) nl = output.size();
    record += (record.empty() ? "" : "\n") + output.substr(at, nl - at);
    at = nl + 1;
    if (!EndsWithRecordEnd(record)) continue;
    record.resize(record.size() - 2);
    if (!record.empty() && record[0] == '=') {
      current = &blocks[static_cast<size_t>(std::strtoul(record.c_str() + 1, nullptr, 10))];
    } else if (current) {
      std::vector<std::string> fields = SplitTabs(record, 4);
      if (fields.size() == 5) {
        PollEntry entry;
        entry.is_dir = fields[0] == "directory";
        entry.size = std::strtoll(fields[1].c_str(), nullptr, 10);
        entry.mtime = fields[2];
        entry.mode = fields[3];
        (*current)[fields[4]] = entry;
      }
    }
    record.clear();
  }
  return blocks;
}

std::vector<WatchEvent> DiffSnapshots(const PollSnapshot& before, const PollSnapshot& after) {
  std::vector<WatchEvent> events;
  for (const auto& [path, now] : after) {
    auto was = before.find(path);
    if (was == before.end() || was->second.is_dir != now.is_dir) {
      if (was != before.end()) events.push_back({"remove", path, was->second.is_dir});
      events.push_back({"create", path, now.is_dir});
      continue;
    }
    // A directory's size and time change with its entries, which are reported themselves.
    if (!now.is_dir && (was->second.size != now.size || was->second.mtime != now.mtime)) {
      events.push_back({"write", path, false});
    }
    if (was->second.mode != now.mode) events.push_back({"chmod", path, now.is_dir});
  }
  for (const auto& [path, was] : before) {
    if (!after.count(path)) events.push_back({"remove", path, was.is_dir});
  }
  return events;
}

void CoalesceEvents(std::vector<WatchEvent>* events) {
  std::vector<WatchEvent> out;
  for (WatchEvent& e : *events) {
    if (!out.empty() && out.back().type == e.type && out.back().path == e.path) continue;
    out.push_back(std::move(e));
  }
  *events = std::move(out);
}

}  // namespace abx::core
