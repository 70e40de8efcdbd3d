#pragma once

// execd's bash sessions (docs/opensandbox.md §2.15): each run is a fresh
// `bash --noprofile --norc` that starts with the session's saved environment and
// directory and saves them again at its end, so `cd` and `export` persist from run to run
// (functions, aliases and unexported variables do not). As upstream: stderr shares
// stdout's pipe, blank lines are dropped, runs of one session are not serialised (the
// last to end sets the state), a run that calls `exit` saves nothing, a timeout kills
// only bash, and deleting a session kills its running runs.

#include <sys/types.h>

#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace fake_opensandbox {

struct BashSession {
  std::string id;
  std::mutex mu;
  std::vector<std::string> env;  // "NAME=value", the saved exported variables
  std::string sandbox_cwd;       // the saved directory, as the sandbox sees it
  std::set<pid_t> running;       // bash of each run in progress
  bool deleted = false;
};

class BashSessions {
 public:
  std::shared_ptr<BashSession> Create(std::vector<std::string> env, std::string sandbox_cwd);
  std::shared_ptr<BashSession> Find(const std::string& id);
  // Removes the session and kills its running runs; false when there is none.
  bool Delete(const std::string& id);
  void DeleteAll();

 private:
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<BashSession>> sessions_;
};

// The script a run executes, in execd's order (runtime/bash_session.go): an `export`
// line per saved variable, the command, then the markers the runner reads back (the
// `export -p` dump, the directory, the exit code), which never reach the client.
std::string SessionScript(const std::vector<std::string>& env, const std::string& command);

// Writes `script` to a new execd_bash_*.sh (mode 0600) in `host_tmp`, the sandbox's /tmp,
// as execd's os.CreateTemp does, and, as execd, nothing ever removes it.
bool WriteSessionScriptFile(const std::string& host_tmp, const std::string& script,
                            std::string* host_path);

// Parses `export -p` output into "NAME=value" entries, leaving out what execd leaves out
// (PS1–PS4, PROMPT_COMMAND, values over 8 KiB).
std::vector<std::string> ParseExportDump(const std::string& dump);

}  // namespace fake_opensandbox
