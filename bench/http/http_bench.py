"""bench/run --scenarios http: HttpSink and HttpSource (webhook) against a plain HTTP load
generator on the same server, and against Benthos (the peer) doing the same job, in one run.

The target: bench/http/target (Go, standard library only; built with the Go toolchain into
~/.cache/ferry-peers/http-target/, rebuilt when its source changes) on a free 127.0.0.1 port. It
reads every POST body in full, counts records (NDJSON: one per line; any other body: one) and
answers 200 {"accepted":n}; GET /stats gives the counts, by which runs are timed. The load
generator: wrk (Debian `wrk`) with bench/http/post.lua (one fixed body, a Content-Type), one
thread. The peer: Benthos (github.com/redpanda-data/benthos/v4 BENTHOS_VERSION, its cmd/benthos
built from the Go module proxy in ~/.cache/ferry-peers/benthos/, never in the repository), its
config in a temporary file. ferry: a fresh standalone worker per run (release `ferry` or
$FERRY_BIN), one connector.

Sink side (records of 100 bytes; DatagenSource format=bytes, the sequence number padded with 'x'):
  ferry   DatagenSource -> HttpSink, one direct task, http.max.in.flight 4, http.batch.format one
          (--http-one-records, default 50,000: one request per record) or ndjson (--http-records,
          default 500,000; 500 records a request, each line the value as a JSON string, 103 B).
          Window: connector POST until the target counted N records (/stats polled every 10 ms).
  limit   wrk -t1 -c4 (the sink's 4 requests in flight) for --http-seconds with the same body as
          one of ferry's requests (100 B; or 500 lines of 103 B): records/s = 2xx requests/s x
          records per request.
  peer    Benthos: generate (count N, batch_size 1 or 500, the same 100-byte values) ->
          http_client (max_in_flight 4; ndjson: `archive: format: lines` of 500 JSON strings, the
          same body as ferry's). Window: process start until the target counted N records; CPU and
          peak RSS from wait4 when it exits (it stops when generate is done).

Webhook side (wrk -t1 -c --http-connections, default 16, for --http-seconds, POSTing a fixed body:
100 NDJSON events of ~100 B a request, or one JSON event a request):
  ferry        HttpSource (webhook) -> BlackholeSink in one direct task: its 2xx comes once the
               task's sink flushed (records safe), which a direct task does every
               offset.flush.interval.ms (1 s, the harness's and the worker's default) or at its
               in-flight bound: that is what the sender waits for;
  ferry_backbone  HttpSource into the embedded backbone (a BlackholeSink connector reads it): the
               2xx once the backbone acknowledged the records;
  limit        the same wrk load against the target (the plain server's rate);
  ferry_http   (NDJSON bodies only) HttpSource -> HttpSink (ndjson, 4 in flight) to the target, one
               direct task, against
  peer         Benthos http_server -> unarchive lines -> archive lines -> http_client (4 in
               flight) to the target; Benthos answers the sender once the output acknowledged.
  records/s = events of 2xx answers / wrk's duration; CPU per million over wrk's run / those
  events; forwarded_per_s = what the target counted (ferry_http, peer).

Parts: `python3 bench/http/http_bench.py --parts sink-one[,sink-ndjson,webhook-ndjson,webhook-one]
[--no-peers] [--no-limit] [--repeat K] [--http-one-records N] ...` runs only some of the four
(one JSON line each, as bench/run prints them), for iterating on one of them.

Figures: records_per_s, cpu_s_per_million (user+system of the process from /proc or wait4),
peak_rss_mb, target_cpu_s_per_million, wrk_cpu_s_per_million, ratio (ferry / limit, ferry / peer
for throughput; peer / ferry for CPU per record, i.e. > 1 means ferry does more per core),
load_avg (/proc/loadavg at the end of each run). A peer that cannot be built or fails is an object
with "error" and the run goes on. Standard library only (plus wrk and Go).
"""
import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
os.environ.setdefault("FERRY_BIN", os.path.join(ROOT, "build", "release", "apps", "ferry", "ferry"))
from harness import Worker, free_port, tmpdir, wait_until  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "bench"))
from procstat import cpu_s, hwm_mb, loadavg  # noqa: E402

SCENARIO = "http"
HOST = "127.0.0.1"
CACHE = os.path.join(os.path.expanduser("~"), ".cache", "ferry-peers")
TARGET_SRC = os.path.join(HERE, "target")
TARGET_BIN = os.path.join(CACHE, "http-target", "http-target")
BENTHOS_MODULE = "github.com/redpanda-data/benthos/v4"
BENTHOS_VERSION = "v4.55.0"
BENTHOS_HOME = os.path.join(CACHE, "benthos")
BENTHOS_BIN = os.path.join(BENTHOS_HOME, "bin", f"benthos-{BENTHOS_VERSION}")
LUA = os.path.join(HERE, "post.lua")
IN_FLIGHT = 4
# The webhook's 2xx waits for the direct task's sink flush, which comes every
# offset.flush.interval.ms (HttpSource does not ask for one sooner): the runs marked flush_fast
# set the worker's interval to this, to show the path without that wait.
FAST_FLUSH_MS = 10
BATCH = 500
# How often the sink runs ask the target's /stats whether all N records arrived: the end of a run
# is seen up to this late (a 50,000-record run of ferry lasts ~1.5 s).
STATS_POLL_S = 0.01


def log(msg):
    print(f"bench: {SCENARIO}: {msg}", file=sys.stderr, flush=True)


def go_binary():
    for g in (shutil.which("go"), "/usr/local/go/bin/go"):
        if g and os.access(g, os.X_OK):
            return g
    raise RuntimeError("no Go toolchain (go on PATH or /usr/local/go/bin/go)")


def build_target():
    h = hashlib.sha256()
    for name in sorted(os.listdir(TARGET_SRC)):
        with open(os.path.join(TARGET_SRC, name), "rb") as f:
            h.update(name.encode() + f.read())
    stamp = TARGET_BIN + ".src"
    if os.path.exists(TARGET_BIN) and os.path.exists(stamp) and open(stamp).read() == h.hexdigest():
        return
    os.makedirs(os.path.dirname(TARGET_BIN), exist_ok=True)
    log(f"building {TARGET_BIN}")
    subprocess.run([go_binary(), "build", "-trimpath", "-o", TARGET_BIN + ".tmp", "."], cwd=TARGET_SRC, check=True,
                   env={**os.environ, "GOFLAGS": "-buildvcs=false", "GOTOOLCHAIN": "local"})
    os.replace(TARGET_BIN + ".tmp", TARGET_BIN)
    with open(stamp, "w") as f:
        f.write(h.hexdigest())


def build_benthos():
    """Benthos's own cmd/benthos at BENTHOS_VERSION, built from the Go module proxy in a module of
    the cache's (go.mod generated here; `go install ...@version` cannot be used: it asks the proxy
    for the module's version list, which the Go module proxy refuses for this module, 403)."""
    if os.path.exists(BENTHOS_BIN):
        return
    os.makedirs(os.path.dirname(BENTHOS_BIN), exist_ok=True)
    with open(os.path.join(BENTHOS_HOME, "go.mod"), "w") as f:
        f.write(f"module ferry.local/benthos-peer\n\ngo 1.24\n\nrequire {BENTHOS_MODULE} {BENTHOS_VERSION}\n")
    log(f"building Benthos {BENTHOS_VERSION} into {BENTHOS_BIN} (minutes, once)")
    p = subprocess.run([go_binary(), "build", "-trimpath", "-o", BENTHOS_BIN + ".tmp", f"{BENTHOS_MODULE}/cmd/benthos"],
                       cwd=BENTHOS_HOME, capture_output=True, text=True, timeout=1800,
                       env={**os.environ, "GOFLAGS": "-mod=mod -buildvcs=false", "GOTOOLCHAIN": "local"})
    if p.returncode != 0:
        raise RuntimeError(f"building Benthos failed: {p.stderr[-1500:]}")
    os.replace(BENTHOS_BIN + ".tmp", BENTHOS_BIN)


class Target:
    def __init__(self):
        self.port = free_port()
        self.url = f"http://{HOST}:{self.port}/"
        self.proc = subprocess.Popen([TARGET_BIN, "-listen", f"{HOST}:{self.port}"])
        wait_until(lambda: self._up(), 10, "http-target answers", 0.05)

    def _up(self):
        if self.proc.poll() is not None:
            raise RuntimeError("http-target exited")
        try:
            self.stats()
            return True
        except OSError:
            return False

    def stats(self):
        with urllib.request.urlopen(self.url + "stats", timeout=5) as r:
            return json.loads(r.read())

    def cpu(self):
        return cpu_s(self.proc.pid)

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)


def value_of(i, size=100):
    v = str(i)
    return v + "x" * (size - len(v))


def write_body(d, name, text):
    path = os.path.join(d, name)
    with open(path, "w") as f:
        f.write(text)
    return path


def wrk(url, body, ctype, conns, seconds):
    """wrk -t1 against `url`; its summary (post.lua's WRK line) and its own CPU (wait4)."""
    cmd = ["wrk", "-t1", f"-c{conns}", f"-d{seconds}s", "--timeout", "30s", "-s", LUA, url, "--", body, ctype]
    with tempfile.TemporaryFile() as out:
        p = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT)
        _, status, ru = os.wait4(p.pid, 0)
        out.seek(0)
        text = out.read().decode(errors="replace")
    if os.waitstatus_to_exitcode(status) != 0 or "WRK {" not in text:
        raise RuntimeError(f"wrk failed: {text[-800:]}")
    s = json.loads(text.split("WRK ", 1)[1].splitlines()[0])
    s["cpu_s"] = ru.ru_utime + ru.ru_stime
    s["ok"] = s["requests"] - s["status_errors"]
    return s


def ratio(a, b):
    return round(a / b, 3) if a and b else None


def wait_listening(port, timeout=30):
    def up():
        try:
            socket.create_connection((HOST, port), timeout=1).close()
            return True
        except OSError:
            return False
    wait_until(up, timeout, f"something listening on {port}", 0.05)


# ---------------------------------------------------------------------------------------------
# Sink side


def sink_ferry(target, n, fmt):
    d = tmpdir("bench-http-sink")
    w = Worker(d)
    try:
        w.start()
        pid = w.proc.pid
        st0, c0, tc0 = target.stats(), cpu_s(pid), target.cpu()
        t0 = time.time()
        w.ok("POST", "/connectors", {"name": "hsink", "config": {
            "connector.class": "DatagenSource", "topic": "bench", "max.records": str(n), "format": "bytes",
            "value.size": "100", "sink.connector.class": "HttpSink", "sink.http.url": target.url,
            "sink.http.batch.format": fmt, "sink.http.max.in.flight": str(IN_FLIGHT),
            "sink.http.batch.max.records": str(BATCH)}})

        def arrived():
            if w.proc.poll() is not None:
                raise AssertionError(f"ferry exited:\n{w.tail_log()}")
            return target.stats()["records"] - st0["records"] >= n
        wait_until(arrived, 600, f"ferry HttpSink {fmt}: {n} records at the target", STATS_POLL_S)
        secs = time.time() - t0
        cpu, tcpu = cpu_s(pid) - c0, target.cpu() - tc0
        st = target.stats()
        reqs, nbytes = st["requests"] - st0["requests"], st["bytes"] - st0["bytes"]
        return {"seconds": round(secs, 3), "records_per_s": round(n / secs),
                "cpu_s_per_million": round(cpu * 1e6 / n, 3), "peak_rss_mb": hwm_mb(pid),
                "target_cpu_s_per_million": round(tcpu * 1e6 / n, 3), "requests": reqs,
                "body_bytes_avg": round(nbytes / max(1, reqs), 1), "load_avg": loadavg()}
    finally:
        w.stop()
        shutil.rmtree(d, ignore_errors=True)


def sink_limit(target, d, fmt, seconds):
    if fmt == "one":
        body, ctype, per = write_body(d, "one.txt", value_of(0)), "text/plain", 1
    else:
        body = write_body(d, "batch.ndjson", "".join(json.dumps(value_of(i)) + "\n" for i in range(BATCH)))
        ctype, per = "application/x-ndjson", BATCH
    tc0 = target.cpu()
    s = wrk(target.url, body, ctype, IN_FLIGHT, seconds)
    tcpu = target.cpu() - tc0
    recs = s["ok"] * per
    secs = s["duration_us"] / 1e6
    return {"tool": f"wrk -t1 -c{IN_FLIGHT}", "seconds": round(secs, 3), "records_per_s": round(recs / secs),
            "requests_per_s": round(s["requests"] / secs), "non_2xx": s["status_errors"],
            "body_bytes": os.path.getsize(body), "wrk_cpu_s_per_million": round(s["cpu_s"] * 1e6 / recs, 3),
            "target_cpu_s_per_million": round(tcpu * 1e6 / recs, 3),
            "latency_p50_us": s["latency_p50_us"], "latency_p99_us": s["latency_p99_us"], "load_avg": loadavg()}


def benthos_run(config_text, d):
    """Starts Benthos with `config_text`: (start time, process)."""
    cfg = write_body(d, "benthos.yaml", config_text)
    logf = open(os.path.join(d, "benthos.log"), "wb")
    t0 = time.time()
    p = subprocess.Popen([BENTHOS_BIN, "-c", cfg], stdout=logf, stderr=subprocess.STDOUT)
    logf.close()
    return t0, p


BENTHOS_COMMON = """http:
  enabled: false
logger:
  level: WARN
metrics:
  none: {}
"""


def sink_peer(target, n, fmt, d):
    quote = '"\\"" + ' if fmt == "ndjson" else ""
    unquote = ' + "\\""' if fmt == "ndjson" else ""
    # The same 100-byte values as DatagenSource (the sequence number padded with 'x'); ndjson: as
    # JSON strings, 500 a body, one a line (what HttpSink sends for values that are not JSON).
    mapping = f'root = {quote}(counter().string() + "{"x" * 100}").slice(0, 100){unquote}'
    cfg = BENTHOS_COMMON + f"""input:
  generate:
    count: {n}
    interval: ""
    batch_size: {BATCH if fmt == "ndjson" else 1}
    mapping: '{mapping}'
output:
  http_client:
    url: {target.url}
    verb: POST
    headers:
      Content-Type: {"application/x-ndjson" if fmt == "ndjson" else "text/plain"}
    max_in_flight: {IN_FLIGHT}
    batch_as_multipart: false
""" + ("""  processors:
    - archive:
        format: lines
""" if fmt == "ndjson" else "")
    st0, tc0 = target.stats(), target.cpu()
    t0, p = benthos_run(cfg, d)
    reaped = []  # (status, rusage) once it exited: reaped here, not by Popen, to keep its rusage
    hwm = [0.0]  # VmHWM while it runs (wait4's ru_maxrss would count the forked bench's own pages)

    def arrived():
        try:
            hwm[0] = max(hwm[0], hwm_mb(p.pid) or 0)
        except OSError:
            pass
        if not reaped:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                reaped.append((status, ru))
                p.returncode = os.waitstatus_to_exitcode(status)
        got = target.stats()["records"] - st0["records"]
        if reaped and got < n:
            raise RuntimeError(f"Benthos exited with {p.returncode} after {got} records: "
                               f"{open(os.path.join(d, 'benthos.log')).read()[-800:]}")
        return got >= n
    try:
        wait_until(arrived, 600, f"Benthos {fmt}: {n} records at the target", STATS_POLL_S)
        secs = time.time() - t0
        tcpu = target.cpu() - tc0
        if not reaped:  # it stops once generate is done and the output drained
            _, status, ru = os.wait4(p.pid, 0)
            reaped.append((status, ru))
            p.returncode = os.waitstatus_to_exitcode(status)
        ru = reaped[0][1]
    finally:
        if p.returncode is None:
            p.kill()
            p.wait()
    st = target.stats()
    reqs, nbytes = st["requests"] - st0["requests"], st["bytes"] - st0["bytes"]
    cpu = ru.ru_utime + ru.ru_stime
    return {"peer": "benthos", "version": BENTHOS_VERSION, "seconds": round(secs, 3),
            "records_per_s": round(n / secs), "cpu_s_per_million": round(cpu * 1e6 / n, 3),
            "peak_rss_mb": hwm[0], "target_cpu_s_per_million": round(tcpu * 1e6 / n, 3),
            "requests": reqs, "body_bytes_avg": round(nbytes / max(1, reqs), 1), "load_avg": loadavg()}


def sink_side(target, fmt, n, seconds, peers, d, with_limit=True):
    log(f"sink {fmt}: ferry DatagenSource -> HttpSink, {n} records")
    f = sink_ferry(target, n, fmt)
    out = {"scenario": SCENARIO, "side": "sink", "format": fmt, "records": n, "value_bytes": 100,
           "in_flight": IN_FLIGHT, "ferry": f, "ratio": {}}
    if with_limit:
        log(f"sink {fmt}: limit wrk -c{IN_FLIGHT}, {seconds} s")
        limit = sink_limit(target, d, fmt, seconds)
        out["limit"] = limit
        out["ratio"]["ferry_vs_limit"] = ratio(f["records_per_s"], limit["records_per_s"])
    if peers:
        log(f"sink {fmt}: peer Benthos generate -> http_client, {n} records")
        try:
            build_benthos()
            pr = sink_peer(target, n, fmt, d)
            out["peer"] = pr
            out["ratio"]["ferry_vs_peer"] = ratio(f["records_per_s"], pr["records_per_s"])
            out["ratio"]["ferry_vs_peer_per_core"] = ratio(pr["cpu_s_per_million"], f["cpu_s_per_million"])
            out["ratio"]["peer_vs_ferry_rss"] = ratio(pr["peak_rss_mb"], f["peak_rss_mb"])
        except (RuntimeError, AssertionError, OSError, subprocess.SubprocessError) as e:
            out["peer"] = {"peer": "benthos", "error": str(e)[-1500:]}
    return out


# ---------------------------------------------------------------------------------------------
# Webhook side


def events_body(d, per):
    """`per` JSON events of ~100 B: NDJSON when per > 1, else one JSON object."""
    lines = [json.dumps({"seq": i, "device": "sensor-%04d" % (i % 1000), "temp": 20 + i % 15,
                         "pad": "x" * 40}, separators=(",", ":")) for i in range(per)]
    if per == 1:
        return write_body(d, "event.json", lines[0]), "application/json"
    return write_body(d, f"events-{per}.ndjson", "\n".join(lines) + "\n"), "application/x-ndjson"


def records_out(w, connector):
    status, text = w.rest("GET", "/metrics")
    if status != 200:
        return 0
    total = 0.0
    for line in (text if isinstance(text, str) else json.dumps(text)).splitlines():
        if line.startswith("ferry_task_records_out_total{") and f'connector="{connector}"' in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


def webhook_figures(s, per, cpu, extra=None):
    secs = s["duration_us"] / 1e6
    recs = s["ok"] * per
    out = {"seconds": round(secs, 3), "records_per_s": round(recs / secs), "requests_per_s": round(s["ok"] / secs),
           "non_2xx": s["status_errors"], "socket_errors": s["connect_errors"] + s["read_errors"] + s["write_errors"],
           "timeouts": s["timeouts"], "latency_p50_us": s["latency_p50_us"], "latency_p99_us": s["latency_p99_us"],
           "cpu_s_per_million": round(cpu * 1e6 / recs, 3) if recs else None,
           "wrk_cpu_s_per_million": round(s["cpu_s"] * 1e6 / recs, 3) if recs else None}
    out.update(extra or {})
    out["load_avg"] = loadavg()
    return out


def webhook_ferry(body, ctype, per, conns, seconds, shape, target=None, flush_ms=None):
    d = tmpdir("bench-http-webhook")
    props = {"backbone.embedded.fsync": "interval"} if shape == "backbone" else {}
    if flush_ms is not None:
        props["offset.flush.interval.ms"] = str(flush_ms)
    w = Worker(d, props)
    port = free_port()
    src = {"connector.class": "HttpSource", "http.listen": f"{HOST}:{port}", "http.path": "/", "topic": "hook"}
    try:
        w.start()
        pid = w.proc.pid
        if shape == "blackhole":
            w.ok("POST", "/connectors", {"name": "hook", "config": {**src, "sink.connector.class": "BlackholeSink"}})
            counted = "hook"
        elif shape == "backbone":
            w.ok("POST", "/connectors", {"name": "hook", "config": src})
            w.ok("POST", "/connectors", {"name": "drain", "config": {"connector.class": "BlackholeSink",
                                                                       "topics": "hook"}})
            counted = "drain"
        else:  # http: HttpSource -> HttpSink to the target
            w.ok("POST", "/connectors", {"name": "hook", "config": {
                **src, "sink.connector.class": "HttpSink", "sink.http.url": target.url,
                "sink.http.batch.format": "ndjson", "sink.http.max.in.flight": str(IN_FLIGHT),
                "sink.http.batch.max.records": str(BATCH)}})
            counted = "hook"
        w.wait_running("hook", 60)
        wait_listening(port)
        c0, o0 = cpu_s(pid), records_out(w, counted)
        st0, tc0 = (target.stats(), target.cpu()) if target else (None, None)
        s = wrk(f"http://{HOST}:{port}/", body, ctype, conns, seconds)
        cpu = cpu_s(pid) - c0
        extra = {"peak_rss_mb": hwm_mb(pid)}
        if target:
            fwd = target.stats()["records"] - st0["records"]
            extra["forwarded_per_s"] = round(fwd / (s["duration_us"] / 1e6))
            extra["target_cpu_s_per_million"] = round((target.cpu() - tc0) * 1e6 / max(1, fwd), 3)
        else:
            time.sleep(1.5)  # the backbone's sink catches up
            extra["records_out"] = int(records_out(w, counted) - o0)
        if flush_ms is not None:
            extra["offset_flush_interval_ms"] = flush_ms
        return webhook_figures(s, per, cpu, extra)
    finally:
        w.stop()
        shutil.rmtree(d, ignore_errors=True)


def webhook_limit(target, body, ctype, per, conns, seconds):
    tc0 = target.cpu()
    s = wrk(target.url, body, ctype, conns, seconds)
    return {"tool": f"wrk -t1 -c{conns} against the target",
            **webhook_figures(s, per, target.cpu() - tc0)}


def webhook_peer(target, body, ctype, per, conns, seconds, d):
    port = free_port()
    cfg = BENTHOS_COMMON + f"""input:
  http_server:
    address: {HOST}:{port}
    path: /
    allowed_verbs: [POST]
    timeout: 30s
  processors:
    - unarchive:
        format: lines
output:
  http_client:
    url: {target.url}
    verb: POST
    headers:
      Content-Type: application/x-ndjson
    max_in_flight: {IN_FLIGHT}
    batch_as_multipart: false
  processors:
    - archive:
        format: lines
"""
    _, p = benthos_run(cfg, d)
    try:
        wait_listening(port)
        c0, st0, tc0 = cpu_s(p.pid), target.stats(), target.cpu()
        s = wrk(f"http://{HOST}:{port}/", body, ctype, conns, seconds)
        cpu = cpu_s(p.pid) - c0
        fwd = target.stats()["records"] - st0["records"]
        extra = {"peak_rss_mb": hwm_mb(p.pid), "forwarded_per_s": round(fwd / (s["duration_us"] / 1e6)),
                 "target_cpu_s_per_million": round((target.cpu() - tc0) * 1e6 / max(1, fwd), 3)}
        return {"peer": "benthos", "version": BENTHOS_VERSION, **webhook_figures(s, per, cpu, extra)}
    finally:
        p.terminate()
        try:
            p.wait(10)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def webhook_side(target, per, conns, seconds, peers, d):
    body, ctype = events_body(d, per)
    what = f"{per} NDJSON events a request" if per > 1 else "one JSON event a request"
    out = {"scenario": SCENARIO, "side": "webhook", "body": what, "body_bytes": os.path.getsize(body),
           "connections": conns}
    log(f"webhook ({what}): ferry HttpSource -> BlackholeSink (direct), wrk -c{conns} {seconds} s")
    out["ferry"] = webhook_ferry(body, ctype, per, conns, seconds, "blackhole")
    log(f"webhook ({what}): the same with offset.flush.interval.ms={FAST_FLUSH_MS}")
    out["ferry_flush_fast"] = webhook_ferry(body, ctype, per, conns, seconds, "blackhole", flush_ms=FAST_FLUSH_MS)
    log(f"webhook ({what}): ferry HttpSource -> backbone -> BlackholeSink")
    out["ferry_backbone"] = webhook_ferry(body, ctype, per, conns, seconds, "backbone")
    log(f"webhook ({what}): limit, the same load against the target")
    out["limit"] = webhook_limit(target, body, ctype, per, conns, seconds)
    out["ratio"] = {"ferry_vs_limit": ratio(out["ferry"]["records_per_s"], out["limit"]["records_per_s"]),
                    "ferry_flush_fast_vs_limit": ratio(out["ferry_flush_fast"]["records_per_s"],
                                                       out["limit"]["records_per_s"]),
                    "ferry_backbone_vs_limit": ratio(out["ferry_backbone"]["records_per_s"],
                                                     out["limit"]["records_per_s"])}
    if per > 1:
        log(f"webhook ({what}): ferry HttpSource -> HttpSink (direct) to the target")
        out["ferry_http"] = webhook_ferry(body, ctype, per, conns, seconds, "http", target)
        log(f"webhook ({what}): the same with offset.flush.interval.ms={FAST_FLUSH_MS}")
        out["ferry_http_flush_fast"] = webhook_ferry(body, ctype, per, conns, seconds, "http", target,
                                                     flush_ms=FAST_FLUSH_MS)
        if peers:
            log(f"webhook ({what}): peer Benthos http_server -> http_client to the target")
            try:
                build_benthos()
                pr = webhook_peer(target, body, ctype, per, conns, seconds, d)
                out["peer"] = pr
                fh = out["ferry_http"]
                out["ratio"]["ferry_http_vs_peer"] = ratio(fh["records_per_s"], pr["records_per_s"])
                out["ratio"]["ferry_http_vs_peer_per_core"] = ratio(pr["cpu_s_per_million"], fh["cpu_s_per_million"])
                out["ratio"]["peer_vs_ferry_http_rss"] = ratio(pr["peak_rss_mb"], fh["peak_rss_mb"])
                ff = out["ferry_http_flush_fast"]
                out["ratio"]["ferry_http_flush_fast_vs_peer"] = ratio(ff["records_per_s"], pr["records_per_s"])
                out["ratio"]["ferry_http_flush_fast_vs_peer_per_core"] = ratio(pr["cpu_s_per_million"],
                                                                               ff["cpu_s_per_million"])
            except (RuntimeError, AssertionError, OSError, subprocess.SubprocessError) as e:
                out["peer"] = {"peer": "benthos", "error": str(e)[-1500:]}
    return out


PARTS = ("sink-one", "sink-ndjson", "webhook-ndjson", "webhook-one")


def scenario(n=500_000, n_one=50_000, seconds=10, conns=16, peers=True, parts=PARTS, limit=True):
    if not shutil.which("wrk"):
        raise RuntimeError("wrk is not installed (apt-get install -y wrk)")
    build_target()
    d = tmpdir("bench-http")
    target = Target()
    try:
        log(f"target on {target.url}; load {loadavg()}")
        if "sink-one" in parts:
            yield sink_side(target, "one", n_one, seconds, peers, d, limit)
        if "sink-ndjson" in parts:
            yield sink_side(target, "ndjson", n, seconds, peers, d, limit)
        if "webhook-ndjson" in parts:
            yield webhook_side(target, 100, conns, seconds, peers, d)
        if "webhook-one" in parts:
            yield webhook_side(target, 1, conns, seconds, peers, d)
    finally:
        target.stop()
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    # For iterating on one part: python3 bench/http/http_bench.py --parts sink-one --repeat 3
    # (bench/run --scenarios http runs every part once, with the peers).
    import argparse
    ap = argparse.ArgumentParser(description="bench/run's http scenario, or parts of it")
    ap.add_argument("--parts", default=",".join(PARTS), help=f"comma-separated subset of {','.join(PARTS)}")
    ap.add_argument("--http-records", type=int, default=500_000)
    ap.add_argument("--http-one-records", type=int, default=50_000)
    ap.add_argument("--http-seconds", type=int, default=10)
    ap.add_argument("--http-connections", type=int, default=16)
    ap.add_argument("--no-peers", action="store_true")
    ap.add_argument("--no-limit", action="store_true", help="sink parts: leave the wrk limit run out")
    ap.add_argument("--repeat", type=int, default=1, help="run the chosen parts this many times")
    a = ap.parse_args()
    parts = tuple(p for p in a.parts.split(",") if p)
    for p in parts:
        if p not in PARTS:
            ap.error(f"unknown part {p!r} (one of {', '.join(PARTS)})")
    for _ in range(a.repeat):
        for r in scenario(a.http_records, a.http_one_records, a.http_seconds, a.http_connections,
                          not a.no_peers, parts, not a.no_limit):
            print(json.dumps(r), flush=True)
