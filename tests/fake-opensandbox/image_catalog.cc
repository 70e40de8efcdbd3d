#include "tests/fake-opensandbox/image_catalog.h"

#include <unistd.h>

namespace fake_opensandbox {
namespace {

constexpr const char* kBaseDirs[] = {"/usr/local/bin", "/usr/bin", "/bin", "/usr/sbin", "/sbin"};

bool Executable(const std::string& path) { return access(path.c_str(), X_OK) == 0; }

}  // namespace

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

bool ImageHasProgram(const std::string& image_uri, const std::string& program) {
  if (program.empty()) return false;
  if (program.find('/') == std::string::npos) {
    for (const char* dir : kBaseDirs) {
      if (Executable(std::string(dir) + "/" + program)) return true;
    }
    return false;
  }
  if (program.front() != '/') return false;
  if (program == kCodeInterpreterScript) return IsCodeInterpreterImage(image_uri);
  for (const char* dir : kBaseDirs) {
    const std::string prefix = std::string(dir) + "/";
    if (program.compare(0, prefix.size(), prefix) == 0) return Executable(program);
  }
  return false;
}

}  // namespace fake_opensandbox
