"""HttpSink through a forwarding HTTP proxy (tests/http/http_proxy.py, its own process: absolute-URI
requests forwarded, CONNECT tunnels for https://, everything counted) to the real target
(tests/http/http_target.py, once plain HTTP and once HTTPS).

A DatagenSource writes N sequence-numbered records to a topic; HttpSinks read it:
  (a) the proxy is down: sinks with http.proxy=http://127.0.0.1:P to an http:// and an https://
      target deliver nothing, stay RUNNING and log the failure (the proxy refused); then the proxy
      is started on P: every record arrives at both targets, every request the http target got
      came through the proxy (its forwarded count for the path = the target's request count), and
      the https target's traffic went through CONNECT tunnels;
  (b) the worker is restarted with the environment variables http_proxy / https_proxy and sinks
      without http.proxy: the same holds (libcurl reads them when http.proxy is empty);
  (c) and with no_proxy=127.0.0.1 beside them a sink goes direct: all its records arrive and the
      proxy forwarded none of them.
"""
import json
import os
import subprocess
import sys
import time
import urllib.request

from http_env import Target, make_ca, make_cert, port_open, seqs
from harness import Worker, free_port, run, tmpdir, wait_until

HERE = os.path.dirname(os.path.abspath(__file__))
N = 2000
PROXY_VARS = ("http_proxy", "https_proxy", "all_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
              "NO_PROXY")


class ProxyProc:
    def __init__(self, port, log):
        self.port = port
        self.log = log
        self.proc = None

    def start(self):
        self.proc = subprocess.Popen([sys.executable, os.path.join(HERE, "http_proxy.py"), "--port", str(self.port)],
                                     stdout=subprocess.DEVNULL, stderr=open(self.log, "ab"))
        wait_until(lambda: self.proc.poll() is None and port_open(self.port), 20, f"the proxy on {self.port}")

    def stats(self):
        # Straight to the proxy (origin form), never through a proxy of the environment.
        opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
        with opener.open(f"http://127.0.0.1:{self.port}/_stats", timeout=10) as r:
            return json.loads(r.read())

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(10)


def main():
    # The worker must not inherit proxy settings of the shell this test runs in.
    for v in PROXY_VARS:
        os.environ.pop(v, None)
    d = tmpdir("http-proxy")
    pki = os.path.join(d, "pki")
    ca = make_ca(pki, "test-ca")
    server = make_cert(pki, "server", ca, "127.0.0.1", server=True)
    plain = Target(free_port(), os.path.join(d, "plain"))
    tls = Target(free_port(), os.path.join(d, "tls"), tls={"cert": server[0], "key": server[1], "ca": ca[0]})
    proxy = ProxyProc(free_port(), os.path.join(d, "proxy.err"))
    w = Worker(d, {"task.restart.backoff.initial.ms": "200", "task.restart.backoff.max.ms": "1000"})
    try:
        plain.start()
        tls.start()
        w.start()
        w.ok("POST", "/connectors", {"name": "gen", "config": {
            "connector.class": "DatagenSource", "topic": "proxied", "format": "string", "key.mode": "seq",
            "max.records": str(N)}})

        def sink(name, target, path, proxy_url=None):
            cfg = {"connector.class": "HttpSink", "topics": "proxied", "http.url": f"{target.url}/{path}",
                   "http.batch.format": "ndjson", "http.batch.max.records": "50",
                   "http.retry.backoff.ms": "100", "http.retry.backoff.max.ms": "500",
                   "http.ssl.ca.location": ca[0]}
            if proxy_url:
                cfg["http.proxy"] = proxy_url
            w.ok("POST", "/connectors", {"name": name, "config": cfg})

        def complete(target, path):
            return set(seqs(target.lines(path))) >= set(range(N))

        def check(target, path, label, tunnelled):
            wait_until(lambda: complete(target, path), 60, f"({label}) all {N} records at the target", 0.1)
            ps = proxy.stats()
            got = seqs(target.lines(path))
            if tunnelled:
                assert ps["tunnels"] > 0 and ps["tunnel_bytes_up"] > 0, ps
                how = f"CONNECT tunnels so far: {ps['tunnels']}, {ps['tunnel_bytes_up']} bytes up"
            else:
                through = ps["forwarded_by_path"].get(path, 0)
                reached = target.stats()["requests_by_path"].get(path, 0)
                assert through > 0 and through == reached, \
                    f"({label}) the proxy forwarded {through} requests for /{path}, the target got {reached}"
                how = f"all {reached} requests forwarded by the proxy"
            print(f"({label}) {N} records arrived, {len(got) - len(set(got))} duplicates; {how}", flush=True)

        # (a) http.proxy; the proxy down first
        proxy_url = f"http://127.0.0.1:{proxy.port}"
        sink("via-http", plain, "viahttp", proxy_url)
        sink("via-https", tls, "viahttps", proxy_url)
        for name in ("via-http", "via-https"):
            def logged():
                log = open(w.log_path, errors="replace").read().splitlines()
                return [l for l in log if f"{name}:" in l and "retrying" in l]
            lines = wait_until(logged, 30, f"({name}) a logged failure while the proxy is down", 0.1)
            assert str(proxy.port) in lines[0] and ("connect" in lines[0].lower()), lines[0]
            print(f"(a) proxy down: {name} logged: {lines[0].split(' ms: ', 1)[-1][:200]}", flush=True)
        time.sleep(1.5)
        assert plain.lines("viahttp") == [] and tls.lines("viahttps") == [], "records arrived without the proxy"
        for name in ("via-http", "via-https"):
            st = w.ok("GET", f"/connectors/{name}/status")
            assert st["tasks"][0]["state"] == "RUNNING", st
        proxy.start()
        check(plain, "viahttp", "a: http.proxy, http://", tunnelled=False)
        check(tls, "viahttps", "a: http.proxy, https://", tunnelled=True)

        # (b), (c) the environment's proxy variables
        assert w.stop() == 0
        tunnels = proxy.stats()["tunnels"]
        w.start(env={"http_proxy": proxy_url, "https_proxy": proxy_url})
        sink("env-http", plain, "envhttp")
        sink("env-https", tls, "envhttps")
        check(plain, "envhttp", "b: http_proxy variable, http://", tunnelled=False)
        check(tls, "envhttps", "b: https_proxy variable, https://", tunnelled=True)
        assert proxy.stats()["tunnels"] > tunnels
        assert w.stop() == 0
        w.start(env={"http_proxy": proxy_url, "https_proxy": proxy_url, "no_proxy": "127.0.0.1"})
        sink("env-direct", plain, "envdirect")
        wait_until(lambda: complete(plain, "envdirect"), 60, f"(c) all {N} records sent directly", 0.1)
        through = proxy.stats()["forwarded_by_path"].get("envdirect", 0)
        assert through == 0, f"(c) no_proxy=127.0.0.1, yet the proxy forwarded {through} requests"
        print(f"(c) no_proxy=127.0.0.1 beside http_proxy: {N} records arrived directly, none through the proxy",
              flush=True)
        assert w.stop() == 0
    finally:
        proxy.stop()
        plain.stop()
        tls.stop()


if __name__ == "__main__":
    run(main)
