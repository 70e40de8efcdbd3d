#!/usr/bin/env python3
"""One scripted EPP/1 session through the real shim, bridge and fake OpenSandbox server.

Prints each line the host (this script) sends as `host → provider` and each line the
provider writes as `provider → host`, pretty-printed. Every process it starts (the fake
server, the bridge the shim starts, the shim) is stopped before it exits.
"""
import argparse
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

BLUE, GREEN, DIM, RESET = "\033[34m", "\033[32m", "\033[2m", "\033[0m"


def color(code, text):
    return f"{code}{text}{RESET}" if sys.stdout.isatty() else text


class Session:
    def __init__(self, shim, env):
        self.proc = subprocess.Popen([shim], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, env=env)
        self.lines = queue.Queue()
        self.next_id = 1
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._drain_stderr, daemon=True).start()
        self.stderr = []

    def _read(self):
        for raw in self.proc.stdout:
            self.lines.put(json.loads(raw))
        self.lines.put(None)

    def _drain_stderr(self):
        for raw in self.proc.stderr:
            self.stderr.append(raw.decode(errors="replace"))

    def send(self, message):
        print(color(BLUE, "host → provider"))
        print(json.dumps(message, indent=2, ensure_ascii=False))
        self.proc.stdin.write((json.dumps(message, separators=(",", ":")) + "\n").encode())
        self.proc.stdin.flush()

    def show(self, message):
        print(color(GREEN, "provider → host"))
        print(json.dumps(message, indent=2, ensure_ascii=False))

    def request(self, method, params=None, until_exit_of=None, timeout=60):
        rid = self.next_id
        self.next_id += 1
        message = {"jsonrpc": "2.0", "id": rid, "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)
        response, exited = None, until_exit_of is None
        deadline = time.time() + timeout
        while response is None or not exited:
            try:
                line = self.lines.get(timeout=max(0.1, deadline - time.time()))
            except queue.Empty:
                raise SystemExit(f"demo: no answer to {method} within {timeout} s")
            if line is None:
                raise SystemExit("demo: the shim closed its stdout\n" + "".join(self.stderr))
            self.show(line)
            if line.get("id") == rid:
                response = line
                if until_exit_of and "result" in line:
                    until_exit_of = line["result"]["exec_id"]
                elif until_exit_of:
                    exited = True
            elif line.get("method") == "exec.exit" and line["params"]["exec_id"] == until_exit_of:
                exited = True
        if "error" in response:
            raise SystemExit(f"demo: {method} failed: {response['error']['message']}")
        return response["result"]

    def notify(self, method, params=None):
        message = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self.send(message)


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--shim", required=True)
    ap.add_argument("--bridge", required=True)
    ap.add_argument("--fake", required=True)
    ap.add_argument("--execd-binary", default="",
                    help="upstream's execd for every sandbox (the fake's own when empty)")
    args = ap.parse_args()

    work = tempfile.mkdtemp(prefix="abx-demo-", dir="/tmp")
    fake_argv = [args.fake, "--port", "0", "--api-key", "demo-key"]
    if args.execd_binary:
        fake_argv += ["--execd-binary", args.execd_binary]
    fake = subprocess.Popen(fake_argv, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    socket_path = os.path.join(work, "bridge.sock")
    try:
        first = fake.stdout.readline().decode().strip()
        if not first.startswith("listening on "):
            raise SystemExit(f"demo: the fake server did not start ({first!r})")
        address = first[len("listening on "):]
        print(color(DIM, f"fake OpenSandbox server at http://{address} (a test double)"))
        if args.execd_binary:
            print(color(DIM, f"execd: upstream's {os.path.basename(args.execd_binary)}, "
                             "each sandbox a bubblewrap jail started by upstream's bootstrap.sh"))
        else:
            print(color(DIM, "execd: the fake's own imitation (no isolation: sandboxes are host directories)"))
        env = dict(os.environ)
        env.update({
            "HOME": work,
            "ABX_OPENSANDBOX_BASE_URL": f"http://{address}",
            "ABX_OPENSANDBOX_API_KEY": "demo-key",
            "ABX_OPENSANDBOX_BRIDGE_SOCKET": socket_path,
            "ABX_OPENSANDBOX_BRIDGE_BIN": os.path.abspath(args.bridge),
        })
        s = Session(os.path.abspath(args.shim), env)
        s.request("initialize", {"protocol": "EPP/1", "host": {"name": "demo", "version": "1"}})
        sandbox = s.request("sandbox.create", {"template": "base", "timeout": 300,
                                               "metadata": {"purpose": "demo"}})
        sid = sandbox["id"]
        s.request("exec.start", {"sandbox_id": sid,
                                 "command": "for i in 1 2 3; do echo line $i; sleep 0.2; done; "
                                            "echo oops >&2; exit 3"},
                  until_exit_of=True)
        s.request("files.write", {"sandbox_id": sid, "path": "/work/hello.txt",
                                  "data": "hello from the host\n", "mode": "0644"})
        s.request("files.read", {"sandbox_id": sid, "path": "/work/hello.txt"})
        s.request("exec.run", {"sandbox_id": sid, "argv": ["cat", "/work/hello.txt"]})
        # A shell keeps its directory and exported variables from command to command.
        shell = s.request("shell.create", {"sandbox_id": sid})["shell_id"]
        s.request("exec.run", {"sandbox_id": sid, "shell_id": shell, "command": "cd /work && export GREETING=hi"})
        s.request("exec.run", {"sandbox_id": sid, "shell_id": shell, "command": "echo \"$GREETING from $PWD\""})
        s.request("sandbox.kill", {"sandbox_id": sid})
        # A code interpreter keeps its state from run to run (template "code").
        code = s.request("sandbox.create", {"template": "code", "timeout": 300})
        s.request("code.run", {"sandbox_id": code["id"], "code": "x = 41\nprint('x is', x)\nx + 1"})
        s.request("code.run", {"sandbox_id": code["id"], "code": "x * 2"})
        s.request("sandbox.kill", {"sandbox_id": code["id"]})
        # A template: an environment built once (a local file, two commands), then started
        # by its name as often as needed.
        setup = os.path.join(work, "greet.sh")
        with open(setup, "w") as f:
            f.write("#!/bin/sh\necho hello from the template\n")
        s.request("templates.build", {"name": "demo-env", "from": "base",
                                      "files": [{"local_path": setup, "path": "/srv/greet.sh", "mode": "0755"}],
                                      "run": ["echo installing; mkdir -p /srv/tools",
                                              "/srv/greet.sh > /srv/tools/greeting.txt"]})
        built = s.request("sandbox.create", {"template": "demo-env", "timeout": 300})
        s.request("exec.run", {"sandbox_id": built["id"], "command": "cat /srv/tools/greeting.txt"})
        # A snapshot: a checkpoint that outlives its sandbox and starts others.
        s.request("files.write", {"sandbox_id": built["id"], "path": "/srv/checkpoint.txt", "data": "saved\n"})
        snapshot = s.request("sandbox.snapshot", {"sandbox_id": built["id"], "name": "demo checkpoint"})
        s.request("sandbox.kill", {"sandbox_id": built["id"]})
        restored = s.request("sandbox.create", {"provider_options": {"snapshot_id": snapshot["id"]}, "timeout": 300})
        s.request("files.read", {"sandbox_id": restored["id"], "path": "/srv/checkpoint.txt"})
        s.request("sandbox.kill", {"sandbox_id": restored["id"]})
        s.request("snapshot.delete", {"snapshot_id": snapshot["id"]})
        s.request("templates.delete", {"name": "demo-env"})
        s.request("shutdown")
        s.notify("exit")
        code = s.proc.wait(timeout=5)
        print(color(DIM, f"shim exited with {code}"))
        return 0 if code == 0 else 1
    finally:
        subprocess.run([args.bridge, "stop", "--socket", socket_path],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        lock = socket_path + ".lock"
        deadline = time.time() + 5
        while os.path.exists(socket_path) and time.time() < deadline:
            time.sleep(0.05)
        try:
            pid = int(open(lock).read().strip() or 0)
            if pid and os.path.exists(socket_path):
                os.kill(pid, signal.SIGKILL)
        except (OSError, ValueError):
            pass
        fake.send_signal(signal.SIGTERM)
        try:
            fake.wait(timeout=5)
        except subprocess.TimeoutExpired:
            fake.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
