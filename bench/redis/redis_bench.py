"""bench/run --scenarios redis: RedisSink and RedisSource against redis-benchmark on the same server.

A redis-server of the bench's own (Debian's, `scripts/deps redis`) on a free 127.0.0.1 port, no
persistence (--save "" --appendonly no), its files in a temporary folder; stopped at the end.
Every run starts from FLUSHALL (the source runs from a preloaded key) and each ferry run uses a
fresh standalone worker (release `ferry`, or $FERRY_BIN) with one direct connector (no backbone).

Sink, per command (XADD, SET, RPUSH), N records (--redis-records, default 2,000,000) of a 100-byte
value (DatagenSource format=bytes: the sequence number padded with 'x'):

  ferry  DatagenSource -> RedisSink in one direct task: redis.batch.max.commands 500 (its default:
         500 commands per pipeline, one connection). Keys: XADD bench:stream (fields: value),
         SET bench:${key} (key.mode=seq: N distinct keys), RPUSH bench:list. Window: from the
         connector POST until ferry_task_records_out_total reaches N and XLEN / DBSIZE / LLEN
         says Redis holds N (RedisSink keeps one pipeline in flight: put() may return before
         Redis answered its last commands), polled every 50 ms.
  limit  redis-benchmark -c 1 -P 500 -n N on one connection with 500 commands per pipeline, the
         same commands as custom commands: XADD bench:stream * value <100 B>,
         SET bench:__rand_int__ <100 B> (-r N), RPUSH bench:list <100 B>. Window: the tool's run
         (wall clock, start to exit; its own rps is kept as tool_rps).

Source, N entries preloaded with redis-cli --pipe outside the windows (distinct values: the
sequence number padded to 100 bytes):

  stream  ferry: RedisSource (redis.streams=bench:src, XREADGROUP COUNT 500, XACK after the
          records are safe) -> BlackholeSink, direct. Window: connector POST until the task's
          records_out reaches N and the group has nothing pending (every entry acknowledged).
          limit: redis-benchmark -c 1 -n N/500 XREADGROUP GROUP limit c COUNT 500 STREAMS
          bench:src > on a second group of the same stream (each call takes the next 500 entries;
          the group's entries-read is checked to be N). No XACK in the limit: it is the server's
          rate of handing entries out over one connection, an upper bound for a consumer that
          also acknowledges (ferry sends one XACK of up to 1,000 ids per batch besides).
  list    ferry: RedisSource (redis.lists=bench:srclist: LMOVE into a processing list, 500 per
          pipeline, reads ahead after a full batch; acknowledged elements removed by one script
          call per batch, an LTRIM of the tail) -> BlackholeSink, direct, worker defaults.
          Window: until records_out reaches N
          and both the list and the processing list are empty. limit: redis-benchmark -c 1 -P 500
          -n N LMOVE bench:limitlist bench:limitproc RIGHT LEFT (a second preloaded copy): the
          moves alone, without the removal that makes ferry's queue reliable.

Figures: records_per_s (N / window), records_out_seconds (ferry: from the POST until records_out
reached N; for the sources the rest of the window is the last acknowledgements (XACK, removals),
which follow the direct task's flush of its sink), cpu_s_per_million (user+system CPU of the worker from
/proc/<pid>/stat over the window, per million records), peak_rss_mb (VmHWM of the worker),
server_cpu_s_per_million (redis-server's CPU over the window: it is single-threaded, so
records_per_s / (server CPU per record) shows how close to its core it ran), the limit's
client_cpu_s_per_million (redis-benchmark, from wait4's rusage), ratio.records_per_s
(ferry / limit; the aim is >= 0.7), load_avg (/proc/loadavg at the end of each run: a shared
machine). Standard library only.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
os.environ.setdefault("FERRY_BIN", os.path.join(ROOT, "build", "release", "apps", "ferry", "ferry"))
from harness import Worker, free_port, tmpdir, wait_until  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "bench"))
from procstat import cpu_s, hwm_mb, loadavg  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "tests", "redis"))
from resp_client import Redis, RedisError  # noqa: E402  (the tests' RESP client)

SCENARIO = "redis"
HOST = "127.0.0.1"
PIPELINE = 500  # commands per pipeline: RedisSink's redis.batch.max.commands and RedisSource's batch


def log(msg):
    print(f"bench: {SCENARIO}: {msg}", file=sys.stderr, flush=True)


def value_of(i, size=100):
    v = b"%d" % i
    return v + b"x" * (size - len(v))


def resp_command(*args):
    return Redis.encode(args)


class Server:
    """The bench's own redis-server."""

    def __init__(self):
        self.dir = tmpdir("bench-redis-server")
        self.port = free_port()
        self.proc = None

    def start(self):
        if not shutil.which("redis-server") or not shutil.which("redis-benchmark"):
            raise RuntimeError("redis-server / redis-benchmark not installed (scripts/deps redis)")
        self.proc = subprocess.Popen(
            ["redis-server", "--bind", HOST, "--port", str(self.port), "--save", "", "--appendonly", "no",
             "--dir", self.dir, "--daemonize", "no", "--protected-mode", "no", "--logfile",
             os.path.join(self.dir, "redis.log")],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def up():
            if self.proc.poll() is not None:
                raise RuntimeError(f"redis-server exited with {self.proc.returncode}")
            try:
                c = Redis(HOST, self.port, timeout=30)
                ok = c.call("PING") == "PONG"
                c.close()
                return ok
            except (OSError, RedisError):
                return False
        wait_until(up, 20, "redis-server answers PING", 0.05)
        self.version = self.call("INFO", "server").decode().split("redis_version:")[1].split()[0]

    def call(self, *args):
        c = Redis(HOST, self.port, timeout=30)
        try:
            return c.call(*args)
        finally:
            c.close()

    def cpu(self):
        return cpu_s(self.proc.pid)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        shutil.rmtree(self.dir, ignore_errors=True)

    def pipe(self, data):
        """Loads RESP commands with redis-cli --pipe."""
        p = subprocess.run(["redis-cli", "-h", HOST, "-p", str(self.port), "--pipe"], input=data,
                           capture_output=True, timeout=600)
        if p.returncode != 0 or b"errors: 0" not in p.stdout:
            raise RuntimeError(f"redis-cli --pipe: {p.stdout[-300:]!r} {p.stderr[-300:]!r}")


def records_out(w, connector):
    status, text = w.rest("GET", "/metrics")
    if status != 200:
        return 0
    raw = text if isinstance(text, str) else json.dumps(text)
    total = 0.0
    for line in raw.splitlines():
        if line.startswith("ferry_task_records_out_total{") and f'connector="{connector}"' in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


def run_ferry(server, n, name, config, done, check, worker_props=None):
    """One ferry run: a fresh worker (`worker_props` added to its properties), the direct connector
    `config`, the window until `done()` (and records_out >= n); `check()` afterwards returns what
    is in Redis (must be n)."""
    d = tmpdir("bench-redis")
    w = Worker(d, worker_props)
    try:
        w.start()
        pid = w.proc.pid
        c0, s0 = cpu_s(pid), server.cpu()
        t0 = time.time()
        w.ok("POST", "/connectors", {"name": name, "config": config})

        t_out = []

        def finished():
            if w.proc.poll() is not None:
                raise AssertionError(f"ferry exited:\n{w.tail_log()}")
            if not t_out:
                if records_out(w, name) < n:
                    return False
                t_out.append(time.time())
            return done()
        wait_until(finished, 600, f"{name}: {n} records through", 0.05)
        secs = time.time() - t0
        cpu, scpu = cpu_s(pid) - c0, server.cpu() - s0
        rss = hwm_mb(pid)
        got = check()
        if got != n:
            raise AssertionError(f"{name}: Redis holds {got}, expected {n}\n{w.tail_log()}")
        return {"seconds": round(secs, 3), "records_per_s": round(n / secs),
                "records_out_seconds": round(t_out[0] - t0, 3),
                "cpu_s_per_million": round(cpu * 1e6 / n, 3),
                "server_cpu_s_per_million": round(scpu * 1e6 / n, 3),
                "peak_rss_mb": rss, "load_avg": loadavg()}
    finally:
        w.stop()
        shutil.rmtree(d, ignore_errors=True)


def run_benchmark(server, n, requests, args, pipeline=PIPELINE, extra=()):
    """redis-benchmark on one connection; returns the window's figures per `n` records."""
    cmd = ["redis-benchmark", "-h", HOST, "-p", str(server.port), "-c", "1", "-P", str(pipeline),
           "-n", str(requests), "--csv", *extra, *args]
    s0 = server.cpu()
    t0 = time.time()
    with tempfile.TemporaryFile() as out_f, tempfile.TemporaryFile() as err_f:
        p = subprocess.Popen(cmd, stdout=out_f, stderr=err_f)
        _, status, ru = os.wait4(p.pid, 0)  # its own CPU from the kernel's rusage
        secs = time.time() - t0
        scpu = server.cpu() - s0
        p.returncode = os.waitstatus_to_exitcode(status)
        out_f.seek(0)
        err_f.seek(0)
        out = out_f.read().decode(errors="replace")
        err = err_f.read().decode(errors="replace")
    if p.returncode != 0:
        raise RuntimeError(f"redis-benchmark {' '.join(args)}: exit {p.returncode}: {err[-500:]}")
    tool_rps = None
    for line in out.splitlines():
        cols = [c.strip('"') for c in line.split(",")]
        if len(cols) > 1 and cols[0] != "test":
            try:
                tool_rps = float(cols[1])
            except ValueError:
                pass
    return {"seconds": round(secs, 3), "records_per_s": round(n / secs),
            "tool_rps": None if tool_rps is None else round(tool_rps),
            "client_cpu_s_per_million": round((ru.ru_utime + ru.ru_stime) * 1e6 / n, 3),
            "server_cpu_s_per_million": round(scpu * 1e6 / n, 3), "load_avg": loadavg()}


def ratio(a, b):
    return round(a / b, 3) if a and b else None


SINKS = {
    # command: (ferry redis.key, key.mode, redis-benchmark custom command, extra args, count check)
    "XADD": ("bench:stream", "none", ["XADD", "bench:stream", "*", "value"], (),
             lambda s: s.call("XLEN", "bench:stream")),
    "SET": ("bench:${key}", "seq", ["SET", "bench:__rand_int__"], None,
            lambda s: s.call("DBSIZE")),
    "RPUSH": ("bench:list", "none", ["RPUSH", "bench:list"], (),
              lambda s: s.call("LLEN", "bench:list")),
}


def sink(server, n, command):
    key, key_mode, bench_cmd, extra, count = SINKS[command]
    value = "0" + "x" * 99  # redis-benchmark's value: 100 bytes, as DatagenSource's
    server.call("FLUSHALL")
    log(f"sink {command}: ferry DatagenSource -> RedisSink, {n} records")
    f = run_ferry(server, n, "rsink", {
        "connector.class": "DatagenSource", "topic": "bench", "max.records": str(n), "format": "bytes",
        "value.size": "100", "key.mode": key_mode, "sink.connector.class": "RedisSink",
        "sink.redis.hosts": f"{HOST}:{server.port}", "sink.redis.command": command, "sink.redis.key": key,
        "sink.redis.batch.max.commands": str(PIPELINE)}, lambda: count(server) >= n, lambda: count(server))
    server.call("FLUSHALL")
    log(f"sink {command}: limit redis-benchmark -c 1 -P {PIPELINE} -n {n} {' '.join(bench_cmd)} <100 B>")
    limit = run_benchmark(server, n, n, [*bench_cmd, value],
                          extra=("-r", str(n)) if extra is None else extra)
    if command != "SET" and count(server) != n:
        raise RuntimeError(f"redis-benchmark {command}: {count(server)} written, expected {n}")
    server.call("FLUSHALL")
    return {"scenario": SCENARIO, "side": "sink", "command": command, "records": n, "value_bytes": 100,
            "pipeline": PIPELINE, "redis_version": server.version, "ferry": f, "limit": limit,
            "ratio": {"records_per_s": ratio(f["records_per_s"], limit["records_per_s"]),
                      "server_cpu_per_record": ratio(f["server_cpu_s_per_million"],
                                                     limit["server_cpu_s_per_million"])}}


def preload(server, key, n, cmd):
    chunks = []
    for base in range(0, n, 50_000):
        chunks.append(b"".join(
            resp_command(*([cmd, key.encode(), b"*", b"value", value_of(i)] if cmd == b"XADD"
                           else [cmd, key.encode(), value_of(i)]))
            for i in range(base, min(n, base + 50_000))))
    server.pipe(b"".join(chunks))


def source_stream(server, n):
    server.call("FLUSHALL")
    log(f"source stream: preloading {n} entries")
    preload(server, "bench:src", n, b"XADD")
    group = "ferry-rsrc"

    def pending():
        try:
            groups = server.call("XINFO", "GROUPS", "bench:src")
        except RuntimeError:
            return None
        for g in groups:
            kv = dict(zip(g[::2], g[1::2]))
            if kv.get(b"name") == group.encode():
                return kv[b"pending"], kv.get(b"entries-read")
        return None

    def all_acked():
        p = pending()
        return p is not None and p[0] == 0
    log("source stream: ferry RedisSource -> BlackholeSink")
    f = run_ferry(server, n, "rsrc", {
        "connector.class": "RedisSource", "redis.hosts": f"{HOST}:{server.port}", "redis.streams": "bench:src",
        "redis.stream.group": group, "redis.batch.size": str(PIPELINE), "topic": "bench",
        "sink.connector.class": "BlackholeSink"}, all_acked, lambda: pending()[1])
    server.call("XGROUP", "CREATE", "bench:src", "limit", "0")
    calls = -(-n // PIPELINE)
    log(f"source stream: limit redis-benchmark -c 1 -n {calls} XREADGROUP GROUP limit c COUNT {PIPELINE} "
        "STREAMS bench:src >")
    limit = run_benchmark(server, n, calls, ["XREADGROUP", "GROUP", "limit", "c", "COUNT", str(PIPELINE),
                                             "STREAMS", "bench:src", ">"], pipeline=1)
    groups = {dict(zip(g[::2], g[1::2]))[b"name"]: dict(zip(g[::2], g[1::2]))
              for g in server.call("XINFO", "GROUPS", "bench:src")}
    read = groups[b"limit"].get(b"entries-read")
    if read != n:
        raise RuntimeError(f"redis-benchmark XREADGROUP read {read} entries, expected {n}")
    server.call("FLUSHALL")
    return {"scenario": SCENARIO, "side": "source", "mode": "stream", "records": n, "value_bytes": 100,
            "batch": PIPELINE, "redis_version": server.version, "ferry": f,
            "limit": {**limit, "what": "XREADGROUP COUNT 500 on one connection, no XACK"},
            "ratio": {"records_per_s": ratio(f["records_per_s"], limit["records_per_s"]),
                      "server_cpu_per_record": ratio(f["server_cpu_s_per_million"],
                                                     limit["server_cpu_s_per_million"])}}


def source_list(server, n):
    server.call("FLUSHALL")
    log(f"source list: preloading {n} elements twice (ferry's list and the limit's)")
    preload(server, "bench:srclist", n, b"RPUSH")
    preload(server, "bench:limitlist", n, b"RPUSH")

    def drained():
        if server.call("LLEN", "bench:srclist") != 0:
            return False
        procs = server.call("KEYS", "*bench:srclist*:ferry-processing:*")
        return all(server.call("LLEN", k) == 0 for k in procs)
    log("source list: ferry RedisSource -> BlackholeSink")
    f = run_ferry(server, n, "rlist", {
        "connector.class": "RedisSource", "redis.hosts": f"{HOST}:{server.port}", "redis.lists": "bench:srclist",
        "redis.batch.size": str(PIPELINE), "topic": "bench", "sink.connector.class": "BlackholeSink"},
        drained, lambda: n - server.call("LLEN", "bench:srclist"))
    log(f"source list: limit redis-benchmark -c 1 -P {PIPELINE} -n {n} LMOVE bench:limitlist bench:limitproc "
        "RIGHT LEFT")
    limit = run_benchmark(server, n, n, ["LMOVE", "bench:limitlist", "bench:limitproc", "RIGHT", "LEFT"])
    moved = server.call("LLEN", "bench:limitproc")
    if moved != n:
        raise RuntimeError(f"redis-benchmark LMOVE moved {moved}, expected {n}")
    server.call("FLUSHALL")
    return {"scenario": SCENARIO, "side": "source", "mode": "list", "records": n, "value_bytes": 100,
            "batch": PIPELINE, "redis_version": server.version, "ferry": f,
            "limit": {**limit, "what": "LMOVE pipelined 500 on one connection, no removal"},
            "ratio": {"records_per_s": ratio(f["records_per_s"], limit["records_per_s"]),
                      "server_cpu_per_record": ratio(f["server_cpu_s_per_million"],
                                                     limit["server_cpu_s_per_million"])}}


def scenario(n=2_000_000, commands=("XADD", "SET", "RPUSH"), sources=("stream", "list")):
    server = Server()
    try:
        server.start()
        log(f"redis-server {server.version} on {HOST}:{server.port}; load {loadavg()}")
        for c in commands:
            yield sink(server, n, c)
        for s in sources:
            yield source_stream(server, n) if s == "stream" else source_list(server, n)
    finally:
        server.stop()


if __name__ == "__main__":
    for r in scenario(int(sys.argv[1]) if len(sys.argv) > 1 else 2_000_000):
        print(json.dumps(r), flush=True)
