#pragma once
// Exec.Interact (proto/exec.proto): a command with a stdin stream fed from the call
// itself. The call's body follows the command (core::Exec, Start's events); a feeder
// thread of the call writes each `stdin` message to the command (core::ProcessStdin, as
// EPP's process.stdin) in the order the client sent them, and the client closing its side
// closes the command's stdin.

#include <grpcpp/grpcpp.h>

#include "bridge/api/grpc/typed_call.h"
#include "proto/exec.grpc.pb.h"

namespace abx::api {

// Starts one Interact call; the reactor deletes itself when gRPC is done with it.
grpc::ServerBidiReactor<abx::opensandbox::v1::ExecInput, abx::opensandbox::v1::ExecEvent>* StartInteract(
    const TypedDeps& deps, grpc::CallbackServerContext* context);

}  // namespace abx::api
