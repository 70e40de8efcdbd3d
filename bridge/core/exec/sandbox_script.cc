#include "bridge/core/exec/sandbox_script.h"

#include <cstdlib>
#include <optional>

#include "bridge/core/exec/exec.h"

namespace abx::core {

Result<std::string> RunSandboxScript(opensandbox::ExecdClient& execd, const std::string& script, int* exit_code,
                                     const CancelToken* cancel) {
  std::string out;
  std::optional<int> code;
  Status st = execd.RunCommand(
      CommandBody(script, "", false, 30000, std::nullopt, std::nullopt, {}), cancel, 20000,
      [&](const opensandbox::ExecdEvent& e) {
        if (e.type == "stdout") out += (e.text == "\n" ? "" : e.text) + "\n";
        if (e.type == "execution_complete") code = 0;
        if (e.type == "error") code = std::atoi(e.error_value().c_str());
        return e.type != "execution_complete" && e.type != "error";
      },
      [] {});
  if (!st.ok()) return st.error();
  if (!code) return MakeError(ErrorCode::kUnreachable, "the script's stream broke");
  *exit_code = *code;
  return out;
}

}  // namespace abx::core
