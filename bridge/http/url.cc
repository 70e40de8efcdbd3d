#include "bridge/http/url.h"

namespace abx::http {
namespace {

bool IsSpace(char c) { return c == ' ' || c == '\t' || c == '\r' || c == '\n'; }

std::string_view Trim(std::string_view s) {
  while (!s.empty() && IsSpace(s.front())) s.remove_prefix(1);
  while (!s.empty() && IsSpace(s.back())) s.remove_suffix(1);
  return s;
}

// Position just after "scheme://", or npos when `url` does not start with a scheme.
size_t AfterScheme(std::string_view url) {
  size_t colon = url.find("://");
  if (colon == std::string_view::npos || colon == 0) return std::string_view::npos;
  for (size_t i = 0; i < colon; ++i) {
    char c = url[i];
    bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
              (i > 0 && ((c >= '0' && c <= '9') || c == '+' || c == '-' || c == '.'));
    if (!ok) return std::string_view::npos;
  }
  return colon + 3;
}

}  // namespace

std::string BuildQuery(const QueryParams& params) {
  std::string query;
  for (const auto& [key, value] : params) {
    if (!query.empty()) query += '&';
    query += PercentEncode(key);
    query += '=';
    query += PercentEncode(value);
  }
  return query;
}

std::string AppendQuery(std::string url, const QueryParams& params) {
  if (params.empty()) return url;
  url += url.find('?') == std::string::npos ? '?' : '&';
  url += BuildQuery(params);
  return url;
}

std::string JoinUrl(std::string_view base, std::string_view path) {
  if (path.empty()) return std::string(base);
  if (path.front() == '?') return std::string(base) + std::string(path);
  while (!base.empty() && base.back() == '/') base.remove_suffix(1);
  while (!path.empty() && path.front() == '/') path.remove_prefix(1);
  std::string url;
  url.reserve(base.size() + 1 + path.size());
  url.append(base);
  url += '/';
  url.append(path);
  return url;
}

std::string UrlFromEndpoint(std::string_view endpoint, std::string_view scheme) {
  endpoint = Trim(endpoint);
  while (!endpoint.empty() && endpoint.back() == '/') endpoint.remove_suffix(1);
  if (AfterScheme(endpoint) != std::string_view::npos) return std::string(endpoint);
  if (scheme.empty()) scheme = "http";
  std::string url;
  url.reserve(scheme.size() + 3 + endpoint.size());
  url.append(scheme);
  url += "://";
  url.append(endpoint);
  return url;
}

std::string UrlScheme(std::string_view url) {
  size_t after = AfterScheme(url);
  if (after == std::string_view::npos) return "";
  std::string scheme(url.substr(0, after - 3));
  for (char& c : scheme) {
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
  }
  return scheme;
}

std::string UrlForMessages(std::string_view url) {
  size_t after = AfterScheme(url);
  std::string_view scheme;
  std::string_view rest = url;
  if (after != std::string_view::npos) {
    scheme = url.substr(0, after);
    rest = url.substr(after);
  }
  size_t cut = rest.find_first_of("?#");
  if (cut != std::string_view::npos) rest = rest.substr(0, cut);
  size_t authority_end = rest.find('/');
  std::string_view authority = rest.substr(0, authority_end);
  size_t at = authority.rfind('@');
  if (at != std::string_view::npos) rest.remove_prefix(at + 1);
  std::string out(scheme);
  out.append(rest);
  return out;
}

}  // namespace abx::http
