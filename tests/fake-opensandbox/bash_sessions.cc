#include "tests/fake-opensandbox/bash_sessions.h"

#include <signal.h>

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

std::string SessionScript(const std::string& command) {
  return "exec 2>&1\n" + command +
         "\n__fake_session_rc=$?\n"
         "printf '\\n__EXIT_CODE__:%s\\n' \"$__fake_session_rc\"\n"
         "echo __ENV_DUMP_START__\nexport -p\necho __ENV_DUMP_END__\n"
         "printf '__PWD__:%s\\n' \"$(pwd)\"\n"
         "exit \"$__fake_session_rc\"\n";
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
