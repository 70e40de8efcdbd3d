// GET /directories/list, POST /directories, DELETE /directories (docs/opensandbox.md §2.11).

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <vector>

#include "rapidjson/document.h"
#include "tests/fake-opensandbox/execd_routes.h"
#include "tests/fake-opensandbox/file_info.h"
#include "tests/fake-opensandbox/go_json.h"

namespace fake_opensandbox {
namespace {

// Entries in lexical order, each directory's children right after it, down to
// `depth` levels; symlinks are listed and never followed.
void ListInto(const std::string& host_dir, int depth, ExecdContext* context, GoJsonWriter& out) {
  if (depth <= 0) return;
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
    WriteFileInfoFromStat(out, st, context->paths.ToSandbox(host));
    if (S_ISDIR(st.st_mode)) ListInto(host, depth - 1, context, out);
  }
}

void HandleList(const httplib::Request& req, httplib::Response& res, ExecdContext* context) {
  if (!req.has_param("path") || req.get_param_value("path").empty()) {
    SendExecdError(res, 400, "MISSING_QUERY", "missing query parameter 'path'");
    return;
  }
  std::string path = req.get_param_value("path");
  long long depth = 1;
  if (req.has_param("depth")) {
    std::string text = req.get_param_value("depth");
    char* end = nullptr;
    depth = strtoll(text.c_str(), &end, 10);
    if (text.empty() || !end || *end != '\0' || depth < 0) {
      SendExecdError(res, 400, "INVALID_REQUEST_BODY", "invalid depth: " + text);
      return;
    }
  }
  SandboxPaths::Mapped mapped;
  if (!MapPathOrReject(context, path, &mapped, res)) return;
  struct stat st;
  if (lstat(mapped.host.c_str(), &st) != 0) {
    SendExecdError(res, 404, "FILE_NOT_FOUND", "directory not found: " + path);
    return;
  }
  if (S_ISLNK(st.st_mode)) {
    SendExecdError(res, 400, "INVALID_REQUEST_BODY", "path is a symlink: " + path);
    return;
  }
  if (!S_ISDIR(st.st_mode)) {
    SendExecdError(res, 400, "INVALID_REQUEST_BODY", "path is not a directory: " + path);
    return;
  }
  GoJsonWriter out;
  out.StartArray();
  ListInto(mapped.host, static_cast<int>(depth > 1000 ? 1000 : depth), context, out);
  out.EndArray();
  res.status = 200;
  res.set_content(out.Take(), "application/json; charset=utf-8");
}

void HandleCreate(const httplib::Request& req, httplib::Response& res, ExecdContext* context) {
  rapidjson::Document doc;
  doc.Parse(req.body.c_str(), req.body.size());
  if (doc.HasParseError() || !doc.IsObject()) {
    SendExecdError(res, 400, "INVALID_REQUEST_BODY",
                   "error parsing request, MAYBE invalid body format.");
    return;
  }
  for (auto it = doc.MemberBegin(); it != doc.MemberEnd(); ++it) {
    std::string path = it->name.GetString();
    SandboxPaths::Mapped mapped;
    if (!MapWritablePathOrReject(context, path, "creating directory", &mapped, res)) return;
    struct stat st;
    bool existed = stat(mapped.host.c_str(), &st) == 0;
    if (existed && !S_ISDIR(st.st_mode)) {
      SendExecdError(res, 500, "RUNTIME_ERROR", "error creating directory " + path + ": file exists");
      return;
    }
    if (!MakeDirectories(mapped.host, 0755)) {
      SendExecdError(res, 500, "RUNTIME_ERROR",
                     "error creating directory " + path + ": " + strerror(errno));
      return;
    }
    // utils.go MakeDir: from 1.0.19 a directory that existed is left as it was; before,
    // ChmodFile ran on it as on a new one.
    if (existed && context->release.mkdir_leaves_existing) continue;
    std::string owner, group;
    long long mode = 0;
    if (it->value.IsObject()) {
      auto string_member = [&](const char* key) -> std::string {
        auto m = it->value.FindMember(key);
        return m != it->value.MemberEnd() && m->value.IsString() ? m->value.GetString() : "";
      };
      owner = string_member("owner");
      group = string_member("group");
      auto m = it->value.FindMember("mode");
      if (m != it->value.MemberEnd() && m->value.IsInt64()) mode = m->value.GetInt64();
    }
    std::string error;
    if (!ApplyOwnershipAndMode(mapped.host, owner, group, mode, context->release, &error)) {
      SendExecdError(res, 500, "RUNTIME_ERROR", "error creating directory " + path + ": " + error);
      return;
    }
  }
  res.status = 200;
}

bool RemoveTree(const std::string& host_path) {
  struct stat st;
  if (lstat(host_path.c_str(), &st) != 0) return errno == ENOENT;
  if (!S_ISDIR(st.st_mode)) return unlink(host_path.c_str()) == 0 || errno == ENOENT;
  DIR* dir = opendir(host_path.c_str());
  if (dir) {
    std::vector<std::string> names;
    while (dirent* entry = readdir(dir)) {
      std::string name = entry->d_name;
      if (name != "." && name != "..") names.push_back(name);
    }
    closedir(dir);
    for (const auto& name : names) RemoveTree(host_path + "/" + name);
  }
  return rmdir(host_path.c_str()) == 0 || errno == ENOENT;
}

void HandleDelete(const httplib::Request& req, httplib::Response& res, ExecdContext* context) {
  size_t count = req.get_param_value_count("path");
  for (size_t i = 0; i < count; ++i) {
    std::string path = req.get_param_value("path", i);
    SandboxPaths::Mapped mapped;
    if (!MapWritablePathOrReject(context, path, "removing directory", &mapped, res)) return;
    if (RefuseMountPoint(mapped, path, "removing directory", res)) return;
    if (mapped.sandbox == "/") {
      SendExecdError(res, 500, "RUNTIME_ERROR", "refusing to remove the sandbox root");
      return;
    }
    if (!RemoveTree(mapped.host)) {
      SendExecdError(res, 500, "RUNTIME_ERROR",
                     "error removing directory " + path + ": " + strerror(errno));
      return;
    }
  }
  res.status = 200;
}

}  // namespace

void RegisterDirectoryRoutes(httplib::Server& server, ExecdContext* context) {
  const std::string p = kExecdRoutePrefix;
  if (context->release.directory_list) {  // 1.0.19 on; before, gin's plain 404 answers
    server.Get(p + "/directories/list", [context](const httplib::Request& req, httplib::Response& res) {
      HandleList(req, res, context);
    });
  }
  server.Post(p + "/directories", [context](const httplib::Request& req, httplib::Response& res) {
    HandleCreate(req, res, context);
  });
  server.Delete(p + "/directories", [context](const httplib::Request& req, httplib::Response& res) {
    HandleDelete(req, res, context);
  });
}

}  // namespace fake_opensandbox
