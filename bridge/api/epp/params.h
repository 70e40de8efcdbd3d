#pragma once
// Reading EPP params: each getter checks the type and names the field in its -32602.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <rapidjson/document.h>

#include "bridge/base/error.h"

namespace abx::epp {

class Params {
 public:
  explicit Params(const rapidjson::Value& object) : object_(object) {}

  bool Has(const char* key) const;
  Result<std::string> RequiredString(const char* key) const;
  // The string where it lies in the request's document, for large values (files.write
  // data): valid as long as the request is.
  Result<std::string_view> RequiredStringView(const char* key) const;
  Result<std::optional<std::string>> String(const char* key) const;
  Result<std::optional<int64_t>> Int(const char* key) const;
  Result<std::optional<double>> Number(const char* key) const;
  Result<std::optional<bool>> Bool(const char* key) const;
  Result<std::optional<std::vector<std::string>>> StringArray(const char* key) const;
  Result<std::optional<std::map<std::string, std::string>>> StringMap(const char* key) const;
  const rapidjson::Value* Raw(const char* key) const;

 private:
  const rapidjson::Value& object_;
};

// A permission mode given as an octal string ("0644", "644", "0o644"); nullopt when absent.
Result<std::optional<int>> OctalMode(const Params& params, const char* key);

// The sandbox id every sandbox-scoped method requires.
Result<std::string> SandboxId(const Params& params);

// How `data` is given (files.read/write, process.stdin, pty.input): `encoding`, "utf8"
// when absent, else "base64"; anything else is -32602 naming it.
Result<std::string> DataEncoding(const Params& params);
// `data` given as base64, decoded; -32602 naming `data` when it is not base64.
Result<std::string> DecodeBase64Data(std::string_view data);

}  // namespace abx::epp
