#!/usr/bin/env python3
"""JdbcSource against a real PostgreSQL 15 (scripts/services/postgres; scripts/test starts it for the
`jdbc` label).

A standalone ferry worker reads PostgreSQL tables with JdbcSource (value.converter=JsonConverter,
so the backbone holds Kafka Connect's {"schema", "payload"} envelopes) and the test looks at what
arrives at the far end:

  1. types: a table with one column per PostgreSQL type (integers, numeric with and without
     precision, floats, boolean, bit(1), char/varchar/text, bytea, date, time, timetz, timestamp,
     timestamptz, interval, uuid, json, jsonb, an enum, int[] and text[]) and a row of NULLs:
     each column's schema and value in the envelope (FileStreamSink) is what the type promises;
     the same rows also go through the backbone into JdbcSink (auto.create, upsert) and the copy
     equals the original, row by row;
  2. incrementing: 20,000 rows read in batches; the worker stopped and started: nothing again;
     the worker killed with kill -9 mid-stream and started: every row at the far end, the
     repeats only those after the last committed position;
  3. timestamp with open transactions: a transaction that inserted a row (ts = now()) stays open
     while a later one commits its row; nothing after the open one's start is read until it
     commits, then both rows arrive (no row skipped); timestamp.delay.interval.ms: rows arrive
     no sooner than their timestamp plus the delay; 35 rows sharing 3 timestamps with
     batch.max.rows=10 (timestamp mode): each arrives once;
  4. a query (mode=incrementing over a custom query), and a table created while the connector
     runs (table.poll.interval.ms) is picked up;
  5. bad input: a wrong password (the connector fails with PostgreSQL's message, the password in
     no answer or log); an unreachable server (the connector runs with no task, the log names it); an incrementing column that does not exist, and SQL in its name (the task
     fails naming the column; the other table is untouched); the source's connections killed by
     the server every 0.3 s (pg_terminate_backend) while a writer adds 80,000 rows: every row
     still arrives, the task RUNNING.

FERRY_BIN names the ferry binary; FERRY_POSTGRES_URL overrides the server. Standard library only.
"""
import base64
import json
import os
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
sys.path.insert(0, HERE)
from harness import Worker, run, tmpdir, wait_until  # noqa: E402
from source_checks import kill9_mid_stream  # noqa: E402

PG_URL = os.environ.get("FERRY_POSTGRES_URL", "postgresql://ferry:ferry-test-pw@127.0.0.1:15432/ferry")
U = urllib.parse.urlparse(PG_URL)
RUN = uuid.uuid4().hex[:8]
APP = f"ferry_src_{RUN}"  # the source's sessions carry this application_name (killed in 5)
SERVER_URL = f"postgresql://{U.hostname}:{U.port}{U.path}?application_name={APP}"


def psql(sql):
    p = subprocess.run(["psql", PG_URL, "-v", "ON_ERROR_STOP=1", "-At", "-c", sql], capture_output=True, text=True,
                       timeout=120)
    if p.returncode != 0:
        raise AssertionError(f"psql failed: {p.stderr}")
    return p.stdout


def source_config(**extra):
    c = {"connector.class": "JdbcSource", "connection.url": SERVER_URL, "connection.user": U.username,
         "connection.password": urllib.parse.unquote(U.password or ""), "poll.interval.ms": "200",
         "value.converter": "org.apache.kafka.connect.json.JsonConverter"}
    c.update(extra)
    return c


def file_sink(w, name, topic, path):
    w.ok("POST", "/connectors", {"name": name, "config": {
        "connector.class": "FileStreamSink", "topics": topic, "file": path,
        "value.converter": "org.apache.kafka.connect.storage.StringConverter"}})


def envelopes(path):
    try:
        with open(path) as f:
            return [json.loads(line) for line in f if line.strip()]
    except OSError:
        return []


def task_state(w, name):
    status, s = w.rest("GET", f"/connectors/{name}/status")
    if status != 200:
        return {}
    tasks = s.get("tasks") or []
    return {"connector": s.get("connector", {}), "task": tasks[0] if tasks else {}}


class Session:
    """A psql session kept open (a transaction left open on purpose)."""

    def __init__(self):
        self.p = subprocess.Popen(["psql", PG_URL, "-v", "ON_ERROR_STOP=1", "-At", "-q"], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def send(self, sql):
        self.p.stdin.write(sql + "\n")
        self.p.stdin.flush()

    def close(self):
        self.p.stdin.close()
        if self.p.wait(timeout=60) != 0:
            raise AssertionError(f"psql session failed: {self.p.stderr.read()}")


def b64_unscaled(text, scale):
    neg = text.startswith("-")
    whole, _, frac = text.lstrip("-").partition(".")
    unscaled = int(whole + frac.ljust(scale, "0"))
    unscaled = -unscaled if neg else unscaled
    n = max(1, (unscaled.bit_length() + 8) // 8)
    return base64.b64encode(unscaled.to_bytes(n, "big", signed=True)).decode()


def check_types(w, d):
    t = f"src_types_{RUN}"
    mood = f"mood_{RUN}"
    psql(f"""CREATE TYPE "{mood}" AS ENUM ('sad', 'ok', 'happy');
CREATE TABLE "{t}" (id BIGSERIAL PRIMARY KEY, i2 SMALLINT, i4 INTEGER NOT NULL, i8 BIGINT, n NUMERIC(12,3),
  nbig NUMERIC(30,0), nfree NUMERIC, r REAL, d DOUBLE PRECISION, b BOOLEAN, bit1 BIT(1), c CHAR(5),
  vc VARCHAR(20), tx TEXT, by BYTEA, dt DATE, tm TIME, tmz TIMETZ, ts TIMESTAMP, tsz TIMESTAMPTZ,
  iv INTERVAL, u UUID, j JSON, jb JSONB, e "{mood}", ia INTEGER[], ta TEXT[]);
INSERT INTO "{t}" (i2, i4, i8, n, nbig, nfree, r, d, b, bit1, c, vc, tx, by, dt, tm, tmz, ts, tsz, iv, u, j, jb, e, ia, ta)
VALUES (-32768, 2147483647, -9223372036854775808, -123456789.125, 123456789012345678901234567890, 3.14159,
  1.5, -2.25e-300, true, B'1', 'ab', 'v "q"', E'line\\nnext \u00e9 \U0001F680', '\\x00ff41', '2026-12-06', '13:14:15.678',
  '01:00:00+02', '2026-12-06 15:00:00.123', '2026-12-06 17:00:00.5+02', '1 year 2 mons 3 days 04:05:06',
  '00000000-0000-0000-0000-00000000002a', '{{"a": [1, 2]}}', '{{"b": null}}', 'happy', '{{1,NULL,3}}', '{{"x,y",NULL,"NULL"}}'),
  (NULL, 0, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
   NULL, NULL, NULL, NULL, NULL, NULL, NULL);""")
    out = os.path.join(d, "types.out")
    w.ok("POST", "/connectors", {"name": "types-src", "config": source_config(**{
        "mode": "incrementing", "incrementing.column.name": "id", "table.whitelist": t, "topic.prefix": "pg-"})})
    file_sink(w, "types-file", f"pg-{t}", out)
    wait_until(lambda: len(envelopes(out)) >= 2, 60, "2 envelopes of the types table")
    full, nulls = envelopes(out)[:2]
    schema = {f["field"]: f for f in full["schema"]["fields"]}
    if full["schema"].get("name") != t or full["schema"]["type"] != "struct":
        raise AssertionError(f"the record's schema is not the table's struct: {full['schema']}")
    want_types = {
        "id": ("int64", None, False), "i2": ("int16", None, True), "i4": ("int32", None, False),
        "i8": ("int64", None, True), "n": ("bytes", "org.apache.kafka.connect.data.Decimal", True),
        "nbig": ("bytes", "org.apache.kafka.connect.data.Decimal", True), "nfree": ("string", None, True),
        "r": ("float", None, True), "d": ("double", None, True), "b": ("boolean", None, True),
        "bit1": ("boolean", None, True), "c": ("string", None, True), "vc": ("string", None, True),
        "tx": ("string", None, True), "by": ("bytes", None, True),
        "dt": ("int32", "org.apache.kafka.connect.data.Date", True),
        "tm": ("int32", "org.apache.kafka.connect.data.Time", True),
        "tmz": ("int32", "org.apache.kafka.connect.data.Time", True),
        "ts": ("int64", "org.apache.kafka.connect.data.Timestamp", True),
        "tsz": ("int64", "org.apache.kafka.connect.data.Timestamp", True),
        "iv": ("string", None, True), "u": ("string", "ferry.data.Uuid", True), "j": ("string", "ferry.data.Json", True),
        "jb": ("string", "ferry.data.Json", True), "e": ("string", None, True), "ia": ("array", None, True),
        "ta": ("array", None, True),
    }
    for col, (typ, name, optional) in want_types.items():
        s = schema.get(col, {})
        if (s.get("type"), s.get("name"), s.get("optional")) != (typ, name, optional):
            raise AssertionError(f"column {col}: schema {s}, expected type {typ} name {name} optional {optional}")
    if schema["n"]["parameters"]["scale"] != "3" or schema["ia"]["items"]["type"] != "int32":
        raise AssertionError(f"decimal scale or array items wrong: {schema['n']} {schema['ia']}")
    p = full["payload"]
    want = {
        "i2": -32768, "i4": 2147483647, "i8": -9223372036854775808, "n": b64_unscaled("-123456789.125", 3),
        "nbig": b64_unscaled("123456789012345678901234567890", 0), "nfree": "3.14159", "r": 1.5, "d": -2.25e-300,
        "b": True, "bit1": True, "c": "ab   ", "vc": 'v "q"', "tx": "line\nnext \u00e9 \U0001F680",
        "by": base64.b64encode(b"\x00\xffA").decode(), "dt": 20793, "tm": 13 * 3600000 + 14 * 60000 + 15678,
        "tmz": 23 * 3600000, "ts": 1796569200123, "tsz": 1796569200500, "iv": "P1Y2M3DT4H5M6S",
        "u": "00000000-0000-0000-0000-00000000002a", "j": '{"a": [1, 2]}', "jb": '{"b": null}', "e": "happy",
        "ia": [1, None, 3], "ta": ["x,y", None, "NULL"],
    }
    wrong = {k: (p.get(k), v) for k, v in want.items() if p.get(k) != v}
    if wrong:
        raise AssertionError(f"values differ (got, expected): {wrong}")
    if any(v is not None for k, v in nulls["payload"].items() if k not in ("id", "i4")):
        raise AssertionError(f"the NULL row has values: {nulls['payload']}")
    print(f"ok   {len(want_types)} PostgreSQL types: each column's schema and value as the type promises; NULLs null")

    # The same rows through the backbone into JdbcSink (auto.create): the copy equals the original
    # (arrays and the enum have no column in the sink: those columns are left out of the compare).
    copy = f"src_types_copy_{RUN}"
    w.ok("POST", "/connectors", {"name": "types-sink", "config": {
        "connector.class": "JdbcSink", "topics": f"pg-{t}", "connection.url": SERVER_URL.split("?")[0],
        "connection.user": U.username, "connection.password": urllib.parse.unquote(U.password or ""),
        "value.converter": "org.apache.kafka.connect.json.JsonConverter", "table.name.format": copy,
        "auto.create": "true", "insert.mode": "upsert", "pk.mode": "record_value", "pk.fields": "id",
        "transforms": "drop", "transforms.drop.type": "org.apache.kafka.connect.transforms.ReplaceField$Value",
        "transforms.drop.exclude": "ia,ta"}})

    def copied():
        try:
            return psql(f'SELECT count(*) FROM "{copy}"').strip() == "2"
        except AssertionError:
            return False
    wait_until(copied, 60, "2 rows copied by JdbcSink")
    cols = ("id, i2, i4, i8, n, nbig, nfree::text, r, d, b, (bit1 = B'1') AS bit1, rpad(c, 5), vc::text, tx, by, dt, "
            "tm::time(3) AS tm, ts::timestamp(3) AS ts, iv::text, u, j::jsonb, jb, "
            "e::text")
    cols_copy = ("id, i2, i4, i8, n, nbig, nfree, r, d, b, bit1, c, vc, tx, by, dt, tm, "
                 "ts, iv, u, j, jb, e")
    diff = psql(f"SET intervalstyle = 'iso_8601'; " f'SELECT count(*) FROM ((SELECT {cols} FROM "{t}") EXCEPT (SELECT {cols_copy} FROM "{copy}")) x').split()[-1]
    if diff != "0":
        got = psql(f'SELECT * FROM "{copy}"')
        raise AssertionError(f"{diff} rows differ between {t} and its copy through the backbone:\n{got}")
    print("ok   the same rows through the backbone into JdbcSink (auto.create): the copy equals the original")


def check_incrementing(w, d):
    t = f"src_inc_{RUN}"
    n = 20000
    psql(f'CREATE TABLE "{t}" (id BIGSERIAL PRIMARY KEY, v TEXT NOT NULL);'
         f'INSERT INTO "{t}" (v) SELECT \'row \' || g FROM generate_series(1, {n}) g; ANALYZE "{t}"')
    out = os.path.join(d, "inc.out")
    w.ok("POST", "/connectors", {"name": "inc-src", "config": source_config(**{
        "mode": "incrementing", "incrementing.column.name": "id", "table.whitelist": f"public.{t}",
        "topic.prefix": "", "batch.max.rows": "500"})})
    file_sink(w, "inc-file", t, out)

    def ids():
        return [e["payload"]["id"] for e in envelopes(out)]
    wait_until(lambda: len(ids()) >= n, 120, f"{n} rows")
    if sorted(ids()) != list(range(1, n + 1)):
        raise AssertionError("the first read is not every row once")
    # The first load's progress: in the task status, /metrics and `ferry ctl status`.
    def progress():
        return task_state(w, "inc-src").get("task", {}).get("progress", {})
    wait_until(lambda: progress().get("phase") == "initial load done", 30, "the load reported done")
    p = progress()
    if (p.get("done"), p.get("estimated"), p.get("unit"), p.get("percent")) != (n, n, "rows", 100.0):
        raise AssertionError(f"progress after the first load: {p}")
    _, metrics = w.rest("GET", "/metrics")
    line = f'ferry_task_progress_done{{connector="inc-src",task="0"}} {n}'
    if line not in metrics:
        raise AssertionError(f"/metrics has no '{line}'")
    ctl = subprocess.run([os.environ["FERRY_BIN"], "ctl", "--url", w.url, "status", "inc-src"], capture_output=True,
                         text=True, timeout=30)
    if f"initial load done: {n}/{n} rows (100.0%)" not in ctl.stdout:
        raise AssertionError(f"ferry ctl status shows no progress:\n{ctl.stdout}{ctl.stderr}")
    # A clean restart reads nothing again; new rows follow.
    w.stop()
    psql(f'INSERT INTO "{t}" (v) SELECT \'row \' || g FROM generate_series(1, 100) g')
    w.start()
    wait_until(lambda: len(ids()) >= n + 100, 60, "the 100 new rows after a restart")
    time.sleep(1)
    got = ids()
    if sorted(got) != list(range(1, n + 101)):
        raise AssertionError(f"after a clean restart: {len(got)} rows, {len(got) - len(set(got))} repeats")
    print(f"ok   incrementing: {n} rows once each, the load's progress in status, /metrics and ctl; a restart resumes after the last row (100 new rows, 0 repeats)")

    # kill -9 mid-stream (a writer keeps inserting): every row arrives; the repeats are only rows
    # after the last commit.
    kill9_mid_stream(
        w, ids, lambda: [int(x) for x in psql(f'SELECT id FROM "{t}"').split()],
        lambda: psql(f'INSERT INTO "{t}" (v) SELECT \'row \' || g FROM generate_series(1, 1000) g'),
        set(got), n + 100 + 5000)

def check_timestamps(w, d):
    t = f"src_ts_{RUN}"
    psql(f'CREATE TABLE "{t}" (id BIGSERIAL PRIMARY KEY, who TEXT, ts TIMESTAMPTZ NOT NULL DEFAULT now())')
    out = os.path.join(d, "ts.out")
    w.ok("POST", "/connectors", {"name": "ts-src", "config": source_config(**{
        "mode": "timestamp+incrementing", "incrementing.column.name": "id", "timestamp.column.name": "ts",
        "table.whitelist": t, "topic.prefix": "ts-"})})
    file_sink(w, "ts-file", f"ts-{t}", out)

    def whos():
        return [e["payload"]["who"] for e in envelopes(out)]
    psql(f"INSERT INTO \"{t}\" (who) VALUES ('before')")
    wait_until(lambda: whos() == ["before"], 30, "the first row")
    # A transaction inserts (ts = its start) and stays open; a later one commits.
    slow = Session()
    slow.send(f"BEGIN; INSERT INTO \"{t}\" (who) VALUES ('slow');")
    time.sleep(0.5)
    psql(f"INSERT INTO \"{t}\" (who) VALUES ('fast')")
    time.sleep(3)  # many polls
    if "fast" in whos():
        raise AssertionError("a row after an open transaction's start was read while it was open (its row would be "
                             "skipped)")
    slow.send("COMMIT;")
    slow.close()
    wait_until(lambda: sorted(whos()) == ["before", "fast", "slow"], 30, "both rows once the transaction committed")
    print("ok   timestamp+incrementing: a row committed after a later one is not skipped (reads wait for the open "
          "transaction)")

    # The delay interval: rows arrive no sooner than their timestamp + delay.
    t2 = f"src_delay_{RUN}"
    psql(f'CREATE TABLE "{t2}" (id BIGSERIAL PRIMARY KEY, ts TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp())')
    out2 = os.path.join(d, "delay.out")
    w.ok("POST", "/connectors", {"name": "delay-src", "config": source_config(**{
        "mode": "timestamp", "timestamp.column.name": "ts", "timestamp.delay.interval.ms": "3000",
        "table.whitelist": t2, "topic.prefix": "d-"})})
    file_sink(w, "delay-file", f"d-{t2}", out2)
    psql(f'INSERT INTO "{t2}" DEFAULT VALUES')
    inserted = time.time()
    wait_until(lambda: len(envelopes(out2)) == 1, 30, "the delayed row")
    waited = time.time() - inserted
    if waited < 2.9:
        raise AssertionError(f"the row arrived {waited:.2f} s after it was written, before the 3 s delay")
    print(f"ok   timestamp.delay.interval.ms=3000: the row arrived after {waited:.1f} s")

    # Equal timestamps across batches (timestamp mode, batch.max.rows=10): each row once.
    t3 = f"src_same_{RUN}"
    psql(f'CREATE TABLE "{t3}" (id INT PRIMARY KEY, ts TIMESTAMP NOT NULL);'
         f"INSERT INTO \"{t3}\" SELECT g, '2026-01-01'::timestamp + (g % 3) * interval '1 second' "
         "FROM generate_series(1, 35) g")
    out3 = os.path.join(d, "same.out")
    w.ok("POST", "/connectors", {"name": "same-src", "config": source_config(**{
        "mode": "timestamp", "timestamp.column.name": "ts", "table.whitelist": t3, "topic.prefix": "s-",
        "batch.max.rows": "10"})})
    file_sink(w, "same-file", f"s-{t3}", out3)
    wait_until(lambda: len(envelopes(out3)) >= 35, 30, "35 rows of 3 timestamps")
    time.sleep(1)
    got = sorted(e["payload"]["id"] for e in envelopes(out3))
    if got != list(range(1, 36)):
        raise AssertionError(f"rows sharing timestamps: got {got}")
    print("ok   35 rows sharing 3 timestamps, batch.max.rows=10: each read once")


def check_query_and_new_tables(w, d):
    t = f"src_q_{RUN}"
    psql(f'CREATE TABLE "{t}" (id SERIAL PRIMARY KEY, kind TEXT, v INT);'
         f"INSERT INTO \"{t}\" (kind, v) SELECT CASE WHEN g % 2 = 0 THEN 'even' ELSE 'odd' END, g FROM generate_series(1, 50) g")
    out = os.path.join(d, "q.out")
    w.ok("POST", "/connectors", {"name": "q-src", "config": source_config(**{
        "mode": "incrementing", "incrementing.column.name": "id", "topic.prefix": f"q-{RUN}",
        "query": f"SELECT id, v * 10 AS v10 FROM \"{t}\" WHERE kind = 'even'"})})
    file_sink(w, "q-file", f"q-{RUN}", out)
    wait_until(lambda: len(envelopes(out)) >= 25, 30, "25 rows of the query")
    got = sorted(e["payload"]["v10"] for e in envelopes(out))
    if got != [g * 10 for g in range(2, 51, 2)]:
        raise AssertionError(f"query rows: {got}")
    print("ok   a custom query's rows (mode=incrementing over the query)")

    prefix = f"src_new_{RUN}_"
    out2 = os.path.join(d, "new.out")
    # Only a table that does not exist yet: no task at first, a warning naming it, then read.
    w.ok("POST", "/connectors", {"name": "new-src", "config": source_config(**{
        "mode": "incrementing", "incrementing.column.name": "id", "topic.prefix": "new-",
        "table.whitelist": f"{prefix}b", "table.poll.interval.ms": "500", "tasks.max": "2"})})
    file_sink(w, "new-file", f"new-{prefix}b", out2)

    def warned():
        with open(w.log_path, errors="replace") as f:
            return f"table.whitelist names '{prefix}b'" in f.read()
    wait_until(warned, 30, "a warning naming the missing whitelisted table")
    st = task_state(w, "new-src")
    if st.get("connector", {}).get("state") != "RUNNING" or st.get("task"):
        raise AssertionError(f"with no table to read the connector should run with no task: {st}")
    psql(f'CREATE TABLE "{prefix}b" (id SERIAL PRIMARY KEY); INSERT INTO "{prefix}b" DEFAULT VALUES')
    wait_until(lambda: len(envelopes(out2)) == 1, 30, "the row of a table created while the connector runs")
    print("ok   a whitelisted table missing at start: a warning names it, no task; created later, it is read "
          "(table.poll.interval.ms)")


def check_bad_input(w, d):
    wrong = "wrong-" + RUN
    w.ok("POST", "/connectors", {"name": "src-wrong-pw", "config": source_config(**{
        "connection.password": wrong, "mode": "bulk", "topic.prefix": "x-"})})
    wait_until(lambda: task_state(w, "src-wrong-pw").get("connector", {}).get("state") == "FAILED", 30,
               "the connector FAILED")
    trace = task_state(w, "src-wrong-pw")["connector"].get("trace", "")
    if "password authentication failed" not in trace:
        raise AssertionError(f"trace does not name the refused password: {trace[:400]}")
    for path in ("/connectors/src-wrong-pw", "/connectors/src-wrong-pw/config", "/connectors/src-wrong-pw/status"):
        _, body = w.rest("GET", path)
        if wrong in json.dumps(body):
            raise AssertionError(f"GET {path} shows the password")
    with open(w.log_path, errors="replace") as f:
        if wrong in f.read():
            raise AssertionError("the worker log shows the password")
    print("ok   a wrong password fails the connector with PostgreSQL's message, shown nowhere")

    # An unreachable server (a closed port): the connector runs with no task and says why in the
    # log, naming the address; it is looked for again every table.poll.interval.ms.
    w.ok("POST", "/connectors", {"name": "src-unreachable", "config": source_config(**{
        "connection.url": "postgresql://127.0.0.1:1/ferry", "mode": "bulk", "topic.prefix": "u-",
        "table.poll.interval.ms": "500"})})

    def said_unreachable():
        with open(w.log_path, errors="replace") as f:
            return f.read().count("JdbcSource src-unreachable: cannot list tables") >= 2
    wait_until(said_unreachable, 30, "the unreachable server named in the log, again at the next look")
    st = task_state(w, "src-unreachable")
    if st.get("connector", {}).get("state") != "RUNNING" or st.get("task"):
        raise AssertionError(f"an unreachable server: the connector should run with no task: {st}")
    with open(w.log_path, errors="replace") as f:
        if "127.0.0.1" not in [ln for ln in f if "src-unreachable: cannot list tables" in ln][-1]:
            raise AssertionError("the log line does not name the server's address")
    w.ok("DELETE", "/connectors/src-unreachable")
    print("ok   an unreachable server: the connector runs with no task, the log names the address at each look")

    victim = f"src_victim_{RUN}"
    t = f"src_bad_{RUN}"
    psql(f'CREATE TABLE "{victim}" (x INT); INSERT INTO "{victim}" VALUES (1);'
         f'CREATE TABLE "{t}" (id SERIAL PRIMARY KEY); INSERT INTO "{t}" DEFAULT VALUES')
    hostile = f'x"; DROP TABLE "{victim}";--'  # within PostgreSQL's 63 bytes: it reaches the server
    w.ok("POST", "/connectors", {"name": "src-bad-col", "config": source_config(**{
        "mode": "incrementing", "incrementing.column.name": hostile, "table.whitelist": t, "topic.prefix": "b-"})})
    wait_until(lambda: task_state(w, "src-bad-col").get("task", {}).get("state") == "FAILED", 30, "the task FAILED")
    trace = task_state(w, "src-bad-col")["task"].get("trace", "")
    if "does not exist" not in trace or "DROP TABLE" not in trace:
        raise AssertionError(f"trace does not name the missing column: {trace[:400]}")
    if psql(f'SELECT count(*) FROM "{victim}"').strip() != "1":
        raise AssertionError("the victim table changed")
    print("ok   a column name with SQL in it is a name: the task fails naming it, the other table untouched")

    # The server drops the source's connections again and again while a writer adds rows: 10,000
    # at first, then 2,000 every 0.1 s for 4 s. The source's sessions carry their own
    # application_name, and each of them is killed every 0.3 s while the writer runs.
    t2 = f"src_cut_{RUN}"
    cut_app = f"ferry_cut_{RUN}"
    psql(f'CREATE TABLE "{t2}" (id BIGSERIAL PRIMARY KEY, v TEXT);'
         f"INSERT INTO \"{t2}\" (v) SELECT repeat('x', 100) FROM generate_series(1, 10000)")
    out = os.path.join(d, "cut.out")
    w.ok("POST", "/connectors", {"name": "cut-src", "config": source_config(**{
        "connection.url": f"postgresql://{U.hostname}:{U.port}{U.path}?application_name={cut_app}",
        "mode": "incrementing", "incrementing.column.name": "id", "table.whitelist": t2, "topic.prefix": "",
        "batch.max.rows": "200", "errors.retry.delay.max.ms": "500"})})
    file_sink(w, "cut-file", t2, out)
    kills = 0
    stop = threading.Event()

    def killer():
        nonlocal kills
        while not stop.is_set():
            got = psql(f"SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
                       f"WHERE application_name = '{cut_app}'").strip()
            kills += int(got or 0)
            time.sleep(0.3)
    k = threading.Thread(target=killer)
    k.start()
    try:
        for _ in range(40):
            psql(f"INSERT INTO \"{t2}\" (v) SELECT repeat('y', 100) FROM generate_series(1, 2000)")
            time.sleep(0.1)
    finally:
        stop.set()
        k.join()
    n = int(psql(f'SELECT count(*) FROM "{t2}"').strip())
    wait_until(lambda: len({e["payload"]["id"] for e in envelopes(out)}) >= n, 180,
               f"all {n} rows after the server killed the source's connections")
    if kills < 3:
        raise AssertionError(f"only {kills} connections were killed: the test did not cut the stream")
    state = task_state(w, "cut-src").get("task", {}).get("state")
    if state != "RUNNING":
        raise AssertionError(f"cut-src is {state}")
    print(f"ok   {kills} connections killed by the server mid-stream: all {n} rows arrived, the task RUNNING")


def check_timezone(w, d):
    """db.timezone=Europe/Paris: a `timestamp` column holds Paris wall clocks. The source reads
    them as instants and compares its positions and upper bound in that zone; the sink writes
    instants back as Paris wall clocks into `timestamp` and as instants into `timestamptz`."""
    t = f"src_tz_{RUN}"
    psql(f'CREATE TABLE "{t}" (id BIGSERIAL PRIMARY KEY, fixed TIMESTAMP, '
         f"at TIMESTAMP NOT NULL DEFAULT (clock_timestamp() AT TIME ZONE 'Europe/Paris'))")
    psql(f"INSERT INTO \"{t}\" (fixed) VALUES ('2026-07-15 14:00:00'), ('2026-12-06 16:00:00')")
    out = os.path.join(d, "tz.out")
    w.ok("POST", "/connectors", {"name": "tz-src", "config": source_config(**{
        "mode": "timestamp+incrementing", "incrementing.column.name": "id", "timestamp.column.name": "at",
        "table.whitelist": t, "topic.prefix": "tz-", "db.timezone": "Europe/Paris"})})
    file_sink(w, "tz-file", f"tz-{t}", out)
    # Were the upper bound compared as UTC text, Paris wall clocks (an hour or two ahead) would stay
    # above it and nothing would arrive.
    wait_until(lambda: len(envelopes(out)) >= 2, 30, "the 2 rows read in Europe/Paris")
    got = {e["payload"]["id"]: e["payload"] for e in envelopes(out)}
    if (got[1]["fixed"], got[2]["fixed"]) != (1784116800000, 1796569200000):
        raise AssertionError(f"Paris wall clocks not read as their instants: {got[1]['fixed']}, {got[2]['fixed']}")
    if abs(got[1]["at"] - time.time() * 1000) > 120000:
        raise AssertionError(f"a row written now reads as {got[1]['at']}, not about now")
    psql(f'INSERT INTO "{t}" (fixed) VALUES (NULL), (NULL)')
    wait_until(lambda: len(envelopes(out)) >= 4, 30, "2 more rows")
    time.sleep(1)
    ids = [e["payload"]["id"] for e in envelopes(out)]
    if sorted(ids) != [1, 2, 3, 4]:
        raise AssertionError(f"rows read in Europe/Paris: {ids} (skipped or repeated)")
    # Back through JdbcSink with db.timezone: `fixed` (timestamp) gets the Paris wall clock again,
    # `at` (timestamptz here) the instant.
    copy = f"src_tz_copy_{RUN}"
    psql(f'CREATE TABLE "{copy}" (id BIGINT PRIMARY KEY, fixed TIMESTAMP, at TIMESTAMPTZ)')
    w.ok("POST", "/connectors", {"name": "tz-sink", "config": {
        "connector.class": "JdbcSink", "topics": f"tz-{t}", "connection.url": SERVER_URL.split("?")[0],
        "connection.user": U.username, "connection.password": urllib.parse.unquote(U.password or ""),
        "value.converter": "org.apache.kafka.connect.json.JsonConverter", "table.name.format": copy,
        "insert.mode": "upsert", "pk.mode": "record_value", "pk.fields": "id", "db.timezone": "Europe/Paris"}})
    wait_until(lambda: psql(f'SELECT count(*) FROM "{copy}"').strip() == "4", 30, "4 rows copied")
    diff = psql(f'SELECT count(*) FROM "{t}" s JOIN "{copy}" c USING (id) WHERE c.fixed IS DISTINCT FROM s.fixed '
                f"OR c.at <> date_trunc('milliseconds', s.at) AT TIME ZONE 'Europe/Paris'").strip()
    if diff != "0":
        raise AssertionError(f"{diff} rows differ after the sink wrote them in Europe/Paris")
    status, body = w.rest("PUT", "/connector-plugins/JdbcSource/config/validate", source_config(**{
        "mode": "bulk", "topic.prefix": "x", "db.timezone": "../../etc/passwd"}))
    if "db.timezone" not in json.dumps(body) or "not a zone name" not in json.dumps(body):
        raise AssertionError(f"a path as db.timezone is not refused: {status} {body}")
    print("ok   db.timezone=Europe/Paris: wall clocks read as instants (July and December offsets), positions and "
          "the upper bound in that zone (4 rows once each), written back by JdbcSink as the same wall clocks "
          "(timestamp) and instants (timestamptz); a path as db.timezone refused")


def main():
    d = tmpdir("jdbc-source")
    w = Worker(d)
    w.start()
    psql("SELECT 1")
    check_types(w, d)
    check_timestamps(w, d)
    check_query_and_new_tables(w, d)
    check_timezone(w, d)
    check_bad_input(w, d)
    check_incrementing(w, d)
    w.stop()


if __name__ == "__main__":
    run(main)
