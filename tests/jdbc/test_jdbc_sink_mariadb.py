#!/usr/bin/env python3
"""JdbcSink against a real MariaDB 10.11 (scripts/services/mariadb; scripts/test starts it for the
`jdbc` label; run by hand, start it first: the test never starts or stops the shared server).

A standalone ferry worker reads Kafka Connect JsonConverter envelopes (a schema and a payload a
line) with FileStreamSource into the embedded backbone; JdbcSink reads them with
value.converter=JsonConverter, so its records are typed, and writes them to MariaDB
(connection.url mysql://...). Tables are named my_*_<run>:

  1. types and upserts: 1,000 records of every mapped type (integers, Decimal, floats, boolean,
     text with quotes, backslashes and non-ASCII, bytes with NUL and 0xff, Date, Time, Timestamp,
     Uuid, Json, NULLs) into a table made by auto.create, 200 of them updates of earlier ids
     (insert.mode=upsert): one row per id with the last record's values, each column compared
     with what was sent, the column types checked; 300 rows of 100 KB bytes (60 MB of literals)
     in insert mode, each put's rows split into statements under max_allowed_packet; a row that
     cannot fit alone is that row's error (reported), the rows around it written;
  2. bad rows among good ones, in upsert and in insert mode: a CHECK, a value too long for its
     VARCHAR and a NULL into a NOT NULL column are refused by MariaDB: those records go to the
     dead-letter topic and MariaDB's message is in the worker's log (errors.log.enable), the good
     rows of the same batches are written, the task stays RUNNING;
  3. a record without a schema: the task fails naming JsonConverter;
  4. a wrong password: the task fails with MariaDB's "Access denied", the password in no REST
     answer and not in the log;
  5. backticks and SQL in table.name.format: the table gets that literal name, the other table is
     untouched;
  6. delete.enabled with keyed tombstones (ValueToKey makes the key, ExtractField of a missing
     field makes the value null): the rows of the tombstones' keys are deleted, the others kept;
     pk.mode=kafka keys rows by topic, partition and offset (a VARCHAR(255) key column);
     insert.mode=update changes existing rows and inserts none;
  7. MariaDB kills the sink's connections (KILL <id> as root, only the sessions of this test's
     worker, found by its sockets) again and again while 100,000 records stream: every row ends
     in the table exactly once with its value, the task RUNNING and never failed (the runtime
     restarts a failed task, so the worker log is checked too: every kill must be a retry).

FERRY_BIN names the ferry binary; FERRY_MARIADB_URL overrides the server
(mysql://user:password@host:port/db). Standard library only.
"""
import base64
import datetime
import json
import os
import subprocess
import sys
import time
import urllib.parse
import uuid
import zlib

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
sys.path.insert(0, HERE)
from connect_envelope import ORDER_SCHEMA, decimal_b64, envelope, field, prim  # noqa: E402
from evolve_check import check_auto_evolve  # noqa: E402
from harness import Worker, run, tmpdir, wait_until  # noqa: E402

MY_URL = os.environ.get("FERRY_MARIADB_URL", "mysql://ferry:ferry-test-pw@127.0.0.1:13306/ferry")
U = urllib.parse.urlparse(MY_URL)
SERVER_URL = f"mysql://{U.hostname}:{U.port}{U.path}"  # without credentials: given as keys
PASSWORD = urllib.parse.unquote(U.password or "")
DB = U.path.lstrip("/")
RUN = uuid.uuid4().hex[:8]
SERVICE = os.path.join(ROOT, "scripts", "services", "mariadb")


def sql(stmt):
    """Runs `stmt` as the test user; the rows, each a list of texts (NULL as None). Values are
    asked for as HEX(...) by the callers where the client's escaping would get in the way."""
    p = subprocess.run(["mariadb", "--no-defaults", "--protocol=TCP", "--default-character-set=utf8mb4", "-h", U.hostname, "-P", str(U.port),
                        "-u", U.username, "-D", DB, "--batch", "--skip-column-names", "-e", stmt],
                       capture_output=True, text=True, timeout=60, env={**os.environ, "MYSQL_PWD": PASSWORD})
    if p.returncode != 0:
        raise AssertionError(f"mariadb failed: {p.stderr}")
    return [[None if v == "NULL" else v for v in line.split("\t")] for line in p.stdout.splitlines()]


def root_sql(stmt):
    p = subprocess.run([SERVICE, "client", "--batch", "--skip-column-names", "-e", stmt], capture_output=True,
                       text=True, timeout=60)
    if p.returncode != 0:
        raise AssertionError(f"mariadb (root) failed: {p.stderr}")
    return [line.split("\t") for line in p.stdout.splitlines()]


def q(name):
    return "`" + name.replace("`", "``") + "`"


def table_exists(name):
    lit = name.replace("\\", "\\\\").replace("'", "\\'")
    return sql(f"SELECT count(*) FROM information_schema.tables WHERE table_schema = DATABASE() "
               f"AND table_name = '{lit}'")[0][0] == "1"


def count(name):
    return int(sql(f"SELECT count(*) FROM {q(name)}")[0][0]) if table_exists(name) else 0


# ---- the typed records (ORDER_SCHEMA: connect_envelope.py) ----

COLUMNS = [f["field"] for f in ORDER_SCHEMA["fields"]]


def order(i):
    return {
        "id": i % 800, "qty": i, "small": (i % 100) if i % 3 else None, "tiny": i % 100 - 50,
        "price": decimal_b64(i * 101 - 5000), "ratio": (i / 7) if i % 5 else None, "f32": 0.5,
        "ok": i % 2 == 0,
        "name": None if i % 11 == 0 else f"n{i} \u00e9 'q\" \\ `x` \\' \U0001F680 {'NULL' if i % 7 == 0 else ''}",
        "raw": None if i % 13 == 0 else base64.b64encode(bytes([i % 256, 0, 255, 39, 92])).decode(),
        "day": 19000 + i % 365, "at": (i * 1001) % 86400000, "ts": None if i % 17 == 0 else 1700000000000 + i * 37,
        "uid": str(uuid.UUID(int=i)), "doc": None if i % 19 == 0 else json.dumps({"i": i, "s": "x'\\"}),
    }


def expected_row(o):
    unscaled = o["qty"] * 101 - 5000
    ms = datetime.timedelta(milliseconds=o["at"])
    return {
        "id": o["id"], "qty": o["qty"], "small": o["small"], "tiny": o["tiny"],
        "price": f"{'-' if unscaled < 0 else ''}{abs(unscaled) // 100}.{abs(unscaled) % 100:02d}",
        "ratio": o["ratio"], "f32": 0.5, "ok": o["ok"], "name": o["name"],
        "raw": None if o["raw"] is None else base64.b64decode(o["raw"]),
        "day": (datetime.date(1970, 1, 1) + datetime.timedelta(days=o["day"])).isoformat(),
        "at": (datetime.datetime(2000, 1, 1) + ms).strftime("%H:%M:%S.%f")[:-3],
        "ts": None if o["ts"] is None else
        (datetime.datetime(1970, 1, 1) + datetime.timedelta(milliseconds=o["ts"])).strftime("%Y-%m-%d %H:%M:%S.%f")[:-3],
        "uid": o["uid"], "doc": None if o["doc"] is None else json.loads(o["doc"]),
    }


def actual_row(r):
    """One row of the HEX(CAST(col AS CHAR)) select below, back to Python values."""
    v = [None if x == "N" else bytes.fromhex(x) for x in r]
    t = [None if x is None or i == 9 else x.decode("utf-8") for i, x in enumerate(v)]
    return {
        "id": int(t[0]), "qty": int(t[1]), "small": None if t[2] is None else int(t[2]), "tiny": int(t[3]),
        "price": t[4], "ratio": None if t[5] is None else float(t[5]), "f32": float(t[6]), "ok": t[7] == "1",
        "name": t[8], "raw": v[9], "day": t[10], "at": t[11], "ts": t[12], "uid": t[13],
        "doc": None if t[14] is None else json.loads(t[14]),
    }


def select_all(table):
    cols = ", ".join(f"IFNULL(HEX({q(c)}), 'N')" if c == "raw" else f"IFNULL(HEX(CAST({q(c)} AS CHAR)), 'N')"
                     for c in COLUMNS)
    return sql(f"SELECT {cols} FROM {q(table)} ORDER BY id")


def sink_config(topic, **extra):
    c = {"connector.class": "JdbcSink", "topics": topic, "connection.url": SERVER_URL,
         "connection.user": U.username, "connection.password": PASSWORD,
         "value.converter": "org.apache.kafka.connect.json.JsonConverter"}
    c.update(extra)
    return c


def task_trace(w, name):
    status, s = w.rest("GET", f"/connectors/{name}/status")
    tasks = s.get("tasks", []) if status == 200 else []
    return tasks[0] if tasks else {}


def never_failed(w, name):
    """The task's state now is not enough: the runtime restarts a failed task by itself, which
    would hide an error wrongly taken as fatal. The worker log names every failure."""
    with open(w.log_path, errors="replace") as f:
        failures = [line for line in f if f"task {name}-0 failed" in line]
    if failures:
        raise AssertionError(f"{name} failed {len(failures)} times (the runtime restarted it), e.g. {failures[0].strip()}")


def worker_sessions(pid, port):
    """The local ports of process `pid`'s TCP connections to the server's `port`, from
    /proc/<pid>/fd (socket inodes) and /proc/<pid>/net/tcp{,6}."""
    inodes = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            link = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if link.startswith("socket:["):
            inodes.add(link[8:-1])
    ports = set()
    for name in ("tcp", "tcp6"):
        try:
            with open(f"/proc/{pid}/net/{name}") as f:
                lines = f.read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            if len(cols) > 9 and cols[3] == "01" and int(cols[2].rsplit(":", 1)[1], 16) == port and cols[9] in inodes:
                ports.add(int(cols[1].rsplit(":", 1)[1], 16))
    return ports


def kill_worker_sessions(w):
    """KILL (as MariaDB root) the server sessions of this test's worker only: the server is shared
    with other tests, so sessions are matched by the worker's own client ports."""
    ports = worker_sessions(w.proc.pid, U.port)
    ids = [int(sid) for sid, host in
           root_sql(f"SELECT id, host FROM information_schema.processlist WHERE user = '{U.username}'")
           if host.rsplit(":", 1)[-1].isdigit() and int(host.rsplit(":", 1)[-1]) in ports]
    if ids:
        # One call; a session gone already makes its KILL fail, so the client goes on (--force).
        subprocess.run([SERVICE, "client", "--force", "-e", "".join(f"KILL {i};" for i in ids)],
                       capture_output=True, timeout=60)
    return len(ids)


def main():
    sql("SELECT 1")
    d = tmpdir("jdbc-sink-mariadb")
    w = Worker(d)
    w.start()
    tables = []

    # 1. every type, upserts, auto.create
    table = f"my_orders_{RUN}"
    tables.append(table)
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

    def all_there():
        if not table_exists(table):
            return False
        got = sql(f"SELECT count(*), IFNULL(sum(qty), 0) FROM {q(table)}")
        return got[0] == [str(len(last)), str(sum(o["qty"] for o in last.values()))]
    wait_until(all_there, 90, f"{len(last)} rows with the last values in {table}")
    got = {r["id"]: r for r in map(actual_row, select_all(table))}
    bad = [i for i, o in last.items() if got.get(i) != expected_row(o)]
    if bad:
        raise AssertionError(f"{len(bad)} rows differ, e.g. id {bad[0]}:\n  sent {expected_row(last[bad[0]])}\n  "
                             f"got  {got.get(bad[0])}")
    types = dict((r[0], r[1]) for r in sql(
        f"SELECT column_name, column_type FROM information_schema.columns WHERE table_schema = DATABASE() "
        f"AND table_name = '{table}'"))
    want = {"id": "bigint(20)", "qty": "int(11)", "small": "smallint(6)", "tiny": "tinyint(4)",
            "price": "decimal(65,2)", "ratio": "double", "f32": "float", "ok": "tinyint(1)", "name": "text",
            "raw": "longblob", "day": "date", "at": "time(3)", "ts": "datetime(3)", "uid": "char(36)", "doc": "longtext"}
    if any(types.get(k) != v for k, v in want.items()):
        raise AssertionError(f"column types {types}, expected {want}")
    print(f"ok   1,000 typed records (200 updates) -> {len(last)} rows, every column as sent, "
          f"types {sorted(set(want.values()))}")

    # 1b. big rows: 300 rows of 100 KB bytes (a 200 KB literal each, 60 MB in all) in insert mode;
    # a put's statement is split to stay under max_allowed_packet (16 MB here)
    big = f"my_big_{RUN}"
    tables.append(big)
    big_schema = {"type": "struct", "fields": [field(prim("int64"), "id"), field(prim("bytes"), "blob")],
                  "optional": False}
    blobs = [bytes((i * 7 + k) % 256 for k in range(100 * 1024)) for i in range(300)]
    src1b = os.path.join(d, "big.jsonl")
    with open(src1b, "w") as f:
        for i, b in enumerate(blobs):
            f.write(envelope(big_schema, {"id": i, "blob": base64.b64encode(b).decode()}) + "\n")
    packet = int(sql("SELECT @@max_allowed_packet")[0][0])
    w.ok("POST", "/connectors", {"name": "big-src", "config": {
        "connector.class": "FileStreamSource", "file": src1b, "topic": big}})
    w.ok("POST", "/connectors", {"name": "big-sink", "config": sink_config(big, **{"auto.create": "true"})})
    wait_until(lambda: count(big) == len(blobs), 120, f"{len(blobs)} big rows")
    want_crc = sum(zlib.crc32(b) for b in blobs)
    got = sql(f"SELECT SUM(CRC32(`blob`)), SUM(LENGTH(`blob`)) FROM {q(big)}")[0]
    if got != [str(want_crc), str(sum(map(len, blobs)))]:
        raise AssertionError(f"big rows: crc/length {got}, expected {want_crc}/{sum(map(len, blobs))}")
    never_failed(w, "big-sink")
    print(f"ok   300 rows of 100 KB bytes (60 MB of SQL literals, max_allowed_packet {packet}) written exactly, "
          f"statements split under the packet")

    # 1c. a row whose literal cannot fit in a statement (5 MB of bytes, a 10 MB literal, over half
    # of max_allowed_packet) is that row's error, dead-lettered; the rows around it are written
    huge = f"my_huge_{RUN}"
    tables.append(huge)
    src1c = os.path.join(d, "huge.jsonl")
    with open(src1c, "w") as f:
        for i in range(4):
            b = bytes(5 * 1024 * 1024) if i == 2 else b"small"
            f.write(envelope(big_schema, {"id": i, "blob": base64.b64encode(b).decode()}) + "\n")
    w.ok("POST", "/connectors", {"name": "huge-src", "config": {
        "connector.class": "FileStreamSource", "file": src1c, "topic": huge, "max.line.bytes": str(16 << 20)}})
    w.ok("POST", "/connectors", {"name": "huge-sink", "config": sink_config(huge, **{
        "auto.create": "true", "errors.tolerance": "all", "errors.log.enable": "true"})})
    wait_until(lambda: count(huge) == 3, 60, "the 3 small rows around the huge one")
    if sorted(int(r[0]) for r in sql(f"SELECT id FROM {q(huge)}")) != [0, 1, 3]:
        raise AssertionError("the wrong rows around the huge one were written")
    with open(w.log_path, errors="replace") as f:
        if "does not fit in a" not in f.read():
            raise AssertionError("the huge row's error is not in the log")
    never_failed(w, "huge-sink")
    print("ok   a row of 5 MB (a 10 MB literal, over half of max_allowed_packet) is refused as that row's error "
          "before it is sent; the 3 rows around it are written, the task never failed")

    # 2. bad rows among good ones: a CHECK, a value too long, a NULL into NOT NULL
    schema = {"type": "struct", "fields": [field(prim("int64"), "id"), field(prim("int32", True), "qty"),
                                           field(prim("string", True), "code")], "optional": False}

    def checked_case(name, n, bad_kind, mode):
        t = f"my_{name}_{RUN}"
        tables.append(t)
        sql(f"CREATE TABLE {q(t)} (id BIGINT PRIMARY KEY, qty INT NOT NULL CHECK (qty >= 0), code VARCHAR(5)) "
            f"ENGINE=InnoDB")
        path = os.path.join(d, f"{name}.jsonl")
        with open(path, "w") as f:
            for i in range(n):
                rec = {"id": i, "qty": i, "code": f"c{i % 1000}"}
                kind = bad_kind.get(i)
                if kind == "check":
                    rec["qty"] = -1
                elif kind == "long":
                    rec["code"] = "much too long"
                elif kind == "null":
                    rec["qty"] = None
                f.write(envelope(schema, rec) + "\n")
        dlq = os.path.join(d, f"{name}.dlq")
        w.ok("POST", "/connectors", {"name": f"{name}-src", "config": {
            "connector.class": "FileStreamSource", "file": path, "topic": t}})
        extra = {"errors.tolerance": "all", "errors.log.enable": "true",
                 "errors.deadletterqueue.topic.name": f"dlq-{name}-{RUN}"}
        if mode == "upsert":
            extra.update({"insert.mode": "upsert", "pk.mode": "record_value", "pk.fields": "id"})
        w.ok("POST", "/connectors", {"name": f"{name}-sink", "config": sink_config(t, **extra)})
        w.ok("POST", "/connectors", {"name": f"{name}-dlq", "config": {
            "connector.class": "FileStreamSink", "topics": f"dlq-{name}-{RUN}", "file": dlq}})
        good = set(range(n)) - set(bad_kind)
        wait_until(lambda: count(t) == len(good), 60, f"{len(good)} good rows in {t}")

        def dead():
            try:
                with open(dlq) as f:
                    return sorted(json.loads(line)["id"] for line in f if line.strip())
            except OSError:
                return []
        wait_until(lambda: dead() == sorted(bad_kind), 60, f"the {len(bad_kind)} bad rows in the dead-letter topic")
        if {int(r[0]) for r in sql(f"SELECT id FROM {q(t)}")} != good:
            raise AssertionError(f"{t}: the wrong rows were written")
        if task_trace(w, f"{name}-sink").get("state") != "RUNNING":
            raise AssertionError(f"{name}-sink is not RUNNING")
        never_failed(w, f"{name}-sink")

    checked_case("checked", 100, {7: "check", 21: "long", 50: "null", 51: "check", 99: "long"}, "upsert")
    checked_case("checked2", 20, {3: "check", 11: "null", 17: "long"}, "insert")
    with open(w.log_path, errors="replace") as f:
        log = f.read()
    for text in ("CONSTRAINT", "failed", "Data too long for column", "Column 'qty' cannot be null"):
        if text not in log:
            raise AssertionError(f"the worker log lacks MariaDB's message '{text}'")
    print("ok   upsert: 95 good rows written, 5 refused by MariaDB (CHECK, too long, NULL) dead-lettered with "
          "MariaDB's message; insert: 17 written, 3 dead-lettered; tasks RUNNING")

    # 2b. auto.evolve (evolve_check.py, shared with the PostgreSQL test)
    check_auto_evolve(
        w, d, RUN, sink_config,
        lambda t: [r[0].lower() for r in sql(f"SELECT column_name FROM information_schema.columns WHERE "
                                             f"table_schema = DATABASE() AND table_name = '{t}'")],
        lambda cols, t: sql(f"SELECT {cols} FROM {q(t)} ORDER BY id"))

    # 3. a record without a schema
    plain = f"my_plain_{RUN}"
    tables.append(plain)
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
    if "Access denied" not in trace or "errno 1045" not in trace:
        raise AssertionError(f"trace does not name the refused login: {trace[:500]}")
    for path in ("/connectors/wrong-pw", "/connectors/wrong-pw/config", "/connectors/wrong-pw/status"):
        status, body = w.rest("GET", path)
        if wrong in json.dumps(body):
            raise AssertionError(f"GET {path} shows the password")
    with open(w.log_path, errors="replace") as f:
        if wrong in f.read():
            raise AssertionError("the worker log shows the password")
    print("ok   a wrong password fails the task with MariaDB's 'Access denied' [errno 1045]; the password is in no "
          "answer and no log")

    # 5. backticks and SQL in a table name
    victim = f"my_victim_{RUN}"
    tables.append(victim)
    sql(f"CREATE TABLE {q(victim)} (x INT); INSERT INTO {q(victim)} VALUES (1)")
    topic5 = f"my_inj_{RUN}"
    hostile_format = f"x`; DROP TABLE `{victim}`; -- '" + "${topic}"
    literal = hostile_format.replace("${topic}", topic5)
    tables.append(literal)
    src5 = os.path.join(d, "inj.jsonl")
    with open(src5, "w") as f:
        f.write(envelope(schema, {"id": 1, "qty": 1, "code": "a"}) + "\n")
    w.ok("POST", "/connectors", {"name": "inj-src", "config": {
        "connector.class": "FileStreamSource", "file": src5, "topic": topic5}})
    w.ok("POST", "/connectors", {"name": "inj-sink", "config": sink_config(
        topic5, **{"table.name.format": hostile_format, "auto.create": "true"})})
    wait_until(lambda: count(literal) == 1, 60, "the table named literally, with its row")
    if sql(f"SELECT count(*) FROM {q(victim)}")[0][0] != "1":
        raise AssertionError("the victim table changed")
    print("ok   a table name with backticks and SQL in it is a literal name; the other table is untouched")

    # 6. delete.enabled: keyed rows, then keyed tombstones
    dele = f"my_delete_{RUN}"
    tables.append(dele)
    key_transforms = {"transforms": "key", "transforms.key.type": "ValueToKey", "transforms.key.fields": "schema,payload"}
    src6 = os.path.join(d, "delete.jsonl")
    with open(src6, "w") as f:
        for i in range(10):
            f.write(envelope(schema, {"id": i, "qty": i, "code": "k"}) + "\n")
    w.ok("POST", "/connectors", {"name": "delete-src", "config": {
        "connector.class": "FileStreamSource", "file": src6, "topic": dele, **key_transforms}})
    w.ok("POST", "/connectors", {"name": "delete-sink", "config": sink_config(
        dele, **{"key.converter": "org.apache.kafka.connect.json.JsonConverter", "insert.mode": "upsert",
                 "pk.mode": "record_key", "pk.fields": "id", "delete.enabled": "true", "auto.create": "true"})})
    wait_until(lambda: count(dele) == 10, 60, "10 keyed rows")
    src6b = os.path.join(d, "tombstones.jsonl")
    with open(src6b, "w") as f:
        for i in (2, 5, 7):
            f.write(envelope(schema, {"id": i, "qty": i, "code": "k"}) + "\n")
    w.ok("POST", "/connectors", {"name": "tomb-src", "config": {
        "connector.class": "FileStreamSource", "file": src6b, "topic": dele,
        "transforms": "key,null", "transforms.key.type": "ValueToKey", "transforms.key.fields": "schema,payload",
        "transforms.null.type": "org.apache.kafka.connect.transforms.ExtractField$Value",
        "transforms.null.field": "no_such_field"}})
    wait_until(lambda: count(dele) == 7, 60, "7 rows left after 3 tombstones")
    if sorted(int(r[0]) for r in sql(f"SELECT id FROM {q(dele)}")) != [0, 1, 3, 4, 6, 8, 9]:
        raise AssertionError("delete.enabled removed the wrong rows")
    print("ok   delete.enabled: 3 keyed tombstones delete their 3 rows, the 7 others stay")

    # 6b. pk.mode=kafka (a VARCHAR key column), and insert.mode=update changes existing rows only
    kaf = f"my_kafka_{RUN}"
    tables.append(kaf)
    src6c = os.path.join(d, "kafka.jsonl")
    with open(src6c, "w") as f:
        for i in range(10):
            f.write(envelope(schema, {"id": i % 3, "qty": i, "code": "k"}) + "\n")
    w.ok("POST", "/connectors", {"name": "kafka-src", "config": {
        "connector.class": "FileStreamSource", "file": src6c, "topic": kaf}})
    w.ok("POST", "/connectors", {"name": "kafka-sink", "config": sink_config(
        kaf, **{"insert.mode": "upsert", "pk.mode": "kafka", "auto.create": "true"})})
    wait_until(lambda: count(kaf) == 10, 60, "10 rows keyed by topic, partition and offset")
    got = sql(f"SELECT __connect_topic, __connect_offset, qty FROM {q(kaf)} ORDER BY __connect_offset")
    if [r[0] for r in got] != [kaf] * 10 or [int(r[1]) for r in got] != list(range(10)) or \
            [int(r[2]) for r in got] != list(range(10)):
        raise AssertionError(f"pk.mode=kafka rows: {got}")
    upd = f"my_update_{RUN}"
    tables.append(upd)
    sql(f"CREATE TABLE {q(upd)} (id BIGINT PRIMARY KEY, qty INT NOT NULL, code VARCHAR(5)); "
        f"INSERT INTO {q(upd)} VALUES (1, 10, 'a'), (2, 20, 'b')")
    src6d = os.path.join(d, "update.jsonl")
    with open(src6d, "w") as f:
        for i, qty in ((1, 11), (3, 33), (2, 22)):
            f.write(envelope(schema, {"id": i, "qty": qty, "code": None}) + "\n")
    w.ok("POST", "/connectors", {"name": "update-src", "config": {
        "connector.class": "FileStreamSource", "file": src6d, "topic": upd}})
    w.ok("POST", "/connectors", {"name": "update-sink", "config": sink_config(
        upd, **{"insert.mode": "update", "pk.mode": "record_value", "pk.fields": "id"})})
    wait_until(lambda: sql(f"SELECT id, qty, code FROM {q(upd)} ORDER BY id") == [["1", "11", None], ["2", "22", None]],
               60, "rows 1 and 2 updated (code set to NULL), no row 3 inserted")
    print("ok   pk.mode=kafka keys rows by topic and offset; insert.mode=update changes existing rows and inserts none")

    # 7. MariaDB kills the sink's connections again and again while 100,000 records stream
    killed_table = f"my_killed_{RUN}"
    tables.append(killed_table)
    n7 = 100000
    simple = {"type": "struct", "fields": [field(prim("int64"), "id"), field(prim("int64"), "qty")], "optional": False}
    src7 = os.path.join(d, "killed.jsonl")
    with open(src7, "w") as f:
        for i in range(n7):
            f.write(envelope(simple, {"id": i, "qty": i * 3}) + "\n")
    w.ok("POST", "/connectors", {"name": "killed-src", "config": {
        "connector.class": "FileStreamSource", "file": src7, "topic": killed_table}})
    w.ok("POST", "/connectors", {"name": "killed-sink", "config": sink_config(
        killed_table, **{"insert.mode": "upsert", "pk.mode": "record_value", "pk.fields": "id",
                         "auto.create": "true", "batch.size": "200"})})
    wait_until(lambda: count(killed_table) > 0, 60, "the first rows")
    kills, rounds, seen = 0, 0, []
    while rounds < 400:
        now = int(sql(f"SELECT count(*) FROM {q(killed_table)}")[0][0])
        if now >= n7:
            break
        seen.append(now)
        kills += kill_worker_sessions(w)
        rounds += 1
        time.sleep(0.2)
    if rounds < 3:
        raise AssertionError(f"only {rounds} rounds of kills ({kills} sessions) before the end of the stream")

    def killed_complete():
        got = sql(f"SELECT count(*), IFNULL(sum(qty), 0), count(DISTINCT id) FROM {q(killed_table)}")[0]
        return got == [str(n7), str(sum(i * 3 for i in range(n7))), str(n7)]
    wait_until(killed_complete, 180, f"all {n7} rows exactly once after the kills")
    state = task_trace(w, "killed-sink").get("state")
    if state != "RUNNING":
        raise AssertionError(f"killed-sink task {state} after its connections were killed")
    never_failed(w, "killed-sink")
    for name in ("orders-sink", "delete-sink", "kafka-sink", "update-sink"):
        never_failed(w, name)
    mid = [c for c in seen if 0 < c < n7]
    print(f"ok   {kills} sessions killed by the server over {rounds} rounds while {n7} rows streamed "
          f"(at {mid[0] if mid else '?'}..{mid[-1] if mid else '?'} rows): all {n7} rows, each once, values exact, "
          f"task RUNNING")

    w.stop()
    for t in tables:
        sql(f"DROP TABLE IF EXISTS {q(t)}")


if __name__ == "__main__":
    run(main)
