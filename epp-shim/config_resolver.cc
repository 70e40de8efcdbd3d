#include "epp-shim/config_resolver.h"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cctype>
#include <cmath>
#include <cstdlib>
#include <sstream>

// toml++ 3.3's internal assertions fire on some malformed files (e.g. a table header
// "[+]" trips one in parse_key, which then reports the error properly): left on, a bad
// config.toml would abort the shim instead of reaching the bridge as a config error.
#define TOML_ASSERT(expr) static_cast<void>(0)
#include <toml++/toml.h>

#include "common/config_fields.h"
#include "rapidjson/stringbuffer.h"
#include "rapidjson/writer.h"

namespace abx {
namespace {

using JsonWriter = rapidjson::Writer<rapidjson::StringBuffer>;

template <typename T>
std::string Streamed(const T& value) {
  std::ostringstream out;
  out << value;
  return out.str();
}

void WriteJsonString(const std::string& text, JsonWriter* writer) {
  writer->String(text.data(), static_cast<rapidjson::SizeType>(text.size()));
}

void WriteJson(const toml::node& node, JsonWriter* writer) {
  switch (node.type()) {
    case toml::node_type::string:
      WriteJsonString(node.as_string()->get(), writer);
      return;
    case toml::node_type::integer:
      writer->Int64(node.as_integer()->get());
      return;
    case toml::node_type::floating_point: {
      const double value = node.as_floating_point()->get();
      if (std::isfinite(value)) {
        writer->Double(value);
      } else {
        // JSON has no inf/nan; pass TOML's spelling so the bridge can name it.
        WriteJsonString(std::isnan(value) ? "nan" : (value > 0 ? "inf" : "-inf"), writer);
      }
      return;
    }
    case toml::node_type::boolean:
      writer->Bool(node.as_boolean()->get());
      return;
    case toml::node_type::date:
      WriteJsonString(Streamed(node.as_date()->get()), writer);
      return;
    case toml::node_type::time:
      WriteJsonString(Streamed(node.as_time()->get()), writer);
      return;
    case toml::node_type::date_time:
      WriteJsonString(Streamed(node.as_date_time()->get()), writer);
      return;
    case toml::node_type::array:
      writer->StartArray();
      for (const toml::node& element : *node.as_array()) WriteJson(element, writer);
      writer->EndArray();
      return;
    case toml::node_type::table:
      writer->StartObject();
      for (const auto& [key, value] : *node.as_table()) {
        WriteJsonString(std::string(key.str()), writer);
        WriteJson(value, writer);
      }
      writer->EndObject();
      return;
    case toml::node_type::none:
      writer->Null();
      return;
  }
}

// A file value as the bridge receives it: strings verbatim, anything else as JSON.
std::string FileValueText(const toml::node& node) {
  if (const auto* text = node.as_string()) return text->get();
  rapidjson::StringBuffer buffer;
  JsonWriter writer(buffer);
  WriteJson(node, &writer);
  return std::string(buffer.GetString(), buffer.GetSize());
}

std::string DescribeParseError(const std::string& path, const toml::parse_error& error) {
  const toml::source_position& at = error.source().begin;
  std::string text = "cannot parse " + path;
  if (at.line > 0) text += " at line " + std::to_string(at.line) + ", column " +
                          std::to_string(at.column);
  return text + ": " + std::string(error.description());
}

// Reads [providers.opensandbox] of the file into `file_values`, or sets `*error`.
void ReadConfigFile(const std::string& path, std::map<std::string, std::string>* file_values,
                    std::string* error) {
  toml::table root;
#if TOML_EXCEPTIONS
  try {
    root = toml::parse_file(path);
  } catch (const toml::parse_error& parse_error) {
    *error = DescribeParseError(path, parse_error);
    return;
  }
#else
  toml::parse_result result = toml::parse_file(path);
  if (!result) {
    *error = DescribeParseError(path, result.error());
    return;
  }
  root = std::move(result).table();
#endif
  const toml::node_view<const toml::node> providers = std::as_const(root)["providers"];
  if (!providers) return;
  if (!providers.is_table()) {
    *error = path + ": `providers` must be a table";
    return;
  }
  const toml::node_view<const toml::node> section = providers["opensandbox"];
  if (!section) return;
  if (!section.is_table()) {
    *error = path + ": `providers.opensandbox` must be a table";
    return;
  }
  for (const config::Field& field : config::kFields) {
    if (const toml::node* node = section.as_table()->get(field.name)) {
      (*file_values)[field.name] = FileValueText(*node);
    }
  }
}

bool FileExists(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0;
}

}  // namespace

std::string ConfigFilePath(const std::string& home) { return home + "/.abx/config.toml"; }

ResolvedConfig ResolveConfig(const EnvironmentLookup& env, const std::string& home) {
  ResolvedConfig config;

  std::map<std::string, std::string> file_values;
  std::string file_path;
  if (!home.empty()) {
    file_path = ConfigFilePath(home);
    if (FileExists(file_path)) {
      std::string error;
      ReadConfigFile(file_path, &file_values, &error);
      if (!error.empty()) {
        file_values.clear();
        config.values[kConfigFileErrorField] = error;
        config.sources[kConfigFileErrorField] = "file:" + file_path;
      }
    }
  }

  for (const config::Field& field : config::kFields) {
    std::vector<std::string> variables = {config::OwnVariable(field)};
    if (field.native_variable != nullptr) variables.push_back(field.native_variable);
    bool found = false;
    for (const std::string& variable : variables) {
      const char* value = env(variable.c_str());
      if (value != nullptr && value[0] != '\0') {
        config.values[field.name] = value;
        config.sources[field.name] = "env:" + variable;
        found = true;
        break;
      }
    }
    if (found) continue;
    auto from_file = file_values.find(field.name);
    if (from_file != file_values.end()) {
      config.values[field.name] = std::move(from_file->second);
      config.sources[field.name] = "file:" + file_path;
    }
  }
  return config;
}

ResolvedConfig ResolveConfigFromProcess() {
  std::string home;
  if (const char* env_home = getenv("HOME"); env_home != nullptr && env_home[0] != '\0') {
    home = env_home;
  } else if (const passwd* entry = getpwuid(getuid()); entry != nullptr && entry->pw_dir) {
    home = entry->pw_dir;
  }
  return ResolveConfig([](const char* name) { return getenv(name); }, home);
}

}  // namespace abx
