// templates feature: templates.build, templates.list, templates.delete (docs/epp1.md §3).
// A build's local files are opened by the shim with the host's rights before anything
// is sent upstream (local_upload.h), as files.upload's are.

#include "bridge/api/epp/local_upload.h"
#include "bridge/api/epp/methods.h"
#include "bridge/api/epp/params.h"
#include "bridge/api/epp/session.h"
#include "bridge/base/json.h"
#include "bridge/core/bridge_core.h"
#include "bridge/core/sandboxes/templates.h"

namespace abx::epp {
namespace {

using json::Quote;

constexpr double kDefaultBuildTimeoutSeconds = 1800;
constexpr double kMaxBuildTimeoutSeconds = 7 * 86400;

core::Templates TemplatesOf(Request& req) {
  return core::Templates(&req.session().core(), req.session().upstream(), &req.session().config());
}

Result<std::string> TemplateName(const Params& p) {
  ABX_ASSIGN_OR_RETURN(std::string name, p.RequiredString("name"));
  Status valid = core::CheckTemplateName("name", name);
  if (!valid.ok()) return valid.error();
  return name;
}

// One entry of `files`: {"local_path","path","mode?"}, its local file opened at once.
Result<std::shared_ptr<OpenedLocalFile>> OpenBuildFile(Request& req, const rapidjson::Value& entry, size_t index) {
  const std::string at = "files[" + std::to_string(index) + "]";
  if (!entry.IsObject()) return InvalidParams(at, at + " must be an object {local_path, path, mode?}");
  Params p(entry);
  auto local_path = p.RequiredString("local_path");
  if (!local_path.ok() || local_path->empty() || (*local_path)[0] != '/') {
    return InvalidParams(at + ".local_path", at + ".local_path must be an absolute path");
  }
  auto path = p.RequiredString("path");
  if (!path.ok() || path->empty()) return InvalidParams(at + ".path", at + ".path is required");
  auto mode = OctalMode(p, "mode");
  if (!mode.ok()) return InvalidParams(at + ".mode", mode.error().message);
  auto opened = OpenLocalForUpload(req, *local_path, &req.cancel());
  if (!opened.ok()) {
    Error e = opened.error();
    if (e.code == ErrorCode::kInvalidParams) e.field = at + ".local_path";
    return e;
  }
  (*opened)->path = *path;
  (*opened)->mode = *mode;
  return opened;
}

}  // namespace

Result<std::string> TemplatesBuild(Request& req) {
  if (Status can = req.session().sink().CanReachLocalFiles(); !can.ok()) return can.error();
  Params p(req.params());
  core::TemplateBuildSpec spec;
  ABX_ASSIGN_OR_RETURN(spec.name, TemplateName(p));
  ABX_ASSIGN_OR_RETURN(auto from, p.String("from"));
  spec.from = from.value_or("base");
  if (spec.from.empty()) return InvalidParams("from", "from must not be empty");
  ABX_ASSIGN_OR_RETURN(auto run, p.StringArray("run"));
  if (!run) return InvalidParams("run", "run is required: an array of shell commands");
  for (size_t i = 0; i < run->size(); ++i) {
    if ((*run)[i].find_first_not_of(" \t\n") == std::string::npos) {
      return InvalidParams("run[" + std::to_string(i) + "]", "run[" + std::to_string(i) + "] is blank");
    }
  }
  spec.run = *run;
  ABX_ASSIGN_OR_RETURN(auto timeout, p.Number("timeout"));
  if (timeout && (*timeout <= 0 || *timeout > kMaxBuildTimeoutSeconds)) {
    return InvalidParams("timeout", "timeout must be positive seconds, a week at most");
  }
  spec.timeout_s = timeout.value_or(kDefaultBuildTimeoutSeconds);

  // Every local file is opened before anything is sent upstream.
  std::vector<std::shared_ptr<OpenedLocalFile>> files;
  if (const rapidjson::Value* list = p.Raw("files")) {
    if (!list->IsArray()) return InvalidParams("files", "files must be an array");
    for (rapidjson::SizeType i = 0; i < list->Size(); ++i) {
      ABX_ASSIGN_OR_RETURN(auto opened, OpenBuildFile(req, (*list)[i], i));
      files.push_back(std::move(opened));
    }
  }
  std::vector<core::TemplateUpload> uploads;
  for (const auto& file : files) {
    uploads.push_back([&req, file](const std::string& sandbox_id, CancelToken* cancel) -> Status {
      return UploadOpenedFile(req, *file, sandbox_id, cancel);
    });
  }
  const std::string id_json = req.id_json();
  core::TemplateBuildEvents events;
  events.phase = [&](const std::string& phase, int step) {
    req.Notify("$/progress", "{\"id\":" + id_json + ",\"phase\":" + Quote(phase) +
                                 (step >= 0 ? ",\"step\":" + std::to_string(step) : std::string()) + "}");
  };
  events.output = [&](int step, const std::string& data) {
    req.Notify("templates.output",
               "{\"id\":" + id_json + ",\"step\":" + std::to_string(step) + ",\"data\":" + Quote(data) + "}");
  };
  ABX_ASSIGN_OR_RETURN(core::TemplateInfo built, TemplatesOf(req).Build(spec, uploads, events, &req.cancel()));
  return "{\"name\":" + Quote(built.name) + ",\"snapshot_id\":" + Quote(built.snapshot_id) +
         ",\"from\":" + Quote(built.from) + ",\"created_at\":" + Quote(built.created_at) + "}";
}

Result<std::string> TemplatesList(Request& req) {
  ABX_ASSIGN_OR_RETURN(std::vector<core::TemplateInfo> all, TemplatesOf(req).List(&req.cancel()));
  std::string out = "{\"templates\":[";
  for (size_t i = 0; i < all.size(); ++i) {
    if (i) out += ",";
    out += "{\"name\":" + Quote(all[i].name) + ",\"snapshot_id\":" + Quote(all[i].snapshot_id) +
           ",\"created_at\":" + Quote(all[i].created_at) + "}";
  }
  return out + "]}";
}

Result<std::string> TemplatesDelete(Request& req) {
  ABX_ASSIGN_OR_RETURN(std::string name, TemplateName(Params(req.params())));
  ABX_ASSIGN_OR_RETURN(bool deleted, TemplatesOf(req).Delete(name, &req.cancel()));
  return std::string(deleted ? "{\"deleted\":true}" : "{\"deleted\":false}");
}

}  // namespace abx::epp
