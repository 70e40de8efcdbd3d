#pragma once
// `abx-opensandbox-bridge snapshot SANDBOX_ID [--name NAME]`: a snapshot of the sandbox
// through the running bridge (Snapshots.Take), for a person at a shell. It waits until the
// snapshot is Ready and prints its id; a restore is sandbox.create with
// provider_options.snapshot_id (or Sandboxes.Create with snapshot_id).

#include <string>

namespace abx::daemon {

// Returns the exit code: 0 with the snapshot's id on stdout (and a sentence on stderr),
// 1 with the error on stderr. The configuration comes from the environment as the shim
// reads it. ^C cancels the call, and the bridge deletes the snapshot once the server is
// done with it.
int TakeSnapshot(const std::string& socket, const std::string& sandbox_id, const std::string& name);

}  // namespace abx::daemon
