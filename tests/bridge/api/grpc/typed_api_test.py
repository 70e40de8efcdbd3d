#!/usr/bin/env python3
"""The bridge's typed gRPC API, called from Python the way a user's tooling calls it.

Generates Python stubs from proto/*.proto into a temp dir (as a user would from the
shipped protos), starts the fake OpenSandbox server and a bridge of its own on a private
socket, and over `unix:` checks health, reflection, Sandboxes, Exec (collected and
streamed), Files with binary content, errors as the documented gRPC codes, and that a
cancelled call cancels the operation in the bridge.

Under Bazel: bazel test //tests/bridge/api/grpc:typed_api_test
By hand, from the workspace root, after
  bazel build //bridge/daemon:abx-opensandbox-bridge //tests/fake-opensandbox:fake-opensandbox
run /usr/bin/python3 tests/bridge/api/grpc/typed_api_test.py (Debian's python3-grpcio).
"""

import glob
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import urllib.request

import grpc

API_KEY = "typed-test-key-7f3a"
BRIDGE_REL = "bridge/daemon/abx-opensandbox-bridge"
FAKE_REL = "tests/fake-opensandbox/fake-opensandbox"
STD_PROTOS_REL = "tests/bridge/api/grpc/std_protos"
SERVICES = "abx.opensandbox.v1."


def find_root():
    """The directory holding proto/ and the binaries: Bazel's runfiles, or the workspace."""
    here = os.path.dirname(os.path.abspath(__file__))
    for candidate in (os.getcwd(), os.path.dirname(os.path.dirname(here))):
        if os.path.exists(os.path.join(candidate, "proto", "sandboxes.proto")):
            return candidate
    raise RuntimeError("cannot find proto/sandboxes.proto from %s" % os.getcwd())


def find_binary(root, rel):
    for base in (root, os.path.join(root, "bazel-bin")):
        path = os.path.join(base, rel)
        if os.access(path, os.X_OK):
            return path
    raise RuntimeError("cannot find %s (build it first)" % rel)


def generate_stubs(root, out_dir):
    """protoc with Debian's grpc_python_plugin; grpc_tools.protoc when there is none.

    The protos use proto3 `optional`, which needs protoc 3.15 or newer (Debian's
    python3-grpc-tools bundles an older one, so the system protoc comes first)."""
    protos = sorted(glob.glob(os.path.join(root, "proto", "*.proto")))
    std_dir = os.path.join(root, STD_PROTOS_REL)
    std_protos = sorted(glob.glob(os.path.join(std_dir, "*.proto")))
    protoc = shutil.which("protoc") or "/usr/bin/protoc"
    plugin = shutil.which("grpc_python_plugin") or "/usr/bin/grpc_python_plugin"
    if os.access(protoc, os.X_OK) and os.access(plugin, os.X_OK):
        base = [protoc, "--plugin=protoc-gen-grpc_python=" + plugin]
    else:
        base = [sys.executable, "-m", "grpc_tools.protoc"]
    outs = ["--python_out=" + out_dir, "--grpc_python_out=" + out_dir]
    for proto_path, files in ((root, protos), (std_dir, std_protos)):
        subprocess.run(base + ["--proto_path=" + proto_path] + outs + files, check=True)
    # A regular package, so no other installed `proto` package can shadow it.
    open(os.path.join(out_dir, "proto", "__init__.py"), "w").close()
    sys.path.insert(0, out_dir)


class Process:
    """A child process with its output in a log file; stopped by its own pid only."""

    def __init__(self, argv, log_path, env=None, stdin=None):
        self.log_path = log_path
        self.log = open(log_path, "wb")
        self.popen = subprocess.Popen(argv, stdin=stdin, stdout=subprocess.PIPE,
                                      stderr=self.log, env=env)
        self.first_line = b""

    def read_first_line(self, timeout):
        """The first stdout line; the rest is copied to the log by a thread."""
        result = {}

        def read():
            result["line"] = self.popen.stdout.readline()
            for chunk in iter(lambda: self.popen.stdout.read1(4096), b""):
                self.log.write(chunk)
                self.log.flush()

        threading.Thread(target=read, daemon=True).start()
        deadline = time.time() + timeout
        while "line" not in result and time.time() < deadline:
            time.sleep(0.02)
        self.first_line = result.get("line", b"")
        return self.first_line.decode(errors="replace").strip()

    def stop(self):
        if self.popen.poll() is None:
            if self.popen.stdin:
                self.popen.stdin.close()
            self.popen.terminate()
            try:
                self.popen.wait(10)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(5)
        self.log.close()

    def log_text(self):
        try:
            with open(self.log_path, "rb") as f:
                return f.read().decode(errors="replace")
        except OSError as e:
            return "(no log: %s)" % e


class Fake:
    """The fake OpenSandbox server on a port of its own."""

    def __init__(self, binary, work_dir, name, flags=()):
        argv = [binary, "--port", "0", "--api-key", API_KEY, "--exit-on-stdin-eof",
                "--root", os.path.join(work_dir, name + "-root")] + list(flags)
        self.process = Process(argv, os.path.join(work_dir, name + ".log"),
                               stdin=subprocess.PIPE)
        line = self.process.read_first_line(15)
        prefix = "listening on 127.0.0.1:"
        if not line.startswith(prefix):
            self.process.stop()
            raise RuntimeError("the fake did not start (%r): %s" %
                               (line, self.process.log_text()))
        self.port = int(line[len(prefix):])
        self.base_url = "http://127.0.0.1:%d" % self.port

    def stats(self):
        with urllib.request.urlopen(self.base_url + "/_fake/stats", timeout=5) as answer:
            return json.loads(answer.read())

    def set_faults(self, body):
        request = urllib.request.Request(self.base_url + "/_fake/faults", data=body.encode(),
                                         method="POST")
        with urllib.request.urlopen(request, timeout=5) as answer:
            answer.read()

    def stop(self):
        self.process.stop()


class Env:
    """Everything the tests share: stubs, the fake, the bridge and a channel to it."""

    def __init__(self):
        self.root = find_root()
        self.bridge_bin = find_binary(self.root, BRIDGE_REL)
        self.fake_bin = find_binary(self.root, FAKE_REL)
        # Under /tmp and short: a Unix socket path must fit in 108 bytes.
        self.dir = tempfile.mkdtemp(prefix="abxt-", dir="/tmp")
        os.chmod(self.dir, 0o700)
        self.fakes = []
        self.bridge = None
        self.channel = None
        try:
            self._start()
        except BaseException:
            self.close()
            raise

    def _start(self):
        gen = os.path.join(self.dir, "gen")
        os.mkdir(gen)
        generate_stubs(self.root, gen)
        self.fake = self.start_fake("fake")
        self.socket = os.path.join(self.dir, "b.sock")
        env = {"PATH": "/usr/bin:/bin", "HOME": self.dir}
        self.bridge = Process([self.bridge_bin, "serve", "--socket", self.socket,
                               "--idle-timeout", "0"],
                              os.path.join(self.dir, "bridge.log"), env=env)
        self.channel = grpc.insecure_channel("unix:" + self.socket)
        self.wait_for_bridge()

    def start_fake(self, name, flags=()):
        fake = Fake(self.fake_bin, self.dir, name, flags)
        self.fakes.append(fake)
        return fake

    def wait_for_bridge(self):
        import health_pb2
        import health_pb2_grpc
        stub = health_pb2_grpc.HealthStub(self.channel)
        deadline = time.time() + 20
        last = None
        while time.time() < deadline:
            if self.bridge.popen.poll() is not None:
                break
            try:
                reply = stub.Check(health_pb2.HealthCheckRequest(), timeout=1)
                if reply.status == health_pb2.HealthCheckResponse.SERVING:
                    return
            except grpc.RpcError as e:
                last = e
            time.sleep(0.1)
        raise RuntimeError("the bridge did not become SERVING (%s); its log:\n%s" %
                           (last, self.bridge.log_text()))

    def config(self, fake=None, **extra):
        """The configuration map, as the shim would send it, for `fake`."""
        config = {"base_url": (fake or self.fake).base_url, "api_key": API_KEY}
        config.update(extra)
        return config

    def close(self):
        if self.channel:
            self.channel.close()
        if self.bridge:
            self.bridge.stop()
        for fake in self.fakes:
            fake.stop()
        failed = getattr(self, "failed", False)
        if failed:
            for log in sorted(glob.glob(os.path.join(self.dir, "*.log"))):
                with open(log, "rb") as f:
                    sys.stderr.write("\n===== %s =====\n%s" %
                                     (os.path.basename(log), f.read().decode(errors="replace")))
        shutil.rmtree(self.dir, ignore_errors=True)


ENV = None


def setUpModule():
    global ENV
    ENV = Env()


def tearDownModule():
    if ENV:
        ENV.close()


def processes_with(marker):
    """Pids on this host whose command line holds `marker` (the fake runs commands as
    real processes)."""
    pids = []
    for cmdline in glob.glob("/proc/[0-9]*/cmdline"):
        try:
            with open(cmdline, "rb") as f:
                if marker.encode() in f.read():
                    pids.append(int(cmdline.split("/")[2]))
        except OSError:
            pass
    return pids


def wait_until(predicate, timeout):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if predicate():
            return True
        time.sleep(0.05)
    return predicate()


def trailers(error):
    return dict(error.trailing_metadata() or ())


class TypedApiTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        from proto import bridge_pb2, bridge_pb2_grpc
        from proto import exec_pb2, exec_pb2_grpc
        from proto import files_pb2, files_pb2_grpc
        from proto import ports_pb2, ports_pb2_grpc
        from proto import sandboxes_pb2, sandboxes_pb2_grpc
        from proto import code_pb2, code_pb2_grpc
        from proto import terminal_pb2, terminal_pb2_grpc
        from proto import snapshots_pb2, snapshots_pb2_grpc
        from proto import templates_pb2, templates_pb2_grpc
        cls.pb = {"bridge": bridge_pb2, "exec": exec_pb2, "files": files_pb2,
                  "ports": ports_pb2, "sandboxes": sandboxes_pb2, "code": code_pb2,
                  "terminal": terminal_pb2, "snapshots": snapshots_pb2, "templates": templates_pb2}
        cls.templates = templates_pb2_grpc.TemplatesStub(ENV.channel)
        cls.snapshots = snapshots_pb2_grpc.SnapshotsStub(ENV.channel)
        cls.terminals = terminal_pb2_grpc.TerminalsStub(ENV.channel)
        cls.code = code_pb2_grpc.CodeStub(ENV.channel)
        cls.bridge = bridge_pb2_grpc.BridgeStub(ENV.channel)
        cls.sandboxes = sandboxes_pb2_grpc.SandboxesStub(ENV.channel)
        cls.exec = exec_pb2_grpc.ExecStub(ENV.channel)
        cls.files = files_pb2_grpc.FilesStub(ENV.channel)
        cls.ports = ports_pb2_grpc.PortsStub(ENV.channel)
        cls.epp = bridge_pb2_grpc.EppSessionStub(ENV.channel)

    def run(self, result=None):
        result = super().run(result)
        if result and (result.failures or result.errors):
            ENV.failed = True
        return result

    def create_sandbox(self, **fields):
        sb = self.pb["sandboxes"]
        sandbox = self.sandboxes.Create(
            sb.CreateSandboxRequest(config=ENV.config(), **fields), timeout=60)
        self.addCleanup(self.kill_quietly, sandbox.id)
        return sandbox

    def kill_quietly(self, sandbox_id):
        try:
            self.sandboxes.Kill(self.pb["sandboxes"].KillSandboxRequest(
                config=ENV.config(), sandbox_id=sandbox_id), timeout=20)
        except grpc.RpcError:
            pass

    # -- standard services ------------------------------------------------------------

    def test_health_reports_serving(self):
        import health_pb2
        import health_pb2_grpc
        stub = health_pb2_grpc.HealthStub(ENV.channel)
        for service in ("", SERVICES + "Sandboxes", SERVICES + "Exec", SERVICES + "Files",
                        SERVICES + "Ports", SERVICES + "Code", SERVICES + "Terminals",
                        SERVICES + "Snapshots", SERVICES + "Templates", SERVICES + "Network"):
            reply = stub.Check(health_pb2.HealthCheckRequest(service=service), timeout=5)
            self.assertEqual(reply.status, health_pb2.HealthCheckResponse.SERVING, service)

    def test_reflection_lists_and_describes_the_services(self):
        import reflection_pb2
        import reflection_pb2_grpc
        from google.protobuf import descriptor_pb2
        stub = reflection_pb2_grpc.ServerReflectionStub(ENV.channel)
        requests = [reflection_pb2.ServerReflectionRequest(list_services=""),
                    reflection_pb2.ServerReflectionRequest(
                        file_containing_symbol=SERVICES + "Exec")]
        replies = list(stub.ServerReflectionInfo(iter(requests), timeout=10))
        self.assertEqual(len(replies), 2)
        names = {s.name for s in replies[0].list_services_response.service}
        for expected in ("Bridge", "EppSession", "Sandboxes", "Exec", "Files", "Ports", "Code", "Terminals",
                         "Snapshots", "Templates", "Network"):
            self.assertIn(SERVICES + expected, names)
        self.assertIn("grpc.health.v1.Health", names)

        files = replies[1].file_descriptor_response.file_descriptor_proto
        self.assertTrue(files, replies[1])
        described = descriptor_pb2.FileDescriptorProto.FromString(files[0])
        self.assertEqual(described.name, "proto/exec.proto")
        service = {s.name: s for s in described.service}["Exec"]
        methods = {m.name: m for m in service.method}
        self.assertEqual(set(methods), {"Run", "Start", "Interact", "Logs", "CreateShell", "CloseShell", "WriteStdin"})
        self.assertTrue(methods["Start"].server_streaming)
        self.assertFalse(methods["Run"].server_streaming)

    # -- egress rules ---------------------------------------------------------------------

    def test_egress_rules_read_changed_and_removed(self):
        from proto import network_pb2, network_pb2_grpc
        net = network_pb2_grpc.NetworkStub(ENV.channel)
        sb = self.pb["sandboxes"]
        policy_json = '{"default_action":"deny","egress":[{"action":"allow","target":"pypi.org"}]}'
        sandbox = self.sandboxes.Create(
            sb.CreateSandboxRequest(config=ENV.config(network_policy=policy_json)), timeout=60)
        self.addCleanup(self.kill_quietly, sandbox.id)

        def rules(policy):
            return [(r.action, r.target) for r in policy.rules]

        policy = net.GetPolicy(network_pb2.GetNetworkPolicyRequest(
            config=ENV.config(), sandbox_id=sandbox.id), timeout=20)
        self.assertEqual((policy.mode, policy.enforcement, policy.default_action),
                         ("enforcing", "dns", "deny"))
        self.assertEqual(rules(policy), [("allow", "pypi.org")])
        policy = net.PatchPolicy(network_pb2.PatchNetworkPolicyRequest(
            config=ENV.config(), sandbox_id=sandbox.id,
            rules=[network_pb2.EgressRule(action="allow", target="*.pythonhosted.org")]), timeout=20)
        self.assertEqual(rules(policy), [("allow", "*.pythonhosted.org"), ("allow", "pypi.org")])
        policy = net.DeletePolicy(network_pb2.DeleteNetworkPolicyRequest(
            config=ENV.config(), sandbox_id=sandbox.id, targets=["PYPI.org", "none.example"]), timeout=20)
        self.assertEqual(rules(policy), [("allow", "*.pythonhosted.org")])

        with self.assertRaises(grpc.RpcError) as caught:
            net.PatchPolicy(network_pb2.PatchNetworkPolicyRequest(
                config=ENV.config(), sandbox_id=sandbox.id,
                rules=[network_pb2.EgressRule(action="allow", target="not a host")]), timeout=20)
        self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT, caught.exception)
        self.assertEqual(trailers(caught.exception).get("abx-field"), "rules[0].target")

        plain = self.create_sandbox()
        with self.assertRaises(grpc.RpcError) as caught:
            net.GetPolicy(network_pb2.GetNetworkPolicyRequest(
                config=ENV.config(), sandbox_id=plain.id), timeout=20)
        self.assertEqual(caught.exception.code(), grpc.StatusCode.FAILED_PRECONDITION, caught.exception)
        self.assertEqual(trailers(caught.exception).get("abx-epp-code"), "E8007")

        # The sidecar's port is not handed out: its headers are its token.
        with self.assertRaises(grpc.RpcError) as caught:
            self.ports.Url(self.pb["ports"].PortUrlRequest(
                config=ENV.config(), sandbox_id=sandbox.id, port=18080), timeout=20)
        self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT, caught.exception)
        self.assertEqual(trailers(caught.exception).get("abx-field"), "port")

    def test_signed_port_urls_from_a_gateway_and_refusals(self):
        gateway = ENV.start_fake("gateway", ["--runtime", "kubernetes", "--ingress-gateway", "uri",
                                             "--secure-access-keys", "k=dHlwZWQtYXBpLWtleQ=="])
        sb = self.pb["sandboxes"]
        pt = self.pb["ports"]
        sandbox = self.sandboxes.Create(
            sb.CreateSandboxRequest(config=ENV.config(gateway), secure=True), timeout=60)
        self.addCleanup(lambda: self.sandboxes.Kill(sb.KillSandboxRequest(
            config=ENV.config(gateway), sandbox_id=sandbox.id), timeout=20))
        plain = self.ports.Url(pt.PortUrlRequest(config=ENV.config(gateway), sandbox_id=sandbox.id, port=8080),
                               timeout=20)
        self.assertIn("/%s/8080" % sandbox.id, plain.url)
        self.assertIn("OpenSandbox-Secure-Access", plain.headers)
        self.assertEqual(plain.expires_at, "")
        signed = self.ports.Url(pt.PortUrlRequest(config=ENV.config(gateway), sandbox_id=sandbox.id, port=8080,
                                                  expires=600), timeout=20)
        self.assertRegex(signed.url, r"/%s/8080/[0-9a-z]+/[0-9a-f]{8}k$" % sandbox.id)
        self.assertEqual(dict(signed.headers), {})
        self.assertRegex(signed.expires_at, r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")

        with self.assertRaises(grpc.RpcError) as caught:
            self.ports.Url(pt.PortUrlRequest(config=ENV.config(gateway), sandbox_id=sandbox.id, port=8080,
                                             expires=30), timeout=20)
        self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT, caught.exception)
        self.assertEqual(trailers(caught.exception).get("abx-field"), "expires")
        # The default fake is a Docker server: it cannot sign.
        docker = self.create_sandbox()
        with self.assertRaises(grpc.RpcError) as caught:
            self.ports.Url(pt.PortUrlRequest(config=ENV.config(), sandbox_id=docker.id, port=8080, expires=600),
                           timeout=20)
        self.assertEqual(caught.exception.code(), grpc.StatusCode.FAILED_PRECONDITION, caught.exception)
        self.assertEqual(trailers(caught.exception).get("abx-epp-code"), "E8007")

    # -- the sandbox life ---------------------------------------------------------------

    def test_create_exec_files_kill(self):
        sb, ex, fs = self.pb["sandboxes"], self.pb["exec"], self.pb["files"]
        config = ENV.config()
        sandbox = self.create_sandbox(metadata={"suite": "typed"})
        self.assertTrue(sandbox.id)
        self.assertEqual(sandbox.state, "Running")
        self.assertEqual(sandbox.template, "base")
        self.assertEqual(dict(sandbox.metadata), {"suite": "typed"})

        got = self.sandboxes.Get(sb.GetSandboxRequest(config=config, sandbox_id=sandbox.id),
                                 timeout=20)
        self.assertEqual(got.id, sandbox.id)
        listed = self.sandboxes.List(sb.ListSandboxesRequest(config=config,
                                                             metadata={"suite": "typed"}),
                                     timeout=20)
        self.assertIn(sandbox.id, [s.id for s in listed.sandboxes])

        # Exec.Run: everything collected.
        ran = self.exec.Run(ex.RunCommandRequest(config=config, sandbox_id=sandbox.id,
                                                 command="echo hi"), timeout=30)
        self.assertEqual(ran.stdout, b"hi\n")
        self.assertEqual(ran.stderr, b"")
        self.assertTrue(ran.HasField("exit_code"))
        self.assertEqual(ran.exit_code, 0)
        self.assertFalse(ran.timed_out)

        ran = self.exec.Run(ex.RunCommandRequest(
            config=config, sandbox_id=sandbox.id,
            argv=["bash", "-c", "echo \"$1\" >&2; exit 3", "-", "it's $HOME"]), timeout=30)
        self.assertEqual(ran.exit_code, 3)
        self.assertEqual(ran.stderr, b"it's $HOME\n")

        # (stdin is not exercised: the fake runs commands on the host, where the
        # stdin file the bridge uploads into the sandbox is not at its sandbox path.)
        ran = self.exec.Run(ex.RunCommandRequest(config=config, sandbox_id=sandbox.id,
                                                 command='printf %s "$GREETING"',
                                                 env={"GREETING": "hello there"}), timeout=30)
        self.assertEqual(ran.stdout, b"hello there\n")  # a last line gains its "\n"

        # Exec.Start: started, outputs with seq 0, 1, …, exactly one exit, last.
        events = list(self.exec.Start(ex.StartCommandRequest(
            config=config, sandbox_id=sandbox.id,
            command="echo one; echo two >&2; sleep 0.2; echo three; exit 7"), timeout=30))
        kinds = [e.WhichOneof("event") for e in events]
        self.assertEqual(kinds[0], "started", kinds)
        self.assertTrue(events[0].started.exec_id)
        self.assertEqual(kinds[-1], "exit", kinds)
        self.assertEqual(kinds.count("exit"), 1, kinds)
        self.assertEqual(kinds.count("started"), 1, kinds)
        outputs = [e.output for e in events if e.WhichOneof("event") == "output"]
        self.assertEqual([o.seq for o in outputs], list(range(len(outputs))))
        out = b"".join(o.data for o in outputs if o.stream == ex.OUTPUT_STREAM_STDOUT)
        err = b"".join(o.data for o in outputs if o.stream == ex.OUTPUT_STREAM_STDERR)
        self.assertEqual(out, b"one\nthree\n")
        self.assertEqual(err, b"two\n")
        exit_event = events[-1].exit
        self.assertTrue(exit_event.HasField("exit_code"))
        self.assertEqual(exit_event.exit_code, 7)
        self.assertFalse(exit_event.cancelled)
        self.assertFalse(exit_event.HasField("error"))

        # Detached: only `started`; the output is read with Logs.
        events = list(self.exec.Start(ex.StartCommandRequest(
            config=config, sandbox_id=sandbox.id, command="echo in-background",
            detached=True), timeout=30))
        self.assertEqual([e.WhichOneof("event") for e in events], ["started"])
        exec_id = events[0].started.exec_id
        logs = None

        def finished():
            nonlocal logs
            logs = self.exec.Logs(ex.ExecLogsRequest(config=config, sandbox_id=sandbox.id,
                                                     exec_id=exec_id), timeout=10)
            # Both conditions: the core reads the output before the status, so a command
            # ending in between shows `running: false` with its last output missing.
            return not logs.running and b"in-background" in logs.data
        self.assertTrue(wait_until(finished, 10), logs)
        self.assertEqual(logs.data, b"in-background\n")
        self.assertEqual(logs.exit_code, 0)

        # Files: binary content round-trips byte for byte.
        blob = bytes(range(256)) * 300 + b"\x00\xff\xfe"
        written = self.files.Write(fs.WriteFileRequest(
            config=config, sandbox_id=sandbox.id, path="/tmp/typed/blob.bin", data=blob,
            mode="0600"), timeout=30)
        self.assertEqual(written.size, len(blob))
        read = self.files.Read(fs.ReadFileRequest(config=config, sandbox_id=sandbox.id,
                                                  path="/tmp/typed/blob.bin"), timeout=30)
        self.assertEqual(read.data, blob)
        self.assertEqual(read.size, len(blob))
        self.assertTrue(read.eof)
        part = self.files.Read(fs.ReadFileRequest(config=config, sandbox_id=sandbox.id,
                                                  path="/tmp/typed/blob.bin", offset=250,
                                                  length=10), timeout=30)
        self.assertEqual(part.data, blob[250:260])
        self.assertFalse(part.eof)
        stat = self.files.Stat(fs.StatFileRequest(config=config, sandbox_id=sandbox.id,
                                                  path="/tmp/typed/blob.bin"), timeout=30)
        self.assertEqual((stat.type, stat.size, stat.mode), ("file", len(blob), "0600"))
        entries = self.files.List(fs.ListFilesRequest(config=config, sandbox_id=sandbox.id,
                                                      path="/tmp/typed"), timeout=30)
        self.assertIn("blob.bin", [e.name for e in entries.entries])

        url = self.ports.Url(self.pb["ports"].PortUrlRequest(
            config=config, sandbox_id=sandbox.id, port=8080), timeout=20)
        self.assertTrue(url.url.startswith("http://"), url)

        # One sample of CPU and memory, as execd takes it (about a second).
        metrics = self.sandboxes.GetMetrics(sb.GetSandboxMetricsRequest(
            config=config, sandbox_id=sandbox.id), timeout=20)
        self.assertGreaterEqual(metrics.cpu_count, 1)
        self.assertTrue(0 <= metrics.cpu_used_pct <= 100, metrics)
        self.assertTrue(0 < metrics.mem_used_mib <= metrics.mem_total_mib, metrics)
        self.assertRegex(metrics.at, r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$")

        # Kill is idempotent.
        killed = self.sandboxes.Kill(sb.KillSandboxRequest(config=config,
                                                           sandbox_id=sandbox.id), timeout=20)
        self.assertTrue(killed.killed)
        again = self.sandboxes.Kill(sb.KillSandboxRequest(config=config,
                                                          sandbox_id=sandbox.id), timeout=20)
        self.assertFalse(again.killed)

    def test_download_streams_a_file_whole_across_broken_streams(self):
        fs = self.pb["files"]
        config = ENV.config()
        sandbox = self.create_sandbox()
        blob = os.urandom(3 * 1024 * 1024 + 12345)
        self.files.Write(fs.WriteFileRequest(config=config, sandbox_id=sandbox.id,
                                             path="/tmp/dl/big.bin", data=blob), timeout=60)

        def download(path="/tmp/dl/big.bin"):
            chunks = list(self.files.Download(fs.DownloadFileRequest(
                config=config, sandbox_id=sandbox.id, path=path), timeout=60))
            self.assertEqual((chunks[0].file.size, chunks[0].file.type, chunks[0].data),
                             (len(blob), "file", b""))
            got = bytearray()
            for chunk in chunks[1:]:
                self.assertEqual(chunk.offset, len(got))
                self.assertLessEqual(len(chunk.data), 256 * 1024)
                got += chunk.data
            return bytes(got)

        self.assertEqual(download(), blob)
        try:
            # Every answer breaks off after 1 MiB: three resumes bring the rest.
            ENV.fake.set_faults('{"download_cut_after_bytes":1048576}')
            self.assertEqual(download(), blob)
            # After 700 KiB: four resumes would bring it all, three do not: an error,
            # never a short file.
            ENV.fake.set_faults('{"download_cut_after_bytes":716800}')
            with self.assertRaises(grpc.RpcError) as caught:
                download()
            self.assertEqual(caught.exception.code(), grpc.StatusCode.UNAVAILABLE,
                             caught.exception.details())
            self.assertIn("after 3 resumes", caught.exception.details())
            # A file that changes between a break and the resume: refused, not spliced.
            ENV.fake.set_faults('{"download_cut_after_bytes":1048576,"download_change_on_cut":true}')
            with self.assertRaises(grpc.RpcError) as caught:
                download()
            self.assertEqual(caught.exception.code(), grpc.StatusCode.FAILED_PRECONDITION,
                             caught.exception.details())
            self.assertIn("file changed during download", caught.exception.details())
        finally:
            ENV.fake.set_faults('{"download_cut_after_bytes":0,"download_change_on_cut":false}')
        with self.assertRaises(grpc.RpcError) as caught:
            download("/tmp/dl")
        self.assertEqual(caught.exception.code(), grpc.StatusCode.FAILED_PRECONDITION)
        with self.assertRaises(grpc.RpcError) as caught:
            download("/tmp/dl/missing.bin")
        self.assertEqual(caught.exception.code(), grpc.StatusCode.NOT_FOUND)
        self.kill_quietly(sandbox.id)

    def test_upload_streams_a_file_in_and_lands_it_whole_or_not_at_all(self):
        fs = self.pb["files"]
        config = ENV.config()
        sandbox = self.create_sandbox()
        blob = os.urandom(5 * 1024 * 1024 + 777)
        target = "/tmp/up/new/big.bin"

        def messages(data, mode="", gate=None):
            yield fs.UploadChunk(start=fs.UploadStart(config=config, sandbox_id=sandbox.id,
                                                      path=target, mode=mode))
            for at in range(0, len(data), 300000):
                yield fs.UploadChunk(data=data[at:at + 300000])
                if gate is not None:
                    gate.wait(30)

        def content():
            chunks = list(self.files.Download(fs.DownloadFileRequest(
                config=config, sandbox_id=sandbox.id, path=target), timeout=60))
            return b"".join(chunk.data for chunk in chunks[1:])

        def names():
            listed = self.files.List(fs.ListFilesRequest(config=config, sandbox_id=sandbox.id,
                                                         path="/tmp/up/new"), timeout=30)
            return sorted(entry.name for entry in listed.entries)

        # Parent directories made; the bytes whole; the mode asked for.
        reply = self.files.Upload(messages(blob, "0640"), timeout=60)
        self.assertEqual((reply.path, reply.size), (target, len(blob)))
        self.assertEqual(content(), blob)
        stat = self.files.Stat(fs.StatFileRequest(config=config, sandbox_id=sandbox.id,
                                                  path=target), timeout=30)
        self.assertEqual(stat.mode, "0640")
        # An existing file is replaced.
        self.assertEqual(self.files.Upload(messages(b"short"), timeout=60).size, 5)
        self.assertEqual(content(), b"short")
        # Cancelled half way: the old file stays as it was, and no part file is left.
        gate = threading.Event()
        future = self.files.Upload.future(messages(blob, gate=gate), timeout=60)
        time.sleep(0.5)
        future.cancel()
        gate.set()
        with self.assertRaises(grpc.FutureCancelledError):
            future.result()
        self.assertTrue(wait_until(lambda: names() == ["big.bin"], 10), names())
        self.assertEqual(content(), b"short")
        # A directory in the way is refused, and nothing is left in it.
        target = "/tmp/up"
        with self.assertRaises(grpc.RpcError) as caught:
            self.files.Upload(messages(b"into a directory?"), timeout=60)
        self.assertEqual(caught.exception.code(), grpc.StatusCode.FAILED_PRECONDITION,
                         caught.exception.details())
        listed = self.files.List(fs.ListFilesRequest(config=config, sandbox_id=sandbox.id,
                                                     path="/tmp/up"), timeout=30)
        self.assertEqual(sorted(entry.name for entry in listed.entries), ["new"])
        beside = self.files.List(fs.ListFilesRequest(config=config, sandbox_id=sandbox.id,
                                                     path="/tmp"), timeout=30)
        self.assertEqual([e.name for e in beside.entries if ".abx-" in e.name], [])
        self.kill_quietly(sandbox.id)

    # -- errors ---------------------------------------------------------------------------

    def upstream_requests_during(self, action):
        """Lifecycle requests the fake saw while `action` ran."""
        before = ENV.fake.stats()["requests"]
        action()
        return ENV.fake.stats()["requests"] - before

    def test_invalid_config_is_invalid_argument_and_sends_nothing(self):
        sb = self.pb["sandboxes"]
        for config, field in ((ENV.config(ready_timeout="abc"), "config.ready_timeout"),
                              (ENV.config(no_such_field="1"), "config.no_such_field"),
                              ({"base_url": "ftp://example"}, "config.base_url")):
            caught = []

            def create():
                try:
                    self.sandboxes.Create(sb.CreateSandboxRequest(config=config), timeout=20)
                except grpc.RpcError as e:
                    caught.append(e)
            self.assertEqual(self.upstream_requests_during(create), 0, field)
            self.assertEqual(len(caught), 1, "Create with a bad %s succeeded" % field)
            error = caught[0]
            self.assertEqual(error.code(), grpc.StatusCode.INVALID_ARGUMENT, error)
            self.assertIn(field, error.details())
            self.assertEqual(trailers(error).get("abx-field"), field)

    def test_secrets_stay_out_of_errors(self):
        ex = self.pb["exec"]
        with self.assertRaises(grpc.RpcError) as caught:
            self.exec.Run(ex.RunCommandRequest(config=ENV.config(api_key="wrong-" + API_KEY),
                                               sandbox_id="sbx-x", command="true"), timeout=20)
        self.assertEqual(caught.exception.code(), grpc.StatusCode.PERMISSION_DENIED,
                         caught.exception)
        self.assertEqual(trailers(caught.exception).get("abx-epp-code"), "E8003")
        self.assertNotIn(API_KEY, caught.exception.details())
        self.assertNotIn(API_KEY, ENV.bridge.log_text())

    def test_unknown_sandbox_is_not_found_with_its_epp_code(self):
        sb = self.pb["sandboxes"]
        with self.assertRaises(grpc.RpcError) as caught:
            self.sandboxes.Get(sb.GetSandboxRequest(config=ENV.config(),
                                                    sandbox_id="sbx-does-not-exist"),
                               timeout=20)
        error = caught.exception
        self.assertEqual(error.code(), grpc.StatusCode.NOT_FOUND, error)
        self.assertTrue(error.details().startswith("E8005: "), error.details())
        self.assertEqual(trailers(error).get("abx-epp-code"), "E8005")
        self.assertEqual(trailers(error).get("abx-http-status"), "404")

    def test_missing_fields_are_invalid_argument(self):
        ex, fs = self.pb["exec"], self.pb["files"]
        cases = [
            (lambda: self.exec.Run(ex.RunCommandRequest(config=ENV.config(),
                                                        command="true"), timeout=10),
             "sandbox_id"),
            (lambda: self.exec.Run(ex.RunCommandRequest(config=ENV.config(), sandbox_id="s",
                                                        command="x", argv=["y"]), timeout=10),
             "command"),
            (lambda: self.files.Read(fs.ReadFileRequest(config=ENV.config(), sandbox_id="s"),
                                     timeout=10), "path"),
            (lambda: self.files.Write(fs.WriteFileRequest(config=ENV.config(), sandbox_id="s",
                                                          path="/a", mode="rw"), timeout=10),
             "mode"),
        ]
        for call, field in cases:
            with self.assertRaises(grpc.RpcError) as caught:
                call()
            self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT,
                             caught.exception)
            self.assertEqual(trailers(caught.exception).get("abx-field"), field)

    def test_volumes_are_checked_before_sending_and_pool_ref_refused_by_docker(self):
        sb = self.pb["sandboxes"]
        secret = "oss-typed-Secret-77"
        bad = [
            (sb.Volume(name="Bad_Name", mount_path="/a", host=sb.HostVolume(path="/tmp")), "volumes[0].name"),
            (sb.Volume(name="a", mount_path="/a"), "volumes[0]"),
            (sb.Volume(name="a", mount_path="/a", ossfs=sb.OssfsVolume(
                bucket="b", endpoint="e", access_key_id="i", access_key_secret=secret)), "volumes[0].ossfs.bucket"),
        ]
        for volume, field in bad:
            caught = []

            def create():
                try:
                    self.sandboxes.Create(sb.CreateSandboxRequest(config=ENV.config(), volumes=[volume]), timeout=20)
                except grpc.RpcError as e:
                    caught.append(e)
            self.assertEqual(self.upstream_requests_during(create), 0, field)
            self.assertEqual(len(caught), 1, field)
            self.assertEqual(caught[0].code(), grpc.StatusCode.INVALID_ARGUMENT, caught[0])
            self.assertEqual(trailers(caught[0]).get("abx-field"), field)
            self.assertNotIn(secret, caught[0].details())
        # A named volume the server makes, seen by a command.
        sandbox = self.create_sandbox(volumes=[sb.Volume(name="cache", mount_path="/cache",
                                                         pvc=sb.PvcVolume(claim_name="typed-cache"))])
        ex = self.pb["exec"]
        ran = self.exec.Run(ex.RunCommandRequest(config=ENV.config(), sandbox_id=sandbox.id,
                                                 command="test -d /cache && echo mounted"), timeout=20)
        self.assertEqual(ran.stdout, b"mounted\n" if isinstance(ran.stdout, bytes) else "mounted\n")
        with self.assertRaises(grpc.RpcError) as caught:
            self.sandboxes.Create(sb.CreateSandboxRequest(config=ENV.config(), pool_ref="warm"), timeout=20)
        self.assertEqual(caught.exception.code(), grpc.StatusCode.FAILED_PRECONDITION, caught.exception)
        self.assertEqual(trailers(caught.exception).get("abx-epp-code"), "E8007")
        # The default template names nothing more: the server's refusal again; another
        # template is a second source, refused before sending.
        with self.assertRaises(grpc.RpcError) as caught:
            self.sandboxes.Create(sb.CreateSandboxRequest(config=ENV.config(), pool_ref="warm", template="base"),
                                  timeout=20)
        self.assertEqual(trailers(caught.exception).get("abx-epp-code"), "E8007")
        with self.assertRaises(grpc.RpcError) as caught:
            self.sandboxes.Create(sb.CreateSandboxRequest(config=ENV.config(), pool_ref="warm", template="python:3.11"),
                                  timeout=20)
        self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT, caught.exception)
        self.assertNotIn(secret, ENV.bridge.log_text())

    # -- templates --------------------------------------------------------------------------

    def test_template_built_with_streamed_output_listed_used_and_deleted(self):
        tp = self.pb["templates"]
        request = tp.BuildTemplateRequest(
            config=ENV.config(), name="typed-tools", **{"from": "base"},
            files=[tp.TemplateFile(path="/srv/typed/setup.sh", content=b"echo from-typed-file\n", mode="0755")],
            run=["/srv/typed/setup.sh", "echo second > /srv/typed/second.txt"])
        events = list(self.templates.Build(request, timeout=120))
        kinds = [e.WhichOneof("event") for e in events]
        self.assertEqual(kinds[-1], "built", kinds)
        phases = [(e.phase.phase, e.phase.step) for e in events if e.WhichOneof("event") == "phase"]
        self.assertEqual(phases, [("create", -1), ("upload", -1), ("run", 0), ("run", 1), ("snapshot", -1)])
        output = b"".join(e.output.data for e in events if e.WhichOneof("event") == "output")
        self.assertIn(b"from-typed-file", output)
        built = events[-1].built
        self.assertEqual(built.name, "typed-tools")
        self.assertTrue(built.snapshot_id)
        listed = self.templates.List(tp.ListTemplatesRequest(config=ENV.config()), timeout=20)
        self.assertIn("typed-tools", [t.name for t in listed.templates])

        sandbox = self.create_sandbox(template="typed-tools")
        fs = self.pb["files"]
        read = self.files.Read(fs.ReadFileRequest(config=ENV.config(), sandbox_id=sandbox.id,
                                                  path="/srv/typed/second.txt"), timeout=20)
        self.assertEqual(read.data, b"second\n")

        # A failing command: the stream's last event names it, then UNKNOWN (E8010).
        failing = tp.BuildTemplateRequest(config=ENV.config(), name="typed-tools", run=["echo oh no; exit 3"])
        seen = []
        with self.assertRaises(grpc.RpcError) as caught:
            for event in self.templates.Build(failing, timeout=120):
                seen.append(event)
        self.assertEqual(caught.exception.code(), grpc.StatusCode.UNKNOWN, caught.exception)
        self.assertEqual(trailers(caught.exception).get("abx-epp-code"), "E8010")
        self.assertEqual(seen[-1].WhichOneof("event"), "failed")
        self.assertEqual((seen[-1].failed.step, seen[-1].failed.exit_code), (0, 3))
        self.assertIn(b"oh no", seen[-1].failed.output_tail)
        with self.assertRaises(grpc.RpcError) as caught:
            list(self.templates.Build(tp.BuildTemplateRequest(config=ENV.config(), name="Bad Name", run=["true"]),
                                      timeout=20))
        self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)

        deleted = self.templates.Delete(tp.DeleteTemplateRequest(config=ENV.config(), name="typed-tools"), timeout=20)
        self.assertTrue(deleted.deleted)
        again = self.templates.Delete(tp.DeleteTemplateRequest(config=ENV.config(), name="typed-tools"), timeout=20)
        self.assertFalse(again.deleted)

    # -- snapshots and metadata -------------------------------------------------------------

    def test_snapshot_taken_listed_restored_and_deleted(self):
        sb, sn, fs = self.pb["sandboxes"], self.pb["snapshots"], self.pb["files"]
        config = ENV.config()
        source = self.create_sandbox()
        self.files.Write(fs.WriteFileRequest(config=config, sandbox_id=source.id,
                                             path="/root/typed.txt", data=b"typed"), timeout=20)
        snapshot = self.snapshots.Take(sn.TakeSnapshotRequest(
            config=config, sandbox_id=source.id, name="typed"), timeout=60)
        self.assertEqual((snapshot.state, snapshot.name, snapshot.sandbox_id),
                         ("Ready", "typed", source.id))
        listed = self.snapshots.List(sn.ListSnapshotsRequest(
            config=config, sandbox_id=source.id), timeout=20)
        self.assertEqual([s.id for s in listed.snapshots], [snapshot.id])
        self.assertEqual(listed.next_cursor, "")
        got = self.snapshots.Get(sn.GetSnapshotRequest(config=config, snapshot_id=snapshot.id),
                                 timeout=20)
        self.assertEqual(got.state, "Ready")

        restored = self.create_sandbox(snapshot_id=snapshot.id, metadata={"from": "snapshot"})
        self.assertEqual(restored.image, "")
        read = self.files.Read(fs.ReadFileRequest(config=config, sandbox_id=restored.id,
                                                  path="/root/typed.txt"), timeout=20)
        self.assertEqual(read.data, b"typed")
        with self.assertRaises(grpc.RpcError) as caught:
            self.sandboxes.Create(sb.CreateSandboxRequest(
                config=config, template="base", snapshot_id=snapshot.id), timeout=20)
        self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertEqual(trailers(caught.exception).get("abx-field"), "template")

        changed = self.sandboxes.SetMetadata(sb.SetSandboxMetadataRequest(
            config=config, sandbox_id=restored.id, set={"stage": "two"}, remove=["from"]),
            timeout=20)
        self.assertEqual(dict(changed.metadata), {"stage": "two"})
        with self.assertRaises(grpc.RpcError) as caught:
            self.sandboxes.SetMetadata(sb.SetSandboxMetadataRequest(
                config=config, sandbox_id=restored.id, set={"opensandbox.io/x": "1"}), timeout=20)
        self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertEqual(trailers(caught.exception).get("abx-field"), "metadata.opensandbox.io/x")

        deleted = self.snapshots.Delete(sn.DeleteSnapshotRequest(
            config=config, snapshot_id=snapshot.id), timeout=20)
        self.assertTrue(deleted.deleted)
        again = self.snapshots.Delete(sn.DeleteSnapshotRequest(
            config=config, snapshot_id=snapshot.id), timeout=20)
        self.assertFalse(again.deleted)
        with self.assertRaises(grpc.RpcError) as caught:
            self.snapshots.Get(sn.GetSnapshotRequest(config=config, snapshot_id=snapshot.id),
                               timeout=20)
        self.assertEqual(caught.exception.code(), grpc.StatusCode.NOT_FOUND)

    # -- cancellation ----------------------------------------------------------------------

    def test_cancelled_start_interrupts_the_command(self):
        ex = self.pb["exec"]
        sandbox = self.create_sandbox()
        marker = "31.%d7" % os.getpid()  # a sleep no other test runs
        call = self.exec.Start(ex.StartCommandRequest(
            config=ENV.config(), sandbox_id=sandbox.id,
            command="echo ready; sleep " + marker), timeout=60)
        events = iter(call)
        self.assertEqual(next(events).WhichOneof("event"), "started")
        self.assertEqual(next(events).output.data, b"ready\n")
        # Polled: while bash execs `sleep`, /proc/PID/cmdline can read empty for a moment.
        self.assertTrue(wait_until(lambda: processes_with(marker), 5), "the command is not running")
        call.cancel()
        stats = lambda: self.bridge.Stats(self.pb["bridge"].StatsRequest(), timeout=5)
        self.assertTrue(wait_until(lambda: stats().streams_active == 0, 8),
                        "the bridge still follows the cancelled command")
        self.assertTrue(wait_until(lambda: not processes_with(marker), 8),
                        "the cancelled command still runs")

    def test_a_command_with_a_stdin_stream_reads_what_write_stdin_sends(self):
        ex = self.pb["exec"]
        config = ENV.config()
        sandbox = self.create_sandbox()
        call = self.exec.Start(ex.StartCommandRequest(
            config=config, sandbox_id=sandbox.id, command="cat; exit 5", stdin_stream=True), timeout=60)
        events = iter(call)
        started = next(events)
        self.assertEqual(started.WhichOneof("event"), "started")
        exec_id = started.started.exec_id
        write = lambda data, eof=False: self.exec.WriteStdin(ex.WriteStdinRequest(
            config=config, sandbox_id=sandbox.id, exec_id=exec_id, data=data, eof=eof), timeout=30)
        self.assertEqual(write(b"first\n").written, 6)
        self.assertEqual(next(events).output.data, b"first\n")  # the echo while stdin is open
        self.assertEqual(write(b"\x00\x01 binary\n", eof=True).written, 10)
        rest = list(events)
        self.assertEqual(b"".join(e.output.data for e in rest if e.WhichOneof("event") == "output"),
                         b"\x00\x01 binary\n")
        self.assertEqual(rest[-1].WhichOneof("event"), "exit")
        self.assertEqual(rest[-1].exit.exit_code, 5)
        with self.assertRaises(grpc.RpcError) as caught:
            write(b"late")
        self.assertEqual(caught.exception.code(), grpc.StatusCode.FAILED_PRECONDITION)
        with self.assertRaises(grpc.RpcError) as caught:
            self.exec.WriteStdin(ex.WriteStdinRequest(config=config, sandbox_id=sandbox.id,
                                                      exec_id="0" * 32, data=b"x"), timeout=30)
        self.assertEqual(caught.exception.code(), grpc.StatusCode.NOT_FOUND)
        with self.assertRaises(grpc.RpcError) as caught:
            list(self.exec.Start(ex.StartCommandRequest(config=config, sandbox_id=sandbox.id, command="cat",
                                                        stdin_stream=True, detached=True), timeout=30))
        self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)

    def test_interact_feeds_the_command_and_closing_the_call_ends_its_input(self):
        ex = self.pb["exec"]
        config = ENV.config()
        sandbox = self.create_sandbox()
        inputs = queue.Queue()
        def requests():
            while True:
                item = inputs.get()
                if item is None:
                    return
                yield item
        inputs.put(ex.ExecInput(start=ex.StartCommandRequest(
            config=config, sandbox_id=sandbox.id, command="cat; echo read-all >&2; exit 3")))
        call = self.exec.Interact(requests(), timeout=60)
        events = iter(call)
        started = next(events)
        self.assertEqual(started.WhichOneof("event"), "started")
        inputs.put(ex.ExecInput(stdin=b"first\n"))
        self.assertEqual(next(events).output.data, b"first\n")  # the echo while stdin is open
        for part in (b"\x00\x01", b" binary", b"\n"):
            inputs.put(ex.ExecInput(stdin=part))
        inputs.put(None)  # the client's side closes: the command reads end of file
        rest = list(events)
        outputs = [e.output for e in rest if e.WhichOneof("event") == "output"]
        self.assertEqual(b"".join(o.data for o in outputs if o.stream == ex.OUTPUT_STREAM_STDOUT),
                         b"\x00\x01 binary\n")
        self.assertEqual(b"".join(o.data for o in outputs if o.stream == ex.OUTPUT_STREAM_STDERR), b"read-all\n")
        self.assertEqual(rest[-1].WhichOneof("event"), "exit")
        self.assertEqual(rest[-1].exit.exit_code, 3)

        # The call ends after exit even while the client's side stays open.
        inputs = queue.Queue()
        inputs.put(ex.ExecInput(start=ex.StartCommandRequest(config=config, sandbox_id=sandbox.id,
                                                             command="head -n 1")))
        inputs.put(ex.ExecInput(stdin=b"only line\nnever read\n"))
        kinds = [e.WhichOneof("event") for e in self.exec.Interact(requests(), timeout=60)]
        self.assertEqual((kinds[0], kinds[-1]), ("started", "exit"))
        inputs.put(None)

        for first, code in ((ex.ExecInput(stdin=b"x"), grpc.StatusCode.INVALID_ARGUMENT),
                            (ex.ExecInput(start=ex.StartCommandRequest(config=config, sandbox_id=sandbox.id,
                                                                       command="cat", stdin=b"x")),
                             grpc.StatusCode.INVALID_ARGUMENT),
                            (ex.ExecInput(start=ex.StartCommandRequest(config=config, sandbox_id=sandbox.id,
                                                                       command="cat", shell_id="sh-1")),
                             grpc.StatusCode.UNIMPLEMENTED),
                            (ex.ExecInput(start=ex.StartCommandRequest(config=config, sandbox_id=sandbox.id,
                                                                       command="cat", detached=True)),
                             grpc.StatusCode.INVALID_ARGUMENT)):
            inputs = queue.Queue()
            inputs.put(first)
            with self.assertRaises(grpc.RpcError) as caught:
                list(self.exec.Interact(requests(), timeout=30))
            self.assertEqual(caught.exception.code(), code)
            inputs.put(None)

    def test_a_watch_streams_changes_until_cancelled(self):
        fl, ex = self.pb["files"], self.pb["exec"]
        config = ENV.config()
        sandbox = self.create_sandbox()
        run = lambda command: self.exec.Run(ex.RunCommandRequest(config=config, sandbox_id=sandbox.id,
                                                                 command=command), timeout=30)
        directory = "/tmp/typed-watch-%d" % os.getpid()
        run("mkdir -p " + directory)
        call = self.files.Watch(fl.WatchRequest(config=config, sandbox_id=sandbox.id, path=directory,
                                                recursive=True), timeout=60)
        events = iter(call)
        first = next(events)
        self.assertEqual(first.WhichOneof("event"), "started")
        self.assertTrue(first.started.watch_id)
        self.assertIn(first.started.mode, ("inotify", "poll"))
        run("touch %s/made" % directory)
        seen = []
        for event in events:
            self.assertEqual(event.WhichOneof("event"), "changes")
            seen += [(c.type, c.path) for c in event.changes.changes]
            if ("create", directory + "/made") in seen:
                break
        self.assertIn(("create", directory + "/made"), seen)
        call.cancel()
        with self.assertRaises(grpc.RpcError) as caught:
            self.files.Watch(fl.WatchRequest(config=config, sandbox_id=sandbox.id, path="/no/such/dir"),
                             timeout=30).next()
        self.assertEqual(caught.exception.code(), grpc.StatusCode.NOT_FOUND)

    # -- terminals -------------------------------------------------------------------------

    def test_a_terminal_opened_attached_typed_into_and_ended(self):
        tp = self.pb["terminal"]
        config = ENV.config()
        sandbox = self.create_sandbox()
        pty_id = self.terminals.Open(tp.OpenTerminalRequest(
            config=config, sandbox_id=sandbox.id, cols=100, rows=30), timeout=30).pty_id
        self.assertTrue(pty_id)
        listed = self.terminals.List(tp.ListTerminalsRequest(config=config, sandbox_id=sandbox.id), timeout=20)
        self.assertEqual([(t.pty_id, t.running, t.attached) for t in listed.terminals], [(pty_id, True, False)])

        inputs = queue.Queue()
        inputs.put(tp.TerminalInput(attach=tp.AttachTerminal(config=config, sandbox_id=sandbox.id,
                                                             pty_id=pty_id, since=0)))
        def requests():
            while True:
                item = inputs.get()
                if item is None:
                    return
                yield item
        call = self.terminals.Attach(requests(), timeout=60)
        events = iter(call)
        attached = next(events)
        self.assertEqual(attached.WhichOneof("event"), "attached")
        self.assertEqual((attached.attached.offset, attached.attached.lost), (0, 0))
        inputs.put(tp.TerminalInput(data=b"stty size; echo $((6*7))-x\n"))
        output, offset = b"", 0
        while b"42-x" not in output:
            event = next(events)
            self.assertEqual(event.WhichOneof("event"), "output")
            self.assertEqual(event.output.offset, offset)  # no gap, no repeat
            output += event.output.data
            offset += len(event.output.data)
        self.assertIn(b"30 100", output)
        inputs.put(tp.TerminalInput(signal="SIGUSR1"))  # no keyboard or execd way to send it
        with self.assertRaises(grpc.RpcError) as caught:
            for _ in events:
                pass
        self.assertEqual(caught.exception.code(), grpc.StatusCode.UNIMPLEMENTED)
        self.assertEqual(trailers(caught.exception).get("abx-epp-code"), "E8004")
        inputs.put(None)

        # Attached again, it exits with its code; the stream ends once the client's side does.
        inputs = queue.Queue()
        inputs.put(tp.TerminalInput(attach=tp.AttachTerminal(config=config, sandbox_id=sandbox.id, pty_id=pty_id)))
        inputs.put(tp.TerminalInput(data=b"exit 4\n"))
        call = self.terminals.Attach(requests(), timeout=60)
        kinds, exit_event = [], None
        for event in call:
            kinds.append(event.WhichOneof("event"))
            if event.HasField("exit"):
                exit_event = event.exit
                inputs.put(None)
        self.assertEqual(kinds[0], "attached")
        self.assertIsNotNone(exit_event)
        self.assertEqual(exit_event.exit_code, 4)
        closed = self.terminals.Close(tp.CloseTerminalRequest(config=config, sandbox_id=sandbox.id,
                                                              pty_id=pty_id), timeout=20)
        self.assertTrue(closed.closed)

    # -- shells ----------------------------------------------------------------------------

    def test_shells_keep_state_and_a_cancel_keeps_the_shell(self):
        ex = self.pb["exec"]
        config = ENV.config()
        sandbox = self.create_sandbox()
        shell = self.exec.CreateShell(ex.CreateShellRequest(
            config=config, sandbox_id=sandbox.id, cwd="/tmp/typed-shell"), timeout=30).shell_id
        self.assertTrue(shell)
        run = lambda command, **more: self.exec.Run(ex.RunCommandRequest(
            config=config, sandbox_id=sandbox.id, shell_id=shell, command=command, **more), timeout=30)
        self.assertEqual(run("export A=1; cd ..").exit_code, 0)
        ran = run("pwd; echo $A; echo err >&2")
        self.assertEqual(ran.stdout, b"/tmp\n1\nerr\n")  # stderr arrives as stdout
        self.assertEqual(ran.stderr, b"")

        with self.assertRaises(grpc.RpcError) as caught:
            run("true", env={"B": "2"})
        self.assertEqual(caught.exception.code(), grpc.StatusCode.UNIMPLEMENTED)
        self.assertEqual(trailers(caught.exception).get("abx-epp-code"), "E8004")

        # Cancelling a Start ends the command and what it started; the shell lives on.
        marker = "32.%d7" % os.getpid()
        call = self.exec.Start(ex.StartCommandRequest(
            config=config, sandbox_id=sandbox.id, shell_id=shell,
            command="export LOST=1; echo ready; sleep " + marker), timeout=60)
        events = iter(call)
        started = next(events)
        self.assertTrue(started.started.exec_id.startswith("shell-"))
        self.assertEqual(next(events).output.data, b"ready\n")
        self.assertTrue(wait_until(lambda: processes_with(marker), 5), "the command is not running")
        call.cancel()
        self.assertTrue(wait_until(lambda: not processes_with(marker), 8),
                        "the cancelled command still runs")
        self.assertEqual(run("echo ${LOST:-lost} $A").stdout, b"lost 1\n")

        closed = self.exec.CloseShell(ex.CloseShellRequest(
            config=config, sandbox_id=sandbox.id, shell_id=shell), timeout=20)
        self.assertTrue(closed.closed)
        with self.assertRaises(grpc.RpcError) as caught:
            run("true")
        self.assertEqual(caught.exception.code(), grpc.StatusCode.NOT_FOUND)

    # -- the code interpreter ------------------------------------------------------------

    def test_code_contexts_and_runs(self):
        cp = self.pb["code"]
        config = ENV.config()
        sandbox = self.create_sandbox(template="code")
        # The language's default context: output and the value as they come, then done.
        events = list(self.code.Run(cp.RunCodeRequest(
            config=config, sandbox_id=sandbox.id,
            code="x = 41\nprint('hi', flush=True)\nx + 1"), timeout=60))
        kinds = [e.WhichOneof("event") for e in events]
        self.assertEqual(kinds, ["output", "result", "done"])
        self.assertEqual((events[0].output.stream, events[0].output.data), ("stdout", "hi\n"))
        self.assertEqual([e.output.seq if k == "output" else e.result.seq
                          for e, k in zip(events, kinds) if k != "done"], [0, 1])
        self.assertEqual(events[1].result.data["text/plain"], "42")
        done = events[2].done
        self.assertTrue(done.context_id)
        self.assertEqual(done.stdout, "hi\n")
        self.assertEqual(done.results[0].data["text/plain"], "42")
        self.assertTrue(done.results[0].main)
        self.assertFalse(done.HasField("error"))

        # A context of its own, in a directory of its own; an exception is an Execution.
        context = self.code.CreateContext(cp.CreateCodeContextRequest(
            config=config, sandbox_id=sandbox.id, cwd="/tmp/typed-code"), timeout=60)
        self.assertEqual(context.language, "python")
        run = lambda code: list(self.code.Run(cp.RunCodeRequest(
            config=config, sandbox_id=sandbox.id, context_id=context.context_id, code=code),
            timeout=60))[-1].done
        self.assertEqual(run("import os; os.getcwd()").results[0].data["text/plain"],
                         "'/tmp/typed-code'")
        failed = run("x")  # the default context's x is not here
        self.assertEqual(failed.error.name, "NameError")
        self.assertTrue(failed.error.traceback)
        listed = self.code.ListContexts(cp.ListCodeContextsRequest(
            config=config, sandbox_id=sandbox.id), timeout=20)
        self.assertIn(context.context_id, [c.context_id for c in listed.contexts])
        deleted = self.code.DeleteContext(cp.DeleteCodeContextRequest(
            config=config, sandbox_id=sandbox.id, context_id=context.context_id), timeout=20)
        self.assertTrue(deleted.deleted)
        again = self.code.DeleteContext(cp.DeleteCodeContextRequest(
            config=config, sandbox_id=sandbox.id, context_id=context.context_id), timeout=20)
        self.assertFalse(again.deleted)
        with self.assertRaises(grpc.RpcError) as caught:
            run("1")
        self.assertEqual(caught.exception.code(), grpc.StatusCode.NOT_FOUND)

    def test_cancelled_code_run_interrupts_the_kernel_and_keeps_the_context(self):
        cp = self.pb["code"]
        config = ENV.config()
        sandbox = self.create_sandbox(template="code")
        run = lambda code: self.code.Run(cp.RunCodeRequest(
            config=config, sandbox_id=sandbox.id, code=code), timeout=60)
        self.assertEqual(list(run("kept = 21"))[-1].WhichOneof("event"), "done")
        call = run("print('spinning', flush=True)\nwhile True: pass")
        events = iter(call)
        self.assertEqual(next(events).output.data, "spinning\n")
        call.cancel()
        last = list(run("kept * 2"))[-1].done
        self.assertEqual(last.results[0].data["text/plain"], "42")

    def test_cancelled_create_kills_the_half_made_sandbox(self):
        sb = self.pb["sandboxes"]
        slow = ENV.start_fake("never-running", ["--faults", '{"never_running":true}'])
        with self.assertRaises(grpc.RpcError) as caught:
            self.sandboxes.Create(sb.CreateSandboxRequest(config=ENV.config(slow)), timeout=1.5)
        self.assertEqual(caught.exception.code(), grpc.StatusCode.DEADLINE_EXCEEDED)
        self.assertGreaterEqual(slow.stats()["requests"], 2, "no sandbox was ever created")
        self.assertTrue(wait_until(lambda: slow.stats()["live_sandboxes"] == 0, 8),
                        "the cancelled Create left its sandbox behind: %s" % slow.stats())

    def test_calls_are_counted(self):
        before = self.bridge.Stats(self.pb["bridge"].StatsRequest(), timeout=5).requests_total
        sb = self.pb["sandboxes"]
        self.sandboxes.List(sb.ListSandboxesRequest(config=ENV.config(), limit=1), timeout=20)
        after = self.bridge.Stats(self.pb["bridge"].StatsRequest(), timeout=5).requests_total
        self.assertEqual(after - before, 1)

    # -- the warm pool ----------------------------------------------------------------------

    def epp_session_initialized(self, **config):
        bp = self.pb["bridge"]
        init = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                           "params": {"protocol": "EPP/1"}}).encode()
        inputs = iter([bp.SessionInput(start=bp.SessionStart(config=ENV.config(**config))),
                       bp.SessionInput(line=init), bp.SessionInput(line=b'{"jsonrpc":"2.0","method":"exit"}')])
        outputs = list(self.epp.Run(inputs, timeout=20))
        self.assertIn("result", json.loads(outputs[0].line), outputs[0].line)

    def test_a_pool_configured_by_a_session_serves_typed_creates_and_reports_itself(self):
        sb = self.pb["sandboxes"]
        self.epp_session_initialized(pool="base=1")
        try:
            status = None
            for _ in range(300):
                status = self.sandboxes.PoolStatus(sb.PoolStatusRequest(config=ENV.config()), timeout=10)
                if status.pools and status.pools[0].ready == 1:
                    break
                time.sleep(0.1)
            self.assertEqual([(p.template, p.target, p.ready) for p in status.pools], [("base", 1, 1)], status)
            self.assertEqual(status.pools[0].credential, "credential 1")
            self.assertNotIn(API_KEY, str(status))
            sandbox = self.create_sandbox(template="base", metadata={"from": "typed"})
            self.assertTrue(sandbox.pooled)
            self.assertEqual(dict(sandbox.metadata), {"from": "typed"})
            with_env = self.create_sandbox(template="base", env={"A": "1"})
            self.assertFalse(with_env.pooled)
            stats = self.bridge.Stats(self.pb["bridge"].StatsRequest(), timeout=5)
            self.assertIn("base", [p.template for p in stats.pools])
            status = self.sandboxes.PoolStatus(sb.PoolStatusRequest(config=ENV.config()), timeout=10)
            self.assertEqual(status.pools[0].taken, 1)
        finally:
            # A session without `pool` turns it off again.
            self.epp_session_initialized()
        status = self.sandboxes.PoolStatus(sb.PoolStatusRequest(config=ENV.config()), timeout=10)
        self.assertEqual(list(status.pools), [])

    # -- the EPP session's front door, as the shim uses it ------------------------------

    def session_inputs(self, *rest):
        bp = self.pb["bridge"]
        return iter([bp.SessionInput(start=bp.SessionStart(config=ENV.config()))] + list(rest))

    def test_session_puts_a_line_back_together_from_its_parts(self):
        bp = self.pb["bridge"]
        line = json.dumps({"jsonrpc": "2.0", "id": 41, "method": "initialize",
                           "params": {"protocol": "EPP/1"}}).encode()
        inputs = self.session_inputs(
            bp.SessionInput(line_part=line[:7]), bp.SessionInput(line_part=line[7:30]),
            bp.SessionInput(line=line[30:]),
            bp.SessionInput(line=b'{"jsonrpc":"2.0","id":42,"method":"provider.info"}'),
            bp.SessionInput(line=b'{"jsonrpc":"2.0","method":"exit"}'))
        outputs = list(self.epp.Run(inputs, timeout=20))
        self.assertEqual([o.response_id for o in outputs], ["41", "42"])
        for output in outputs:
            self.assertIn("result", json.loads(output.line), output.line)

    def test_session_refuses_line_parts_past_the_line_limit(self):
        bp = self.pb["bridge"]
        parts = [bp.SessionInput(line_part=b"x" * (1 << 20)) for _ in range(9)]
        with self.assertRaises(grpc.RpcError) as caught:
            list(self.epp.Run(self.session_inputs(*parts), timeout=20))
        self.assertEqual(caught.exception.code(), grpc.StatusCode.INVALID_ARGUMENT)
        self.assertIn("line parts of more than 8388608 bytes", caught.exception.details())


if __name__ == "__main__":
    unittest.main(verbosity=2)
