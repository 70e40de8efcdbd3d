#pragma once
// URL helpers for the lifecycle server and execd. Endpoints come from the server without a
// scheme and often with a path prefix ("10.0.0.5:40109/proxy/44772",
// "gateway:8080/sandboxes/<id>/proxy/44772"), so joining must keep that prefix and must not
// double a slash or a scheme.

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace abx::http {

using QueryParams = std::vector<std::pair<std::string, std::string>>;

// Percent-encodes everything except RFC 3986 unreserved characters (A-Z a-z 0-9 - _ . ~),
// so the result is safe as a query value or a single path segment ("/" becomes %2F).
std::string PercentEncode(std::string_view value);

// The inverse of PercentEncode; nullopt on a malformed escape ("%4", "%zz"). With
// `plus_is_space`, "+" decodes to a space as in HTML form encoding.
std::optional<std::string> PercentDecode(std::string_view value, bool plus_is_space = false);

// "k1=v1&k2=v2" with keys and values percent-encoded; "" for no params.
std::string BuildQuery(const QueryParams& params);

// `url` + "?" + query, or + "&" + query when `url` already has a query; `url` alone for
// no params.
std::string AppendQuery(std::string url, const QueryParams& params);

// `base` + `path` with exactly one "/" between them: JoinUrl("http://h/p/", "/ping") and
// JoinUrl("http://h/p", "ping") are both "http://h/p/ping". An empty `path` gives `base`
// unchanged; a `path` starting with "?" is appended as is.
std::string JoinUrl(std::string_view base, std::string_view path);

// A base URL for an endpoint as the lifecycle server returns it (no scheme, maybe a path
// prefix): `scheme` + "://" + endpoint, with surrounding spaces and trailing slashes
// removed. An endpoint that already carries a scheme keeps it.
// UrlFromEndpoint("10.0.0.5:40109/proxy/44772") == "http://10.0.0.5:40109/proxy/44772".
std::string UrlFromEndpoint(std::string_view endpoint, std::string_view scheme = "http");

// The scheme of `url` in lower case ("http", "https"), or "" when it has none.
std::string UrlScheme(std::string_view url);

// `url` fit for an error message or a log: scheme, host, port and path only. User info
// ("user:password@") and the query (which may hold tokens) are dropped.
std::string UrlForMessages(std::string_view url);

}  // namespace abx::http
