// files.rw and the files.search / files.chmod extensions.
#include "bridge/api/epp/early_write.h"
#include "bridge/api/epp/jsonrpc.h"
#include "bridge/api/epp/methods.h"
#include "bridge/api/epp/params.h"
#include "bridge/api/epp/session.h"
#include "bridge/base/base64.h"
#include "bridge/base/json.h"
#include "bridge/base/utf8.h"
#include "bridge/core/bridge_core.h"
#include "bridge/core/files/files.h"

namespace abx::epp {
namespace {

using json::Quote;

core::Files FilesOf(Request& req) {
  return core::Files(req.session().upstream().get(), &req.session().config());
}

std::string EntryJson(const core::FileEntry& e) {
  return "{\"path\":" + Quote(e.path) + ",\"name\":" + Quote(e.name) + ",\"type\":" +
         Quote(e.type) + ",\"size\":" + std::to_string(e.size) + ",\"mode\":" + Quote(e.mode) +
         ",\"modified_at\":" + Quote(e.modified_at) + "}";
}

Result<std::string> RequiredPath(const Params& p, const char* key = "path") {
  ABX_ASSIGN_OR_RETURN(std::string path, p.RequiredString(key));
  if (path.empty()) return InvalidParams(key, std::string(key) + " must not be empty");
  return path;
}

}  // namespace

Result<std::string> FilesRead(Request& req) {
  Params p(req.params());
  ABX_ASSIGN_OR_RETURN(std::string id, SandboxId(p));
  ABX_ASSIGN_OR_RETURN(std::string path, RequiredPath(p));
  ABX_ASSIGN_OR_RETURN(auto offset, p.Int("offset"));
  ABX_ASSIGN_OR_RETURN(auto length, p.Int("length"));
  ABX_ASSIGN_OR_RETURN(std::string encoding, DataEncoding(p));
  if (offset && *offset < 0) return InvalidParams("offset", "offset must not be negative");
  if (length && *length < 0) return InvalidParams("length", "length must not be negative");
  ABX_ASSIGN_OR_RETURN(core::FileRead read,
                       FilesOf(req).Read(id, path, offset.value_or(0),
                                         length.value_or(static_cast<int64_t>(kMaxReadBytes)), &req.cancel()));
  if (encoding != "base64") {
    // utf8: a chunk boundary may fall inside a character; return whole characters only
    // (the next offset follows from the bytes returned).
    if (!read.eof) read.data.resize(CompleteUtf8Prefix(read.data));
    if (!IsValidUtf8(read.data)) {
      return InvalidParams("encoding", path + " is not UTF-8 text; read it with encoding base64");
    }
    read.eof = read.offset + static_cast<int64_t>(read.data.size()) >= read.size;
  }
  // Up to 4 MiB of data: the answer line is made here and the data encoded (or quoted)
  // straight into it, rather than into a result that is then copied into a line.
  std::string line = ResponseStart(req.id_json(), read.data.size() / 3 * 4 + 200);
  line += "{\"data\":";
  if (encoding == "base64") {
    line += '"';
    AppendBase64(read.data, &line);
    line += '"';
  } else {
    json::AppendQuoted(&line, read.data);
  }
  line += ",\"encoding\":" + Quote(encoding) + ",\"offset\":" + std::to_string(read.offset) +
          ",\"size\":" + std::to_string(read.size) + ",\"eof\":" + (read.eof ? "true" : "false") +
          "}";
  ResponseEnd(&line);
  req.RespondLine(std::move(line));
  return std::string("null");  // answered above; the session ignores a second answer
}

Result<std::string> FilesWrite(Request& req) {
  Params p(req.params());
  ABX_ASSIGN_OR_RETURN(std::string id, SandboxId(p));
  ABX_ASSIGN_OR_RETURN(std::string path, RequiredPath(p));
  // Megabytes in a large write: read where the request holds it, decoded once.
  ABX_ASSIGN_OR_RETURN(std::string_view data, p.RequiredStringView("data"));
  ABX_ASSIGN_OR_RETURN(std::string encoding, DataEncoding(p));
  ABX_ASSIGN_OR_RETURN(std::optional<int> mode, OctalMode(p, "mode"));
  ABX_ASSIGN_OR_RETURN(auto append, p.Bool("append"));
  if (EarlyWrite* early = req.early_write()) {
    // Its upload started while the line arrived; used only when the whole line is the
    // request its first bytes promised.
    ABX_ASSIGN_OR_RETURN(auto mode_text, p.String("mode"));
    const WritePrefix& promised = early->prefix();
    if (encoding == "base64" && promised.sandbox_id == id && promised.path == path &&
        promised.mode == mode_text && promised.append.value_or(false) == append.value_or(false)) {
      if (auto written = early->Adopt(data, mode, &req.cancel())) {
        ABX_ASSIGN_OR_RETURN(int64_t size, std::move(*written));
        return "{\"path\":" + Quote(path) + ",\"size\":" + std::to_string(size) + "}";
      }
    } else {
      early->Abandon();
    }
  }
  std::string decoded;
  if (encoding == "base64") {
    ABX_ASSIGN_OR_RETURN(decoded, DecodeBase64Data(data));
    data = decoded;
  }
  ABX_ASSIGN_OR_RETURN(int64_t size,
                       FilesOf(req).Write(id, path, data, mode, append.value_or(false), &req.cancel()));
  return "{\"path\":" + Quote(path) + ",\"size\":" + std::to_string(size) + "}";
}

Result<std::string> FilesList(Request& req) {
  Params p(req.params());
  ABX_ASSIGN_OR_RETURN(std::string id, SandboxId(p));
  ABX_ASSIGN_OR_RETURN(std::string path, RequiredPath(p));
  ABX_ASSIGN_OR_RETURN(auto depth, p.Int("depth"));
  if (depth && (*depth < 1 || *depth > 64)) return InvalidParams("depth", "depth must be between 1 and 64");
  ABX_ASSIGN_OR_RETURN(std::vector<core::FileEntry> entries,
                       FilesOf(req).List(id, path, static_cast<int>(depth.value_or(1)), &req.cancel()));
  std::string out = "{\"entries\":[";
  for (size_t i = 0; i < entries.size(); ++i) out += (i ? "," : "") + EntryJson(entries[i]);
  return out + "]}";
}

Result<std::string> FilesStat(Request& req) {
  Params p(req.params());
  ABX_ASSIGN_OR_RETURN(std::string id, SandboxId(p));
  ABX_ASSIGN_OR_RETURN(std::string path, RequiredPath(p));
  ABX_ASSIGN_OR_RETURN(core::FileEntry entry, FilesOf(req).Stat(id, path, &req.cancel()));
  return EntryJson(entry);
}

Result<std::string> FilesMkdir(Request& req) {
  Params p(req.params());
  ABX_ASSIGN_OR_RETURN(std::string id, SandboxId(p));
  ABX_ASSIGN_OR_RETURN(std::string path, RequiredPath(p));
  ABX_ASSIGN_OR_RETURN(std::optional<int> mode, OctalMode(p, "mode"));
  ABX_ASSIGN_OR_RETURN(auto parents, p.Bool("parents"));
  Status st = FilesOf(req).Mkdir(id, path, mode, parents.value_or(true), &req.cancel());
  if (!st.ok()) return st.error();
  return std::string("{}");
}

Result<std::string> FilesRemove(Request& req) {
  Params p(req.params());
  ABX_ASSIGN_OR_RETURN(std::string id, SandboxId(p));
  ABX_ASSIGN_OR_RETURN(std::string path, RequiredPath(p));
  ABX_ASSIGN_OR_RETURN(auto recursive, p.Bool("recursive"));
  Status st = FilesOf(req).Remove(id, path, recursive.value_or(false), &req.cancel());
  if (!st.ok()) return st.error();
  return std::string("{}");
}

Result<std::string> FilesMove(Request& req) {
  Params p(req.params());
  ABX_ASSIGN_OR_RETURN(std::string id, SandboxId(p));
  ABX_ASSIGN_OR_RETURN(std::string from, RequiredPath(p, "from"));
  ABX_ASSIGN_OR_RETURN(std::string to, RequiredPath(p, "to"));
  Status st = FilesOf(req).Move(id, from, to, &req.cancel());
  if (!st.ok()) return st.error();
  return std::string("{}");
}

Result<std::string> FilesSearch(Request& req) {
  Params p(req.params());
  ABX_ASSIGN_OR_RETURN(std::string id, SandboxId(p));
  ABX_ASSIGN_OR_RETURN(std::string path, RequiredPath(p));
  ABX_ASSIGN_OR_RETURN(std::string pattern, p.RequiredString("pattern"));
  ABX_ASSIGN_OR_RETURN(std::vector<std::string> matches,
                       FilesOf(req).Search(id, path, pattern, &req.cancel()));
  return "{\"matches\":" + json::ArrayOfStrings(matches) + "}";
}

Result<std::string> FilesChmod(Request& req) {
  Params p(req.params());
  ABX_ASSIGN_OR_RETURN(std::string id, SandboxId(p));
  ABX_ASSIGN_OR_RETURN(std::string path, RequiredPath(p));
  ABX_ASSIGN_OR_RETURN(std::optional<int> mode, OctalMode(p, "mode"));
  ABX_ASSIGN_OR_RETURN(auto owner, p.String("owner"));
  ABX_ASSIGN_OR_RETURN(auto group, p.String("group"));
  if (!mode && !owner && !group) {
    return InvalidParams("mode", "files.chmod needs a mode (or an owner or group)");
  }
  Status st = FilesOf(req).Chmod(id, path, mode, owner.value_or(""), group.value_or(""),
                                       &req.cancel());
  if (!st.ok()) return st.error();
  return std::string("{}");
}

}  // namespace abx::epp
