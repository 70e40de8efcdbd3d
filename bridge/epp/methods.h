#pragma once
// The method table of EPP/1 (../shared/epp1.md §3): every method this provider serves,
// and the ones it refuses with E8004 before anything is sent upstream.

#include <string>
#include <string_view>

#include <rapidjson/document.h>

#include "bridge/core/error.h"

namespace abx::epp {

class Request;

// Returns the result as compact JSON, or an error. A handler that answered early
// (exec.start answers with its exec_id, then streams) returns anything: it is ignored.
using Handler = core::Result<std::string> (*)(Request&);

// nullptr when the method is not served (then see IsUnsupported).
Handler FindHandler(std::string_view method);

// Whether a request runs a command the host is attached to, so that end of stdin cancels
// it (epp1.md §1): exec.run always, exec.start unless `detached` is true.
bool AttachesHost(std::string_view method, const rapidjson::Value& params);

// Methods of undeclared features (`pty.*`, `code.run`, …): always E8004.
bool IsUnsupported(std::string_view method);

// Handlers, grouped by feature, each in its methods_<feature>.cc.
core::Result<std::string> SandboxCreate(Request&);
core::Result<std::string> SandboxConnect(Request&);
core::Result<std::string> SandboxGet(Request&);
core::Result<std::string> SandboxList(Request&);
core::Result<std::string> SandboxKill(Request&);
core::Result<std::string> SandboxSetTimeout(Request&);
core::Result<std::string> SandboxPause(Request&);
core::Result<std::string> SandboxResume(Request&);
core::Result<std::string> ExecStart(Request&);
core::Result<std::string> ExecRun(Request&);
core::Result<std::string> ExecLogs(Request&);
core::Result<std::string> ProcessList(Request&);
core::Result<std::string> ProcessKill(Request&);
core::Result<std::string> ProcessSignal(Request&);
core::Result<std::string> FilesRead(Request&);
core::Result<std::string> FilesWrite(Request&);
core::Result<std::string> FilesList(Request&);
core::Result<std::string> FilesStat(Request&);
core::Result<std::string> FilesMkdir(Request&);
core::Result<std::string> FilesRemove(Request&);
core::Result<std::string> FilesMove(Request&);
core::Result<std::string> FilesSearch(Request&);
core::Result<std::string> FilesChmod(Request&);
core::Result<std::string> PortsUrl(Request&);
core::Result<std::string> ProviderInfo(Request&);
core::Result<std::string> ProviderDoctor(Request&);

}  // namespace abx::epp
