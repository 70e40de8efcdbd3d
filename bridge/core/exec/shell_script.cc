#include "bridge/core/exec/shell_script.h"

#include "bridge/core/shell_quote.h"

namespace abx::core {
namespace {

constexpr char kHeaderPrefix[] = "__ABX_SHELL_RUN__:";

bool AllDigits(const std::string& text) {
  if (text.empty() || text.size() > 20) return false;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

}  // namespace

std::string ShellRunScript(const std::string& tag, const std::string& command, const std::string& cwd) {
  // The header also names the script file execd runs this from ($0), which execd never
  // removes and which holds the command and an `export` line per variable of the shell:
  // the bridge removes it as soon as it reads the header (bash keeps reading the file it
  // has open), without the fork an `rm` here would cost every command.
  std::string script =
      "{ read -r -a __abx_stat < /proc/$$/stat; } 2>/dev/null\n"
      "printf '" + std::string(kHeaderPrefix) + "%s:%s:%s\\n' \"$$\" \"${__abx_stat[21]}\" \"$0\"\n"
      "unset __abx_stat\n"
      "export ABX_EXEC_TAG=" + tag + "\n";
  // The command as it is, in this bash, as execd itself inlines it: `set -e`, `exit`, a
  // syntax error behave as they do upstream. The blank line after it ends a command
  // whose last line ends in a backslash before the clean-up.
  if (cwd.empty()) {
    script += command + "\n\n__abx_rc=$?\n";
  } else {
    script += "__abx_cd=0; CDPATH= cd -- " + ShellQuote(cwd) + " || __abx_cd=$?\nif [ \"$__abx_cd\" = 0 ]; then\n" +
              command + "\n\nfi\n__abx_rc=$?; [ \"$__abx_cd\" = 0 ] || __abx_rc=$__abx_cd; unset __abx_cd\n";
  }
  // `$?` of the command survives the clean-up: execd reads it right after. A function's
  // return sets it without the fork a `(exit N)` subshell would cost (about a
  // millisecond per command); `&& :` keeps a non-zero status from tripping a `set -e`
  // the command made, which would end bash before execd saves the state.
  script +=
      "unset ABX_EXEC_TAG\n"
      "__abx_status() { unset -v __abx_rc; unset -f __abx_status; return \"$1\"; }\n"
      "__abx_status \"$__abx_rc\" && :";
  return script;
}

std::optional<ShellRunHeader> ParseShellRunHeader(const std::string& line) {
  const size_t prefix = sizeof(kHeaderPrefix) - 1;
  if (line.compare(0, prefix, kHeaderPrefix) != 0) return std::nullopt;
  const size_t colon = line.find(':', prefix);
  if (colon == std::string::npos) return std::nullopt;
  ShellRunHeader header;
  const std::string pid = line.substr(prefix, colon - prefix);
  const size_t second = line.find(':', colon + 1);
  header.start_time = line.substr(colon + 1, second == std::string::npos ? std::string::npos : second - colon - 1);
  if (second != std::string::npos) {
    // Only execd's own run scripts (os.CreateTemp("", "execd_bash_*.sh")) are named.
    const std::string script = line.substr(second + 1);
    const size_t base = script.rfind('/');
    if (!script.empty() && script[0] == '/' && base != std::string::npos &&
        script.compare(base + 1, 11, "execd_bash_") == 0 && script.size() > 3 &&
        script.compare(script.size() - 3, 3, ".sh") == 0) {
      header.script = script;
    }
  }
  if (!AllDigits(pid) || (!header.start_time.empty() && !AllDigits(header.start_time))) return std::nullopt;
  header.pid = std::stoll(pid);
  if (header.pid <= 1) return std::nullopt;
  return header;
}

std::string KillShellRunScript(const std::optional<ShellRunHeader>& header, const std::string& tag) {
  std::string script;
  if (header && !header->start_time.empty()) {
    const std::string pid = std::to_string(header->pid);
    script += "if { read -r -a s < /proc/" + pid + "/stat; } 2>/dev/null && [[ ${s[21]} == " +
              header->start_time + " ]]; then kill -KILL " + pid + " 2>/dev/null; fi; ";
  }
  // bash builtins only, as process.list's listing (processes.cc): slim images lack ps.
  script +=
      "for round in {1..40}; do found=0; "
      "for d in /proc/[0-9]*; do p=${d#/proc/}; [[ $p == $$ ]] && continue; "
      "envs=(); mapfile -d '' -t envs 2>/dev/null < \"$d/environ\" || continue; "
      "for e in \"${envs[@]}\"; do [[ $e == ABX_EXEC_TAG=" + tag + " ]] && "
      "{ kill -KILL \"$p\" 2>/dev/null && found=1; break; }; done; done; "
      "(( found )) || break; sleep 0.05 2>/dev/null; done; true";
  return script;
}

}  // namespace abx::core
