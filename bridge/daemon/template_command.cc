#include "bridge/daemon/template_command.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <optional>

#include <grpcpp/grpcpp.h>

#include "bridge/daemon/cli_bridge.h"
#include "bridge/daemon/cli_config.h"
#include "bridge/daemon/interrupt_cancels.h"
#include "common/limits.h"
#include "proto/templates.grpc.pb.h"

namespace abx::daemon {
namespace {

namespace pb = abx::opensandbox::v1;

constexpr const char kUsage[] =
    "usage: abx-opensandbox-bridge template build NAME [--from TEMPLATE|IMAGE] [--file LOCAL:PATH[:MODE]]... "
    "--run COMMAND [--run COMMAND]... [--timeout SECONDS] [--socket PATH]\n"
    "       abx-opensandbox-bridge template list [--socket PATH]\n"
    "       abx-opensandbox-bridge template delete NAME [--socket PATH]\n";

int Usage(const char* problem) {
  std::fprintf(stderr, "%s\n%s", problem, kUsage);
  return 2;
}

std::unique_ptr<pb::Templates::Stub> Connect(const std::string& socket) {
  return pb::Templates::NewStub(grpc::CreateChannel("unix:" + socket, grpc::InsecureChannelCredentials()));
}

// LOCAL:PATH[:MODE] → a file of the request, its bytes read here.
bool AddFile(const std::string& spec, pb::BuildTemplateRequest* request, size_t* total) {
  const size_t colon = spec.find(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == spec.size()) {
    std::fprintf(stderr, "--file wants LOCAL:PATH[:MODE], got %s\n", spec.c_str());
    return false;
  }
  const std::string local = spec.substr(0, colon);
  std::string path = spec.substr(colon + 1), mode;
  if (const size_t second = path.find(':'); second != std::string::npos) {
    mode = path.substr(second + 1);
    path.resize(second);
  }
  std::ifstream in(local, std::ios::binary);
  if (!in) {
    std::fprintf(stderr, "cannot read %s: %s\n", local.c_str(), std::strerror(errno));
    return false;
  }
  std::string content((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  *total += content.size();
  // The whole request travels as one message: keep well under the bridge's limit.
  if (*total > kMaxBridgeMessageBytes - (1 << 20)) {
    std::fprintf(stderr, "the files add up to more than %zu MiB: put big files into the image instead\n",
                 (kMaxBridgeMessageBytes >> 20) - 1);
    return false;
  }
  pb::TemplateFile* file = request->add_files();
  file->set_path(path);
  file->set_content(std::move(content));
  file->set_mode(mode);
  return true;
}

int Build(const BridgeAddress& bridge, const std::string& name, const std::vector<std::string>& args) {
  pb::BuildTemplateRequest request;
  *request.mutable_config() = ConfigFromEnvironment();
  request.set_name(name);
  size_t total = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    const bool has_value = i + 1 < args.size();
    if (arg == "--from" && has_value) {
      request.set_from(args[++i]);
    } else if (arg == "--run" && has_value) {
      request.add_run(args[++i]);
    } else if (arg == "--file" && has_value) {
      if (!AddFile(args[++i], &request, &total)) return 1;
    } else if (arg == "--timeout" && has_value) {
      char* end = nullptr;
      const double seconds = std::strtod(args[++i].c_str(), &end);
      if (*end != '\0' || seconds <= 0) return Usage("--timeout takes a positive number of seconds");
      request.set_timeout_seconds(seconds);
    } else {
      return Usage(("unknown argument " + arg).c_str());
    }
  }
  if (request.run_size() == 0) return Usage("a build needs at least one --run COMMAND");

  std::string socket;
  if (!bridge.Reach("template build", &socket)) return 1;
  // ^C cancels the call: blocked here, once the bridge answers (a ^C while one starts
  // still ends the command) and before gRPC starts its threads.
  InterruptCancels interrupts;
  grpc::ClientContext context;
  interrupts.Watch(&context, "\ncancelling...\n");
  auto reader = Connect(socket)->Build(&context, request);
  pb::BuildTemplateEvent event;
  std::optional<pb::BuildStepFailed> failed;
  std::optional<pb::Template> built;
  while (reader->Read(&event)) {
    switch (event.event_case()) {
      case pb::BuildTemplateEvent::kPhase:
        if (event.phase().phase() == "run") {
          const int step = event.phase().step();
          std::fprintf(stderr, "== run %d/%d: %s\n", step + 1, request.run_size(),
                       step >= 0 && step < request.run_size() ? request.run(step).c_str() : "");
        } else {
          std::fprintf(stderr, "== %s\n", event.phase().phase().c_str());
        }
        break;
      case pb::BuildTemplateEvent::kOutput:
        // The commands' output as it happens, on our stdout.
        std::fwrite(event.output().data().data(), 1, event.output().data().size(), stdout);
        std::fflush(stdout);
        break;
      case pb::BuildTemplateEvent::kFailed:
        failed = event.failed();
        break;
      case pb::BuildTemplateEvent::kBuilt:
        built = event.built();
        break;
      case pb::BuildTemplateEvent::EVENT_NOT_SET:
        break;
    }
  }
  const grpc::Status status = reader->Finish();
  interrupts.Done();  // before the context goes
  if (status.ok() && built) {
    std::fprintf(stderr, "template %s built from %s: snapshot %s\n", built->name().c_str(), built->from().c_str(),
                 built->snapshot_id().c_str());
    return 0;
  }
  std::fprintf(stderr, "template build failed: %s\n", CallError(status, socket).c_str());
  if (failed) {
    std::fprintf(stderr, "command %d (%s) exited with %d\n", failed->step() + 1,
                 failed->step() < request.run_size() ? request.run(failed->step()).c_str() : "?",
                 failed->exit_code());
    return failed->exit_code() > 0 && failed->exit_code() < 256 ? failed->exit_code() : 1;
  }
  return 1;
}

int List(const BridgeAddress& bridge) {
  std::string socket;
  if (!bridge.Reach("template list", &socket)) return 1;
  pb::ListTemplatesRequest request;
  *request.mutable_config() = ConfigFromEnvironment();
  grpc::ClientContext context;
  pb::ListTemplatesReply reply;
  const grpc::Status status = Connect(socket)->List(&context, request, &reply);
  if (!status.ok()) {
    std::fprintf(stderr, "template list failed: %s\n", CallError(status, socket).c_str());
    return 1;
  }
  if (reply.templates_size() == 0) std::fprintf(stderr, "no templates\n");
  for (const pb::Template& t : reply.templates()) {
    std::printf("%-32s %-40s %s\n", t.name().c_str(), t.snapshot_id().c_str(), t.created_at().c_str());
  }
  return 0;
}

int Delete(const BridgeAddress& bridge, const std::string& name) {
  std::string socket;
  if (!bridge.Reach("template delete", &socket)) return 1;
  pb::DeleteTemplateRequest request;
  *request.mutable_config() = ConfigFromEnvironment();
  request.set_name(name);
  grpc::ClientContext context;
  pb::DeleteTemplateReply reply;
  const grpc::Status status = Connect(socket)->Delete(&context, request, &reply);
  if (!status.ok()) {
    std::fprintf(stderr, "template delete failed: %s\n", CallError(status, socket).c_str());
    return 1;
  }
  std::printf(reply.deleted() ? "deleted %s\n" : "no template %s\n", name.c_str());
  return reply.deleted() ? 0 : 1;
}

}  // namespace

void PrintTemplateUsage(FILE* out) { std::fprintf(out, "%s", kUsage); }

int RunTemplateCommand(const BridgeAddress& bridge, const std::vector<std::string>& args) {
  // --socket may stand anywhere (the caller read it); the rest belongs to the subcommand.
  std::vector<std::string> rest;
  for (size_t i = 0; i < args.size(); ++i) {
    const bool has_value = i + 1 < args.size();
    if (args[i] == "--socket" && has_value) {
      ++i;
    } else if ((args[i] == "--from" || args[i] == "--file" || args[i] == "--run" || args[i] == "--timeout") &&
               has_value) {
      rest.push_back(args[i]);  // with its value, whatever it looks like
      rest.push_back(args[++i]);
    } else {
      rest.push_back(args[i]);
    }
  }
  if (rest.empty()) return Usage("template needs build, list or delete");
  const std::string& sub = rest[0];
  if (sub == "list") return rest.size() == 1 ? List(bridge) : Usage("template list takes no operand");
  if (sub == "delete") return rest.size() == 2 ? Delete(bridge, rest[1]) : Usage("template delete NAME");
  if (sub == "build") {
    if (rest.size() < 2 || rest[1].rfind("--", 0) == 0) return Usage("template build NAME ...");
    return Build(bridge, rest[1], std::vector<std::string>(rest.begin() + 2, rest.end()));
  }
  return Usage(("unknown template command " + sub).c_str());
}

}  // namespace abx::daemon
