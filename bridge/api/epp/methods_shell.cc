// exec.shell: shell.create and shell.close (commands in a shell are exec.start and
// exec.run with shell_id, methods_exec.cc).
#include "bridge/api/epp/methods.h"
#include "bridge/api/epp/params.h"
#include "bridge/api/epp/session.h"
#include "bridge/base/json.h"
#include "bridge/core/exec/shells.h"

namespace abx::epp {
namespace {

core::Shells ShellsOf(Request& req) {
  return core::Shells(&req.session().core(), req.session().upstream().get(), &req.session().config());
}

}  // namespace

Result<std::string> ShellCreate(Request& req) {
  Params p(req.params());
  ABX_ASSIGN_OR_RETURN(std::string id, SandboxId(p));
  ABX_ASSIGN_OR_RETURN(auto cwd, p.String("cwd"));
  ABX_ASSIGN_OR_RETURN(auto keep, p.Bool("keep"));
  ABX_ASSIGN_OR_RETURN(std::string shell_id, ShellsOf(req).Create(id, cwd.value_or(""), &req.cancel()));
  if (!keep.value_or(false)) req.session().OwnShell(id, shell_id);
  return "{\"shell_id\":" + json::Quote(shell_id) + "}";
}

Result<std::string> ShellClose(Request& req) {
  Params p(req.params());
  ABX_ASSIGN_OR_RETURN(std::string id, SandboxId(p));
  ABX_ASSIGN_OR_RETURN(std::string shell_id, p.RequiredString("shell_id"));
  if (shell_id.empty()) return InvalidParams("shell_id", "shell_id must not be empty");
  ABX_ASSIGN_OR_RETURN(bool closed, ShellsOf(req).Close(id, shell_id, &req.cancel()));
  return std::string("{\"closed\":") + (closed ? "true" : "false") + "}";
}

}  // namespace abx::epp
