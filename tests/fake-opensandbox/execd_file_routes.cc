// /files/info, DELETE /files, /files/permissions, /files/mv, /files/search,
// /files/replace (docs/opensandbox.md §2.10). Paths in answers are sandbox paths.

#include <dirent.h>
#include <fnmatch.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <vector>

#include "rapidjson/document.h"
#include "tests/fake-opensandbox/execd_routes.h"
#include "tests/fake-opensandbox/file_info.h"
#include "tests/fake-opensandbox/go_json.h"

namespace fake_opensandbox {
namespace {

constexpr char kJson[] = "application/json; charset=utf-8";

std::vector<std::string> PathParams(const httplib::Request& req) {
  std::vector<std::string> paths;
  size_t count = req.get_param_value_count("path");
  for (size_t i = 0; i < count; ++i) paths.push_back(req.get_param_value("path", i));
  return paths;
}

bool ParseJsonBody(const httplib::Request& req, rapidjson::Document* doc, httplib::Response& res) {
  doc->Parse(req.body.c_str(), req.body.size());
  if (doc->HasParseError()) {
    SendExecdError(res, 400, "INVALID_REQUEST_BODY",
                   "error parsing request, MAYBE invalid body format.");
    return false;
  }
  return true;
}

std::string StringMember(const rapidjson::Value& object, const char* name) {
  auto it = object.FindMember(name);
  if (it == object.MemberEnd() || !it->value.IsString()) return "";
  return it->value.GetString();
}

long long IntMember(const rapidjson::Value& object, const char* name) {
  auto it = object.FindMember(name);
  if (it == object.MemberEnd() || !it->value.IsInt64()) return 0;
  return it->value.GetInt64();
}

void HandleInfo(const httplib::Request& req, httplib::Response& res, ExecdContext* context) {
  std::map<std::string, std::string> infos;  // Go marshals map keys sorted
  for (const std::string& path : PathParams(req)) {
    SandboxPaths::Mapped mapped;
    if (!MapPathOrReject(context, path, &mapped, res)) return;
    GoJsonWriter info;
    if (!WriteFileInfo(info, mapped.host, mapped.sandbox, context->release.file_info_type)) {
      if (context->release.missing_path_404) {
        SendExecdError(res, 404, "FILE_NOT_FOUND", "file not found: " + path);
      } else {  // before cdd490dc (1.0.19) GetFileInfo's error was not wrapped
        SendExecdError(res, 500, "RUNTIME_ERROR",
                       "error getting file info: file not found: " + path +
                           ": lstat " + mapped.sandbox + ": no such file or directory");
      }
      return;
    }
    infos[path] = info.Take();
  }
  std::string body = "{";
  bool first = true;
  for (const auto& [path, info] : infos) {
    if (!first) body += ',';
    first = false;
    AppendGoJsonString(&body, path);
    body += ':';
    body += info;
  }
  body += '}';
  res.status = 200;
  res.set_content(body, kJson);
}

void HandleDeleteFiles(const httplib::Request& req, httplib::Response& res,
                       ExecdContext* context) {
  for (const std::string& path : PathParams(req)) {
    SandboxPaths::Mapped mapped;
    if (!MapWritablePathOrReject(context, path, "removing file", &mapped, res)) return;
    if (RefuseMountPoint(mapped, path, "removing file", res)) return;
    // As execd's DeleteFile: it looks through a symlink first, so a dangling one counts as
    // already gone (and stays), and one to a directory is refused.
    struct stat st;
    if (stat(mapped.host.c_str(), &st) != 0) continue;  // already gone: fine
    if (S_ISDIR(st.st_mode)) {
      SendExecdError(res, 500, "RUNTIME_ERROR",
                     "error removing file " + path + ". path is a directory: " + path);
      return;
    }
    if (unlink(mapped.host.c_str()) != 0 && errno != ENOENT) {
      SendExecdError(res, 500, "RUNTIME_ERROR",
                     "error removing file " + path + ": " + strerror(errno));
      return;
    }
  }
  res.status = 200;
}

void HandlePermissions(const httplib::Request& req, httplib::Response& res,
                       ExecdContext* context) {
  rapidjson::Document doc;
  if (!ParseJsonBody(req, &doc, res)) return;
  if (!doc.IsObject()) {
    SendExecdError(res, 400, "INVALID_REQUEST_BODY", "error parsing request, MAYBE invalid body format.");
    return;
  }
  for (auto it = doc.MemberBegin(); it != doc.MemberEnd(); ++it) {
    std::string path = it->name.GetString();
    SandboxPaths::Mapped mapped;
    if (!MapWritablePathOrReject(context, path, "changing permissions of", &mapped, res)) return;
    struct stat st;
    if (lstat(mapped.host.c_str(), &st) != 0) {
      SendExecdError(res, 500, "RUNTIME_ERROR",
                     "error changing permissions of " + path + ": no such file or directory");
      return;
    }
    if (!it->value.IsObject()) continue;
    std::string error;
    if (!ApplyOwnershipAndMode(mapped.host, StringMember(it->value, "owner"),
                               StringMember(it->value, "group"), IntMember(it->value, "mode"),
                               context->release,
                               &error)) {
      SendExecdError(res, 500, "RUNTIME_ERROR", "error changing permissions of " + path + ": " + error);
      return;
    }
  }
  res.status = 200;
}

void HandleMove(const httplib::Request& req, httplib::Response& res, ExecdContext* context) {
  rapidjson::Document doc;
  if (!ParseJsonBody(req, &doc, res)) return;
  if (!doc.IsArray()) {
    SendExecdError(res, 400, "INVALID_REQUEST_BODY", "error parsing request, MAYBE invalid body format.");
    return;
  }
  for (const auto& item : doc.GetArray()) {
    if (!item.IsObject()) continue;
    std::string src = StringMember(item, "src"), dest = StringMember(item, "dest");
    SandboxPaths::Mapped from, to;
    if (!MapWritablePathOrReject(context, src, "renaming", &from, res)) return;
    if (!MapWritablePathOrReject(context, dest, "renaming to", &to, res)) return;
    if (RefuseMountPoint(from, src, "renaming", res) || RefuseMountPoint(to, dest, "renaming to", res)) return;
    struct stat st;
    if (lstat(from.host.c_str(), &st) != 0) {
      if (context->release.missing_path_404) {
        SendExecdError(res, 404, "FILE_NOT_FOUND", "file not found: " + src);
      } else {  // before 9aad0a75 (1.0.19): RenameFile's error, answered as a 500
        SendExecdError(res, 500, "RUNTIME_ERROR",
                       "error renaming file: source path not found: " + src +
                           ": stat " + from.sandbox + ": no such file or directory");
      }
      return;
    }
    if (lstat(to.host.c_str(), &st) == 0) {
      SendExecdError(res, 500, "RUNTIME_ERROR", "destination already exists: " + dest);
      return;
    }
    size_t slash = to.host.find_last_of('/');
    if (slash != std::string::npos && !MakeDirectories(to.host.substr(0, slash), 0755)) {
      SendExecdError(res, 500, "RUNTIME_ERROR", "error creating parent of " + dest + ": " + strerror(errno));
      return;
    }
    if (rename(from.host.c_str(), to.host.c_str()) != 0) {
      SendExecdError(res, 500, "RUNTIME_ERROR",
                     "error moving " + src + " to " + dest + ": " + strerror(errno));
      return;
    }
  }
  res.status = 200;
}

// filepath.Walk order: entries of a directory in lexical order, each directory's
// contents right after it. Symlinks are not followed.
void WalkFiles(const std::string& host_dir, const std::string& pattern, ExecdContext* context,
               GoJsonWriter& out) {
  DIR* dir = opendir(host_dir.c_str());
  if (!dir) return;
  std::vector<std::string> names;
  while (dirent* entry = readdir(dir)) {
    std::string name = entry->d_name;
    if (name != "." && name != "..") names.push_back(name);
  }
  closedir(dir);
  std::sort(names.begin(), names.end());
  for (const auto& name : names) {
    std::string host = host_dir + "/" + name;
    struct stat st;
    if (lstat(host.c_str(), &st) != 0) continue;
    if (S_ISDIR(st.st_mode)) {
      WalkFiles(host, pattern, context, out);
    } else if (S_ISREG(st.st_mode) && fnmatch(pattern.c_str(), name.c_str(), 0) == 0) {
      WriteFileInfoFromStat(out, st, context->paths.ToSandbox(host), context->release.file_info_type);
    }
  }
}

void HandleSearch(const httplib::Request& req, httplib::Response& res, ExecdContext* context) {
  if (!req.has_param("path") || req.get_param_value("path").empty()) {
    SendExecdError(res, 400, "MISSING_QUERY", "missing query parameter 'path'");
    return;
  }
  std::string path = req.get_param_value("path");
  std::string pattern = req.has_param("pattern") ? req.get_param_value("pattern") : "**";
  if (pattern.empty()) pattern = "**";
  SandboxPaths::Mapped mapped;
  if (!MapPathOrReject(context, path, &mapped, res)) return;
  struct stat st;
  if (stat(mapped.host.c_str(), &st) != 0) {
    SendExecdError(res, 404, "FILE_NOT_FOUND", "file not found: " + path);
    return;
  }
  GoJsonWriter out;
  out.StartArray();
  WalkFiles(mapped.host, pattern, context, out);
  out.EndArray();
  res.status = 200;
  res.set_content(out.Take(), kJson);
}

void HandleReplace(const httplib::Request& req, httplib::Response& res, ExecdContext* context) {
  rapidjson::Document doc;
  if (!ParseJsonBody(req, &doc, res)) return;
  if (!doc.IsObject()) {
    SendExecdError(res, 400, "INVALID_REQUEST_BODY", "error parsing request, MAYBE invalid body format.");
    return;
  }
  bool verbose = req.has_param("verbose") && req.get_param_value("verbose") == "true";
  std::map<std::string, int64_t> counts;
  for (auto it = doc.MemberBegin(); it != doc.MemberEnd(); ++it) {
    std::string path = it->name.GetString();
    if (!it->value.IsObject()) continue;
    std::string old_text = StringMember(it->value, "old");
    std::string new_text = StringMember(it->value, "new");
    if (old_text.empty()) {
      SendExecdError(res, 400, "INVALID_REQUEST_BODY", "old content must not be empty: " + path);
      return;
    }
    SandboxPaths::Mapped mapped;
    if (!MapWritablePathOrReject(context, path, "replacing in", &mapped, res)) return;
    std::ifstream in(mapped.host, std::ios::binary);
    if (!in) {
      SendExecdError(res, 404, "FILE_NOT_FOUND", "file not found: " + path);
      return;
    }
    std::stringstream buffer;
    buffer << in.rdbuf();
    std::string content = buffer.str();
    int64_t count = 0;
    std::string result;
    size_t pos = 0;
    for (;;) {
      size_t found = content.find(old_text, pos);
      if (found == std::string::npos) break;
      result.append(content, pos, found - pos);
      result += new_text;
      pos = found + old_text.size();
      ++count;
    }
    result.append(content, pos, std::string::npos);
    // Rewriting in place keeps the file's mode and owner.
    std::ofstream out(mapped.host, std::ios::binary | std::ios::trunc);
    out << result;
    if (!out) {
      SendExecdError(res, 500, "RUNTIME_ERROR", "error writing " + path);
      return;
    }
    counts[path] = count;
  }
  res.status = 200;
  if (!verbose) return;
  GoJsonWriter w;
  w.StartObject();
  for (const auto& [path, count] : counts) {
    w.Key(path).StartObject().Key("replacedCount").Int(count).EndObject();
  }
  w.EndObject();
  res.set_content(w.Take(), kJson);
}

}  // namespace

void RegisterFileRoutes(httplib::Server& server, ExecdContext* context) {
  const std::string p = kExecdRoutePrefix;
  auto bind = [context](void (*handler)(const httplib::Request&, httplib::Response&,
                                        ExecdContext*)) {
    return [context, handler](const httplib::Request& req, httplib::Response& res) {
      handler(req, res, context);
    };
  };
  server.Get(p + "/files/info", bind(HandleInfo));
  server.Delete(p + "/files", bind(HandleDeleteFiles));
  server.Post(p + "/files/permissions", bind(HandlePermissions));
  server.Post(p + "/files/mv", bind(HandleMove));
  server.Get(p + "/files/search", bind(HandleSearch));
  server.Post(p + "/files/replace", bind(HandleReplace));
}

}  // namespace fake_opensandbox
