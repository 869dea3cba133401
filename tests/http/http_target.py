"""A real HTTP server for the HTTP connector tests (standard library only), run as its own process.

    python3 http_target.py --port P --out DIR [--items N --items-rate R]
                           [--tls-cert PEM --tls-key PEM [--tls-client-ca PEM] [--tls-max 1.2]]

With --tls-cert/--tls-key it speaks HTTPS (HTTP/1.1); with --tls-client-ca too it requires a client
certificate signed by that CA. A handshake that fails (no certificate, an unknown CA) is counted
with OpenSSL's reason in /_stats ("tls_failures", "tls_failure_reasons"); the subject CN of the
client certificate of every accepted request is counted in "client_cns". --tls-max 1.2 keeps to
TLS 1.2, where a refused client certificate fails the handshake itself (in TLS 1.3 the client
finishes its side of the handshake first and hears of the refusal only at its next read or write).

As a sink target (any path but /items and /_*): every request it accepts (2xx) has its items
appended to DIR/<first path segment>.txt, one per line, before the answer is sent: an application/x-ndjson body is one item
per line, an application/json array one item per element, any other body one item. Items that are
JSON strings are written as their text, others as compact JSON.

CloudEvents (HTTP protocol binding): an application/cloudevents+json body is one event, an
application/cloudevents-batch+json body an array of them, and a request with ce-* headers (values
percent-decoded) is one event in binary mode whose data is the body. Every event is checked:
specversion "1.0", id, source and type non-empty strings; a bad one answers 400 naming the event
and nothing of the request is written. Each event is written as one line: its JSON (binary mode:
the attributes and "data", the body as JSON when its Content-Type is JSON, else as text).
/_stats counts requests by Content-Type ("content_types").

Behaviour is changed over HTTP, POST /_control with a JSON object (what is not given is kept):
    {"mode": "ok" | "status" | "slow" | "reset" | "garbage", "count": n,   # the next n requests
     "status": 503, "retry_after": "1",                                  # mode "status"
     "delay_ms": 2000,                                                    # mode "slow"
     "bad_marker": "x",   # any request holding an item that contains x: 400 (until reset to "")
     "random_status_ratio": 0.2, "random_delay_ratio": 0.2, "random_delay_ms": 50, "seed": 1}
                          # mode "ok": that share of requests answers `status` (+ Retry-After),
                          # that share waits random_delay_ms before it is handled; seed reseeds
Mode "stall" holds every request (unanswered, nothing written) until a _control sets another mode;
then the held requests go on as that mode says. "held" in /_stats is how many are held now.
GET /_stats: {"requests": n, "requests_by_path": {"<first path segment>": n}, "answers": {"200": n, ...},
"cursors": [...], "held": n, "max_concurrent": {"<first path segment>": most requests handled at once}, ...}.

As a polled API (GET /items?cursor=c): the items {"seq": i} for i from c (default 0), at most 10,
of the N items, of which R per second since the server started are available; the answer is
{"items": [...], "next": "<c + len(items)>"}, the cursor also in the X-Next-Cursor header.
Every requested cursor is kept for /_stats.
"""
import argparse
import json
import os
import random
import socket
import ssl
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote_to_bytes, urlparse

LOCK = threading.Lock()
CHANGED = threading.Condition(LOCK)  # notified when /_control changed STATE
STATE = {"mode": "ok", "count": 0, "status": 503, "retry_after": "1", "delay_ms": 1000, "bad_marker": "",
         "random_status_ratio": 0.0, "random_delay_ratio": 0.0, "random_delay_ms": 50}
STATS = {"requests": 0, "requests_by_path": {}, "answers": {}, "cursors": [], "content_types": {}, "held": 0,
         "client_cns": {}, "tls_failures": 0, "tls_failure_reasons": [], "max_concurrent": {}}
CONCURRENT = {}  # requests being handled now, by first path segment
RANDOM = random.Random(1)
ARGS = None
STARTED = time.time()


CE_REQUIRED = ("id", "source", "type")


def check_event(e, where):
    if not isinstance(e, dict):
        raise ValueError(f"{where}: not a JSON object")
    if e.get("specversion") != "1.0":
        raise ValueError(f"{where}: specversion is {e.get('specversion')!r}, not '1.0'")
    for name in CE_REQUIRED:
        if not isinstance(e.get(name), str) or not e[name]:
            raise ValueError(f"{where}: required attribute {name!r} is missing or empty")
    return e


def binary_event(headers, body):
    """The event of a binary-mode request (ce-* headers), or None when it has none."""
    attrs = {k.lower()[3:]: unquote_to_bytes(v).decode("utf-8", "replace")
             for k, v in headers.items() if k.lower().startswith("ce-")}
    if not attrs:
        return None
    ct = headers.get("Content-Type")
    if ct:
        attrs["datacontenttype"] = ct
    if body:
        base = (ct or "").split(";")[0].strip().lower()
        if base in ("", "application/json", "text/json") or base.endswith("+json"):
            attrs["data"] = json.loads(body.decode())
        else:
            attrs["data"] = body.decode(errors="replace")
    return check_event(attrs, "binary-mode event")


def items_of(content_type, body, headers=None):
    ct = (content_type or "").split(";")[0].strip().lower()
    if ct == "application/cloudevents-batch+json":
        doc = json.loads(body.decode())
        if not isinstance(doc, list):
            raise ValueError("a CloudEvents batch must be a JSON array")
        return [json.dumps(check_event(e, f"event {i}"), separators=(",", ":")) for i, e in enumerate(doc)]
    if ct == "application/cloudevents+json":
        return [json.dumps(check_event(json.loads(body.decode()), "event"), separators=(",", ":"))]
    if headers is not None:
        e = binary_event(headers, body)
        if e is not None:
            return [json.dumps(e, separators=(",", ":"))]
    if ct == "application/x-ndjson":
        docs = [json.loads(line) for line in body.decode().splitlines() if line.strip()]
    elif ct == "application/json":
        doc = json.loads(body.decode())
        docs = doc if isinstance(doc, list) else [doc]
    else:
        return [body.decode(errors="replace")]
    return [d if isinstance(d, str) else json.dumps(d, separators=(",", ":")) for d in docs]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt, *args):
        pass

    def client_cn(self):
        """The subject CN of the client certificate of a TLS connection, else None."""
        getpeercert = getattr(self.connection, "getpeercert", None)
        cert = getpeercert() if getpeercert else None
        for rdn in (cert or {}).get("subject", ()):
            for k, v in rdn:
                if k == "commonName":
                    return v
        return None

    def answer(self, status, body=b"", headers=()):
        with LOCK:
            STATS["answers"][str(status)] = STATS["answers"].get(str(status), 0) + 1
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        url = urlparse(self.path)
        if url.path == "/_stats":
            with LOCK:
                body = json.dumps(STATS).encode()
            return self.answer(200, body, [("Content-Type", "application/json")])
        if url.path == "/items":
            cursor = int(parse_qs(url.query).get("cursor", ["0"])[0])
            with LOCK:
                STATS["cursors"].append(cursor)
                STATS["requests"] += 1
            available = min(ARGS.items, int((time.time() - STARTED) * ARGS.items_rate))
            items = [{"seq": i} for i in range(cursor, min(cursor + 10, available))]
            nxt = str(cursor + len(items))
            body = json.dumps({"items": items, "next": nxt}).encode()
            return self.answer(200, body, [("Content-Type", "application/json"), ("X-Next-Cursor", nxt)])
        return self.answer(404)

    def do_PUT(self):
        self.do_POST()

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        if self.path == "/_control":
            with LOCK:
                change = json.loads(body.decode())
                if "seed" in change:
                    RANDOM.seed(change.pop("seed"))
                STATE.update(change)
                CHANGED.notify_all()
            return self.answer(200, b"{}")
        seg = self.path.strip("/").split("/")[0].split("?")[0] or "root"
        with LOCK:
            now = CONCURRENT[seg] = CONCURRENT.get(seg, 0) + 1
            STATS["max_concurrent"][seg] = max(STATS["max_concurrent"].get(seg, 0), now)
        try:
            self.handle_post(body)
        finally:
            with LOCK:
                CONCURRENT[seg] -= 1

    def handle_post(self, body):
        with LOCK:
            STATS["requests"] += 1
            seg = self.path.strip("/").split("/")[0].split("?")[0] or "root"
            STATS["requests_by_path"][seg] = STATS["requests_by_path"].get(seg, 0) + 1
            if STATE["mode"] == "stall":
                STATS["held"] += 1
                while STATE["mode"] == "stall":
                    CHANGED.wait()
                STATS["held"] -= 1
            mode = STATE["mode"]
            if mode != "ok":
                STATE["count"] -= 1
                if STATE["count"] <= 0:
                    STATE["mode"] = "ok"
            elif RANDOM.random() < STATE["random_status_ratio"]:
                mode = "status"
            delay = STATE["random_delay_ms"] if RANDOM.random() < STATE["random_delay_ratio"] else 0
            state = dict(STATE)
            cn = self.client_cn()
            if cn is not None:
                STATS["client_cns"][cn] = STATS["client_cns"].get(cn, 0) + 1
        if delay:
            time.sleep(delay / 1000.0)
        if mode == "status":
            return self.answer(state["status"], b'{"error":"try again later"}',
                               [("Retry-After", str(state["retry_after"]))])
        if mode == "reset":
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.connection.close()
            self.close_connection = True
            return
        if mode == "garbage":
            self.wfile.write(b"\x00\x01garbage, not HTTP at all\r\n\r\n")
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_RDWR)
            self.close_connection = True
            return
        if mode == "slow":
            time.sleep(state["delay_ms"] / 1000.0)
        with LOCK:
            ct = self.headers.get("Content-Type") or ""
            STATS["content_types"][ct] = STATS["content_types"].get(ct, 0) + 1
        try:
            items = items_of(self.headers.get("Content-Type"), body, self.headers)
        except ValueError as e:
            return self.answer(400, f"refused: {e}".encode())
        if state["bad_marker"] and any(state["bad_marker"] in i for i in items):
            return self.answer(400, b'{"error":"this record is refused: bad marker"}')
        with LOCK:
            name = self.path.strip("/").split("/")[0].split("?")[0] or "root"
            with open(os.path.join(ARGS.out, name + ".txt"), "a") as f:
                for i in items:
                    f.write(i + "\n")
                f.flush()
        self.answer(200, b'{"ok":true}', [("Content-Type", "application/json")])


class TlsServer(ThreadingHTTPServer):
    """HTTPS: the handshake runs on the request's own thread (a client that never finishes it holds
    only that thread); a failed one is counted with its reason."""
    context = None

    def get_request(self):
        sock, addr = self.socket.accept()
        return self.context.wrap_socket(sock, server_side=True, do_handshake_on_connect=False), addr

    def finish_request(self, request, client_address):
        request.settimeout(30)
        try:
            request.do_handshake()
        except (ssl.SSLError, OSError) as e:
            with LOCK:
                STATS["tls_failures"] += 1
                reasons = STATS["tls_failure_reasons"]
                reasons.append(getattr(e, "reason", None) or str(e))
                del reasons[:-20]
            return
        request.settimeout(None)
        super().finish_request(request, client_address)


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--items", type=int, default=0)
    p.add_argument("--items-rate", type=float, default=1e9)
    p.add_argument("--tls-cert")
    p.add_argument("--tls-key")
    p.add_argument("--tls-client-ca")
    p.add_argument("--tls-max", choices=("1.2", "1.3"), default="1.3")
    ARGS = p.parse_args()
    cls = ThreadingHTTPServer
    if ARGS.tls_cert:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(ARGS.tls_cert, ARGS.tls_key)
        if ARGS.tls_max == "1.2":
            ctx.maximum_version = ssl.TLSVersion.TLSv1_2
        if ARGS.tls_client_ca:
            ctx.verify_mode = ssl.CERT_REQUIRED
            ctx.load_verify_locations(ARGS.tls_client_ca)
        TlsServer.context = ctx
        cls = TlsServer
    cls.daemon_threads = True
    cls.allow_reuse_address = True
    server = cls(("127.0.0.1", ARGS.port), Handler)
    print(f"listening on {ARGS.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
