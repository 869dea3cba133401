"""REST exhaustion, measured against the real worker:

- slowloris: 200 connections each sending one header byte a second while a probe
  `GET /connectors` on a fresh connection must be answered within 1 s, for ~15 s;
- chunked flood: 4 x 100 MiB chunked bodies in parallel, then a 420 MB header flood: the
  worker's peak RSS (VmHWM) stays under 200 MiB, no answer echoes the body, and it still answers;
- keep-alive latency: 50 requests on one reused connection have a median under 10 ms (without
  TCP_NODELAY every answer waited ~40 ms for the delayed ACK).
"""
import http.client
import os
import socket
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import harness  # noqa: E402

MIB = 1024 * 1024


def vm_hwm_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    raise AssertionError("no VmHWM in /proc status")


def probe(port, timeout=1.0):
    """GET /connectors on a new connection; returns the seconds it took, or None past timeout."""
    t0 = time.monotonic()
    try:
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        c.request("GET", "/connectors")
        r = c.getresponse()
        r.read()
        c.close()
        if r.status != 200:
            return None
    except OSError:
        return None
    took = time.monotonic() - t0
    return took if took <= timeout else None


def slowloris(w, connections=200, seconds=15):
    request = b"GET /connectors HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 4096
    stop = threading.Event()
    socks = [None] * connections
    sent = [0] * connections

    def attacker():
        while not stop.is_set():
            for i in range(connections):
                try:
                    if socks[i] is None:  # closed by the server's deadline: come back, as an attacker does
                        socks[i] = socket.create_connection(("127.0.0.1", w.port), timeout=2)
                        sent[i] = 0
                    socks[i].send(request[sent[i]:sent[i] + 1])
                    sent[i] = (sent[i] + 1) % len(request)
                except OSError:
                    if socks[i] is not None:
                        socks[i].close()
                    socks[i] = None
            stop.wait(1.0)

    t = threading.Thread(target=attacker, daemon=True)
    t.start()
    time.sleep(2)  # every slow connection is open and has sent bytes
    slow, worst, probes = 0, 0.0, 0
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        took = probe(w.port)
        probes += 1
        if took is None:
            slow += 1
        else:
            worst = max(worst, took)
        time.sleep(0.25)
    stop.set()
    t.join()
    for s in socks:
        if s is not None:
            s.close()
    print(f"slowloris: {probes} probes, {slow} unanswered within 1 s, slowest answered {worst * 1000:.1f} ms")
    assert slow == 0, f"{slow} of {probes} probes were not answered within 1 s while 200 slow clients were connected"


def chunked_flood(w, clients=4, mib_each=100):
    chunk = b"Z" * 65536
    frame = b"%x\r\n" % len(chunk) + chunk + b"\r\n"
    answers = []

    def flood():
        s = socket.create_connection(("127.0.0.1", w.port), timeout=30)
        s.sendall(b"POST /connectors HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                  b"Transfer-Encoding: chunked\r\n\r\n")
        try:
            for _ in range(mib_each * MIB // len(chunk)):
                s.sendall(frame)
            s.sendall(b"0\r\n\r\n")
        except OSError:
            pass  # the server gave up on us: what it should do
        try:
            s.settimeout(10)
            data = b""
            while len(data) < 1 << 20:
                b = s.recv(65536)
                if not b:
                    break
                data += b
            answers.append(data)
        except OSError:
            answers.append(b"")
        s.close()

    threads = [threading.Thread(target=flood) for _ in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    for a in answers:
        assert b"ZZZZZZZZ" not in a, f"an error answer echoed the request body: {a[:200]!r}"
    print("chunked flood answers:", [a.split(b"\r\n", 1)[0].decode(errors="replace") for a in answers])


def header_flood(w, total=420 * 1000 * 1000):
    s = socket.create_connection(("127.0.0.1", w.port), timeout=30)
    line = b"X-Flood: " + b"h" * 990 + b"\r\n"
    block = line * 64
    sent = 0
    try:
        s.sendall(b"GET /connectors HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        while sent < total:
            s.sendall(block)
            sent += len(block)
    except OSError:
        pass
    s.close()
    print(f"header flood: {sent / MIB:.1f} MiB of header lines sent")


def keepalive_latency(w, n=50):
    c = http.client.HTTPConnection("127.0.0.1", w.port, timeout=10)
    times = []
    for _ in range(n):
        t0 = time.perf_counter()
        c.request("GET", "/connectors")
        r = c.getresponse()
        r.read()
        times.append(time.perf_counter() - t0)
        assert r.status == 200
    c.close()
    med = statistics.median(times) * 1000
    print(f"keep-alive: median {med:.2f} ms over {n} requests on one connection (max {max(times) * 1000:.1f} ms)")
    assert med < 10, f"median answer on a reused connection took {med:.1f} ms (Nagle's algorithm not disabled?)"


def still_answers_within_memory(w, after):
    assert w.proc.poll() is None, f"the worker died during the {after}"
    status, names = w.rest("GET", "/connectors")
    assert status == 200 and names == [], (status, names)
    hwm = vm_hwm_mib(w.proc.pid)
    print(f"worker peak RSS (VmHWM) after the {after}: {hwm:.0f} MiB")
    assert hwm < 200, f"the worker's peak RSS reached {hwm:.0f} MiB after the {after} (limit 200 MiB)"


PARTS = ("latency", "slowloris", "chunked", "headers")


def main():
    """Runs every part, or those named on the command line (e.g. `slowloris chunked`)."""
    parts = sys.argv[1:] or PARTS
    assert all(p in PARTS for p in parts), f"parts are {PARTS}"
    d = harness.tmpdir("rest-limits")
    w = harness.Worker(d)
    w.start()
    if "latency" in parts:
        keepalive_latency(w)
    if "slowloris" in parts:
        slowloris(w)
    if "chunked" in parts:
        chunked_flood(w)
        still_answers_within_memory(w, "chunked flood")
    if "headers" in parts:
        header_flood(w)
        still_answers_within_memory(w, "header flood")
    assert w.stop() == 0


if __name__ == "__main__":
    harness.run(main)
