#include "tests/fake-opensandbox/bash_sessions.h"

#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cctype>
#include <cerrno>

#include "tests/fake-opensandbox/ids.h"

namespace fake_opensandbox {

std::shared_ptr<BashSession> BashSessions::Create(std::vector<std::string> env, std::string sandbox_cwd) {
  auto session = std::make_shared<BashSession>();
  session->id = NewUuid4();
  session->env = std::move(env);
  session->sandbox_cwd = std::move(sandbox_cwd);
  std::lock_guard<std::mutex> lock(mu_);
  sessions_[session->id] = session;
  return session;
}

std::shared_ptr<BashSession> BashSessions::Find(const std::string& id) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = sessions_.find(id);
  return it == sessions_.end() ? nullptr : it->second;
}

bool BashSessions::Delete(const std::string& id) {
  std::shared_ptr<BashSession> session;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = sessions_.find(id);
    if (it == sessions_.end()) return false;
    session = std::move(it->second);
    sessions_.erase(it);
  }
  std::lock_guard<std::mutex> lock(session->mu);
  session->deleted = true;
  for (pid_t pid : session->running) kill(pid, SIGKILL);
  return true;
}

void BashSessions::DeleteAll() {
  std::vector<std::string> ids;
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const auto& [id, session] : sessions_) ids.push_back(id);
  }
  for (const std::string& id : ids) Delete(id);
}

namespace {

std::string SingleQuoted(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  return out + "'";
}

bool ShellName(const std::string& name) {
  if (name.empty() || std::isdigit(static_cast<unsigned char>(name[0]))) return false;
  for (char c : name) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  }
  return true;
}

}  // namespace

std::string SessionScript(const std::vector<std::string>& env, const std::string& command) {
  std::string script;
  for (const std::string& entry : env) {
    const size_t eq = entry.find('=');
    if (eq == std::string::npos || !ShellName(entry.substr(0, eq))) continue;  // BASH_FUNC_f%%
    script += "export " + entry.substr(0, eq) + "=" + SingleQuoted(entry.substr(eq + 1)) + "\n";
  }
  script += command;
  script +=
      "\n__USER_EXIT_CODE__=$?\n"
      "printf \"\\n%s\\n\" __ENV_DUMP_START__\n"
      "export -p\n"
      "printf \"%s\\n\" __ENV_DUMP_END__\n"
      "printf \"__PWD__:%s\\n\" \"$(pwd)\"\n"
      "printf \"__EXIT_CODE__:%s\\n\" \"$__USER_EXIT_CODE__\"\n"
      "exit \"$__USER_EXIT_CODE__\"\n";
  return script;
}

bool WriteSessionScriptFile(const std::string& host_tmp, const std::string& script,
                            std::string* host_path) {
  std::string name = host_tmp + "/execd_bash_XXXXXX.sh";
  std::vector<char> buffer(name.begin(), name.end());
  buffer.push_back('\0');
  const int fd = mkstemps(buffer.data(), 3);  // 0600, as os.CreateTemp
  if (fd < 0) return false;
  size_t written = 0;
  while (written < script.size()) {
    const ssize_t n = write(fd, script.data() + written, script.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      close(fd);
      unlink(buffer.data());
      return false;
    }
    written += static_cast<size_t>(n);
  }
  close(fd);
  *host_path = buffer.data();
  return true;
}

std::vector<std::string> ParseExportDump(const std::string& dump) {
  std::vector<std::string> env;
  const std::string prefix = "declare -x ";
  size_t at = 0;
  while (at < dump.size()) {
    if (dump.compare(at, prefix.size(), prefix) != 0) {
      const size_t next = dump.find('\n', at);
      if (next == std::string::npos) break;
      at = next + 1;
      continue;
    }
    at += prefix.size();
    size_t name_end = at;
    while (name_end < dump.size() && dump[name_end] != '=' && dump[name_end] != '\n') ++name_end;
    const std::string name = dump.substr(at, name_end - at);
    std::string value;
    bool has_value = false;
    at = name_end;
    if (at < dump.size() && dump[at] == '=' && at + 1 < dump.size() && dump[at + 1] == '"') {
      has_value = true;
      at += 2;
      while (at < dump.size() && dump[at] != '"') {
        if (dump[at] == '\\' && at + 1 < dump.size()) ++at;
        value += dump[at++];
      }
      ++at;  // the closing quote
    }
    while (at < dump.size() && dump[at] != '\n') ++at;
    ++at;
    const bool prompt = name == "PS1" || name == "PS2" || name == "PS3" || name == "PS4" ||
                        name == "PROMPT_COMMAND";
    if (has_value && !prompt && value.size() <= 8192) env.push_back(name + "=" + value);
  }
  return env;
}

}  // namespace fake_opensandbox
