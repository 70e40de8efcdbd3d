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

#include "common/percent_encoding.h"

namespace abx::http {

using QueryParams = std::vector<std::pair<std::string, std::string>>;

// "k1=v1&k2=v2" with keys and values percent-encoded (common/percent_encoding.h); ""
// for no params.
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
