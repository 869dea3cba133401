"""A real HTTP server for the HTTP connector tests (standard library only), run as its own process.

    python3 http_target.py --port P --out DIR [--items N --items-rate R]

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
     "bad_marker": "x"}   # any request holding an item that contains x: 400 (until reset to "")
GET /_stats: {"requests": n, "answers": {"200": n, ...}, "cursors": [...]}.

As a polled API (GET /items?cursor=c): the items {"seq": i} for i from c (default 0), at most 10,
of the N items, of which R per second since the server started are available; the answer is
{"items": [...], "next": "<c + len(items)>"}, the cursor also in the X-Next-Cursor header.
Every requested cursor is kept for /_stats.
"""
import argparse
import json
import os
import socket
import struct
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, unquote_to_bytes, urlparse

LOCK = threading.Lock()
STATE = {"mode": "ok", "count": 0, "status": 503, "retry_after": "1", "delay_ms": 1000, "bad_marker": ""}
STATS = {"requests": 0, "answers": {}, "cursors": [], "content_types": {}}
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
                STATE.update(json.loads(body.decode()))
            return self.answer(200, b"{}")
        with LOCK:
            STATS["requests"] += 1
            mode = STATE["mode"]
            if mode != "ok":
                STATE["count"] -= 1
                if STATE["count"] <= 0:
                    STATE["mode"] = "ok"
            state = dict(STATE)
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


def main():
    global ARGS
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--items", type=int, default=0)
    p.add_argument("--items-rate", type=float, default=1e9)
    ARGS = p.parse_args()
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer.allow_reuse_address = True
    server = ThreadingHTTPServer(("127.0.0.1", ARGS.port), Handler)
    print(f"listening on {ARGS.port}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
