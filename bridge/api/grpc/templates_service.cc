#include "bridge/api/grpc/templates_service.h"

#include <rapidjson/document.h>

#include <string>
#include <vector>

#include "bridge/base/json.h"
#include "bridge/core/bridge_core.h"
#include "bridge/core/files/files.h"
#include "bridge/core/sandboxes/templates.h"

namespace abx::api {
namespace {

namespace pb = abx::opensandbox::v1;

// The same bounds as EPP/1's templates.build.
constexpr double kDefaultBuildTimeoutSeconds = 1800;
constexpr double kMaxBuildTimeoutSeconds = 7 * 86400;

core::Templates TemplatesOf(TypedCall& call) {
  return core::Templates(call.core(), call.shared_upstream(), &call.config());
}

void ToProto(const core::TemplateInfo& t, pb::Template* out) {
  out->set_name(t.name);
  out->set_snapshot_id(t.snapshot_id);
  out->set_from(t.from);
  out->set_created_at(t.created_at);
}

// "0755" → 0755; nullopt for "".
Result<std::optional<int>> ModeOf(const std::string& text, const std::string& field) {
  if (text.empty()) return std::optional<int>();
  std::string digits = text.rfind("0o", 0) == 0 ? text.substr(2) : text;
  if (digits.empty() || digits.size() > 4 || digits.find_first_not_of("01234567") != std::string::npos) {
    return InvalidParams(field, field + " must be octal permission bits such as \"0644\"");
  }
  return std::optional<int>(std::stoi(digits, nullptr, 8));
}

// The failing command a build's error describes (core::Templates::Build puts step,
// exit_code and output_tail into the error's data), as the stream's last event.
std::optional<pb::BuildStepFailed> StepFailure(const Error& error) {
  if (error.extra_data_json.empty()) return std::nullopt;
  rapidjson::Document data;
  const std::string object = "{" + error.extra_data_json + "}";
  data.Parse(object.c_str(), object.size());
  if (data.HasParseError() || !data.IsObject() || !data.HasMember("step") || !data["step"].IsInt()) {
    return std::nullopt;
  }
  pb::BuildStepFailed failed;
  failed.set_step(data["step"].GetInt());
  if (data.HasMember("exit_code") && data["exit_code"].IsInt()) failed.set_exit_code(data["exit_code"].GetInt());
  if (data.HasMember("output_tail") && data["output_tail"].IsString()) {
    failed.set_output_tail(data["output_tail"].GetString(), data["output_tail"].GetStringLength());
  }
  return failed;
}

}  // namespace

grpc::ServerWriteReactor<pb::BuildTemplateEvent>* TemplatesService::Build(grpc::CallbackServerContext* context,
                                                                          const pb::BuildTemplateRequest* request) {
  using Stream = StreamCallReactor<pb::BuildTemplateEvent>;
  return ServeStream<pb::BuildTemplateEvent>(
      deps_, context, "Templates.Build", request->config(), [=](TypedCall& call, Stream* stream) -> Status {
        core::TemplateBuildSpec spec;
        spec.name = request->name();
        if (Status valid = core::CheckTemplateName("name", spec.name); !valid.ok()) return valid;
        spec.from = request->from().empty() ? "base" : request->from();
        if (request->run_size() == 0) return InvalidParams("run", "run is required: at least one shell command");
        for (int i = 0; i < request->run_size(); ++i) {
          const std::string& command = request->run(i);
          if (command.find_first_not_of(" \t\n") == std::string::npos) {
            return InvalidParams("run[" + std::to_string(i) + "]", "run[" + std::to_string(i) + "] is blank");
          }
          spec.run.push_back(command);
        }
        const double timeout = request->timeout_seconds();
        if (timeout < 0 || timeout > kMaxBuildTimeoutSeconds) {
          return InvalidParams("timeout_seconds", "timeout_seconds must be positive, a week at most");
        }
        spec.timeout_s = timeout > 0 ? timeout : kDefaultBuildTimeoutSeconds;

        // Every file is checked before anything is sent upstream.
        std::vector<core::TemplateUpload> uploads;
        for (int i = 0; i < request->files_size(); ++i) {
          const pb::TemplateFile& file = request->files(i);
          const std::string at = "files[" + std::to_string(i) + "]";
          if (file.path().empty() || file.path()[0] != '/') {
            return InvalidParams(at + ".path", at + ".path must be an absolute path in the sandbox");
          }
          ABX_ASSIGN_OR_RETURN(std::optional<int> mode, ModeOf(file.mode(), at + ".mode"));
          uploads.push_back([&call, &file, mode](const std::string& sandbox_id, CancelToken* cancel) -> Status {
            core::Files files(call.upstream(), &call.config());
            auto written = files.Write(sandbox_id, file.path(), file.content(), mode, /*append=*/false, cancel);
            if (!written.ok()) return written.error();
            return OkStatus();
          });
        }
        core::TemplateBuildEvents events;
        events.phase = [stream](const std::string& phase, int step) {
          pb::BuildTemplateEvent event;
          event.mutable_phase()->set_phase(phase);
          event.mutable_phase()->set_step(step);
          stream->Write(event);
        };
        events.output = [stream](int step, const std::string& data) {
          pb::BuildTemplateEvent event;
          event.mutable_output()->set_step(step);
          event.mutable_output()->set_data(data);
          stream->Write(event);
        };
        auto built = TemplatesOf(call).Build(spec, uploads, events, call.cancel());
        if (!built.ok()) {
          if (auto failed = StepFailure(built.error())) {
            pb::BuildTemplateEvent event;
            *event.mutable_failed() = *failed;
            stream->Write(event);
          }
          return built.error();
        }
        pb::BuildTemplateEvent done;
        ToProto(*built, done.mutable_built());
        stream->Write(done);
        return OkStatus();
      });
}

grpc::ServerUnaryReactor* TemplatesService::List(grpc::CallbackServerContext* context,
                                                 const pb::ListTemplatesRequest* request,
                                                 pb::ListTemplatesReply* reply) {
  return Serve(deps_, context, "Templates.List", request->config(), [=](TypedCall& call) -> Status {
    ABX_ASSIGN_OR_RETURN(std::vector<core::TemplateInfo> all, TemplatesOf(call).List(call.cancel()));
    for (const core::TemplateInfo& t : all) ToProto(t, reply->add_templates());
    return OkStatus();
  });
}

grpc::ServerUnaryReactor* TemplatesService::Delete(grpc::CallbackServerContext* context,
                                                   const pb::DeleteTemplateRequest* request,
                                                   pb::DeleteTemplateReply* reply) {
  return Serve(deps_, context, "Templates.Delete", request->config(), [=](TypedCall& call) -> Status {
    if (Status valid = core::CheckTemplateName("name", request->name()); !valid.ok()) return valid;
    ABX_ASSIGN_OR_RETURN(bool deleted, TemplatesOf(call).Delete(request->name(), call.cancel()));
    reply->set_deleted(deleted);
    return OkStatus();
  });
}

}  // namespace abx::api
