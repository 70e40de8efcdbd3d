#pragma once
// Percent-encoding (RFC 3986), for the whole project: query values and path segments
// sent to OpenSandbox, gRPC's grpc-message trailer read by the shim, and what the fake
// server decodes and encodes as upstream does.

#include <optional>
#include <string>
#include <string_view>

namespace abx {

// Everything but the unreserved characters (A-Z a-z 0-9 - _ . ~) as %XX, so the result is
// safe as a query value or a single path segment ("/" becomes %2F).
std::string PercentEncode(std::string_view value);

// The inverse of PercentEncode; nullopt on a malformed escape ("%4", "%zz"). With
// `plus_is_space`, "+" decodes to a space as in HTML form encoding.
std::optional<std::string> PercentDecode(std::string_view value, bool plus_is_space = false);

// The same, but a malformed escape stays as it is ("50% off"), as gRPC reads its
// grpc-message trailer and Python's urllib.parse.unquote reads a query.
std::string PercentDecodeLenient(std::string_view value, bool plus_is_space = false);

}  // namespace abx
