#pragma once
// Small JSON helpers over RapidJSON shared by the core and the front doors.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <rapidjson/document.h>

namespace abx::json {

// Flags for JSON that comes from outside (servers, execd, configuration): iterative, so
// the depth of the text never becomes the depth of the stack.
inline constexpr unsigned kParseFlags = rapidjson::kParseIterativeFlag;

// Compact JSON text of a value, however deeply nested (written without recursion).
std::string ToJson(const rapidjson::Value& value);
// A JSON string literal (quotes included) of UTF-8 text.
// Escapes exactly as RapidJSON's Writer does; bytes that are not UTF-8 are copied as
// they are (callers validate or repair first where it matters).
std::string Quote(std::string_view text);
// The same, appended to `out`: lets a caller build a large message in one buffer.
void AppendQuoted(std::string* out, std::string_view text);
// {"k":"v",…} from a map of strings.
std::string ObjectOfStrings(const std::map<std::string, std::string>& map);
// ["a",…]
std::string ArrayOfStrings(const std::vector<std::string>& items);

// Typed member access; absent members are std::nullopt, wrong types are false/empty.
std::optional<std::string> GetString(const rapidjson::Value& object, const char* key);
std::optional<int64_t> GetInt(const rapidjson::Value& object, const char* key);
std::optional<bool> GetBool(const rapidjson::Value& object, const char* key);
const rapidjson::Value* GetMember(const rapidjson::Value& object, const char* key);

}  // namespace abx::json
