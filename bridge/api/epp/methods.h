#pragma once
// The method table of EPP/1 (docs/epp1.md §3): every method this provider serves,
// and the ones it refuses with E8004 before anything is sent upstream.

#include <memory>
#include <string>
#include <string_view>

#include <rapidjson/document.h>

#include "bridge/base/error.h"
#include "bridge/core/files/watch_hub.h"
#include "bridge/core/terminals/terminals.h"

namespace abx::epp {

class LineSink;

class Request;

// Returns the result as compact JSON, or an error. A handler that answered early
// (exec.start answers with its exec_id, then streams) returns anything: it is ignored.
using Handler = Result<std::string> (*)(Request&);

// nullptr when the method is not served (then see IsUnsupported).
Handler FindHandler(std::string_view method);

// Whether a request runs a command the host is attached to, so that end of stdin cancels
// it (docs/epp1.md §1): exec.run always, exec.start unless `detached` is true.
bool AttachesHost(std::string_view method, const rapidjson::Value& params);

// Methods of undeclared features (`pty.*`, `code.run`, …): always E8004.
bool IsUnsupported(std::string_view method);

// Handlers, grouped by feature, each in its methods_<feature>.cc.
Result<std::string> SandboxCreate(Request&);
Result<std::string> SandboxConnect(Request&);
Result<std::string> SandboxGet(Request&);
Result<std::string> SandboxList(Request&);
Result<std::string> SandboxKill(Request&);
Result<std::string> SandboxSetTimeout(Request&);
Result<std::string> SandboxPause(Request&);
Result<std::string> SandboxResume(Request&);
Result<std::string> SandboxSetMetadata(Request&);
Result<std::string> SandboxSnapshot(Request&);
Result<std::string> TemplatesBuild(Request&);
Result<std::string> TemplatesList(Request&);
Result<std::string> TemplatesDelete(Request&);
Result<std::string> SnapshotGet(Request&);
Result<std::string> SnapshotList(Request&);
Result<std::string> SnapshotDelete(Request&);
Result<std::string> ExecStart(Request&);
Result<std::string> ExecRun(Request&);
Result<std::string> ExecLogs(Request&);
Result<std::string> ProcessList(Request&);
Result<std::string> ProcessKill(Request&);
Result<std::string> ProcessSignal(Request&);
Result<std::string> ProcessStdin(Request&);
Result<std::string> FilesWatch(Request&);
Result<std::string> FilesUnwatch(Request&);
Result<std::string> FilesRead(Request&);
Result<std::string> FilesWrite(Request&);
Result<std::string> FilesList(Request&);
Result<std::string> FilesStat(Request&);
Result<std::string> FilesMkdir(Request&);
Result<std::string> FilesRemove(Request&);
Result<std::string> FilesMove(Request&);
Result<std::string> FilesSearch(Request&);
Result<std::string> FilesChmod(Request&);
Result<std::string> FilesDownload(Request&);
Result<std::string> FilesUpload(Request&);
Result<std::string> SandboxMetrics(Request&);
Result<std::string> PortsUrl(Request&);
Result<std::string> NetworkPolicyGet(Request&);
Result<std::string> NetworkPolicyPatch(Request&);
Result<std::string> NetworkPolicyDelete(Request&);
Result<std::string> CodeContextCreate(Request&);
Result<std::string> CodeContextList(Request&);
Result<std::string> CodeContextDelete(Request&);
Result<std::string> CodeRun(Request&);
Result<std::string> PtyOpen(Request&);
Result<std::string> PtyInput(Request&);
Result<std::string> PtyResize(Request&);
Result<std::string> PtySignal(Request&);
Result<std::string> PtyAttach(Request&);
Result<std::string> PtyList(Request&);
Result<std::string> PtyClose(Request&);
// The session's holder of its terminals (methods_pty.cc), writing to `sink`.
std::shared_ptr<core::TerminalHolder> MakeTerminalHolder(LineSink* sink);
// The session's listener of its watches (methods_watch.cc); Close drops what comes later.
class WatchListenerOfSession : public core::WatchListener {
 public:
  // files.watch was answered with `watch_id`: its changes may go out now.
  virtual void Announce(const std::string& watch_id) = 0;
  virtual void Close() = 0;
};
std::shared_ptr<WatchListenerOfSession> MakeWatchListener(LineSink* sink);
Result<std::string> ShellCreate(Request&);
Result<std::string> ShellClose(Request&);
Result<std::string> ProviderInfo(Request&);
Result<std::string> ProviderDoctor(Request&);

}  // namespace abx::epp
