// The shim's configuration resolution (epp-shim/config_resolver.h ResolveConfig): a
// fuzzed ~/.abx/config.toml in a temporary HOME plus a few fuzzed environment
// variables, and what comes out handed to the bridge's ParseConfig, as a session does.
// Invariants: only fields of the table (or _config_file_error) come out, each with its
// source; a set variable wins over the file; a file that does not parse contributes
// nothing but the error; nothing of it crashes either side.

#include <fuzzer/FuzzedDataProvider.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <map>
#include <set>
#include <string>

#include "bridge/core/config.h"
#include "common/config_fields.h"
#include "epp-shim/config_resolver.h"
#include "fuzz/check.h"

namespace {

using abx::fuzz::Printable;

const std::string& TempHome() {
  static const std::string* home = [] {
    char pattern[] = "/tmp/abx-fuzz-home-XXXXXX";
    const char* made = mkdtemp(pattern);
    if (made == nullptr) std::abort();
    auto* path = new std::string(made);
    mkdir((*path + "/.abx").c_str(), 0700);
    return path;
  }();
  return *home;
}

void WriteFile(const std::string& path, const std::string& bytes) {
  FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) std::abort();
  std::fwrite(bytes.data(), 1, bytes.size(), file);
  std::fclose(file);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  FuzzedDataProvider provider(data, size);
  static const char* kVariables[] = {"ABX_OPENSANDBOX_API_KEY", "OPEN_SANDBOX_API_KEY",
                                     "ABX_OPENSANDBOX_BASE_URL", "OPEN_SANDBOX_DOMAIN",
                                     "ABX_OPENSANDBOX_READY_TIMEOUT"};
  std::map<std::string, std::string> env;
  for (const char* name : kVariables) {
    if (provider.ConsumeIntegralInRange<int>(0, 3) == 0) {
      std::string value = provider.ConsumeRandomLengthString(40);
      for (char& c : value) c = c == '\0' ? 'x' : c;  // an environment holds C strings
      env[name] = value;
    }
  }
  const std::string toml = provider.ConsumeRemainingBytesAsString();
  const std::string& home = TempHome();
  const std::string path = abx::ConfigFilePath(home);
  WriteFile(path, toml);

  const abx::ResolvedConfig resolved = abx::ResolveConfig(
      [&env](const char* name) -> const char* {
        auto it = env.find(name);
        return it == env.end() ? nullptr : it->second.c_str();
      },
      home);

  std::set<std::string> known;
  for (const abx::config::Field& field : abx::config::kFields) known.insert(field.name);
  const bool file_error = resolved.values.count(abx::kConfigFileErrorField) > 0;
  for (const auto& [field, value] : resolved.values) {
    FUZZ_CHECK(known.count(field) || field == abx::kConfigFileErrorField, "field [%s]",
               Printable(field).c_str());
    auto source = resolved.sources.find(field);
    FUZZ_CHECK(source != resolved.sources.end(), "field %s has no source", field.c_str());
    const bool from_file = source->second == "file:" + path;
    const bool from_env = source->second.rfind("env:", 0) == 0 &&
                          env.count(source->second.substr(4)) &&
                          env[source->second.substr(4)] == value;
    FUZZ_CHECK(from_file || from_env, "field %s: source [%s]", field.c_str(),
               Printable(source->second).c_str());
    FUZZ_CHECK(!file_error || !from_file || field == abx::kConfigFileErrorField,
               "field %s taken from a file that does not parse", field.c_str());
  }
  for (const auto& [name, value] : env) {
    if (value.empty() || name.rfind("ABX_OPENSANDBOX_", 0) != 0) continue;
    std::string field = name.substr(16);
    for (char& c : field) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    auto it = resolved.values.find(field);
    FUZZ_CHECK(it != resolved.values.end() && it->second == value,
               "%s is set but %s is [%s]", name.c_str(), field.c_str(),
               it == resolved.values.end() ? "(absent)" : Printable(it->second).c_str());
  }
  // The bridge's half; its own invariants are config_fuzzer's.
  (void)abx::core::ParseConfig(resolved.values);
  return 0;
}
