#pragma once
// The command of an Exec request (Run, Start and Interact carry the same fields), checked
// by the core's one validation, as EPP's exec.start is. An empty argv is no argv.

#include <type_traits>
#include <utility>

#include "bridge/base/error.h"
#include "bridge/core/exec/exec.h"
#include "proto/exec.pb.h"

namespace abx::api {

template <typename Request>
Result<core::ExecSpec> ReadExecSpec(const Request& request, bool detached = false) {
  core::ExecRequest spec;
  spec.sandbox_id = request.sandbox_id();
  if (request.argv_size() > 0) {
    spec.argv.emplace(request.argv().begin(), request.argv().end());
  }
  if (!request.command().empty()) spec.command = request.command();
  spec.env.insert(request.env().begin(), request.env().end());
  spec.cwd = request.cwd();
  spec.user = request.user();
  if (request.has_stdin()) spec.stdin_data = request.stdin();
  if (request.has_timeout_seconds()) spec.timeout_s = request.timeout_seconds();
  spec.timeout_field = "timeout_seconds";
  spec.detached = detached;
  spec.shell_id = request.shell_id();
  if constexpr (std::is_same_v<Request, abx::opensandbox::v1::StartCommandRequest>) {
    spec.stdin_stream = request.stdin_stream();
  }
  return core::ValidateExec(std::move(spec));
}

}  // namespace abx::api
