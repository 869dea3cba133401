"""bench/run --scenarios jdbc: JdbcSink into PostgreSQL against the server's own bulk load limit and
against a JVM peer, Debezium's JDBC sink connector on Kafka Connect 4.1.1 (standalone).

Needs scripts/services/postgres running (127.0.0.1:15432; $FERRY_POSTGRES_URL overrides) and psql;
for the peer also mvn, java and the broker of scripts/services/kafka (started if it is down, and
left running: a shared service). For each row size (--jdbc-row-bytes, default 100 and 1,024 bytes
of payload), N rows (--jdbc-rows) of a struct schema (id int64, ts Timestamp, qty int32, note
string padded to the size) written as Kafka Connect JSON envelopes ({"schema","payload"}), and for
each insert mode ($FERRY_BENCH_JDBC_MODES, default "insert,upsert"; upsert: primary key `id` from
the value):

  copy         the limit: the rows as CSV loaded with psql `\\copy ... FROM` into an empty table
               (one COPY, one transaction); rows/s from the client's start to its end; once a size;
  ferry        a standalone worker: FileStreamSource reads the envelopes from a file into the
               embedded backbone and JdbcSink (JsonConverter, auto.create, batch.size 3000) writes
               them; both connectors inside the timed window;
  ferry_sink   the same, with the FileStreamSource run to its end before the window: the window holds
               JdbcSink alone reading the embedded backbone (as COPY's holds only the load of a file
               written beforehand);
  ferry_kafka  a standalone worker on the kafka backbone (backbone=kafka, same broker): JdbcSink
               alone reads the Kafka topic the peer reads (produced beforehand);
  peer         Debezium's io.debezium.connector.jdbc.JdbcSinkConnector (PEER_VERSION, fetched with
               mvn from bench/jdbc/debezium-jdbc-pom.xml into ~/.cache/ferry-peers/, plugin.path)
               in a standalone Kafka Connect 4.1.1 worker (bin/connect-standalone.sh's heap and
               JVM flags), reading that topic with JsonConverter (schemas.enable), tasks.max 1,
               schema.evolution=basic, batch.size 3000 and consumer max.poll.records 3000.

The topic (one partition) is filled once a size with Kafka's kafka-console-producer, outside every
window. Each side is timed the same way: the worker is up first; from creating the connector(s)
until count(*) of its table (polled every 0.2 s) reaches N: rows_per_s; also
first_to_last_rows_per_s, from the first poll that saw rows to the last (the sink's start-up left
out). CPU: user+system of the worker process from /proc (ferry's process; the peer's JVM) over the
window, per million rows (= µs per row); the PostgreSQL server's CPU (postgres processes alive at
the end) the same way; peak RSS = VmHWM of the worker process.

The source side (JdbcSource), for each row size, from a table holding the same N rows (loaded with
COPY beforehand):

  copy_to      the limit: psql `\\copy (SELECT * FROM table) TO '/dev/null'` (the rows out through
               one COPY), from the client's start to its end;
  ferry        a standalone worker: JdbcSource (mode=incrementing on id, batch.max.rows 5000)
               reads the table into the embedded backbone with JsonConverter (the envelope
               written per record); from creating the connector until the source task's
               ferry_task_records_out_total (records the backbone acknowledged, from /metrics,
               polled every 0.2 s) reaches N; CPU and RSS as for the sink.

  ratio: ferry_vs_copy_to. There is no JVM peer for the source side here.

ratio: ferry_vs_copy, ferry_sink_vs_copy; with the peer also ferry_kafka_vs_peer (rows/s, same input),
ferry_kafka_vs_peer_per_core (rows per CPU-second: the peer's CPU per row / ferry's),
ferry_kafka_vs_peer_first_to_last, ferry_vs_peer and ferry_vs_peer_per_core (ferry from its file),
peer_vs_ferry_kafka_rss. The peer is skipped with bench/run --no-peers; a failed peer is reported
as {"peer": {"error": ...}} and the run goes on.
"""
import json
import os
import shutil
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
sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
import kafka_connect as kc  # noqa: E402  (the Connect worker, the broker, the Kafka jars)

SCENARIO = "jdbc"
PEER = "debezium-jdbc"
PEER_VERSION = "3.6.0.Final"  # must match PEER_POM
PEER_POM = os.path.join(HERE, "debezium-jdbc-pom.xml")
PEER_HOME = os.path.join(os.path.expanduser("~"), ".cache", "ferry-peers", f"debezium-jdbc-{PEER_VERSION}")
PEER_CLASS = "io.debezium.connector.jdbc.JdbcSinkConnector"
PEER_TIMEOUT_S = 600
# Extra JDBC URL parameters for the peer only, e.g. reWriteBatchedInserts=true (pgJDBC's multi-row
# rewrite of batched INSERTs); empty by default: Debezium's documented setup as it comes.
PEER_URL_PARAMS = os.environ.get("FERRY_BENCH_JDBC_PEER_URL_PARAMS", "")
BATCH = 3000  # rows per statement on both sides (JdbcSink's default batch.size; Debezium's is 500)
# The source side's converter: "true" writes Kafka Connect's envelope (the schema in every record),
# "false" the payload alone (what the schema's travel costs, measured by running both).
SOURCE_SCHEMAS = os.environ.get("FERRY_BENCH_JDBC_SOURCE_SCHEMAS", "true")
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


def write_csv(n, size, d):
    """The N rows as CSV (what COPY loads), written once a size."""
    csv_path = os.path.join(d, f"rows-{size}.csv")
    if not os.path.exists(csv_path):
        with open(csv_path, "w") as f:
            for i in range(n):
                r = row(i, size)
                ts = time.strftime("%Y-%m-%d %H:%M:%S", time.gmtime(r["ts"] // 1000)) + f".{r['ts'] % 1000:03d}"
                f.write(f"{r['id']},{ts},{r['qty']},{r['note']}\n")
    return csv_path


def copy_run(n, size, d):
    table = f"bench_copy_{uuid.uuid4().hex[:8]}"
    csv_path = write_csv(n, size, d)
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


def write_envelopes(n, size, d):
    """The N rows as Kafka Connect JSON envelopes ({"schema","payload"}), one a line: what ferry's
    FileStreamSource reads and what is produced into Kafka for the peer and ferry on Kafka."""
    src = os.path.join(d, f"rows-{size}.jsonl")
    with open(src, "w") as f:
        for i in range(n):
            f.write(json.dumps({"schema": SCHEMA, "payload": row(i, size)}, separators=(",", ":")) + "\n")
    return src


def wait_rows(table, n, check=None):
    """Polls count(*) every 0.2 s until the table holds N rows (`check`, if given, runs each poll and
    raises when the writer failed). Returns (end time, time of the first poll that saw rows, the
    count then), for the first-to-last rate that leaves the sink's start-up out."""
    first = [None, 0]

    def done():
        if check:
            check()
        try:
            c = int(psql(f'SELECT count(*) FROM "{table}"'))
        except RuntimeError:
            return False  # not created yet
        if c and first[0] is None:
            first[:] = [time.time(), c]
        return c >= n
    wait_until(done, PEER_TIMEOUT_S, f"{n} rows in {table}", interval=0.2)
    t_end = time.time()
    got = int(psql(f'SELECT count(*) FROM "{table}"'))
    if got != n:
        raise RuntimeError(f"the table holds {got} rows, not {n}")
    return t_end, first[0], first[1]


def sink_figures(n, t0, waited, cpu, scpu, hwm, who):
    t_end, t_first, c_first = waited
    secs = t_end - t0
    out = {"seconds": round(secs, 3), "rows_per_s": round(n / secs)}
    if t_first is not None and t_end - t_first > 0.5 and c_first < n:
        out["first_to_last_rows_per_s"] = round((n - c_first) / (t_end - t_first))
    out.update({f"{who}_cpu_s_per_million": round(cpu * 1e6 / n, 2),
                "server_cpu_s_per_million": round(scpu * 1e6 / n, 2),
                "peak_rss_mb": round(hwm / 2**20, 1)})
    return out


def ferry_run(n, size, d, src, mode="insert", broker=None, topic=None, preload=False):
    """ferry's JdbcSink. Without `broker`: a FileStreamSource reads `src` into the embedded backbone
    inside the timed window, or with `preload` before it (the window then holds the sink alone, as
    COPY's holds a file written beforehand). With `broker` (backbone=kafka on that broker): the sink
    alone reads `topic`, produced beforehand, as the peer does."""
    u = urllib.parse.urlparse(PG_URL)
    table = f"bench_ferry{'k' if broker else ''}_{uuid.uuid4().hex[:8]}"
    wd = os.path.join(d, f"w-{size}-{mode}-{'kafka' if broker else 'preloaded' if preload else 'embedded'}")
    os.makedirs(wd, exist_ok=True)
    extra = {"file.allowed.dirs": d}
    if broker:
        extra.update({"backbone": "kafka", "backbone.kafka.bootstrap.servers": broker.bootstrap,
                      "backbone.topic.default.queues": "1"})
    w = Worker(wd, extra=extra)
    w.start()
    try:
        pid = w.proc.pid
        if not broker and preload:
            topic = table
            w.ok("POST", "/connectors", {"name": "src", "config": {
                "connector.class": "FileStreamSource", "file": src, "topic": topic}})
            wait_until(lambda: records_out(w, "src") >= n, PEER_TIMEOUT_S, f"{n} records in the backbone",
                       interval=0.1)
        c0, s0 = rrep.cpu_s(pid), server_cpu()
        t0 = time.time()
        if not broker and not preload:
            topic = table
            w.ok("POST", "/connectors", {"name": "src", "config": {
                "connector.class": "FileStreamSource", "file": src, "topic": topic}})
        sink = {"connector.class": "JdbcSink", "topics": topic, "table.name.format": table,
                "connection.url": f"postgresql://{u.hostname}:{u.port}{u.path}", "connection.user": u.username,
                "connection.password": urllib.parse.unquote(u.password or ""),
                "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                "insert.mode": mode, "auto.create": "true", "batch.size": str(BATCH)}
        if mode == "upsert":
            sink.update({"pk.mode": "record_value", "pk.fields": "id"})
        w.ok("POST", "/connectors", {"name": f"sink-{uuid.uuid4().hex[:8]}", "config": sink})
        waited = wait_rows(table, n)
        cpu, scpu = rrep.cpu_s(pid) - c0, server_cpu() - s0
        return sink_figures(n, t0, waited, cpu, scpu, rrep.hwm(pid), "ferry")
    finally:
        w.stop()
        psql(f'DROP TABLE IF EXISTS "{table}"')


def records_out(w, connector):
    """Task 0's ferry_task_records_out_total (for a source: records the backbone acknowledged)."""
    line = f'ferry_task_records_out_total{{connector="{connector}",task="0"}} '
    _, m = w.rest("GET", "/metrics")
    for ln in (m or "").splitlines():
        if ln.startswith(line):
            return float(ln[len(line):])
    return 0


def source_run(n, size, d):
    """JdbcSource reading a table of N rows into the embedded backbone, beside COPY ... TO."""
    u = urllib.parse.urlparse(PG_URL)
    table = f"bench_src_{uuid.uuid4().hex[:8]}"
    csv_path = write_csv(n, size, d)
    psql(f'CREATE TABLE "{table}" (id BIGINT PRIMARY KEY, ts TIMESTAMP NOT NULL, qty INTEGER NOT NULL, note TEXT NOT NULL)')
    psql(f'\\copy "{table}" FROM \'{csv_path}\' WITH (FORMAT csv)')
    psql(f'VACUUM ANALYZE "{table}"')
    wd = os.path.join(d, f"w-src-{size}")
    os.makedirs(wd, exist_ok=True)
    w = None
    try:
        t0 = time.time()
        psql(f'\\copy (SELECT * FROM "{table}") TO \'/dev/null\'')
        copy_secs = time.time() - t0
        w = Worker(wd)
        w.start()
        pid = w.proc.pid
        c0, s0 = rrep.cpu_s(pid), server_cpu()
        t0 = time.time()
        w.ok("POST", "/connectors", {"name": "jdbc-src", "config": {
            "connector.class": "JdbcSource", "connection.url": f"postgresql://{u.hostname}:{u.port}{u.path}",
            "connection.user": u.username, "connection.password": urllib.parse.unquote(u.password or ""),
            "mode": "incrementing", "incrementing.column.name": "id", "table.whitelist": table,
            "topic.prefix": "", "batch.max.rows": "5000",
            "value.converter": "org.apache.kafka.connect.json.JsonConverter",
            "value.converter.schemas.enable": SOURCE_SCHEMAS}})
        wait_until(lambda: records_out(w, "jdbc-src") >= n, PEER_TIMEOUT_S, f"{n} source records acknowledged", interval=0.2)
        secs = time.time() - t0
        cpu, scpu = rrep.cpu_s(pid) - c0, server_cpu() - s0
        f = {"seconds": round(secs, 3), "rows_per_s": round(n / secs),
             "ferry_cpu_s_per_million": round(cpu * 1e6 / n, 2),
             "server_cpu_s_per_million": round(scpu * 1e6 / n, 2), "peak_rss_mb": round(rrep.hwm(pid) / 2**20, 1)}
        c = {"seconds": round(copy_secs, 3), "rows_per_s": round(n / copy_secs)}
        return {"scenario": SCENARIO, "direction": "source", "row_bytes": size, "rows": n,
                "schemas_enable": SOURCE_SCHEMAS == "true", "copy_to": c, "ferry": f,
                "ratio": {"ferry_vs_copy_to": round(f["rows_per_s"] / c["rows_per_s"], 3)}}
    finally:
        if w:
            w.stop()
        psql(f'DROP TABLE IF EXISTS "{table}"')


# ---- the JVM peer: Debezium's JDBC sink on Kafka Connect 4.1.1 (standalone) ----

def fetch_peer():
    """The Debezium JDBC sink plugin folder, fetched with mvn from PEER_POM on first use (again when
    the pom changes) into ~/.cache/ferry-peers/debezium-jdbc-<version>/plugins/; returns the
    plugin.path."""
    plugins = os.path.join(PEER_HOME, "plugins")
    marker = os.path.join(PEER_HOME, ".fetched")
    with open(PEER_POM) as f:
        pom = f.read()
    try:
        with open(marker) as f:
            if f.read() == pom:
                return plugins
    except OSError:
        pass
    if shutil.which("mvn") is None:
        raise kc.PeerError("mvn not found (Maven fetches the Debezium JDBC sink)")
    os.makedirs(PEER_HOME, exist_ok=True)
    with open(os.path.join(PEER_HOME, "pom.xml"), "w") as f:
        f.write(pom)
    shutil.rmtree(plugins, ignore_errors=True)
    log(f"fetching Debezium's JDBC sink {PEER_VERSION} with mvn into {plugins}")
    p = subprocess.run(["mvn", "-q", "-B", "dependency:copy-dependencies", "-DincludeScope=runtime",
                        f"-DoutputDirectory={os.path.join(plugins, 'debezium-connector-jdbc')}"],
                       cwd=PEER_HOME, capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise kc.PeerError(f"mvn failed: {(p.stdout + p.stderr)[-1500:]}")
    with open(marker, "w") as f:
        f.write(pom)
    return plugins


def produce(broker, topic, src):
    """Produces every line of `src` as one record value (no key) into a new one-partition topic,
    with Kafka's own kafka-console-producer; outside every timed window."""
    broker.create_topic(topic, 1)
    cmd = ["java", *kc.JVM_OPTS, f"-Dlog4j2.configurationFile={kc.log4j_config()}", "-cp",
           kc.libs_classpath(), "org.apache.kafka.tools.ConsoleProducer", "--bootstrap-server",
           broker.bootstrap, "--topic", topic, "--producer-property", "linger.ms=20",
           "--producer-property", "batch.size=1048576", "--producer-property", "compression.type=none"]
    t0 = time.time()
    with open(src, "rb") as f:
        p = subprocess.run(cmd, stdin=f, capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise kc.PeerError(f"kafka-console-producer failed: {(p.stderr or p.stdout)[-800:]}")
    log(f"produced {src} into {topic} in {time.time() - t0:.1f}s")


def delete_topic(broker, topic):
    """Drops a topic this bench produced (its rows take ~100-300 MB of the shared broker's disk)."""
    cmd = ["java", *kc.JVM_OPTS, f"-Dlog4j2.configurationFile={kc.log4j_config()}", "-cp",
           kc.libs_classpath(), "org.apache.kafka.tools.TopicCommand", "--bootstrap-server",
           broker.bootstrap, "--delete", "--if-exists", "--topic", topic]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        log(f"deleting topic {topic} failed: {(p.stderr or p.stdout)[-300:]}")


def peer_run(n, size, d, broker, topic, plugins, mode="insert"):
    """Debezium's JdbcSinkConnector in a standalone Connect worker reading `topic` (produced
    beforehand). Timed like ferry: from creating the connector (the worker already up) until the
    table holds N rows; the JVM's CPU from /proc, the server's, the JVM's peak RSS."""
    u = urllib.parse.urlparse(PG_URL)
    table = f"bench_dbz_{uuid.uuid4().hex[:8]}"
    w = kc.ConnectStandalone(os.path.join(d, f"connect-{size}-{mode}"), broker.bootstrap,
                             {"plugin.path": plugins})
    w.start(timeout=180)
    try:
        pid = w.pid
        c0, s0 = kc.proc_cpu_s(pid), server_cpu()
        t0 = time.time()
        cfg = {"connector.class": PEER_CLASS, "tasks.max": "1", "topics": topic,
               "connection.url": f"jdbc:postgresql://{u.hostname}:{u.port}{u.path}"
                                 + (f"?{PEER_URL_PARAMS}" if PEER_URL_PARAMS else ""),
               "connection.username": u.username,
               "connection.password": urllib.parse.unquote(u.password or ""),
               "insert.mode": mode, "schema.evolution": "basic", "collection.name.format": table,
               "batch.size": str(BATCH), "consumer.override.max.poll.records": str(BATCH),
               "value.converter": "org.apache.kafka.connect.json.JsonConverter",
               "value.converter.schemas.enable": "true"}
        if mode == "upsert":
            cfg.update({"primary.key.mode": "record_value", "primary.key.fields": "id"})
        else:
            cfg["primary.key.mode"] = "none"
        name = f"dbz-{uuid.uuid4().hex[:8]}"
        w.ok("POST", "/connectors", {"name": name, "config": cfg})
        polls = [0]

        def check():
            if w.proc.poll() is not None:
                raise kc.PeerError(f"Connect exited with {w.proc.returncode}:\n{w.tail_log()}")
            polls[0] += 1
            if polls[0] % 10 == 0:  # a failed task never fills the table: say why instead of waiting
                status, body = w.rest("GET", f"/connectors/{name}/status")
                failed = [t for t in (body or {}).get("tasks", []) if t.get("state") == "FAILED"] \
                    if status == 200 and isinstance(body, dict) else []
                if failed:
                    raise kc.PeerError(f"task FAILED: {failed[0].get('trace', '')[:1500]}")
        try:
            waited = wait_rows(table, n, check)
        except AssertionError as e:
            raise kc.PeerError(f"{e}\n{w.tail_log()}")
        except RuntimeError as e:
            raise kc.PeerError(str(e))
        cpu, scpu = kc.proc_cpu_s(pid) - c0, server_cpu() - s0
        return sink_figures(n, t0, waited, cpu, scpu, kc.proc_status(pid, "VmHWM"), "peer")
    finally:
        w.stop()
        psql(f'DROP TABLE IF EXISTS "{table}"')


def per_core(a, b, a_key, b_key):
    """rows per CPU-second of a over b's (= b's CPU per row over a's); > 1: a does more per core."""
    return round(b[b_key] / a[a_key], 2) if a.get(a_key) and b.get(b_key) else None


def scenario(n=200_000, sizes=(100, 1024), peers=None, modes=None):
    """One object per (mode, size). `peers` None: on unless bench/run was given --no-peers.
    `modes`: insert and upsert ($FERRY_BENCH_JDBC_MODES overrides, e.g. "insert"). The run's
    folder (row files, workers' data: ~6 GB for a million rows of both sizes) is removed at the end."""
    d = tmpdir("bench-jdbc")
    try:
        yield from runs(d, n, sizes, peers, modes)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def runs(d, n, sizes, peers, modes):
    if peers is None:
        peers = "--no-peers" not in sys.argv
    modes = modes or [m for m in os.environ.get("FERRY_BENCH_JDBC_MODES", "insert,upsert").split(",") if m]
    psql("SELECT 1")
    broker, plugins, peer_error = None, None, None
    if peers:
        try:
            plugins = fetch_peer()
            broker = kc.Broker()
            broker.start()  # a shared service: left running (stopped by bench/run only if it started it)
        except (kc.PeerError, OSError, subprocess.SubprocessError) as e:
            peer_error = str(e)[-1500:]
    if os.environ.get("FERRY_BENCH_JDBC_SOURCE", "1") != "0":
        for size in sizes:
            log(f"{n} rows of {size} B: JdbcSource -> embedded backbone, beside COPY ... TO")
            yield source_run(n, size, d)
    if os.environ.get("FERRY_BENCH_JDBC_SINK", "1") == "0":
        return
    for size in sizes:
        src = write_envelopes(n, size, d)
        topic = None
        if peers and not peer_error:
            topic = f"bench_jdbc_{size}_{uuid.uuid4().hex[:8]}"
            try:
                produce(broker, topic, src)
            except (kc.PeerError, OSError, subprocess.SubprocessError) as e:
                peer_error = str(e)[-1500:]
        c = None
        for mode in modes:
            if c is None:
                log(f"{n} rows of {size} B: COPY")
                c = copy_run(n, size, d)
            log(f"{n} rows of {size} B, insert.mode={mode}: ferry (file -> embedded backbone -> JdbcSink)")
            f = ferry_run(n, size, d, src, mode)
            log(f"{n} rows of {size} B, insert.mode={mode}: ferry_sink (JdbcSink alone, the embedded backbone "
                "loaded beforehand)")
            fs = ferry_run(n, size, d, src, mode, preload=True)
            out = {"scenario": SCENARIO, "row_bytes": size, "rows": n, "insert_mode": mode, "copy": c,
                   "ferry": f, "ferry_sink": fs,
                   "ratio": {"ferry_vs_copy": round(f["rows_per_s"] / c["rows_per_s"], 3),
                             "ferry_sink_vs_copy": round(fs["rows_per_s"] / c["rows_per_s"], 3)}}
            if peers:
                if peer_error:
                    out["peer"] = {"name": PEER, "error": peer_error}
                else:
                    try:
                        log(f"{n} rows of {size} B, insert.mode={mode}: ferry (kafka backbone, topic {topic})")
                        fk = ferry_run(n, size, d, src, mode, broker, topic)
                        log(f"{n} rows of {size} B, insert.mode={mode}: Debezium JDBC sink {PEER_VERSION} "
                            f"on Kafka Connect (topic {topic})")
                        p = peer_run(n, size, d, broker, topic, plugins, mode)
                        out["ferry_kafka"] = fk
                        out["peer"] = {"name": PEER, "version": PEER_VERSION, **p}
                        out["ratio"].update({
                            "ferry_kafka_vs_peer": round(fk["rows_per_s"] / p["rows_per_s"], 2),
                            "ferry_kafka_vs_peer_per_core": per_core(fk, p, "ferry_cpu_s_per_million",
                                                                     "peer_cpu_s_per_million"),
                            "ferry_vs_peer": round(f["rows_per_s"] / p["rows_per_s"], 2),
                            "ferry_vs_peer_per_core": per_core(f, p, "ferry_cpu_s_per_million",
                                                               "peer_cpu_s_per_million"),
                            "peer_vs_ferry_kafka_rss": round(p["peak_rss_mb"] / fk["peak_rss_mb"], 1)})
                        if fk.get("first_to_last_rows_per_s") and p.get("first_to_last_rows_per_s"):
                            out["ratio"]["ferry_kafka_vs_peer_first_to_last"] = round(
                                fk["first_to_last_rows_per_s"] / p["first_to_last_rows_per_s"], 2)
                    except (kc.PeerError, AssertionError, RuntimeError, OSError,
                            subprocess.SubprocessError) as e:
                        out["peer"] = {"name": PEER, "error": str(e)[-1500:]}
            yield out
        if topic:
            delete_topic(broker, topic)
