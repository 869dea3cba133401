"""Shared pieces of the HTTP connector tests: the real target server (http_target.py, its own
process) and small HTTP helpers. Standard library only."""
import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

from harness import wait_until  # noqa: E402


def seqs(lines):
    """The sequence numbers of target lines "<prefix>-<n>" (other lines skipped), in order."""
    out = []
    for line in lines:
        try:
            out.append(int(line.split("-", 1)[1]))
        except (IndexError, ValueError):
            pass
    return out


def port_open(port, host="127.0.0.1"):
    try:
        socket.create_connection((host, port), timeout=1).close()
        return True
    except OSError:
        return False


class Target:
    """tests/http/http_target.py on `port`, writing what it accepts under `out_dir`. With `tls`
    (a dict: cert, key, and optionally client_ca and max_version "1.2"; ca, client_cert and
    client_key for the test's own /_control and /_stats requests) it speaks HTTPS."""

    def __init__(self, port, out_dir, extra=(), tls=None):
        self.port = port
        self.out_dir = out_dir
        self.extra = list(extra)
        self.proc = None
        self.tls = tls
        self.context = None
        self.url = f"http://127.0.0.1:{port}"
        if tls:
            self.extra += ["--tls-cert", tls["cert"], "--tls-key", tls["key"]]
            if tls.get("client_ca"):
                self.extra += ["--tls-client-ca", tls["client_ca"]]
            if tls.get("max_version"):
                self.extra += ["--tls-max", tls["max_version"]]
            self.context = ssl.create_default_context(cafile=tls["ca"])
            if tls.get("client_cert"):
                self.context.load_cert_chain(tls["client_cert"], tls["client_key"])
            self.url = f"https://127.0.0.1:{port}"
        os.makedirs(out_dir, exist_ok=True)

    def start(self):
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "http_target.py"), "--port", str(self.port),
                                      "--out", self.out_dir, *self.extra],
                                     stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.out_dir, "target.err"), "ab"))
        try:
            wait_until(lambda: self.proc.poll() is None and port_open(self.port), 20, f"http_target on {self.port}")
        except BaseException:
            self.stop()
            raise

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)

    def control(self, **state):
        req = urllib.request.Request(self.url + "/_control", data=json.dumps(state).encode(), method="POST")
        with urllib.request.urlopen(req, timeout=10, context=self.context) as r:
            r.read()

    def stats(self):
        with urllib.request.urlopen(self.url + "/_stats", timeout=10, context=self.context) as r:
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


def _openssl(*args):
    p = subprocess.run(["openssl", *args], capture_output=True, text=True)
    assert p.returncode == 0, f"openssl {' '.join(args[:2])} failed: {p.stderr}"


def make_ca(folder, name):
    """A test CA (EC P-256, 2 days): returns (cert path, key path)."""
    os.makedirs(folder, exist_ok=True)
    cert, key = os.path.join(folder, f"{name}.crt"), os.path.join(folder, f"{name}.key")
    _openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
             "-keyout", key, "-out", cert, "-days", "2", "-subj", f"/CN={name}",
             "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign,cRLSign")
    return cert, key


def make_cert(folder, name, ca, cn, server=False, password=None):
    """A certificate signed by `ca` (cert, key): for 127.0.0.1 as a server, or a client's with
    subject CN `cn`. With `password` the key file is encrypted (PKCS#8, AES-256). Returns (cert,
    key) paths."""
    cert, key, csr, ext = (os.path.join(folder, f"{name}.{x}") for x in ("crt", "key", "csr", "ext"))
    _openssl("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", key,
             "-out", csr, "-subj", f"/CN={cn}")
    with open(ext, "w") as f:
        if server:
            f.write("subjectAltName=IP:127.0.0.1\nextendedKeyUsage=serverAuth\n")
        else:
            f.write("extendedKeyUsage=clientAuth\n")
    _openssl("x509", "-req", "-in", csr, "-CA", ca[0], "-CAkey", ca[1], "-CAcreateserial", "-out", cert,
             "-days", "2", "-extfile", ext)
    if password:
        plain = key + ".plain"
        os.rename(key, plain)
        _openssl("pkey", "-in", plain, "-aes256", "-passout", f"pass:{password}", "-out", key)
        os.remove(plain)
    return cert, key
