#pragma once
// What files.watch runs in a sandbox (docs/mapping.md, "Watching files"), and how the
// bridge reads what it prints. No execd release can watch, so:
//
// - inotify mode (the sandbox has inotifywait and bash): one long-running "watch host" per
//   sandbox, a bash loop reading control lines on its stdin (a stdin stream,
//   stdin_pipe_script.h) and running one `inotifywait -m` per watch, all printing to the
//   host's one output stream. 64 watches are one stream.
// - poll mode (elsewhere): one listing script per interval for every watched path of the
//   sandbox (`stat` of coreutils, one per directory), compared with the last one.
//
// Records end with a tab and a slash ("\t/"), which no file name can: a path holding a
// newline reaches the bridge as two lines (execd frames output by lines) and is joined
// again until its record ends. A carriage return in a name arrives as a newline.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace abx::core {

// A change as files.event reports it.
struct WatchEvent {
  std::string type;  // create, write, remove, rename, chmod
  std::string path;  // absolute
  bool is_dir = false;
};

// The environment variable every process of a watch host carries: WatchHostMark, the
// owner and instance of the bridge that started it (BridgeCore::owner).
inline constexpr char kWatchHostVariable[] = "ABX_WATCH_HOST";
std::string WatchHostMark(const std::string& owner, const std::string& instance);

// The probe that picks the mode: prints "inotify" or "poll" as its last line. Before it,
// "left PID INSTANCE" for each process of a watch host of `owner` that another instance
// started (a predecessor's: ended once its bridge is gone, WatchHostsLeft). Hosts of
// another owner (another user's bridge, another build) are not listed.
std::string WatchModeProbe(const std::string& owner, const std::string& instance);

// What the probe said: the mode, and the processes of other instances by instance.
struct WatchProbe {
  bool inotify = false;
  std::map<std::string, std::vector<int>> left;  // instance → the sandbox's pids
};
WatchProbe ParseWatchProbe(const std::string& output);

// The instances of `left` whose bridge process (the pid an instance starts with) is not
// running on this host; an instance of another form counts as running.
std::vector<std::string> GoneInstances(const std::map<std::string, std::vector<int>>& left);

// The inotify host (bash). Control lines: "add ID r|n BASE64(path)", "del ID", "ping".
// It exits when its stdin ends or no line came for `lease_s` seconds (its bridge is gone),
// ending every inotifywait it started. It answers a `del` with InotifyDelAnswer(ID) once
// that watch's inotifywait can write no more.
std::string InotifyHostScript(int lease_s);
std::string InotifyAddLine(const std::string& watch_id, bool recursive, const std::string& path);
std::string InotifyDelLine(const std::string& watch_id);
std::string InotifyDelAnswer(const std::string& watch_id);
inline constexpr char kInotifyPingLine[] = "ping\n";

// One line of the host's output, joined with what came before it when a record was cut.
class InotifyOutput {
 public:
  struct Item {
    std::string watch_id;              // empty: a line of inotifywait's own (set-up, errors)
    std::optional<WatchEvent> event;   // with a watch_id: its change (none for events not reported)
    std::string text;                  // without a watch_id: the line
  };
  // Feeds one output line (without its newline); returns what it completed.
  std::vector<Item> Feed(const std::string& line);

 private:
  std::string pending_;  // a record cut by a newline in a path
};

// inotifywait's event names ("CREATE,ISDIR") → the event reported, or nullopt for one not
// reported.
std::optional<WatchEvent> InotifyEvent(const std::string& names, const std::string& path);

// The poll listing of `targets` (path, recursive), in order. Each target's block starts
// with a header record "=INDEX"; then one record per entry: type, size, mtime, mode, path.
struct PollTarget {
  std::string path;
  bool recursive = false;
};
std::string PollListingScript(const std::vector<PollTarget>& targets);

struct PollEntry {
  bool is_dir = false;
  int64_t size = 0;
  std::string mtime;  // seconds.nanoseconds as stat prints them
  std::string mode;   // octal
  bool operator==(const PollEntry& o) const {
    return is_dir == o.is_dir && size == o.size && mtime == o.mtime && mode == o.mode;
  }
};
using PollSnapshot = std::map<std::string, PollEntry>;  // by path

// The listing's blocks, by target index.
std::map<size_t, PollSnapshot> ParsePollListing(const std::string& output);

// What changed from `before` to `after`: creates and writes and chmods in path order, then
// removes (a rename is a remove and a create).
std::vector<WatchEvent> DiffSnapshots(const PollSnapshot& before, const PollSnapshot& after);

// Consecutive events alike (type and path) as one: a write of a large file is many
// MODIFY events.
void CoalesceEvents(std::vector<WatchEvent>* events);

}  // namespace abx::core
