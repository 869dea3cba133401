"""A forwarding HTTP proxy for the HTTP connector tests (standard library only), run as its own
process:

    python3 http_proxy.py --port P

A request in absolute form (`POST http://host:port/path HTTP/1.1`, any method) is sent on to that
server over a new connection (hop-by-hop and Proxy-* headers dropped) and its answer relayed; the
connection to the client is kept alive. `CONNECT host:port` opens a TCP tunnel (what a client does
for https://) and relays bytes both ways until either side closes. Only 127.0.0.1 and localhost
are forwarded to (anything else: 403).

GET /_stats (origin form, to the proxy itself): {"forwarded": n, "forwarded_by_path": {...},
"tunnels": n, "tunnel_bytes_up": n, "tunnel_bytes_down": n, "refused": n}.
"""
import argparse
import http.client
import json
import select
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

LOCK = threading.Lock()
STATS = {"forwarded": 0, "forwarded_by_path": {}, "tunnels": 0, "tunnel_bytes_up": 0, "tunnel_bytes_down": 0,
         "refused": 0}
HOP = {"connection", "keep-alive", "proxy-connection", "proxy-authorization", "proxy-authenticate", "te",
       "trailer", "transfer-encoding", "upgrade"}
ALLOWED_HOSTS = {"127.0.0.1", "localhost"}


def count(key, n=1):
    with LOCK:
        STATS[key] += n


class Proxy(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def reply(self, status, body=b"", headers=()):
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def forward(self):
        if not self.path.startswith("http://"):
            if self.path == "/_stats" and self.command == "GET":
                with LOCK:
                    body = json.dumps(STATS).encode()
                return self.reply(200, body, [("Content-Type", "application/json")])
            return self.reply(400, b"a proxy request needs an absolute URI")
        url = urlsplit(self.path)
        if url.hostname not in ALLOWED_HOSTS:
            count("refused")
            return self.reply(403, b"this proxy forwards to 127.0.0.1 only")
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else None
        headers = {k: v for k, v in self.headers.items() if k.lower() not in HOP and k.lower() != "host"}
        path = url.path or "/"
        if url.query:
            path += "?" + url.query
        try:
            up = http.client.HTTPConnection(url.hostname, url.port or 80, timeout=60)
            up.request(self.command, path, body=body, headers=headers)
            answer = up.getresponse()
            data = answer.read()
            up.close()
        except OSError as e:
            return self.reply(502, f"proxy: {e}".encode())
        with LOCK:
            STATS["forwarded"] += 1
            seg = url.path.strip("/").split("/")[0] or "root"
            STATS["forwarded_by_path"][seg] = STATS["forwarded_by_path"].get(seg, 0) + 1
        self.send_response(answer.status, answer.reason)
        for k, v in answer.getheaders():
            if k.lower() not in HOP and k.lower() != "content-length":
                self.send_header(k, v)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = forward

    def do_CONNECT(self):
        host, _, port = self.path.rpartition(":")
        if host.strip("[]") not in ALLOWED_HOSTS or not port.isdigit():
            count("refused")
            return self.reply(403, b"this proxy tunnels to 127.0.0.1 only")
        try:
            up = socket.create_connection((host, int(port)), timeout=10)
        except OSError as e:
            return self.reply(502, f"proxy: {e}".encode())
        count("tunnels")
        self.send_response(200, "Connection established")
        self.end_headers()
        self.wfile.flush()
        client = self.connection
        up.settimeout(None)
        socks = [client, up]
        try:
            while True:
                readable, _, _ = select.select(socks, [], [], 120)
                if not readable:
                    break
                done = False
                for s in readable:
                    data = s.recv(65536)
                    if not data:
                        done = True
                        break
                    other = up if s is client else client
                    other.sendall(data)
                    count("tunnel_bytes_up" if s is client else "tunnel_bytes_down", len(data))
                if done:
                    break
        except OSError:
            pass
        finally:
            up.close()
            self.close_connection = True


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    args = p.parse_args()
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer.allow_reuse_address = True
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Proxy)
    print(f"listening on {args.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
