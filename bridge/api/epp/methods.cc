#include "bridge/api/epp/methods.h"

#include <utility>

#include "bridge/api/epp/features.h"
#include "bridge/base/json.h"

namespace abx::epp {
namespace {

constexpr std::pair<std::string_view, Handler> kHandlers[] = {
    {"sandbox.create", SandboxCreate},
    {"sandbox.connect", SandboxConnect},
    {"sandbox.get", SandboxGet},
    {"sandbox.list", SandboxList},
    {"sandbox.kill", SandboxKill},
    {"sandbox.set_timeout", SandboxSetTimeout},
    {"sandbox.pause", SandboxPause},
    {"sandbox.set_metadata", SandboxSetMetadata},
    {"sandbox.snapshot", SandboxSnapshot},
    {"templates.build", TemplatesBuild},
    {"templates.list", TemplatesList},
    {"templates.delete", TemplatesDelete},
    {"snapshot.get", SnapshotGet},
    {"snapshot.list", SnapshotList},
    {"snapshot.delete", SnapshotDelete},
    {"sandbox.resume", SandboxResume},
    {"sandbox.metrics", SandboxMetrics},
    {"exec.start", ExecStart},
    {"exec.run", ExecRun},
    {"exec.logs", ExecLogs},
    {"process.list", ProcessList},
    {"process.kill", ProcessKill},
    {"process.signal", ProcessSignal},
    {"process.stdin", ProcessStdin},
    {"files.read", FilesRead},
    {"files.write", FilesWrite},
    {"files.list", FilesList},
    {"files.stat", FilesStat},
    {"files.mkdir", FilesMkdir},
    {"files.remove", FilesRemove},
    {"files.move", FilesMove},
    {"files.search", FilesSearch},
    {"files.chmod", FilesChmod},
    {"files.download", FilesDownload},
    {"files.upload", FilesUpload},
    {"files.watch", FilesWatch},
    {"files.unwatch", FilesUnwatch},
    {"ports.url", PortsUrl},
    {"network.policy.get", NetworkPolicyGet},
    {"network.policy.patch", NetworkPolicyPatch},
    {"network.policy.delete", NetworkPolicyDelete},
    {"code.context.create", CodeContextCreate},
    {"code.context.list", CodeContextList},
    {"code.context.delete", CodeContextDelete},
    {"code.run", CodeRun},
    {"shell.create", ShellCreate},
    {"pty.open", PtyOpen},
    {"pty.input", PtyInput},
    {"pty.resize", PtyResize},
    {"pty.signal", PtySignal},
    {"pty.attach", PtyAttach},
    {"pty.list", PtyList},
    {"pty.close", PtyClose},
    {"shell.close", ShellClose},
    {"provider.info", ProviderInfo},
    {"provider.doctor", ProviderDoctor},
};

constexpr std::string_view kUnsupported[] = {
    "files.upload_url", "files.download_url",
};

}  // namespace

std::string PartialJson() {
  std::string out = "{";
  for (const Partial& p : kPartial) {
    if (out.size() > 1) out += ",";
    out += json::Quote(p.feature) + ":" + json::Quote(p.note);
  }
  return out + "}";
}

Handler FindHandler(std::string_view method) {
  for (const auto& [name, handler] : kHandlers) {
    if (name == method) return handler;
  }
  return nullptr;
}

bool IsUnsupported(std::string_view method) {
  for (std::string_view name : kUnsupported) {
    if (method == name) return true;
  }
  return false;
}

}  // namespace abx::epp
