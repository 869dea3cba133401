"""bench/run --scenarios jdbc: JdbcSink into PostgreSQL against the server's own bulk load limit.

Needs scripts/services/postgres running (127.0.0.1:15432; $FERRY_POSTGRES_URL overrides) and psql.
For each row size (--jdbc-row-bytes, default 100 and 1,024 bytes of payload):

  copy   the limit: N rows as CSV loaded with psql `\\copy ... FROM` into an empty table (one COPY,
         one transaction); rows/s from the client's start to its end;
  ferry  a standalone worker: FileStreamSource reads N Kafka Connect envelopes (struct schema: id
         int64, ts Timestamp, qty int32, note string padded to the size) into the embedded backbone,
         JdbcSink (value.converter=JsonConverter, insert.mode=insert, auto.create) writes them; rows/s
         from creating the connectors until the table holds N rows; the worker's CPU and the
         server's (the postgres processes alive at the end: the sink's backend) per million rows;
         the worker's peak RSS.

ratio.ferry_vs_copy = ferry rows/s / copy rows/s (the issue's aim: >= 0.5). The JVM peer of the
issue (Debezium's JDBC sink on Kafka Connect) is not run: not measured yet.
"""
import json
import os
import subprocess
import sys
import time
import urllib.parse
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
sys.path.insert(0, os.path.join(ROOT, "bench", "rocketmq"))
from harness import Worker, tmpdir, wait_until  # noqa: E402
import rocketmq_replicate as rrep  # noqa: E402  (cpu_s, hwm)

SCENARIO = "jdbc"
PG_URL = os.environ.get("FERRY_POSTGRES_URL", "postgresql://ferry:ferry-test-pw@127.0.0.1:15432/ferry")


def log(msg):
    print(f"bench: {SCENARIO}: {msg}", file=sys.stderr, flush=True)


def psql(sql, stdin=None):
    p = subprocess.run(["psql", PG_URL, "-v", "ON_ERROR_STOP=1", "-At", "-c", sql], input=stdin,
                       capture_output=True, text=True, timeout=1800)
    if p.returncode != 0:
        raise RuntimeError(f"psql: {p.stderr[-500:]}")
    return p.stdout.strip()


def server_cpu():
    """CPU seconds of every postgres process (the server and its backends)."""
    p = subprocess.run(["pgrep", "-x", "postgres"], capture_output=True, text=True)
    total = 0.0
    for pid in p.stdout.split():
        try:
            total += rrep.cpu_s(int(pid))
        except OSError:
            pass
    return total


SCHEMA = {"type": "struct", "fields": [
    {"type": "int64", "optional": False, "field": "id"},
    {"type": "int64", "optional": False, "name": "org.apache.kafka.connect.data.Timestamp", "version": 1, "field": "ts"},
    {"type": "int32", "optional": False, "field": "qty"},
    {"type": "string", "optional": False, "field": "note"},
], "optional": False, "name": "bench.Row"}


def row(i, size):
    base = {"id": i, "ts": 1700000000000 + i, "qty": i % 1000, "note": ""}
    pad = max(0, size - len(json.dumps(base, separators=(",", ":"))))
    base["note"] = ("abcdefghijklmnopqrstuvwxyz" * (pad // 26 + 1))[:pad]
    return base


def copy_run(n, size, d):
    table = f"bench_copy_{uuid.uuid4().hex[:8]}"
    csv_path = os.path.join(d, f"rows-{size}.csv")
    with open(csv_path, "w") as f:
        for i in range(n):
            r = row(i, size)
            ts = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(r["ts"] // 1000)) + f".{r['ts'] % 1000:03d}"
            f.write(f"{r['id']},{ts},{r['qty']},{r['note']}\n")
    psql(f'CREATE TABLE "{table}" (id BIGINT NOT NULL, ts TIMESTAMP NOT NULL, qty INTEGER NOT NULL, note TEXT NOT NULL)')
    try:
        # No server CPU here: the backend that ran the COPY has exited by the end of the window.
        t0 = time.time()
        psql(f'\\copy "{table}" FROM \'{csv_path}\' WITH (FORMAT csv)')
        secs = time.time() - t0
        got = int(psql(f'SELECT count(*) FROM "{table}"'))
        if got != n:
            raise RuntimeError(f"COPY loaded {got} rows, not {n}")
        return {"seconds": round(secs, 3), "rows_per_s": round(n / secs)}
    finally:
        psql(f'DROP TABLE IF EXISTS "{table}"')


def ferry_run(n, size, d):
    u = urllib.parse.urlparse(PG_URL)
    table = f"bench_ferry_{uuid.uuid4().hex[:8]}"
    src = os.path.join(d, f"rows-{size}.jsonl")
    with open(src, "w") as f:
        for i in range(n):
            f.write(json.dumps({"schema": SCHEMA, "payload": row(i, size)}, separators=(",", ":")) + "\n")
    wd = os.path.join(d, f"w-{size}")
    os.makedirs(wd, exist_ok=True)
    w = Worker(wd, extra={"file.allowed.dirs": d})
    w.start()
    try:
        pid = w.proc.pid
        c0, s0 = rrep.cpu_s(pid), server_cpu()
        t0 = time.time()
        w.ok("POST", "/connectors", {"name": "src", "config": {
            "connector.class": "FileStreamSource", "file": src, "topic": table}})
        w.ok("POST", "/connectors", {"name": "sink", "config": {
            "connector.class": "JdbcSink", "topics": table,
            "connection.url": f"postgresql://{u.hostname}:{u.port}{u.path}", "connection.user": u.username,
            "connection.password": urllib.parse.unquote(u.password or ""),
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "insert.mode": "insert", "auto.create": "true"}})

        def done():
            try:
                return int(psql(f'SELECT count(*) FROM "{table}"')) >= n
            except RuntimeError:
                return False  # not created yet
        wait_until(done, 1800, f"{n} rows in {table}", interval=0.2)
        secs = time.time() - t0
        cpu, scpu = rrep.cpu_s(pid) - c0, server_cpu() - s0
        got = int(psql(f'SELECT count(*) FROM "{table}"'))
        if got != n:
            raise RuntimeError(f"the table holds {got} rows, not {n}")
        return {"seconds": round(secs, 3), "rows_per_s": round(n / secs),
                "ferry_cpu_s_per_million": round(cpu * 1e6 / n, 2),
                "server_cpu_s_per_million": round(scpu * 1e6 / n, 2),
                "peak_rss_mb": round(rrep.hwm(pid) / 2**20, 1)}
    finally:
        w.stop()
        psql(f'DROP TABLE IF EXISTS "{table}"')


def scenario(n=200_000, sizes=(100, 1024)):
    psql("SELECT 1")
    d = tmpdir("bench-jdbc")
    for size in sizes:
        log(f"{n} rows of {size} B: COPY")
        c = copy_run(n, size, d)
        log(f"{n} rows of {size} B: ferry")
        f = ferry_run(n, size, d)
        yield {"scenario": SCENARIO, "row_bytes": size, "rows": n, "copy": c, "ferry": f,
               "ratio": {"ferry_vs_copy": round(f["rows_per_s"] / c["rows_per_s"], 3)}}
