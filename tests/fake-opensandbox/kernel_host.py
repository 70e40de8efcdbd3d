"""One Jupyter kernel for the fake execd's /code routes, driven over stdin/stdout.

The fake (tests/fake-opensandbox/kernel_process.h) runs this source under
/usr/bin/python3 (Debian's python3-ipykernel and python3-jupyter-client load only
there), from the environment variable FAKE_KERNEL_HOST_PY, in the working directory the
kernel gets. It starts an IPython kernel
(Debian's python3-ipykernel, through jupyter_client) and prints one JSON line per
event:
  {"event":"ready","kernel_pid":N}        the kernel answers (again, after a restart)
  {"event":"message","msg_type":T,"content":{...}}   a kernel message of the run
  {"event":"done"}                         the run is over (idle seen, then the reply
                                           or REPLY_GRACE_S without one)
  {"event":"died"}                         the kernel died during the run; a restarted
                                           kernel follows with "ready" (state lost),
                                           as Jupyter's restarter does
Each stdin line is one run: {"code":"..."}. Messages are passed on as the kernel sent
them, in order; only those of this run (by parent msg_id) are passed.
"""
import json
import os
import queue
import sys
import time

from jupyter_client.manager import KernelManager

OUT = sys.stdout

# An interrupt that lands as the kernel takes the request can leave it idle with no
# execute_reply. execd ends the run at idle (a plain idle gives only execution_complete),
# so a run's end never waits on a reply that may not come: this long at most.
REPLY_GRACE_S = 0.5


def emit(obj):
    OUT.write(json.dumps(obj, separators=(",", ":")) + "\n")
    OUT.flush()


def start(cwd):
    # Kernels started at once can pick the same free port (jupyter_client finds its ports
    # by binding and releasing them), and one of them then dies at start: try again.
    for attempt in range(3):
        try:
            return start_once(cwd)
        except Exception as error:  # noqa: BLE001 - any failure to start is retried
            print("kernel start failed (attempt %d): %r" % (attempt + 1, error), file=sys.stderr)
            time.sleep(0.2)
    return start_once(cwd)


def start_once(cwd):
    km = KernelManager(kernel_name="python3")
    # The debugger's start-up warnings would only fill the fake's log.
    km.start_kernel(cwd=cwd, env=dict(os.environ, PYDEVD_DISABLE_FILE_VALIDATION="1"))
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
    except Exception:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
        raise
    # Drain the messages of wait_for_ready's kernel_info_request.
    while True:
        try:
            kc.get_iopub_msg(timeout=0.2)
        except queue.Empty:
            break
    emit({"event": "ready", "kernel_pid": km.provisioner.process.pid})
    return km, kc


def run(km, kc, code):
    """Returns False when the kernel died."""
    msg_id = kc.execute(code, silent=False, store_history=True, allow_stdin=False,
                        stop_on_error=True)
    idle = False
    while not idle:
        try:
            msg = kc.get_iopub_msg(timeout=0.5)
        except queue.Empty:
            if not km.is_alive():
                return False
            continue
        if msg.get("parent_header", {}).get("msg_id") != msg_id:
            continue
        msg_type = msg["header"]["msg_type"]
        emit({"event": "message", "msg_type": msg_type, "content": msg["content"]})
        if msg_type == "status" and msg["content"].get("execution_state") == "idle":
            idle = True
    give_up = time.monotonic() + REPLY_GRACE_S
    while time.monotonic() < give_up:
        try:
            reply = kc.get_shell_msg(timeout=0.2)
        except queue.Empty:
            if not km.is_alive():
                return False
            continue
        if reply.get("parent_header", {}).get("msg_id") == msg_id:
            emit({"event": "message", "msg_type": "execute_reply", "content": reply["content"]})
            return True
    # A reply that comes later belongs to no run: the next run's loop skips it by msg_id.
    return True


def main():
    os.environ.pop("FAKE_KERNEL_HOST_PY", None)  # the kernel need not see this source
    cwd = os.getcwd()
    km, kc = start(cwd)
    for line in sys.stdin:
        request = json.loads(line)
        if run(km, kc, request["code"]):
            emit({"event": "done"})
            continue
        emit({"event": "died"})
        kc.stop_channels()
        km.cleanup_resources()
        km, kc = start(cwd)
    kc.stop_channels()
    km.shutdown_kernel(now=True)


if __name__ == "__main__":
    main()
