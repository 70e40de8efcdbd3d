#!/usr/bin/env python3
"""Writes the seed corpus of every fuzz target: fuzz/corpus/<target>/<seed>.

The targets read their input through libFuzzer's FuzzedDataProvider, which takes
strings from the front of the input and integers from its back; Input below lays
seeds out the same way, so each seed is a real-looking case (an EPP/1 line from
docs/epp1.md, an execd event stream from docs/opensandbox.md §2.4, a lifecycle body from §1.4)
with the cut points and modes the target should start from. Run it again after
changing a target's input layout: python3 fuzz/make_seeds.py
"""

import json
import os

HERE = os.path.dirname(os.path.abspath(__file__))
REPEAT = b"\x01"  # fuzz/hostile_text.h: 0x01 N C -> C repeated (N+1)*1024 times


class Input:
    """Builds bytes the way FuzzedDataProvider consumes them."""

    def __init__(self):
        self.front = b""
        self.back = []  # byte strings, in the order they are consumed

    def int_in_range(self, value, lo, hi):
        span = hi - lo
        raw = value - lo
        data = []
        offset = 0
        while offset < 64 and (span >> offset) > 0:
            data.append(raw & 0xFF)  # least significant consumed last
            raw >>= 8
            offset += 8
        # The first byte consumed (the last of the input) is the most significant.
        self.back.append(bytes(data))  # little-endian: the last byte is read first
        return self

    def u32(self, value):
        return self.int_in_range(value, 0, 2**32 - 1)

    def boolean(self, value):
        self.back.append(bytes([1 if value else 0]))
        return self

    def string(self, text):
        """ConsumeRandomLengthString: backslashes doubled, ended by '\\' + another byte."""
        if isinstance(text, str):
            text = text.encode()
        self.front += text.replace(b"\\", b"\\\\") + b"\\ "
        return self

    def rest(self, text):
        """ConsumeRemainingBytes*: everything left at the front, as it is."""
        if isinstance(text, str):
            text = text.encode()
        self.front += text
        return self

    def bytes(self):
        # Integers come from the end, first consumed last in the buffer; each one's
        # bytes are read from the end backwards, most significant first.
        tail = b""
        for chunk in self.back:
            tail = chunk + tail
        return self.front + tail


def write(target, name, data):
    folder = os.path.join(HERE, "corpus", target)
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, name), "wb") as f:
        f.write(data)


def j(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False)


INIT = j({"jsonrpc": "2.0", "id": 1, "method": "initialize",
          "params": {"protocol": "EPP/1", "host": {"name": "abx", "version": "1.4.0"}}})
INFO = j({"jsonrpc": "2.0", "id": 2, "method": "provider.info", "params": {}})
CREATE = j({"jsonrpc": "2.0", "id": "c-7", "method": "sandbox.create",
            "params": {"template": "base", "timeout": 600, "metadata": {"team": "a"}}})
EXEC = j({"jsonrpc": "2.0", "id": 4, "method": "exec.run",
          "params": {"sandbox_id": "3f1c0a6e-1b2c-4d5e-8f90-a1b2c3d4e5f6",
                     "command": "echo hi", "timeout": 30}})
CANCEL = j({"jsonrpc": "2.0", "method": "$/cancel", "params": {"id": 4}})
WRITE = j({"jsonrpc": "2.0", "id": 5, "method": "files.write",
           "params": {"sandbox_id": "s", "path": "/tmp/a.txt", "content": "aGk=",
                      "encoding": "base64"}})

EPP_LINES = {
    "initialize": INIT,
    "provider_info": INFO,
    "sandbox_create": CREATE,
    "exec_run": EXEC,
    "cancel_notification": CANCEL,
    "files_write": WRITE,
    "shutdown": '{"jsonrpc":"2.0","id":9,"method":"shutdown"}',
    "exit": '{"jsonrpc":"2.0","method":"exit"}',
    "id_object": '{"jsonrpc":"2.0","id":{},"method":"provider.info"}',
    "id_bool": '{"jsonrpc":"2.0","id":true,"method":"provider.info"}',
    "id_null": '{"jsonrpc":"2.0","id":null,"method":"provider.info"}',
    "id_infinite": '{"jsonrpc":"2.0","id":12.2e308,"method":"provider.info"}',
    "method_number": '{"jsonrpc":"2.0","id":3,"method":5}',
    "params_number": '{"jsonrpc":"2.0","id":3,"method":"provider.info","params":3}',
    "id_huge_number": '{"jsonrpc":"2.0","id":1e308,"method":"provider.info"}',
    "id_too_big": '{"jsonrpc":"2.0","id":1e400,"method":"provider.info"}',
    "id_float": '{"jsonrpc":"2.0","id":-0.5e-3,"method":"provider.info"}',
    "id_escaped": '{"jsonrpc":"2.0","id":"\\u0061\\n\\"","method":"provider.info"}',
    "id_key_escaped": '{"jsonrpc":"2.0","\\u0069d":7,"method":"provider.info"}',
    "id_after_params": '{"jsonrpc":"2.0","method":"provider.info","params":{"id":1},"id":8}',
    "id_twice": '{"id":1,"jsonrpc":"2.0","id":2,"method":"provider.info"}',
    "no_version": '{"id":1,"method":"provider.info"}',
    "no_method": '{"jsonrpc":"2.0","id":1000001,"params":{}}',
    "batch": "[" + INFO + "," + INFO + "]",
    "response_shaped": '{"jsonrpc":"2.0","id":1,"result":{}}',
    "truncated": '{"jsonrpc":"2.0","id":5,"method":"sandbox.list",',
    "crlf": INFO + "\r",
    "empty": "",
    "spaces": "  \t ",
    "nul_after": INFO + "\x00garbage",
    "nul_inside": '{"jsonrpc":"2.0","id":1,"method":"provider\x00.info"}',
}
EPP_BYTES = {
    "invalid_utf8": b'{"jsonrpc":"2.0","id":"\xff\xfe","method":"provider.info"}',
    "overlong_utf8": b'{"jsonrpc":"2.0","id":1,"method":"\xc0\xaf"}',
    "deep_arrays": b'{"jsonrpc":"2.0","id":6,"method":"x","params":' + REPEAT + b"\x63[",
    "deep_objects": b'{"id":6,"a":' + REPEAT + b'\xff{',
    "huge_string_id": b'{"jsonrpc":"2.0","id":"' + REPEAT + b'\xffa' + b'","method":"provider.info"}',
    "id_at_cut": b'{"jsonrpc":"2.0","id":123456789,"method":"provider.info"}',
    "id_after_cr": b'{"jsonrpc":"2.0","id"\r:\n5,"method":"provider.info"}',
}


def epp_seeds():
    for target in ("jsonrpc", "epp_ids"):
        for name, line in list(EPP_LINES.items()) + list(EPP_BYTES.items()):
            data = line.encode() if isinstance(line, str) else line
            expand = REPEAT in data
            # A cut inside the first member after the id, so prefixes matter from the start.
            cut = data.find(b'"method"') if b'"method"' in data else len(data) // 2
            if name == "id_at_cut":
                cut = data.find(b"56789")
            write(target, name, Input().u32(max(cut, 0)).boolean(expand).rest(data).bytes())


def line_splitter_seeds():
    stream = "\n".join([INIT, INFO, CREATE, EXEC, CANCEL]) + "\n"
    cases = {
        # real limits, cut every 37 bytes
        "session_real_limits": (True, 0, 0, stream, [37] * 30),
        "session_small_limit": (False, 64, 16, stream, [1, 2, 3, 500, 7]),
        "crlf_lines": (False, 200, 50, INFO + "\r\n" + INFO + "\r\n", [10, 10, 10]),
        "no_final_newline": (False, 300, 300, INFO + "\n" + INFO, [len(INFO) + 1]),
        "empty_lines": (False, 10, 3, "\n\n\na\n\n", [1, 1, 1]),
        "exactly_limit": (False, 8, 4, "12345678\n123456789\n", [8, 1, 9, 1]),
        "limit_zero": (False, 0, 0, "x\ny\n\n", [1]),
    }
    for name, (real, max_line, prefix, text, chunks) in cases.items():
        seed = Input().boolean(real)
        if not real:
            seed.int_in_range(max_line, 0, 300).int_in_range(prefix, 0, 400)
        seed.string(text)
        remaining = len(text)
        for chunk in chunks:
            chunk = min(chunk, remaining)
            seed.int_in_range(chunk, 0, remaining) if remaining else None
            remaining -= chunk
            if remaining == 0:
                break
        write("line_splitter", name, seed.bytes())


def sse_seeds():
    cid = "9f0c1a2b3c4d5e6f7a8b9c0d1e2f3a4b"
    ts = 1718000000000
    events = lambda *objs: "".join(j(o) + "\n\n" for o in objs)
    streams = {
        "foreground_ok": events(
            {"type": "init", "text": cid, "timestamp": ts},
            {"type": "ping", "text": "pong", "timestamp": ts + 1},
            {"type": "stdout", "text": "hello", "timestamp": ts + 2},
            {"type": "stderr", "text": "\n", "timestamp": ts + 3},
            {"type": "execution_complete", "execution_time": 12, "timestamp": ts + 4}),
        "exit_code_3": events(
            {"type": "init", "text": cid, "timestamp": ts},
            {"type": "stdout", "text": "a", "timestamp": ts},
            {"type": "error", "timestamp": ts,
             "error": {"ename": "CommandExecError", "evalue": "3", "traceback": ["exit status 3"]}}),
        "killed": events(
            {"type": "init", "text": cid, "timestamp": ts},
            {"type": "error", "error": {"ename": "CommandExecError", "evalue": "-1",
                                        "traceback": ["signal: killed"]}}),
        "start_failure": events(
            {"type": "init", "text": cid},
            {"type": "error", "error": {"ename": "CommandExecError",
                                        "evalue": "fork/exec /bin/x: permission denied"}}),
        "background": events(
            {"type": "init", "text": cid, "timestamp": ts},
            {"type": "ping", "text": "pong", "timestamp": ts},
            {"type": "execution_complete", "timestamp": ts}),
        "session_timeout": events(
            {"type": "init", "text": "sess-1"},
            {"type": "stdout", "text": "x"}) + j({"code": "RUNTIME_ERROR", "message": "timeout"}) + "\n\n",
        "code_results": events(
            {"type": "init", "text": cid},
            {"type": "execution_count", "execution_count": 3},
            {"type": "result", "results": {"text": "2", "image/png": "iVBOR"}, "execution_count": 3},
            {"type": "execution_complete", "execution_time": 5}),
        # /code runs as execd sends them (docs/opensandbox.md §2.14): an exception, a rich
        # result with an application/json value and Go's escapes, a busy context's bare
        # object (unframed, at EOF), a kernel that died (no terminal event).
        "code_exception": events(
            {"type": "init", "text": "cb1baca9-a60e-4937-a1d0-18bc1fc45e60", "timestamp": ts},
            {"type": "ping", "text": "pong", "timestamp": ts},
            {"type": "stdout", "text": "before\n", "timestamp": ts},
            {"type": "status", "text": "error", "timestamp": ts},
            {"type": "error", "timestamp": ts, "error": {
                "ename": "ZeroDivisionError", "evalue": "division by zero",
                "traceback": ["\u001b[0;31m---------\u001b[0m", "Cell In [2], line 1\n----> 1 1/0\n"]}},
            {"type": "execution_complete", "execution_time": 7, "timestamp": ts}),
        "code_rich_result": events(
            {"type": "init", "text": "ctx"},
            {"type": "execution_count", "execution_count": 12},
            {"type": "result", "timestamp": ts, "results": {
                "application/json": {"a": [1, 2.5, None, True], "b": {"c": "\u003cd\u003e"}},
                "image/png": "iVBORw0KGgo=\n", "text": "<Page>", "text/html": "<b>x</b> & y"}},
            {"type": "execution_complete", "timestamp": ts}),
        "code_busy": events({"type": "init", "text": "ctx"}, {"type": "ping", "text": "pong"}) +
                     j({"code": "RUNTIME_ERROR", "message": "error running codes session is busy"}),
        "code_kernel_died": events({"type": "init", "text": "ctx"}, {"type": "stdout", "text": "going"}),
        "metrics_watch": j({"cpu_count": 2, "cpu_used_pct": 3.5, "mem_total_mib": 512.0,
                            "mem_used_mib": 100.25, "timestamp": ts}) + "\n" +
                         j({"error": "read error"}) + "\n",
        "sse_framed": ": comment\nevent: message\nid: 1\nretry: 100\ndata: " +
                      j({"type": "stdout", "text": "framed"}) + "\r\n\r\ndata:\n\n",
        "garbage": "not json\n{\"type\":5}\n[1,2]\n{\"type\":\"stdout\"} trailing\n{\"type\":[\"x\"]}\n",
        "numbers": events({"type": "stdout", "text": "n", "timestamp": 1.5e3, "execution_time": -7,
                           "execution_count": 18446744073709551615},
                          {"type": "x", "timestamp": 1e300}),
        "no_final_newline": j({"type": "stdout", "text": "tail"}),
        "utf8_split": events({"type": "stdout", "text": "h\u00e9llo \u20ac \U0001F600"}),
    }
    for name, stream in streams.items():
        data = stream.encode()
        for small in (False, True):
            seed = Input().boolean(small)
            if small:
                seed.int_in_range(40, 0, 300)
            seed.int_in_range(0, 0, 8).boolean(False).string(data)
            remaining = len(data)
            for chunk in (1, 5, 17, 3, 64):
                if remaining == 0:
                    break
                chunk = min(chunk, remaining)
                seed.int_in_range(chunk, 0, remaining)
                remaining -= chunk
            write("sse_parser", name + ("_small_limit" if small else ""), seed.bytes())
    deep = Input().boolean(False).int_in_range(0, 0, 8).boolean(True).string(
        b'{"type":"result","results":' + REPEAT + b"\xff[" + b"\n\n")
    write("sse_parser", "deep_results", deep.bytes())
    deep2 = Input().boolean(False).int_in_range(0, 0, 8).boolean(True).string(
        REPEAT + b"\xff{" + b"\n")
    write("sse_parser", "deep_objects", deep2.bytes())


def multipart_seeds():
    # Mode 0: a form of parts, with boundary candidates that collide with the data.
    seed = Input().int_in_range(0, 0, 2).int_in_range(2, 0, 3)
    for boundary in ("ab", "x"):
        seed.int_in_range(len(boundary), 1, 8)
        for ch in boundary:
            chars = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ'+_-."
            seed.int_in_range(chars.index(ch), 0, len(chars) - 1)
    seed.int_in_range(2, 0, 5)
    seed.string("metadata").string("metadata").string("application/json").string(
        j({"path": "/tmp/a.txt", "mode": 644}))
    seed.string("file").string('a"b\\.txt').string("application/octet-stream").string(
        "line1\r\n--ab\r\n--x--\r\n")
    write("multipart", "form_colliding_boundaries", seed.bytes())
    # Mode 1: upload bodies.
    seed = Input().int_in_range(1, 0, 2).int_in_range(2, 0, 4)
    seed.string("/home/user/notes.txt").string("root").string("wheel").int_in_range(755, 0, 7777)
    seed.string("hello\n")
    seed.string("/tmp/dir/name\\").string("").string("").int_in_range(0, 0, 7777)
    seed.string("\x00\x01\r\n--\r\n")
    write("multipart", "upload_two_files", seed.bytes())
    # Mode 2: bodies as execd's Go parser sees them.
    body = ("preamble\r\n--B\r\nContent-Disposition: form-data; name=\"metadata\"; filename=\"metadata\"\r\n"
            "Content-Type: application/json\r\n\r\n{\"path\":\"/x\"}\r\n--B \t\r\n"
            "content-disposition: form-data; name=file; filename=\"q\\\"uoted\"\r\n\r\ndata\r\n--B--\r\nepilogue")
    seed = Input().int_in_range(2, 0, 2).string("multipart/form-data; boundary=\"B\"").boolean(True).rest(body)
    write("multipart", "parse_execd_body", seed.bytes())
    seed = Input().int_in_range(2, 0, 2).string("multipart/form-data; charset=utf-8; boundary=abx-form-1")
    seed.boolean(True).rest("--abx-form-1\r\nX: y\r\n\r\n\r\n--abx-form-1")
    write("multipart", "parse_no_close", seed.bytes())


def config_seeds():
    fields = ["base_url", "domain", "protocol", "api_key", "use_server_proxy", "default_image",
              "image_aliases", "entrypoint", "ready_timeout", "request_timeout", "default_timeout",
              "registry_username", "registry_password", "network_policy", "platform",
              "secure_access", "execd_access_token"]
    sets = {
        "typical": {"base_url": "http://127.0.0.1:8080", "api_key": "k-123456",
                    "ready_timeout": "60", "default_timeout": "600"},
        "domain_https": {"domain": "sandbox.example.com:443/api", "protocol": "HTTPS",
                         "use_server_proxy": "true", "secure_access": "yes"},
        "policy": {"network_policy": j({"defaultAction": "deny", "egress": [
            {"action": "allow", "target": "pypi.org"}, {"action": "allow", "target": "*.github.com"}]})},
        "aliases_entrypoint": {"image_aliases": j({"py": "python:3.12-slim", "node": "node:22"}),
                               "entrypoint": j(["tail", "-f", "/dev/null"]),
                               "default_image": "ubuntu:24.04", "platform": "linux/arm64"},
        "registry": {"registry_username": "bot", "registry_password": "s3cret-pass",
                     "execd_access_token": "tok-abcdef"},
        "bad_values": {"ready_timeout": "abc", "default_timeout": "30", "protocol": "ftp"},
        "bad_json": {"network_policy": "{\"defaultAction\":", "image_aliases": "[]",
                     "entrypoint": "[]"},
        "no_host": {"base_url": "http:///"},
        "deep_policy": {"network_policy": "\x01\xff["},
    }
    for name, values in sets.items():
        seed = Input().int_in_range(len(values), 0, 8)
        for field, value in values.items():
            seed.int_in_range(fields.index(field), 0, len(fields))
            seed.string(value)
            seed.boolean("\x01" in value)
        write("config", name, seed.bytes())
    seed = Input().int_in_range(1, 0, 8).int_in_range(len(fields), 0, len(fields)).string("colour")
    seed.string("blue").boolean(False)
    write("config", "unknown_field", seed.bytes())


def config_toml_seeds():
    files = {
        "full": """# ~/.abx/config.toml
[providers.opensandbox]
base_url = "http://127.0.0.1:8080"
api_key = "k-123"
use_server_proxy = false
ready_timeout = 60
request_timeout = 12.5
default_timeout = 0
image_aliases = { py = "python:3.12-slim", "node 22" = "node:22" }
entrypoint = ["tail", "-f", "/dev/null"]
network_policy = { defaultAction = "deny", egress = [{ action = "allow", target = "pypi.org" }] }
platform = "linux/amd64"
""",
        "other_providers": """[providers.e2b]
api_key = "x"

[providers.opensandbox]
domain = 'localhost:8080'
protocol = "http"
""",
        "dates_and_odd_numbers": """[providers.opensandbox]
ready_timeout = inf
request_timeout = nan
default_timeout = 0x10
registry_username = 1979-05-27T07:32:00Z
registry_password = 07:32:00
platform = 1979-05-27
""",
        "multiline_strings": '[providers.opensandbox]\napi_key = """\nline\n"""\nbase_url = \'\'\'http://h\'\'\'\n',
        "providers_not_table": "providers = 3\n",
        "section_not_table": "[providers]\nopensandbox = \"x\"\n",
        "array_of_tables": "[[providers.opensandbox]]\napi_key = 'a'\n",
        "broken": "[providers.opensandbox\napi_key = \n",
        "bad_header": "[+]\n",
        "non_ascii_key": "[providers.opensandbox]\n\u00e9 = 1\n",
        "empty": "",
    }
    for name, text in files.items():
        seed = Input()
        for _ in range(5):
            seed.int_in_range(1, 0, 3)  # no variable set
        write("config_toml", name, seed.rest(text).bytes())
    seed = Input().int_in_range(0, 0, 3).string("env-key-1").int_in_range(1, 0, 3)
    seed.int_in_range(0, 0, 3).string("http://env:1").int_in_range(1, 0, 3).int_in_range(0, 0, 3)
    seed.string("7")
    write("config_toml", "environment_wins", seed.rest(files["full"]).bytes())


def opensandbox_json_seeds():
    sandbox = {"id": "3f1c0a6e-1b2c-4d5e-8f90-a1b2c3d4e5f6", "image": {"uri": "python:3.12-slim"},
               "status": {"state": "Running", "reason": "", "message": "",
                          "lastTransitionAt": "2026-12-02T12:00:00Z"},
               "metadata": {"team": "a", "abx.session": "s1"},
               "entrypoint": ["tail", "-f", "/dev/null"],
               "expiresAt": "2026-12-02T12:10:00.123456Z", "createdAt": "2026-12-02T12:00:00Z"}
    created = {"id": sandbox["id"], "status": {"state": "Pending"}, "metadata": {},
               "expiresAt": "2026-12-02T12:10:00Z", "createdAt": "2026-12-02T12:00:00.5Z",
               "entrypoint": ["tail", "-f", "/dev/null"]}
    bodies = {
        0: {"sandbox": j(sandbox), "create_response": j(created),
            "snapshot_sandbox": j({"id": "x", "snapshotId": "snap", "status": {"state": "Paused"}}),
            "no_status": j({"id": "x"})},
        1: {"page": j({"items": [sandbox, created], "pagination": {"page": 1, "pageSize": 20,
                                                                   "totalItems": 2, "totalPages": 1,
                                                                   "hasNextPage": False}}),
            "empty_page": j({"items": [], "pagination": {"totalItems": 0, "hasNextPage": False}}),
            "total_as_float": j({"items": [], "pagination": {"totalItems": 1e300}})},
        2: {"endpoint": j({"endpoint": "10.57.1.91:40109/proxy/44772"}),
            "endpoint_headers": j({"endpoint": "gw.example.com/3f1c/8080",
                                   "headers": {"OpenSandbox-Ingress-To": "3f1c-8080",
                                               "OPENSANDBOX-EGRESS-AUTH": "tok"}})},
        3: {"status_running": j({"id": "9f0c", "content": "sleep 9", "running": True,
                                 "started_at": "2026-12-02T12:00:00.123456789Z"}),
            "status_done": j({"id": "9f0c", "running": False, "exit_code": -1,
                              "error": "signal: killed", "started_at": "2026-12-02T12:00:00Z",
                              "finished_at": "2026-12-02T12:00:03Z"}),
            "status_huge_exit": j({"id": "9f0c", "running": False, "exit_code": 1e300})},
        4: {"file_infos": j([{"path": "/tmp/a.txt", "type": "file", "size": 12,
                              "modified_at": "2026-12-02T12:00:00Z", "created_at": "2026-12-02T12:00:00Z",
                              "owner": "root", "group": "root", "mode": 644},
                             {"path": "/tmp/d", "type": "directory", "size": 4096, "mode": "755"}]),
            "file_info_huge_size": j({"path": "/x", "size": 1e300}),
            "file_info_null": "null"},
        5: {"lifecycle_error": j({"code": "DOCKER::SANDBOX_NOT_FOUND", "message": "sandbox x not found"}),
            "fastapi_422": j({"detail": [{"loc": ["body", "timeout"], "msg": "too small", "type": "x"}]}),
            "not_found": j({"detail": "Not Found"}),
            "execd_error": j({"code": "FILE_NOT_FOUND", "message": "open /x: no such file"}),
            "metrics_error": j({"error": "boom"}),
            "plain_text": "Internal Server Error",
            "empty": ""},
        6: {"metrics": j({"cpu_count": 2, "cpu_used_pct": 12.5, "mem_total_mib": 24032.1,
                          "mem_used_mib": 3100, "timestamp": 1764936000123}),
            "metrics_strings": j({"cpu_count": "2", "cpu_used_pct": None, "timestamp": 1e300})},
    }
    statuses = {5: [404, 422, 500, 503, 401, 409, 416, 200]}
    for which, group in bodies.items():
        for i, (name, body) in enumerate(group.items()):
            status = statuses.get(which, [200])[i % len(statuses.get(which, [200]))]
            seed = Input().int_in_range(which, 0, 6).int_in_range(status, 100, 599)
            seed.string("req-%d" % i).boolean(False).rest(body)
            write("opensandbox_json", name, seed.bytes())
    for which, name, body in ((0, "deep_sandbox", b'{"id":"x","status":{},"metadata":' + REPEAT + b"\xff["),
                              (1, "deep_page", b'{"items":' + REPEAT + b"\xff["),
                              (5, "deep_error", b'{"message":' + REPEAT + b"\xff{"),
                              (5, "invalid_utf8_error", b'{"code":"X","message":"\xff\xfe bad"}')):
        seed = Input().int_in_range(which, 0, 6).int_in_range(500, 100, 599)
        seed.string(b"req-\xc1" if which == 5 else "r").boolean(REPEAT in body).rest(body)
        write("opensandbox_json", name, seed.bytes())


def plain_seeds():
    stamps = ["2026-12-02T12:00:00Z", "2026-12-02T12:00:00.123456Z", "2026-12-02T12:00:00.123456789Z",
              "2026-12-02T12:00:00+05:30", "2026-12-02 12:00:00", "2026-12-02T12:00:60Z",
              "0000-01-01T00:00:00-23:59", "9999-12-31T23:59:59.999+00:00", "2026-02-31T00:00:00Z",
              "Wed, 02 Dec 2026 12:00:00 GMT", "Wed, -1 Dec 2026 12:00:00 GMT", ""]
    for i, stamp in enumerate(stamps):
        write("time_util", "stamp_%02d" % i, stamp.encode())
    for i, data in enumerate([b"", b"hi", b"aGk=", b"aGk=\n", b"YWJj\r\nZGVm", b"AB==", b"====",
                              bytes(range(256))]):
        write("base64", "case_%02d" % i, data)
    for i, data in enumerate(["h\u00e9llo \u20ac \U0001F600".encode(), b"\xed\xa0\x80", b"\xf4\x90\x80\x80",
                              b"\xc0\xaf", b"\xe2\x82", b"abc\xff", b"\xef\xbb\xbfBOM", b"\x00"]):
        write("utf8", "case_%02d" % i, data)


def write_prefix_seeds():
    data = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8g"
    lines = {
        "plain": '{"jsonrpc":"2.0","id":5,"method":"files.write","params":{"sandbox_id":"s",'
                 '"path":"/tmp/a.bin","encoding":"base64","data":"' + data,
        "all_members": '{"jsonrpc":"2.0","id":"w-1","method":"files.write","params":{"sandbox_id":"s",'
                       '"path":"/a b","encoding":"base64","append":true,"mode":"0640","data":"' + data + '"}}',
        "reordered": ' { "params" : { "path" : "/p" , "data" : "' + data + '" }, "method" : "files.write" }',
        "blanks_and_others": '{ "method" : "files.write" , "x" : -1.5e3 , "params" : { "n" : null , '
                             '"sandbox_id" : "s" , "path" : "/p" , "data" : "' + data,
        "escape_in_path": '{"method":"files.write","params":{"sandbox_id":"s","path":"/a\\"b","data":"' + data,
        "nested": '{"method":"files.write","params":{"sandbox_id":"s","path":"/p","x":{"y":[1]},"data":"' + data,
        "long_path": '{"method":"files.write","params":{"sandbox_id":"s","path":"/\x01\x40a","data":"' + data,
    }
    for name, line in lines.items():
        write("write_prefix", name, line.encode("latin-1"))


def varint(value):
    out = b""
    while value >= 0x80:
        out += bytes([(value & 0x7F) | 0x80])
        value >>= 7
    return out + bytes([value])


def pb_bytes(field, data):
    if isinstance(data, str):
        data = data.encode()
    return varint(field << 3 | 2) + varint(len(data)) + data


def grpc_message(body, flags=0):
    return bytes([flags]) + len(body).to_bytes(4, "big") + body


def shim_wire_seeds():
    """SessionOutput messages as the bridge streams them (proto/bridge.proto)."""
    response = pb_bytes(1, '{"jsonrpc":"2.0","id":7,"result":{"exec_id":"ab12"}}') + pb_bytes(2, "7")
    notification = pb_bytes(1, '{"jsonrpc":"2.0","method":"exec.output","params":{"data":"aGk="}}')
    unknown = varint(9 << 3 | 0) + varint(300) + pb_bytes(1, "line") + \
        varint(10 << 3 | 5) + b"\x01\x02\x03\x04" + varint(11 << 3 | 3) + varint(1 << 3 | 0) + b"\x05" + \
        varint(11 << 3 | 4) + pb_bytes(2, '"a"') + varint(12 << 3 | 1) + b"\x00" * 8
    streams = {
        "one_response": grpc_message(response),
        "notification_then_response": grpc_message(notification) + grpc_message(response),
        "unknown_fields": grpc_message(unknown),
        "repeated_fields": grpc_message(response + pb_bytes(1, "later line") + pb_bytes(2, '"z"')),
        "empty_message": grpc_message(b""),
        "compressed": grpc_message(response, flags=1),
        "over_the_limit": (300).to_bytes(5, "big"),
        "cut_mid_message": grpc_message(response)[:-7],
        "cut_mid_prefix": b"\x00\x00\x00",
        "bad_group": grpc_message(varint(4 << 3 | 3) + varint(5 << 3 | 4)),
    }
    for name, stream in streams.items():
        for small_limit in (False, True):
            seed = Input()
            seed.int_in_range(2, 0, 4).string("api_key").string("k-123").string("base_url")
            seed.string("http://127.0.0.1:8080")
            seed.int_in_range(4242, -2**31, 2**31 - 1).string('{"jsonrpc":"2.0","id":1,"method":"initialize"}')
            seed.string('{"jsonrpc":"2.0","id":2,"method":"provider.info"}')
            seed.boolean(not small_limit)
            if small_limit:
                seed.int_in_range(64, 0, 200)
            seed.int_in_range(3, 1, 8).int_in_range(1, 1, 64).int_in_range(5, 1, 64).int_in_range(17, 1, 64)
            seed.rest(stream)
            write("shim_wire", name + ("_small_limit" if small_limit else ""), seed.bytes())


if __name__ == "__main__":
    corpus = os.path.join(HERE, "corpus")
    # Seeds are rewritten; inputs that once failed (regress-*) stay.
    for folder, _, names in os.walk(corpus):
        for name in names:
            if not name.startswith("regress-"):
                os.remove(os.path.join(folder, name))
    epp_seeds()
    line_splitter_seeds()
    sse_seeds()
    multipart_seeds()
    config_seeds()
    config_toml_seeds()
    opensandbox_json_seeds()
    plain_seeds()
    shim_wire_seeds()
    write_prefix_seeds()
    for target in sorted(os.listdir(corpus)):
        print("%-18s %3d seeds" % (target, len(os.listdir(os.path.join(corpus, target)))))
