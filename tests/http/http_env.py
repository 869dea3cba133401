"""Shared pieces of the HTTP connector tests: the real target server (http_target.py, its own
process) and small HTTP helpers. Standard library only."""
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

from harness import wait_until  # noqa: E402


def port_open(port, host="127.0.0.1"):
    try:
        socket.create_connection((host, port), timeout=1).close()
        return True
    except OSError:
        return False


class Target:
    """tests/http/http_target.py on `port`, writing what it accepts under `out_dir`."""

    def __init__(self, port, out_dir, extra=()):
        self.port = port
        self.out_dir = out_dir
        self.extra = list(extra)
        self.proc = None
        self.url = f"http://127.0.0.1:{port}"
        os.makedirs(out_dir, exist_ok=True)

    def start(self):
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "http_target.py"), "--port", str(self.port),
                                      "--out", self.out_dir, *self.extra],
                                     stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.out_dir, "target.err"), "ab"))
        wait_until(lambda: port_open(self.port), 20, f"http_target on {self.port}")

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def control(self, **state):
        req = urllib.request.Request(self.url + "/_control", data=json.dumps(state).encode(), method="POST")
        with urllib.request.urlopen(req, timeout=10) as r:
            r.read()

    def stats(self):
        with urllib.request.urlopen(self.url + "/_stats", timeout=10) as r:
            return json.loads(r.read())

    def lines(self, name):
        try:
            with open(os.path.join(self.out_dir, name + ".txt")) as f:
                return f.read().splitlines()
        except FileNotFoundError:
            return []


def post(url, body, headers=None, timeout=15, context=None):
    """POST `body` (bytes); returns (status, answer text). Raises OSError when there is no answer."""
    req = urllib.request.Request(url, data=body, method="POST", headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=timeout, context=context) as r:
            return r.status, r.read().decode(errors="replace")
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(errors="replace")
