"""REST latency of a ferry worker with TLS and authentication off and on, beside Kafka Connect.

Standard library only; bench/run imports it (`--scenarios rest`). For each variant one standalone
worker with one FileStreamSource connector is started and a client on the same host measures:

  keepalive_us   GET /connectors/<name>/status, --rest-requests times on one reused connection
                 (median and p99 in microseconds)
  new_conn_us    the same request on a new connection each time (TCP, and TLS handshake where on),
                 200 times (median and p99)
  startup_ms     process start until GET /health answers (median of 3)
  rss_mb         VmRSS after the measurement

Variants: ferry `plain` (http, no authentication), `tls+basic` (https, HTTP basic against a users
file of PBKDF2 hashes; the worker caches a verified credential, so only the first request pays the
hash), `tls+bearer` (https, a bearer token), and Kafka Connect 4.1.1 standalone over plain http
(its default; the peer object carries ratios connect/ferry-plain, > 1 means ferry answers faster).
"""
import base64
import http.client
import json
import os
import shutil
import ssl
import statistics
import subprocess
import time

from harness import FERRY_BIN, Worker, free_port, tmpdir

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def make_certs(d):
    """A test CA and a server certificate for 127.0.0.1 (scripts/services/certs.sh)."""
    certs = os.path.join(d, "certs")
    subprocess.run(["bash", "-c", 'log() { :; }; source "$0"; gen_certs "$1" bench "$2"',
                    os.path.join(ROOT, "scripts", "services", "certs.sh"), certs,
                    os.path.join(d, "certs.log")], check=True)
    keystore = os.path.join(certs, "server.pem")
    with open(keystore, "w") as out:
        for f in ("server.key", "server.crt"):
            with open(os.path.join(certs, f)) as src:
                out.write(src.read())
    os.chmod(keystore, 0o600)
    return certs, keystore


def auth_files(d):
    """A users file with admin:admin-password and a tokens file with one admin token."""
    users = os.path.join(d, "users")
    line = subprocess.run([FERRY_BIN, "passwd", "admin", "admin"], input="admin-password\n",
                          capture_output=True, text=True, check=True).stdout.strip().splitlines()[-1]
    with open(users, "w") as f:
        f.write(line + "\n")
    out = subprocess.run([FERRY_BIN, "token", "bench", "admin"], capture_output=True, text=True,
                         check=True).stdout.strip().splitlines()
    token = next(l.split(":", 1)[1].strip() for l in out if l.lower().startswith("token:"))
    tokens = os.path.join(d, "tokens")
    with open(tokens, "w") as f:
        f.write(next(l for l in out if l.startswith("bench:")) + "\n")
    return users, tokens, token


class Client:
    def __init__(self, port, tls_ca=None, headers=None):
        self.port, self.headers = port, dict(headers or {})
        self.ctx = ssl.create_default_context(cafile=tls_ca) if tls_ca else None

    def connect(self):
        if self.ctx:
            return http.client.HTTPSConnection("127.0.0.1", self.port, context=self.ctx, timeout=10)
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)

    def get(self, conn, path):
        conn.request("GET", path, headers=self.headers)
        r = conn.getresponse()
        body = r.read()
        if r.status != 200:
            raise AssertionError(f"GET {path} -> {r.status}: {body[:200]!r}")


def measure(client, path, requests):
    conn = client.connect()
    client.get(conn, path)  # warm: connection, TLS session, credential cache
    keep = []
    for _ in range(requests):
        t = time.perf_counter()
        client.get(conn, path)
        keep.append(time.perf_counter() - t)
    conn.close()
    fresh = []
    for _ in range(200):
        t = time.perf_counter()
        c = client.connect()
        client.get(c, path)
        fresh.append(time.perf_counter() - t)
        c.close()
    q = lambda xs, p: sorted(xs)[min(len(xs) - 1, int(len(xs) * p))] * 1e6  # noqa: E731
    return {"keepalive_us_median": round(statistics.median(keep) * 1e6, 1),
            "keepalive_us_p99": round(q(keep, 0.99), 1),
            "new_conn_us_median": round(statistics.median(fresh) * 1e6, 1),
            "new_conn_us_p99": round(q(fresh, 0.99), 1), "requests": requests}


def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) * 1024 / 1e6, 1)
    return 0.0


def ferry_variant(variant, requests, certs, keystore, users, tokens, token):
    headers, ca = {}, None
    if variant == "tls+basic":
        headers["Authorization"] = "Basic " + base64.b64encode(b"admin:admin-password").decode()
    elif variant == "tls+bearer":
        headers["Authorization"] = "Bearer " + token
    starts, result = [], None
    for run in range(3):
        wd = tmpdir(f"bench-rest-{run}")
        port = free_port()
        files = os.path.join(wd, "data", "files")
        extra = {"rest.port": str(port), "file.allowed.dirs": files}
        if variant != "plain":
            ca = os.path.join(certs, "ca.crt")
            extra.update({"listeners": f"https://127.0.0.1:{port}",
                          "listeners.https.ssl.keystore.location": keystore,
                          "listeners.https.ssl.keystore.type": "PEM",
                          "rest.auth.users.file": users, "rest.auth.tokens.file": tokens})
        w = Worker(wd, extra)
        client = Client(port, ca, headers)
        t0 = time.time()
        with open(w.log_path, "ab") as log:
            w.proc = subprocess.Popen([FERRY_BIN, "standalone", w.props], stdout=log,
                                      stderr=subprocess.STDOUT, cwd=wd)
        try:
            while True:
                try:
                    c = client.connect()
                    client.get(c, "/health")
                    c.close()
                    break
                except (OSError, AssertionError, http.client.HTTPException):
                    if w.proc.poll() is not None or time.time() > t0 + 30:
                        raise AssertionError(f"ferry ({variant}) did not answer:\n{w.tail_log()}")
                    time.sleep(0.005)
            starts.append(time.time() - t0)
            if run == 0:
                os.makedirs(files, exist_ok=True)
                src = os.path.join(files, "in.txt")
                open(src, "w").close()
                body = json.dumps({"name": "src", "config": {
                    "connector.class": "FileStreamSource", "tasks.max": "1", "file": src,
                    "topic": "t"}}).encode()
                c = client.connect()
                c.request("POST", "/connectors", body=body,
                          headers={**headers, "Content-Type": "application/json"})
                r = c.getresponse()
                r.read()
                c.close()
                if r.status != 201:
                    raise AssertionError(f"create -> {r.status}\n{w.tail_log()}")
                result = measure(client, "/connectors/src/status", requests)
                result["rss_mb"] = rss_mb(w.proc.pid)
        finally:
            w.stop()
            shutil.rmtree(wd, ignore_errors=True)
    result["startup_ms_median"] = round(statistics.median(starts) * 1000, 1)
    return {"scenario": "rest", "variant": variant, **result}


def connect_peer(kc, broker, requests, plain):
    broker.start()
    d = tmpdir("bench-rest-connect")
    w = kc.ConnectStandalone(d, broker.bootstrap)
    try:
        w.start()
        src = os.path.join(d, "in.txt")
        open(src, "w").close()
        w.ok("POST", "/connectors", {"name": "src", "config": {
            "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector",
            "tasks.max": "1", "file": src, "topic": "bench-rest"}})
        time.sleep(2)
        r = measure(Client(w.port), "/connectors/src/status", requests)
        r["rss_mb"] = rss_mb(w.pid)
        out = {"scenario": "rest", "peer": "kafka-connect", "variant": "plain", **r}
        out["ratio"] = {k: round(r[k] / plain[k], 2) for k in
                        ("keepalive_us_median", "new_conn_us_median") if plain.get(k)}
        return out
    finally:
        w.stop()
        shutil.rmtree(d, ignore_errors=True)


def scenario(requests, peers, kc=None, broker=None, guard=None):
    d = tmpdir("bench-rest")
    try:
        certs, keystore = make_certs(d)
        users, tokens, token = auth_files(d)
        results = []
        for v in ("plain", "tls+basic", "tls+bearer"):
            r = ferry_variant(v, requests, certs, keystore, users, tokens, token)
            results.append(r)
            yield r
        if peers and kc is not None:
            yield guard("rest", lambda: connect_peer(kc, broker, requests, results[0]))
    finally:
        shutil.rmtree(d, ignore_errors=True)
