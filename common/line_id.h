#pragma once
// The id of an EPP/1 line cut short (longer than kMaxLineBytes, common/limits.h): the one
// reader the shim and the bridge share. The bridge answers such a line with E8008 under
// the id read here (bridge/api/epp/jsonrpc.h RecoverId), and the shim waits for an answer
// under the same id (epp-shim/line_meta.h ParseLinePrefixMeta), so the two cannot differ.

#include <string>
#include <string_view>

namespace abx {

// Reads `prefix`, the first bytes of a line, only as far as it takes: the id is the first
// top-level "id" member of the root object, taken only when it comes before any nested
// object or array, is a string, a number or null (a boolean is no id), ends before the
// cut (a number there may have lost digits) and is valid UTF-8. Its compact JSON text
// goes to `id_json`, written as RapidJSON's Writer writes it (`1.0` stays `1.0`,
// "\u0061" becomes "a"). False when the prefix holds no such id.
bool ReadCutLineId(std::string_view prefix, std::string* id_json);

}  // namespace abx
