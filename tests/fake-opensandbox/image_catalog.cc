#include "tests/fake-opensandbox/image_catalog.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <sstream>

#include "tests/fake-opensandbox/create_request.h"

namespace fake_opensandbox {
namespace {

constexpr const char* kBaseDirs[] = {"/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"};

std::vector<std::string>& LeftOut() {
  static std::vector<std::string> names;
  return names;
}

bool IsLeftOut(const std::string& program) {
  const std::string base = program.substr(program.rfind('/') + 1);
  for (const std::string& name : LeftOut()) {
    if (name == base) return true;
  }
  return false;
}

bool Executable(const std::string& path) { return !IsLeftOut(path) && access(path.c_str(), X_OK) == 0; }

}  // namespace

void LeaveProgramsOut(std::vector<std::string> names) { LeftOut() = std::move(names); }

std::vector<std::string> LeftOutProgramPaths() {
  std::vector<std::string> paths;
  for (const std::string& name : LeftOut()) {
    for (const char* dir : kBaseDirs) {
      struct stat st;
      // A directory that is a link (merged /usr's /bin) shows the one it leads to.
      if (lstat(dir, &st) != 0 || S_ISLNK(st.st_mode)) continue;
      const std::string path = std::string(dir) + "/" + name;
      if (access(path.c_str(), F_OK) == 0) paths.push_back(path);
    }
  }
  return paths;
}

bool IsCodeInterpreterImage(const std::string& image_uri) {
  std::string repository = image_uri.substr(0, image_uri.find('@'));
  const size_t colon = repository.rfind(':');
  const size_t slash = repository.rfind('/');
  if (colon != std::string::npos && (slash == std::string::npos || colon > slash)) {
    repository.resize(colon);
  }
  const std::string suffix = "code-interpreter";
  return repository.size() >= suffix.size() &&
         repository.compare(repository.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string CodeInterpreterScriptOf(const std::string& image_uri) {
  if (!IsCodeInterpreterImage(image_uri)) return "";
  const std::string name = image_uri.substr(0, image_uri.find('@'));
  const size_t colon = name.rfind(':');
  const size_t slash = name.rfind('/');
  if (colon == std::string::npos || (slash != std::string::npos && colon < slash)) return kCodeInterpreterScript;
  // v1.0.0 to v1.0.2: the old layout.
  const std::string tag = name.substr(colon + 1);
  for (const char* old : {"v1.0.0", "v1.0.1", "v1.0.2", "1.0.0", "1.0.1", "1.0.2"}) {
    if (tag == old) return kOldCodeInterpreterScript;
  }
  return kCodeInterpreterScript;
}

bool ImageHasProgram(const std::string& image_uri, const std::string& program) {
  if (program.empty()) return false;
  if (program.find('/') == std::string::npos) {
    for (const char* dir : kBaseDirs) {
      if (Executable(std::string(dir) + "/" + program)) return true;
    }
    return false;
  }
  if (program.front() != '/') return false;
  if (program == kCodeInterpreterScript || program == kOldCodeInterpreterScript) {
    return program == CodeInterpreterScriptOf(image_uri);
  }
  for (const char* dir : kBaseDirs) {
    const std::string prefix = std::string(dir) + "/";
    if (program.compare(0, prefix.size(), prefix) == 0) return Executable(program);
  }
  return false;
}

bool FileInSandbox(const std::string& root, const std::string& path) {
  if (path.empty() || path.front() != '/') return false;
  struct stat st;
  return stat((root + path).c_str(), &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111) != 0;
}

std::vector<std::string> ProgramOf(const std::string& root, std::vector<std::string> argv) {
  for (int level = 0; level < 4 && !argv.empty() && FileInSandbox(root, argv[0]); ++level) {
    std::ifstream in(root + argv[0]);
    std::string line, exec_line;
    if (!std::getline(in, line) || line.rfind("#!", 0) != 0) break;
    while (std::getline(in, line)) {
      const size_t start = line.find_first_not_of(" \t");
      if (start != std::string::npos && line.compare(start, 5, "exec ") == 0) exec_line = line.substr(start + 5);
    }
    std::vector<std::string> words;
    if (exec_line.empty() || !ShellSplit(exec_line, &words) || words.empty()) break;
    argv = std::move(words);
  }
  return argv;
}

}  // namespace fake_opensandbox
