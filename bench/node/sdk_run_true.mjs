// Baseline of "one CLI command": what a per-command plugin built on the official
// OpenSandbox JS SDK does in a fresh node process: connect to an existing sandbox
// (endpoints for execd and egress, then execd's /ping) and run `true`.
//
// Configuration comes from the environment, as the SDK reads it: OPEN_SANDBOX_DOMAIN,
// OPEN_SANDBOX_API_KEY; BENCH_SANDBOX_ID names the sandbox. Exit 0 only when the
// command ran and exited 0; otherwise one line on stderr says why.
import { ConnectionConfig, Sandbox } from "@alibaba-group/opensandbox";

const sandboxId = process.env.BENCH_SANDBOX_ID;
let sandbox;
try {
  sandbox = await Sandbox.connect({ connectionConfig: new ConnectionConfig(), sandboxId });
  const execution = await sandbox.commands.run("true");
  if (execution.exitCode !== 0) {
    console.error(`sdk_run_true: exit code ${execution.exitCode}`);
    process.exitCode = 1;
  }
} catch (err) {
  console.error(`sdk_run_true: ${err?.error?.code ?? ""} ${err?.message ?? err}`);
  process.exitCode = 1;
} finally {
  await sandbox?.close();
}
