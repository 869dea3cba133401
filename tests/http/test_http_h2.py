"""HttpSink's http.version against a real HTTPS server that speaks HTTP/2: tests/http/h2target (Go,
standard library only, built with the Go toolchain into ~/.cache/ferry-peers/h2target/ when its
source changed), which records r.ProtoMajor of every request and counts connections (ConnState
StateNew, and which connection carried each request).

A DatagenSource writes N sequence-numbered records to a topic; HttpSinks read it, one request per
record (http.batch.format=one, so N requests each), 4 lanes:
  (a) http.version=auto and http.version=2 against the h2 server: every request over HTTP/2, every
      record arrived, and all of them over at most 4 connections (multiplexed / reused, not one
      per request);
  (b) http.version=1.1 against the same server: every request over HTTP/1.1, all records, at most
      4 connections (keep-alive);
  (c) http.version=auto and http.version=2 against a server offering HTTP/1.1 only (no h2 in
      ALPN): HTTP/1.1, all records.
"""
import hashlib
import json
import os
import shutil
import ssl
import subprocess
import urllib.request

from http_env import make_ca, make_cert, port_open
from harness import Worker, free_port, run, tmpdir, wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "h2target")
BIN = os.path.join(os.path.expanduser("~"), ".cache", "ferry-peers", "h2target", "h2target")
N = 3000
LANES = 4


def go_binary():
    for g in (shutil.which("go"), "/usr/local/go/bin/go"):
        if g and os.access(g, os.X_OK):
            return g
    raise AssertionError("no Go toolchain (go on PATH or /usr/local/go/bin/go): tests/http/h2target needs one")


def build():
    """Builds h2target into BIN unless BIN was built from the same source."""
    h = hashlib.sha256()
    for name in sorted(os.listdir(SRC)):
        with open(os.path.join(SRC, name), "rb") as f:
            h.update(name.encode() + b"\0" + f.read())
    stamp = BIN + ".src"
    if os.path.exists(BIN) and os.path.exists(stamp) and open(stamp).read() == h.hexdigest():
        return
    os.makedirs(os.path.dirname(BIN), exist_ok=True)
    p = subprocess.run([go_binary(), "build", "-trimpath", "-o", BIN + ".tmp", "."], cwd=SRC, capture_output=True,
                       text=True, timeout=600, env={**os.environ, "GOFLAGS": "-buildvcs=false", "GOTOOLCHAIN": "local"})
    assert p.returncode == 0, f"building h2target failed: {p.stderr[-1500:]}"
    os.replace(BIN + ".tmp", BIN)
    with open(stamp, "w") as f:
        f.write(h.hexdigest())


class H2Target:
    def __init__(self, d, name, cert, key, ca, http1=False):
        self.port = free_port()
        self.out = os.path.join(d, name)
        os.makedirs(self.out)
        self.url = f"https://127.0.0.1:{self.port}"
        self.context = ssl.create_default_context(cafile=ca)
        self.args = [BIN, "-listen", f"127.0.0.1:{self.port}", "-cert", cert, "-key", key, "-out", self.out]
        if http1:
            self.args.append("-http1")
        self.name = name
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen(self.args, stdout=subprocess.DEVNULL,
                                     stderr=open(os.path.join(self.out, "target.err"), "ab"))
        wait_until(lambda: self.proc.poll() is None and port_open(self.port), 20, f"h2target {self.name}")

    def stats(self):
        with urllib.request.urlopen(self.url + "/_stats", timeout=10, context=self.context) as r:
            return json.loads(r.read())

    def path(self, name):
        return self.stats()["paths"].get(name, {"requests": 0, "records": 0, "proto": {}, "conns": 0})

    def seqs(self, name):
        try:
            with open(os.path.join(self.out, name + ".txt")) as f:
                return [int(l.split("-", 1)[1]) for l in f.read().splitlines() if "-" in l]
        except FileNotFoundError:
            return []

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def main():
    build()
    d = tmpdir("http-h2")
    ca = make_ca(os.path.join(d, "pki"), "test-ca")
    cert, key = make_cert(os.path.join(d, "pki"), "server", ca, "127.0.0.1", server=True)
    h2 = H2Target(d, "h2", cert, key, ca[0])
    h1 = H2Target(d, "h1", cert, key, ca[0], http1=True)
    w = Worker(d, {"task.restart.backoff.initial.ms": "200", "task.restart.backoff.max.ms": "1000"})
    try:
        h2.start()
        h1.start()
        w.start()
        w.ok("POST", "/connectors", {"name": "gen", "config": {
            "connector.class": "DatagenSource", "topic": "h2", "format": "string", "key.mode": "seq",
            "max.records": str(N)}})
        cases = [("auto", h2, "auto", "2"), ("forced", h2, "2", "2"), ("h11", h2, "1.1", "1"),
                 ("fallback", h1, "auto", "1"), ("forcedfallback", h1, "2", "1")]
        for name, target, version, _ in cases:
            w.ok("POST", "/connectors", {"name": f"sink-{name}", "config": {
                "connector.class": "HttpSink", "topics": "h2", "http.url": f"{target.url}/{name}",
                "http.batch.format": "one", "http.content.type": "text/plain", "http.version": version,
                "http.max.in.flight": str(LANES), "http.ssl.ca.location": ca[0]}})
        for name, target, version, proto in cases:
            wait_until(lambda: set(target.seqs(name)) >= set(range(N)), 90,
                       f"({name}) all {N} records at the target", 0.2)
            s = target.path(name)
            got = target.seqs(name)
            assert s["requests"] >= N, s
            assert s["proto"] == {proto: s["requests"]}, \
                f"({name}) http.version={version}: requests by HTTP major version {s['proto']}, expected all {proto}"
            assert 1 <= s["conns"] <= LANES, \
                f"({name}) {s['requests']} requests over {s['conns']} connections (more than the {LANES} lanes)"
            print(f"({name}) http.version={version}{' (server without h2)' if target is h1 else ''}: {N} records, "
                  f"{len(got) - len(set(got))} duplicates, {s['requests']} requests all HTTP/{proto if proto == '2' else '1.1'}, "
                  f"over {s['conns']} connection(s)", flush=True)
        opened = h2.stats()["conns_opened"]
        print(f"h2 server: {opened} connections accepted in all for {3 * N}+ requests (and the test's own)", flush=True)
        assert w.stop() == 0
    finally:
        h2.stop()
        h1.stop()


if __name__ == "__main__":
    run(main)
