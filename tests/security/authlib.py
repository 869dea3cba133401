"""Shared by the REST security tests: credentials made with `ferry passwd` / `ferry token`, raw HTTP
requests with any headers (http.client, so no header is added behind the test's back), and the
route table read from src/rest/README.md."""
import base64
import http.client
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))

from harness import FERRY_BIN  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
ITERATIONS = "10000"  # fast enough for a test; the default is 600000


def passwd_line(name, role, password):
    p = subprocess.run([FERRY_BIN, "passwd", name, role, "--iterations", ITERATIONS], input=password + "\n",
                       capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, f"ferry passwd {name} {role} -> {p.returncode}: {p.stderr.strip()}"
    line = p.stdout.strip()
    assert line.startswith(f"{name}:{role}:pbkdf2-sha256$") and password not in line, line
    return line


def token_line(name, role):
    """-> (token, file line)"""
    p = subprocess.run([FERRY_BIN, "token", name, role], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0, f"ferry token {name} {role} -> {p.returncode}: {p.stderr.strip()}"
    fields = dict(l.split(":", 1) for l in p.stdout.splitlines() if ":" in l)
    token, line = fields["token"].strip(), fields["line"].strip()
    assert len(token) >= 43 and token not in line and line.startswith(f"{name}:{role}:"), p.stdout
    return token, line


def basic(user, password):
    return "Basic " + base64.b64encode(f"{user}:{password}".encode()).decode()


def request(port, method, path, body=None, headers=None, host=None, timeout=10):
    """-> (status, headers as a list of (name, value), parsed JSON or text). `body` (str/bytes) is
    sent as is; only the headers given are sent besides Host (and Content-Length with a body)."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
        conn.putheader("Host", host if host is not None else f"127.0.0.1:{port}")
        data = body.encode() if isinstance(body, str) else body
        for k, v in (headers or {}).items():
            conn.putheader(k, v)
        if data is not None:
            conn.putheader("Content-Length", str(len(data)))
        conn.endheaders(data)
        r = conn.getresponse()
        text = r.read().decode(errors="replace")
        try:
            payload = json.loads(text) if text.strip() else None
        except ValueError:
            payload = text
        return r.status, r.getheaders(), payload
    finally:
        conn.close()


def header_values(headers, name):
    return [v for k, v in headers if k.lower() == name.lower()]


def readme_routes():
    """[(method, pattern, role)] from the routes x roles table of src/rest/README.md."""
    rows = []
    with open(os.path.join(ROOT, "src", "rest", "README.md")) as f:
        for line in f:
            m = re.match(r"^\| (GET|POST|PUT|PATCH|DELETE) \| `([^`]*)` \| (open|viewer|operator|admin) \|\s*$", line)
            if m:
                rows.append((m.group(1), m.group(2), m.group(3)))
    assert len(rows) >= 40, f"the routes x roles table of src/rest/README.md has only {len(rows)} rows"
    return rows


class Checks:
    """Runs named checks, records failures and goes on, so one run against an old binary shows
    every defence that is missing; fail() at the end raises if any check failed."""

    def __init__(self):
        self.failed = []

    def run(self, name, fn):
        try:
            fn()
            print(json.dumps({"check": name, "result": "pass"}), flush=True)
        except (AssertionError, OSError, KeyError, subprocess.SubprocessError) as e:
            self.failed.append(name)
            print(json.dumps({"check": name, "result": "FAIL", "why": str(e)[:1500]}), flush=True)

    def fail(self):
        assert not self.failed, f"failed checks: {', '.join(self.failed)}"
