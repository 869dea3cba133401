#!/usr/bin/env python3
"""JdbcSink against a real PostgreSQL 15 (scripts/services/postgres; scripts/test starts it for the
`jdbc` label).

A standalone ferry worker reads Kafka Connect JsonConverter envelopes (a schema and a payload a
line, as Kafka Connect writes them) with FileStreamSource into the embedded backbone; JdbcSink
reads them with value.converter=JsonConverter, so its records are typed, and writes them:

  1. types and upserts: 1,000 records of every mapped type (integers, Decimal, floats, boolean,
     text with quotes and non-ASCII, bytes, Date, Time, Timestamp, Uuid, Json, NULLs) into a table
     made by auto.create, 200 of them updates of earlier ids (insert.mode=upsert, pk.mode=
     record_value): the table ends with one row per id holding the last record's values, each
     column compared with what was sent;
  2. bad rows: a table whose CHECK refuses negative quantities; 5 bad records among 100
     (errors.tolerance=all): the 95 good rows are written, the 5 go to the dead-letter topic;
  3. a record without a schema (value.converter=StringConverter): the task fails naming the
     converter to use;
  4. a wrong password: the task fails with PostgreSQL's authentication error, and the password
     appears in no answer;
  5. SQL in a table name (table.name.format with a quote and a DROP TABLE): the table is created
     under that literal name and the other table is untouched; pk.mode=kafka keys rows by topic,
     partition and offset; insert.mode=update changes existing rows and inserts none;
  6. the database stopped (scripts/services/postgres stop) when the sink starts: the task stays
     RUNNING and retries; the database started again, the worker kill -9ed once rows arrive and
     restarted: the table ends with all 60,000 rows, each once, values exact (upserts absorb the
     replay);
  7. the database stopped and started again while the sink writes 100,000 rows, twice: with
     batch.size 200, and with batches sent without waiting for their answer (the stop breaks one
     whose answer is still to come; the retries must write it again): every row ends in the
     table with its value, the task RUNNING throughout.

FERRY_BIN names the ferry binary; FERRY_POSTGRES_URL overrides the server
(postgresql://user:password@host:port/db). Standard library only.
"""
import base64
import csv
import datetime
import io
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
sys.path.insert(0, HERE)
from connect_envelope import ORDER_SCHEMA, decimal_b64, envelope, field, prim  # noqa: E402
from evolve_check import check_auto_evolve  # noqa: E402
from harness import Worker, run, tmpdir, wait_until  # noqa: E402

PG_URL = os.environ.get("FERRY_POSTGRES_URL", "postgresql://ferry:ferry-test-pw@127.0.0.1:15432/ferry")
U = urllib.parse.urlparse(PG_URL)
SERVER_URL = f"postgresql://{U.hostname}:{U.port}{U.path}"  # without credentials: given as keys
RUN = uuid.uuid4().hex[:8]


def psql(sql):
    p = subprocess.run(["psql", PG_URL, "-v", "ON_ERROR_STOP=1", "-At", "-c", sql], capture_output=True, text=True,
                       timeout=60)
    if p.returncode != 0:
        raise AssertionError(f"psql failed: {p.stderr}")
    return p.stdout


def rows(sql):
    out = psql(f"COPY ({sql}) TO STDOUT WITH (FORMAT csv, NULL '<null>')")
    return list(csv.reader(io.StringIO(out)))


# ---- the typed records (ORDER_SCHEMA: connect_envelope.py) ----

def order(i):
    return {
        "id": i % 800, "qty": i, "small": (i % 100) if i % 3 else None, "tiny": i % 100 - 50,
        "price": decimal_b64(i * 101 - 5000), "ratio": (i / 7) if i % 5 else None, "f32": 0.5,
        "ok": i % 2 == 0, "name": None if i % 11 == 0 else f"n{i} \u00e9 'q\" \U0001F680",
        "raw": None if i % 13 == 0 else base64.b64encode(bytes([i % 256, 0, 255])).decode(),
        "day": 19000 + i % 365, "at": (i * 1001) % 86400000, "ts": None if i % 17 == 0 else 1700000000000 + i * 37,
        "uid": str(uuid.UUID(int=i)), "doc": None if i % 19 == 0 else json.dumps({"i": i, "s": "x"}),
    }


def expected_row(o):
    """What PostgreSQL's text form of each column should say (None = NULL)."""
    def time_of(ms):
        return (datetime.datetime(2000, 1, 1) + datetime.timedelta(milliseconds=ms)).time()
    unscaled = o["qty"] * 101 - 5000
    return {
        "id": o["id"], "qty": o["qty"], "small": o["small"], "tiny": o["tiny"],
        "price": f"{'-' if unscaled < 0 else ''}{abs(unscaled) // 100}.{abs(unscaled) % 100:02d}",
        "ratio": o["ratio"], "f32": 0.5, "ok": o["ok"], "name": o["name"],
        "raw": None if o["raw"] is None else base64.b64decode(o["raw"]).hex(),
        "day": (datetime.date(1970, 1, 1) + datetime.timedelta(days=o["day"])).isoformat(),
        "at": time_of(o["at"]),
        "ts": None if o["ts"] is None else datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=o["ts"]),
        "uid": o["uid"], "doc": None if o["doc"] is None else json.loads(o["doc"]),
    }


def actual_row(r):
    n = lambda v: None if v == "<null>" else v  # noqa: E731
    return {
        "id": int(r[0]), "qty": int(r[1]), "small": None if n(r[2]) is None else int(r[2]), "tiny": int(r[3]),
        "price": r[4], "ratio": None if n(r[5]) is None else float(r[5]), "f32": float(r[6]), "ok": r[7] == "t",
        "name": n(r[8]), "raw": n(r[9]), "day": r[10], "at": datetime.time.fromisoformat(r[11]),
        "ts": None if n(r[12]) is None else datetime.datetime.fromisoformat(r[12]),
        "uid": r[13], "doc": None if n(r[14]) is None else json.loads(r[14]),
    }


def sink_config(topic, **extra):
    c = {"connector.class": "JdbcSink", "topics": topic, "connection.url": SERVER_URL,
         "connection.user": U.username, "connection.password": urllib.parse.unquote(U.password or ""),
         "value.converter": "org.apache.kafka.connect.json.JsonConverter"}
    c.update(extra)
    return c


def table_exists(name):
    return rows(f"SELECT count(*) FROM pg_tables WHERE tablename = '{name}'")[0][0] == "1"


def task_trace(w, name):
    status, s = w.rest("GET", f"/connectors/{name}/status")
    tasks = s.get("tasks", []) if status == 200 else []
    return tasks[0] if tasks else {}


def main():
    d = tmpdir("jdbc-sink")
    w = Worker(d)
    w.start()
    psql("SELECT 1")

    # 1. every type, upserts, auto.create
    table = f"jdbc_orders_{RUN}"
    src = os.path.join(d, "orders.jsonl")
    sent = [order(i) for i in range(1000)]
    with open(src, "w") as f:
        for o in sent:
            f.write(envelope(ORDER_SCHEMA, o) + "\n")
    w.ok("POST", "/connectors", {"name": "orders-src", "config": {
        "connector.class": "FileStreamSource", "file": src, "topic": table}})
    w.ok("POST", "/connectors", {"name": "orders-sink", "config": sink_config(
        table, **{"insert.mode": "upsert", "pk.mode": "record_value", "pk.fields": "id", "auto.create": "true"})})
    last = {}
    for o in sent:
        last[o["id"]] = o
    cols = "id, qty, small, tiny, price::text, ratio, f32, ok, name, encode(raw, 'hex'), day::text, at::text, ts::text, uid::text, doc::text"

    def all_there():
        try:
            got = rows(f'SELECT count(*), coalesce(sum(qty), 0) FROM "{table}"')
        except AssertionError:
            return False  # not created yet
        return got[0] == [str(len(last)), str(sum(o["qty"] for o in last.values()))]
    wait_until(all_there, 60, f"{len(last)} rows with the last values in {table}")
    got = {r["id"]: r for r in map(actual_row, rows(f'SELECT {cols} FROM "{table}" ORDER BY id'))}
    bad = [i for i, o in last.items() if got.get(i) != expected_row(o)]
    if bad:
        raise AssertionError(f"{len(bad)} rows differ, e.g. id {bad[0]}:\n  sent {expected_row(last[bad[0]])}\n  "
                             f"got  {got.get(bad[0])}")
    types = dict(r for r in rows(f"SELECT column_name, data_type FROM information_schema.columns WHERE table_name = '{table}'"))
    want = {"id": "bigint", "qty": "integer", "small": "smallint", "price": "numeric", "ratio": "double precision",
            "f32": "real", "ok": "boolean", "name": "text", "raw": "bytea", "day": "date",
            "at": "time without time zone", "ts": "timestamp without time zone", "uid": "uuid", "doc": "jsonb"}
    if any(types.get(k) != v for k, v in want.items()):
        raise AssertionError(f"column types {types}, expected {want}")
    print(f"ok   1,000 typed records (200 updates) -> {len(last)} rows, every column as sent, types {sorted(set(want.values()))}")

    # 2. bad rows among good ones
    checked = f"jdbc_checked_{RUN}"
    psql(f'CREATE TABLE "{checked}" (id BIGINT PRIMARY KEY, qty INTEGER NOT NULL CHECK (qty >= 0))')
    schema = {"type": "struct", "fields": [field(prim("int64"), "id"), field(prim("int32"), "qty")], "optional": False}
    src2 = os.path.join(d, "checked.jsonl")
    bad_ids = {7, 21, 50, 51, 99}
    with open(src2, "w") as f:
        for i in range(100):
            f.write(envelope(schema, {"id": i, "qty": -1 if i in bad_ids else i}) + "\n")
    dlq = os.path.join(d, "dlq.out")
    w.ok("POST", "/connectors", {"name": "checked-src", "config": {
        "connector.class": "FileStreamSource", "file": src2, "topic": checked}})
    w.ok("POST", "/connectors", {"name": "checked-sink", "config": sink_config(
        checked, **{"insert.mode": "upsert", "pk.mode": "record_value", "pk.fields": "id",
                    "errors.tolerance": "all", "errors.deadletterqueue.topic.name": f"dlq-{RUN}"})})
    w.ok("POST", "/connectors", {"name": "dlq-reader", "config": {
        "connector.class": "FileStreamSink", "topics": f"dlq-{RUN}", "file": dlq}})
    wait_until(lambda: rows(f'SELECT count(*) FROM "{checked}"')[0][0] == "95", 60, "95 good rows")

    def dead():
        try:
            with open(dlq) as f:
                # A record refused in put() is dead-lettered with its data (the payload) and its
                # schema in a header.
                return [json.loads(line)["id"] for line in f if line.strip()]
        except OSError:
            return []
    wait_until(lambda: sorted(dead()) == sorted(bad_ids), 60, "the 5 bad rows in the dead-letter topic")
    ids = {int(r[0]) for r in rows(f'SELECT id FROM "{checked}"')}
    if ids != set(range(100)) - bad_ids:
        raise AssertionError(f"good rows {sorted(set(range(100)) - bad_ids - ids)} missing")
    state = task_trace(w, "checked-sink").get("state")
    if state != "RUNNING":
        raise AssertionError(f"checked-sink task {state}")
    print("ok   95 good rows written and 5 refused by the table's CHECK dead-lettered, task still RUNNING")
    # The same with insert.mode=insert, whose batches go through COPY: a bad row fails the whole
    # COPY, and the rows are written again one by one.
    checked2 = f"jdbc_checked2_{RUN}"
    psql(f'CREATE TABLE "{checked2}" (id BIGINT PRIMARY KEY, qty INTEGER NOT NULL CHECK (qty >= 0))')
    src2b = os.path.join(d, "checked2.jsonl")
    with open(src2b, "w") as f:
        for i in range(20):
            f.write(envelope(schema, {"id": i, "qty": -1 if i in (3, 17) else i}) + "\n")
    w.ok("POST", "/connectors", {"name": "checked2-src", "config": {
        "connector.class": "FileStreamSource", "file": src2b, "topic": checked2}})
    w.ok("POST", "/connectors", {"name": "checked2-sink", "config": sink_config(
        checked2, **{"errors.tolerance": "all"})})
    wait_until(lambda: rows(f'SELECT count(*) FROM "{checked2}"')[0][0] == "18", 60, "18 good rows (COPY)")
    if {int(r[0]) for r in rows(f'SELECT id FROM "{checked2}"')} != set(range(20)) - {3, 17}:
        raise AssertionError("insert mode: the wrong rows were written")
    if task_trace(w, "checked2-sink").get("state") != "RUNNING":
        raise AssertionError("checked2-sink is not RUNNING")
    print("ok   insert mode (COPY): 18 good rows written, the 2 bad ones skipped, task RUNNING")

    # 2b. auto.evolve (evolve_check.py, shared with the MariaDB test)
    check_auto_evolve(
        w, d, RUN, sink_config,
        lambda t: [r[0] for r in rows(f"SELECT column_name FROM information_schema.columns WHERE table_name = '{t}'")],
        lambda cols, t: [[None if v == "<null>" else v for v in r] for r in rows(f'SELECT {cols} FROM "{t}" ORDER BY id')])

    # 3. a record without a schema
    plain = f"jdbc_plain_{RUN}"
    src3 = os.path.join(d, "plain.txt")
    with open(src3, "w") as f:
        f.write('{"id":1}\n')
    w.ok("POST", "/connectors", {"name": "plain-src", "config": {
        "connector.class": "FileStreamSource", "file": src3, "topic": plain}})
    w.ok("POST", "/connectors", {"name": "plain-sink", "config": sink_config(
        plain, **{"value.converter": "org.apache.kafka.connect.storage.StringConverter", "auto.create": "true"})})
    wait_until(lambda: task_trace(w, "plain-sink").get("state") == "FAILED", 60, "plain-sink FAILED")
    trace = task_trace(w, "plain-sink").get("trace", "")
    if "without a value schema" not in trace or "JsonConverter" not in trace:
        raise AssertionError(f"trace does not say what is missing: {trace[:500]}")
    print("ok   a schemaless record fails the task, naming JsonConverter")

    # 4. a wrong password
    wrong = "wrong-" + RUN
    w.ok("POST", "/connectors", {"name": "wrong-pw", "config": sink_config(
        table, **{"connection.password": wrong, "insert.mode": "upsert", "pk.mode": "record_value", "pk.fields": "id"})})
    wait_until(lambda: task_trace(w, "wrong-pw").get("state") == "FAILED", 60, "wrong-pw FAILED")
    trace = task_trace(w, "wrong-pw").get("trace", "")
    if "password authentication failed" not in trace:
        raise AssertionError(f"trace does not name the refused password: {trace[:500]}")
    for path in ("/connectors/wrong-pw", "/connectors/wrong-pw/config", "/connectors/wrong-pw/status"):
        status, body = w.rest("GET", path)
        if wrong in json.dumps(body):
            raise AssertionError(f"GET {path} shows the password")
    with open(w.log_path, errors="replace") as f:
        if wrong in f.read():
            raise AssertionError("the worker log shows the password")
    print("ok   a wrong password fails the task with PostgreSQL's message; the password is in no answer and no log")

    # 5. SQL in a table name
    victim = f"jdbc_victim_{RUN}"
    psql(f'CREATE TABLE "{victim}" (x INT); INSERT INTO "{victim}" VALUES (1)')
    hostile_format = f'x"; DROP TABLE "{victim}"; --' + "${topic}"
    topic5 = f"jdbc_inj_{RUN}"
    src5 = os.path.join(d, "inj.jsonl")
    with open(src5, "w") as f:
        f.write(envelope(schema, {"id": 1, "qty": 1}) + "\n")
    w.ok("POST", "/connectors", {"name": "inj-src", "config": {
        "connector.class": "FileStreamSource", "file": src5, "topic": topic5}})
    w.ok("POST", "/connectors", {"name": "inj-sink", "config": sink_config(
        topic5, **{"table.name.format": hostile_format, "auto.create": "true"})})
    literal = hostile_format.replace("${topic}", topic5).replace("'", "''")
    wait_until(lambda: rows(f"SELECT count(*) FROM pg_tables WHERE tablename = '{literal}'")[0][0] == "1", 60,
               "the table named literally")
    if rows(f'SELECT count(*) FROM "{victim}"')[0][0] != "1":
        raise AssertionError("the victim table changed")
    print("ok   a table name with SQL in it is a literal name; the other table is untouched")

    # 6a. pk.mode=kafka: the backbone coordinates are the key; update mode changes existing rows only
    kaf = f"jdbc_kafka_{RUN}"
    src7 = os.path.join(d, "kafka.jsonl")
    with open(src7, "w") as f:
        for i in range(10):
            f.write(envelope(schema, {"id": i % 3, "qty": i}) + "\n")
    w.ok("POST", "/connectors", {"name": "kafka-src", "config": {
        "connector.class": "FileStreamSource", "file": src7, "topic": kaf}})
    w.ok("POST", "/connectors", {"name": "kafka-sink", "config": sink_config(
        kaf, **{"insert.mode": "upsert", "pk.mode": "kafka", "auto.create": "true"})})
    wait_until(lambda: table_exists(kaf) and rows(f'SELECT count(*) FROM "{kaf}"')[0][0] == "10", 60,
               "10 rows keyed by topic, partition and offset")
    got = rows(f'SELECT __connect_topic, __connect_offset, id, qty FROM "{kaf}" ORDER BY __connect_offset')
    if [r[0] for r in got] != [kaf] * 10 or [int(r[1]) for r in got] != list(range(10)) or \
            [int(r[3]) for r in got] != list(range(10)):
        raise AssertionError(f"pk.mode=kafka rows: {got}")
    upd = f"jdbc_update_{RUN}"
    psql(f'CREATE TABLE "{upd}" (id BIGINT PRIMARY KEY, qty INTEGER NOT NULL); '
         f'INSERT INTO "{upd}" VALUES (1, 10), (2, 20)')
    src8 = os.path.join(d, "update.jsonl")
    with open(src8, "w") as f:
        for i, q in ((1, 11), (3, 33), (2, 22)):
            f.write(envelope(schema, {"id": i, "qty": q}) + "\n")
    w.ok("POST", "/connectors", {"name": "update-src", "config": {
        "connector.class": "FileStreamSource", "file": src8, "topic": upd}})
    w.ok("POST", "/connectors", {"name": "update-sink", "config": sink_config(
        upd, **{"insert.mode": "update", "pk.mode": "record_value", "pk.fields": "id"})})
    wait_until(lambda: rows(f'SELECT qty FROM "{upd}" ORDER BY id') == [["11"], ["22"]], 60,
               "rows 1 and 2 updated, no row 3 inserted")
    print("ok   pk.mode=kafka keys rows by topic and offset; insert.mode=update changes existing rows and inserts none")

    # 6b. payloads as a hand-written producer may send them: fields in another order than the
    # schema's, a key given twice (the last counts, as for every JSON reader in ferry), a key the
    # schema does not name (ignored), an optional field missing or null, escapes and non-BMP text.
    # The sink reads fields straight from the parser's DOM; each row must still be what the
    # payload says.
    odd = f"jdbc_odd_{RUN}"
    odd_schema = {"type": "struct", "fields": [field(prim("int64"), "id"), field(prim("int32", True), "qty"),
                                               field(prim("string", True), "note")], "optional": False}
    head = json.dumps(odd_schema, separators=(",", ":"))
    payloads = ['{"id":1,"qty":5,"note":"a","qty":7,"extra":[1,{"x":2}]}',
                '{"note":"b","id":2}',
                '{"id":3,"qty":null,"note":"\\u00e9\\ud83d\\ude00 \\"q\\" \\\\ \\n"}']
    src6b = os.path.join(d, "odd.jsonl")
    with open(src6b, "w") as f:
        for p in payloads:
            f.write('{"schema":' + head + ',"payload":' + p + '}\n')
    w.ok("POST", "/connectors", {"name": "odd-src", "config": {
        "connector.class": "FileStreamSource", "file": src6b, "topic": odd}})
    w.ok("POST", "/connectors", {"name": "odd-sink", "config": sink_config(odd, **{"auto.create": "true"})})
    wait_until(lambda: table_exists(odd) and rows(f'SELECT count(*) FROM "{odd}"')[0][0] == "3", 60,
               "3 rows from the hand-written payloads")
    got = psql(f"SELECT json_agg(json_build_array(id, qty, note) ORDER BY id) FROM \"{odd}\"")
    want = [[1, 7, "a"], [2, None, "b"], [3, None, "\u00e9\U0001F600 \"q\" \\ \n"]]
    if json.loads(got) != want:
        raise AssertionError(f"hand-written payloads: {got}, expected {want}")
    print("ok   payloads with fields out of order, a key twice (the last counts), an unknown key, a missing "
          "optional field and escaped non-BMP text: each row as the payload says")

    # 6. the database down when the sink starts, then a kill -9 of the worker mid-stream
    outage = f"jdbc_outage_{RUN}"
    n = 60000
    src6 = os.path.join(d, "outage.jsonl")
    with open(src6, "w") as f:
        for i in range(n):
            f.write(envelope(schema, {"id": i, "qty": i * 3}) + "\n")
    service = os.path.join(ROOT, "scripts", "services", "postgres")
    subprocess.run([service, "stop"], check=True, capture_output=True, timeout=60)
    try:
        w.ok("POST", "/connectors", {"name": "outage-src", "config": {
            "connector.class": "FileStreamSource", "file": src6, "topic": outage}})
        w.ok("POST", "/connectors", {"name": "outage-sink", "config": sink_config(
            outage, **{"insert.mode": "upsert", "pk.mode": "record_value", "pk.fields": "id", "auto.create": "true",
                       "batch.size": "200"})})
        time.sleep(4)
        state = task_trace(w, "outage-sink").get("state")
        if state != "RUNNING":
            raise AssertionError(f"with the database down the sink task is {state}, not RUNNING (retrying)")
    finally:
        subprocess.run([service, "start"], check=True, capture_output=True, timeout=120)
    wait_until(lambda: int(rows(f'SELECT count(*) FROM "{outage}"')[0][0] if table_exists(outage) else 0) > 0, 60,
               "the first rows after the database came back")
    at_kill = int(rows(f'SELECT count(*) FROM "{outage}"')[0][0])
    w.kill9()
    if at_kill >= n:
        raise AssertionError(f"the kill -9 came after the sink had written everything ({at_kill} rows): not mid-stream")
    w.start()
    def complete():
        got = rows(f'SELECT count(*), coalesce(sum(qty), 0), count(DISTINCT id) FROM "{outage}"')[0]
        return got == [str(n), str(sum(i * 3 for i in range(n))), str(n)]
    wait_until(complete, 120, f"all {n} rows exactly once after the outage and the kill -9")
    print(f"ok   database down at start (task kept RUNNING, retrying), then kill -9 of the worker at {at_kill} of {n} rows: "
          f"{n} rows, each once, values exact")

    # 7. the database restarted while the sink writes: with batch.size 200 (each put() written in
    # one transaction before it returns), and with the default (a put() of 2,000 rows sent without
    # waiting: the stop breaks a statement whose answer is still to come, the reconnect fails while
    # the server is down, and the retries must write that batch again, not forget it).
    n7 = 100000
    restarts = []
    for label, extra in (("batch.size 200", {"batch.size": "200"}), ("sent without waiting", {})):
        restart = f"jdbc_restart_{len(restarts)}_{RUN}"
        restarts.append(restart)
        src9 = os.path.join(d, f"{restart}.jsonl")
        with open(src9, "w") as f:
            for i in range(n7):
                f.write(envelope(schema, {"id": i, "qty": i + 1}) + "\n")
        w.ok("POST", "/connectors", {"name": f"{restart}-src", "config": {
            "connector.class": "FileStreamSource", "file": src9, "topic": restart}})
        w.ok("POST", "/connectors", {"name": f"{restart}-sink", "config": sink_config(
            restart, **{"insert.mode": "upsert", "pk.mode": "record_value", "pk.fields": "id", "auto.create": "true",
                        **extra})})
        wait_until(lambda: table_exists(restart) and int(rows(f'SELECT count(*) FROM "{restart}"')[0][0]) > 0, 60,
                   "the first rows")
        subprocess.run([service, "stop"], check=True, capture_output=True, timeout=60)
        try:
            # What was committed before the stop (read after the restart: the server is down now).
            time.sleep(2)
        finally:
            subprocess.run([service, "start"], check=True, capture_output=True, timeout=120)
        at_stop = int(rows(f'SELECT count(*) FROM "{restart}"')[0][0])
        if at_stop >= n7:
            raise AssertionError(f"the restart came after the sink had written everything ({at_stop} rows)")

        def restarted_complete(restart=restart):
            got = rows(f'SELECT count(*), coalesce(sum(qty), 0) FROM "{restart}"')[0]
            return got == [str(n7), str(sum(i + 1 for i in range(n7)))]
        wait_until(restarted_complete, 180, f"all {n7} rows after the database restart ({label})")
        state = task_trace(w, f"{restart}-sink").get("state")
        if state != "RUNNING":
            raise AssertionError(f"{restart}-sink task {state} after the database restart")
        print(f"ok   database restarted mid-stream ({label}; at {at_stop} of {n7} rows committed): all {n7} rows, "
              f"values exact, task RUNNING")

    for t in (table, checked, checked2, plain, victim, outage, kaf, upd, *restarts):
        psql(f'DROP TABLE IF EXISTS "{t}"')
    psql(f"DROP TABLE IF EXISTS \"{literal.replace(chr(39) * 2, chr(39)).replace(chr(34), chr(34) * 2)}\"")
    w.stop()


if __name__ == "__main__":
    run(main)
