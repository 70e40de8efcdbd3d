#include "bridge/core/exec/processes.h"

#include <cctype>
#include <cstdlib>

#include "bridge/core/exec/exec.h"
#include "bridge/core/exec/sandbox_script.h"
#include "bridge/core/exec/shells.h"
#include "bridge/core/shell_quote.h"

namespace abx::core {
namespace {

// Lists every process but this probe, one per line:
// pid TAB user TAB exec tag TAB command line.
// bash builtins only (mapfile, read, parameter expansion): no subprocess per process,
// so a listing costs one command however many processes there are. Slim images have
// no `ps`; every image execd runs in has bash.
constexpr char kListScript[] =
    "declare -A names; while IFS=: read -r n _ id _; do names[$id]=$n; done < /etc/passwd; "
    "for d in /proc/[0-9]*; do pid=${d#/proc/}; [[ $pid == $$ ]] && continue; "
    "mapfile -d '' -t argv 2>/dev/null < \"$d/cmdline\" || continue; "
    "(( ${#argv[@]} )) || continue; uid=; "
    "while read -r k v _; do [[ $k == Uid: ]] && { uid=$v; break; }; done 2>/dev/null < \"$d/status\"; "
    "tag=; envs=(); mapfile -d '' -t envs 2>/dev/null < \"$d/environ\"; "
    "for e in \"${envs[@]}\"; do [[ $e == ABX_EXEC_TAG=* ]] && { tag=${e#ABX_EXEC_TAG=}; break; }; done; "
    "printf '%s\\t%s\\t%s\\t%s\\n' \"$pid\" \"${names[$uid]:-$uid}\" \"$tag\" \"${argv[*]}\"; done";

constexpr const char* kSignals[][2] = {
    {"HUP", "1"},   {"INT", "2"},   {"QUIT", "3"},  {"KILL", "9"},  {"USR1", "10"},
    {"USR2", "12"}, {"PIPE", "13"}, {"ALRM", "14"}, {"TERM", "15"}, {"CONT", "18"},
    {"STOP", "19"}, {"TSTP", "20"}, {"WINCH", "28"},
};

}  // namespace

std::optional<std::string> NormalizeSignal(const std::string& signal) {
  std::string s;
  for (char c : signal) s += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  if (s.rfind("SIG", 0) == 0) s = s.substr(3);
  if (!s.empty() && std::all_of(s.begin(), s.end(), ::isdigit)) {
    const int n = std::atoi(s.c_str());
    if (n >= 0 && n <= 64 && s.size() <= 2) return std::to_string(n);
    return std::nullopt;
  }
  for (const auto& row : kSignals) {
    if (s == row[0]) return s;
  }
  return std::nullopt;
}

Result<std::vector<ProcessInfo>> Processes::List(const std::string& sandbox_id,
                                                 CancelToken* cancel) {
  ABX_ASSIGN_OR_RETURN(opensandbox::ExecdClient execd, upstream_->Execd(sandbox_id, *config_, cancel));
  int code = 0;
  ABX_ASSIGN_OR_RETURN(std::string out, RunSandboxScript(execd, kListScript, &code, cancel));
  std::vector<ProcessInfo> processes;
  size_t at = 0;
  while (at < out.size()) {
    size_t nl = out.find('\n', at);
    if (nl == std::string::npos) nl = out.size();
    const std::string line = out.substr(at, nl - at);
    at = nl + 1;
    const size_t t1 = line.find('\t'), t2 = line.find('\t', t1 + 1), t3 = line.find('\t', t2 + 1);
    if (t3 == std::string::npos) continue;
    ProcessInfo info;
    info.pid = std::atoi(line.substr(0, t1).c_str());
    info.user = line.substr(t1 + 1, t2 - t1 - 1);
    const std::string tag = line.substr(t2 + 1, t3 - t2 - 1);
    info.command = line.substr(t3 + 1);
    if (!tag.empty()) info.exec_id = upstream_->ExecIdForTag(sandbox_id, tag);
    if (info.pid > 0) processes.push_back(std::move(info));
  }
  return processes;
}

Result<bool> Processes::SignalPid(const std::string& sandbox_id, int pid,
                                  const std::string& signal, CancelToken* cancel) {
  auto name = NormalizeSignal(signal);
  if (!name) return InvalidParams("signal", "unknown signal " + signal);
  ABX_ASSIGN_OR_RETURN(opensandbox::ExecdClient execd, upstream_->Execd(sandbox_id, *config_, cancel));
  int code = 0;
  ABX_ASSIGN_OR_RETURN(std::string out,
                       RunSandboxScript(execd, "kill -s " + *name + " " + std::to_string(pid) + " 2>/dev/null",
                                  &code, cancel));
  (void)out;
  return code == 0;
}

Result<bool> Processes::KillExec(const std::string& sandbox_id, const std::string& exec_id,
                                 CancelToken* cancel) {
  // A shell command is the bridge's own: ending it must leave the shell (shells.h).
  // One that ended (or never was) is false: execd never knew the id (its own ids are
  // UUIDs), and the bridge keeps no record of shell commands past their end.
  if (IsShellExecId(exec_id)) {
    return upstream_->shells().KillRun(sandbox_id, exec_id, static_cast<int64_t>(config_->request_timeout_s * 1000));
  }
  ABX_ASSIGN_OR_RETURN(opensandbox::ExecdClient execd, upstream_->Execd(sandbox_id, *config_, cancel));
  auto status = execd.GetStatus(exec_id, cancel);
  if (!status.ok()) return status.error();
  if (!status->running) return false;
  Status st = execd.Interrupt(exec_id, cancel);
  if (!st.ok()) {
    // execd answers 500 for a command that ended meanwhile.
    auto again = execd.GetStatus(exec_id, cancel);
    if (again.ok() && !again->running) return false;
    return st.error();
  }
  return true;
}

}  // namespace abx::core
