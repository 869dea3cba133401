#!/usr/bin/env python3
"""JdbcSource against a real MariaDB 10.11 (scripts/services/mariadb; scripts/test starts it for the
`jdbc` label; by hand, start it and scripts/services/postgres first: the test never starts or
stops the shared servers).

A standalone ferry worker reads MariaDB tables with JdbcSource (connection.url mysql://...,
value.converter=JsonConverter) and the test looks at what arrives at the far end:

  1. types: a table with one column per MariaDB type (signed and unsigned integers, BIGINT
     UNSIGNED, DECIMAL, FLOAT, DOUBLE, BOOLEAN, BIT(1), BIT(12), CHAR/VARCHAR/TEXT, VARBINARY,
     BLOB, DATE, TIME(3), DATETIME(6), TIMESTAMP(3), YEAR, UUID, JSON, ENUM, SET) and a row of
     NULLs: each column's schema and value in the envelope is what the type promises; the same
     rows go through the backbone into JdbcSink on PostgreSQL (auto.create, upsert) and every
     column of the copy equals the original (MariaDB -> PostgreSQL, value-exact);
  2. incrementing: 20,000 rows in batches; a clean restart reads nothing again; kill -9 while a
     writer inserts: every row arrives, the repeats only after the last committed position;
  3. timestamp+incrementing with a transaction left open (NOW(6) inside it) while a later one
     commits: nothing after the open one's start is read until it commits, then both arrive
     (the bound from information_schema.INNODB_TRX; the test fails without it); bulk mode reads
     5,000 rows streamed 100 at a time, every pass;
  4. bad input: a wrong password (MariaDB's "Access denied", the password nowhere), SQL in the
     incrementing column's name (the task fails naming it), table.types=MATERIALIZED VIEW
     refused; the server kills the source's sessions again and again while a writer adds rows:
     every row arrives, the task RUNNING.

FERRY_BIN names the ferry binary; FERRY_MARIADB_URL and FERRY_POSTGRES_URL override the servers.
Standard library only.
"""
import base64
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
from harness import Worker, run, tmpdir, wait_until  # noqa: E402
from source_checks import kill9_mid_stream  # noqa: E402
from test_jdbc_sink_mariadb import PASSWORD, SERVER_URL, U, kill_worker_sessions, q, sql  # noqa: E402
from test_jdbc_source import PG_URL, b64_unscaled, envelopes, file_sink, psql, task_state  # noqa: E402

P = urllib.parse.urlparse(PG_URL)
RUN = uuid.uuid4().hex[:8]


def source_config(**extra):
    c = {"connector.class": "JdbcSource", "connection.url": SERVER_URL, "connection.user": U.username,
         "connection.password": PASSWORD, "poll.interval.ms": "200",
         "value.converter": "org.apache.kafka.connect.json.JsonConverter"}
    c.update(extra)
    return c


class MySession:
    """A mariadb client session kept open (a transaction left open on purpose)."""

    def __init__(self):
        self.p = subprocess.Popen(["mariadb", "--no-defaults", "--protocol=TCP", "-h", U.hostname, "-P", str(U.port),
                                   "-u", U.username, "-D", U.path.lstrip("/"), "--batch"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  env={**os.environ, "MYSQL_PWD": PASSWORD})

    def send(self, stmt):
        self.p.stdin.write(stmt + "\n")
        self.p.stdin.flush()

    def close(self):
        self.p.stdin.close()
        if self.p.wait(timeout=60) != 0:
            raise AssertionError(f"mariadb session failed: {self.p.stderr.read()}")


DEC = "org.apache.kafka.connect.data.Decimal"
# name, MariaDB type, literal, (schema type, schema name), payload, MariaDB text expr, PostgreSQL text expr
# of the copy (each side's expression gives the same text for the same value).
COLUMNS = [
    ("ti", "TINYINT", "-128", ("int8", None), -128, "ti", "ti"),
    ("tiu", "TINYINT UNSIGNED", "255", ("int16", None), 255, "tiu", "tiu"),
    ("si", "SMALLINT", "-32768", ("int16", None), -32768, "si", "si"),
    ("mi", "MEDIUMINT", "-8388608", ("int32", None), -8388608, "mi", "mi"),
    ("iu", "INT UNSIGNED", "4294967295", ("int64", None), 4294967295, "iu", "iu"),
    ("bi", "BIGINT", "-9223372036854775808", ("int64", None), -9223372036854775808, "bi", "bi"),
    ("biu", "BIGINT UNSIGNED", "18446744073709551615", ("bytes", DEC), b64_unscaled("18446744073709551615", 0),
     "biu", "biu"),
    ("n", "DECIMAL(12,3)", "-123456789.125", ("bytes", DEC), b64_unscaled("-123456789.125", 3), "n", "n"),
    ("nbig", "DECIMAL(30,0)", "123456789012345678901234567890", ("bytes", DEC),
     b64_unscaled("123456789012345678901234567890", 0), "nbig", "nbig"),
    ("f", "FLOAT", "1.5", ("float", None), 1.5, "f", "f"),
    ("d", "DOUBLE", "-2.25e-300", ("double", None), -2.25e-300, "d", "d"),
    ("b", "BOOLEAN", "TRUE", ("boolean", None), True, "CASE WHEN b THEN 'true' WHEN NOT b THEN 'false' END", "b"),
    ("bit1", "BIT(1)", "b'1'", ("boolean", None), True, "CASE bit1 WHEN 1 THEN 'true' WHEN 0 THEN 'false' END", "bit1"),
    ("bits", "BIT(12)", "b'101000000001'", ("bytes", None), base64.b64encode(b"\x0a\x01").decode(), "LOWER(LPAD(HEX(bits), 4, '0'))",
     "encode(bits, 'hex')"),
    ("c", "CHAR(5)", "'ab'", ("string", None), "ab", "c", "c"),
    ("vc", "VARCHAR(20)", "'v \"q\" \\\\ \\''", ("string", None), "v \"q\" \\ '", "HEX(vc)",
     "upper(encode(convert_to(vc, 'UTF8'), 'hex'))"),
    ("tx", "TEXT", "'line\\nnext \u00e9 \U0001F680'", ("string", None), "line\nnext \u00e9 \U0001F680", "HEX(tx)",
     "upper(encode(convert_to(tx, 'UTF8'), 'hex'))"),
    ("vb", "VARBINARY(8)", "X'00ff41'", ("bytes", None), base64.b64encode(b"\x00\xffA").decode(), "LOWER(HEX(vb))",
     "encode(vb, 'hex')"),
    ("bl", "BLOB", "X'deadbeef00'", ("bytes", None), base64.b64encode(b"\xde\xad\xbe\xef\x00").decode(),
     "LOWER(HEX(bl))", "encode(bl, 'hex')"),
    ("dt", "DATE", "'2026-12-06'", ("int32", "org.apache.kafka.connect.data.Date"), 20793, "dt", "dt"),
    ("tm", "TIME(3)", "'13:14:15.678'", ("int32", "org.apache.kafka.connect.data.Time"),
     13 * 3600000 + 14 * 60000 + 15678, "TIME_FORMAT(tm, '%H:%i:%s.%f')", "to_char(tm, 'HH24:MI:SS.US')"),
    ("dtm", "DATETIME(6)", "'2026-12-06 15:00:00.123'", ("int64", "org.apache.kafka.connect.data.Timestamp"),
     1796569200123, "DATE_FORMAT(dtm, '%Y-%m-%d %H:%i:%s.%f')", "to_char(dtm, 'YYYY-MM-DD HH24:MI:SS.US')"),
    ("tsp", "TIMESTAMP(3) NULL", "'2001-02-03 04:05:06.5'", ("int64", "org.apache.kafka.connect.data.Timestamp"),
     981173106500, "DATE_FORMAT(tsp, '%Y-%m-%d %H:%i:%s.%f')", "to_char(tsp, 'YYYY-MM-DD HH24:MI:SS.US')"),
    ("yr", "YEAR", "2026", ("int32", None), 2026, "yr", "yr"),
    ("u", "UUID", "'123e4567-e89b-12d3-a456-426614174000'", ("string", "ferry.data.Uuid"),
     "123e4567-e89b-12d3-a456-426614174000", "u", "u"),
    ("j", "JSON", "'{\"a\": [1, 2]}'", ("string", "ferry.data.Json"), '{"a": [1, 2]}', "JSON_EXTRACT(j, '$.a[1]')",
     "j->'a'->>1"),
    ("e", "ENUM('sad','ok','happy')", "'happy'", ("string", None), "happy", "e", "e"),
    ("st", "SET('a','b','c')", "'a,c'", ("string", None), "a,c", "st", "st"),
]


def check_types(w, d):
    t = f"my_src_types_{RUN}"
    cols = ", ".join(f"{q(c[0])} {c[1]}" for c in COLUMNS)
    sql(f"CREATE TABLE {q(t)} (id BIGINT AUTO_INCREMENT PRIMARY KEY, i INT NOT NULL, {cols}) ENGINE=InnoDB")
    sql(f"INSERT INTO {q(t)} (i, {', '.join(q(c[0]) for c in COLUMNS)}) VALUES (2147483647, "
        f"{', '.join(c[2] for c in COLUMNS)})")
    sql(f"INSERT INTO {q(t)} (i) VALUES (0)")
    out = os.path.join(d, "types.out")
    w.ok("POST", "/connectors", {"name": "types-src", "config": source_config(**{
        "mode": "incrementing", "incrementing.column.name": "id", "table.whitelist": t, "topic.prefix": "my-"})})
    file_sink(w, "types-file", f"my-{t}", out)
    wait_until(lambda: len(envelopes(out)) >= 2, 60, "2 envelopes of the types table")
    full, nulls = envelopes(out)[:2]
    schema = {f["field"]: f for f in full["schema"]["fields"]}
    if full["schema"].get("name") != t or full["schema"]["type"] != "struct":
        raise AssertionError(f"the record's schema is not the table's struct: {full['schema']}")
    want = {"id": ("int64", None, False), "i": ("int32", None, False)}
    want.update({c[0]: (c[3][0], c[3][1], True) for c in COLUMNS})
    for col, expected in want.items():
        s = schema.get(col, {})
        if (s.get("type"), s.get("name"), s.get("optional")) != expected:
            raise AssertionError(f"column {col}: schema {s}, expected (type, name, optional) {expected}")
    if schema["n"]["parameters"]["scale"] != "3" or schema["biu"]["parameters"]["scale"] != "0":
        raise AssertionError(f"decimal scales wrong: {schema['n']} {schema['biu']}")
    p = full["payload"]
    wrong = {c[0]: (p.get(c[0]), c[4]) for c in COLUMNS if p.get(c[0]) != c[4] and not (c[0] == "j" and json.loads(p.get("j") or "null") == json.loads(c[4]))}
    if wrong:
        raise AssertionError(f"values differ (got, expected): {wrong}")
    if any(v is not None for k, v in nulls["payload"].items() if k not in ("id", "i")):
        raise AssertionError(f"the NULL row has values: {nulls['payload']}")
    print(f"ok   {len(COLUMNS) + 2} MariaDB types: each column's schema and value as the type promises; NULLs null")

    # MariaDB -> backbone -> JdbcSink -> PostgreSQL: each column of the copy equals the original.
    copy = f"my_src_types_copy_{RUN}"
    w.ok("POST", "/connectors", {"name": "types-pg", "config": {
        "connector.class": "JdbcSink", "topics": f"my-{t}", "connection.url": f"postgresql://{P.hostname}:{P.port}{P.path}",
        "connection.user": P.username, "connection.password": urllib.parse.unquote(P.password or ""),
        "value.converter": "org.apache.kafka.connect.json.JsonConverter", "table.name.format": copy,
        "auto.create": "true", "insert.mode": "upsert", "pk.mode": "record_value", "pk.fields": "id"}})

    def copied():
        try:
            return psql(f'SELECT count(*) FROM "{copy}"').strip() == "2"
        except AssertionError:
            return False
    wait_until(copied, 60, "2 rows copied into PostgreSQL by JdbcSink")
    differ = []
    for c in COLUMNS:
        mine = [r[0] for r in sql(f"SELECT {c[5]} FROM {q(t)} ORDER BY id")]
        theirs = [None if v == "<null>" else v for v in
                  psql(f"SELECT coalesce(({c[6]})::text, '<null>') FROM \"{copy}\" ORDER BY id").splitlines()]
        if c[0] in ("f", "d", "b", "bit1"):
            norm = [None if v is None else (v if c[0] in ("b", "bit1") else float(v)) for v in mine]
            theirs = [None if v is None else ({"t": "true", "f": "false"}.get(v, v) if c[0] in ("b", "bit1")
                                              else float(v)) for v in theirs]
            mine = norm
        if c[0] == "j":
            mine = [None if v is None else json.loads(v) for v in mine]
            theirs = [None if v is None else json.loads(v) for v in theirs]
        if mine != theirs:
            differ.append((c[0], mine, theirs))
    if differ:
        raise AssertionError(f"columns differ between MariaDB and the PostgreSQL copy (MariaDB, PostgreSQL): {differ}")
    print(f"ok   MariaDB -> backbone -> JdbcSink -> PostgreSQL: all {len(COLUMNS)} typed columns of the copy equal "
          "the original, NULLs included")


def check_incrementing(w, d):
    t = f"my_src_inc_{RUN}"
    n = 20000
    sql(f"CREATE TABLE {q(t)} (id BIGINT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(40) NOT NULL) ENGINE=InnoDB")
    sql(f"INSERT INTO {q(t)} (v) SELECT CONCAT('row ', seq) FROM seq_1_to_{n}")
    out = os.path.join(d, "inc.out")
    w.ok("POST", "/connectors", {"name": "inc-src", "config": source_config(**{
        "mode": "incrementing", "incrementing.column.name": "id", "table.whitelist": t,
        "topic.prefix": "", "batch.max.rows": "500"})})
    file_sink(w, "inc-file", t, out)

    def ids():
        return [e["payload"]["id"] for e in envelopes(out)]

    def table_ids():
        # INSERT ... SELECT leaves gaps in AUTO_INCREMENT between statements: the table says.
        return sorted(int(r[0]) for r in sql(f"SELECT id FROM {q(t)}"))
    wait_until(lambda: len(ids()) >= n, 120, f"{n} rows")
    if sorted(ids()) != table_ids():
        raise AssertionError("the first read is not every row once")
    prog = task_state(w, "inc-src").get("task", {}).get("progress", {})
    wait_until(lambda: task_state(w, "inc-src").get("task", {}).get("progress", {}).get("phase") == "initial load done",
               30, "the load reported done")
    w.stop()
    sql(f"INSERT INTO {q(t)} (v) SELECT CONCAT('more ', seq) FROM seq_1_to_100")
    w.start()
    wait_until(lambda: len(ids()) >= n + 100, 60, "the 100 new rows after a restart")
    time.sleep(1)
    got = ids()
    if sorted(got) != table_ids():
        raise AssertionError(f"after a clean restart: {len(got)} rows, {len(got) - len(set(got))} repeats")
    first_rows = set(got)
    print(f"ok   incrementing: {n} rows once each (progress {prog.get('phase')!r} then done); a restart resumes after "
          "the last row (100 new rows, 0 repeats)")

    kill9_mid_stream(w, ids, table_ids, lambda: sql(f"INSERT INTO {q(t)} (v) SELECT CONCAT('w ', seq) FROM seq_1_to_1000"),
                     first_rows, n + 100 + 5000)

def check_timestamps_and_bulk(w, d):
    t = f"my_src_ts_{RUN}"
    sql(f"CREATE TABLE {q(t)} (id BIGINT AUTO_INCREMENT PRIMARY KEY, who VARCHAR(20), "
        "ts DATETIME(6) NOT NULL DEFAULT NOW(6)) ENGINE=InnoDB")
    out = os.path.join(d, "ts.out")
    w.ok("POST", "/connectors", {"name": "ts-src", "config": source_config(**{
        "mode": "timestamp+incrementing", "incrementing.column.name": "id", "timestamp.column.name": "ts",
        "table.whitelist": t, "topic.prefix": "ts-"})})
    file_sink(w, "ts-file", f"ts-{t}", out)

    def whos():
        return [e["payload"]["who"] for e in envelopes(out)]
    sql(f"INSERT INTO {q(t)} (who) VALUES ('before')")
    wait_until(lambda: whos() == ["before"], 30, "the first row")
    slow = MySession()
    slow.send(f"BEGIN; INSERT INTO {q(t)} (who) VALUES ('slow');")
    time.sleep(1.5)  # past the second of the open transaction's start (INNODB_TRX has whole seconds)
    sql(f"INSERT INTO {q(t)} (who) VALUES ('fast')")
    time.sleep(3)
    if "fast" in whos():
        raise AssertionError("a row after an open transaction's start was read while it was open (its row would be "
                             "skipped)")
    slow.send("COMMIT;")
    slow.close()
    wait_until(lambda: sorted(whos()) == ["before", "fast", "slow"], 30, "both rows once the transaction committed")
    print("ok   timestamp+incrementing: a row committed after a later one is not skipped (reads wait for InnoDB's "
          "open transaction)")

    b = f"my_src_bulk_{RUN}"
    sql(f"CREATE TABLE {q(b)} (id INT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB")
    sql(f"INSERT INTO {q(b)} SELECT seq, CONCAT('b', seq) FROM seq_1_to_5000")
    out2 = os.path.join(d, "bulk.out")
    w.ok("POST", "/connectors", {"name": "bulk-src", "config": source_config(**{
        "mode": "bulk", "table.whitelist": b, "topic.prefix": "bulk-", "batch.max.rows": "100",
        "poll.interval.ms": "2000"})})
    file_sink(w, "bulk-file", f"bulk-{b}", out2)
    wait_until(lambda: len(envelopes(out2)) >= 10000, 90, "two bulk passes")
    got = [e["payload"]["id"] for e in envelopes(out2)][:10000]
    if sorted(got) != sorted(list(range(1, 5001)) * 2):
        raise AssertionError("two bulk passes are not every row twice")
    w.ok("DELETE", "/connectors/bulk-src")
    print("ok   bulk: 5,000 rows streamed 100 at a time, every row in each pass")


def check_bad_input(w, d):
    status, body = w.rest("POST", "/connectors", {"name": "badpw", "config": source_config(**{
        "connection.password": "not-the-password-93xq", "mode": "bulk", "topic.prefix": "x-"})})
    deadline = time.time() + 30
    trace = ""
    while time.time() < deadline:
        s = task_state(w, "badpw").get("connector", {})
        if s.get("state") == "FAILED":
            trace = s.get("trace", "")
            break
        time.sleep(0.2)
    if "Access denied" not in trace:
        raise AssertionError(f"wrong password: connector not FAILED with MariaDB's message: {status} {body} {trace!r}")
    with open(w.log_path, errors="replace") as f:
        if "not-the-password-93xq" in f.read():
            raise AssertionError("the password is in the worker log")
    _, cfg = w.rest("GET", "/connectors/badpw")
    if "not-the-password-93xq" in json.dumps(cfg):
        raise AssertionError("the password is in the REST answer")
    w.ok("DELETE", "/connectors/badpw")
    status, body = w.rest("PUT", "/connector-plugins/JdbcSource/config/validate", source_config(**{
        "mode": "bulk", "topic.prefix": "x-", "table.types": "MATERIALIZED VIEW"}))
    if status != 200 or "MySQL and MariaDB have TABLE and VIEW" not in json.dumps(body):
        raise AssertionError(f"table.types=MATERIALIZED VIEW not refused: {status} {body}")

    t = f"my_src_evil_{RUN}"
    sql(f"CREATE TABLE {q(t)} (id INT PRIMARY KEY) ENGINE=InnoDB")
    sql(f"INSERT INTO {q(t)} VALUES (1)")
    evil = "id` > 0; DROP TABLE x; -- "
    w.ok("POST", "/connectors", {"name": "evil", "config": source_config(**{
        "mode": "incrementing", "incrementing.column.name": evil, "table.whitelist": t, "topic.prefix": "e-"})})
    wait_until(lambda: task_state(w, "evil").get("task", {}).get("state") == "FAILED", 30, "the task FAILED")
    trace = task_state(w, "evil")["task"].get("trace", "")
    if evil not in trace and "Unknown column" not in trace:
        raise AssertionError(f"the task's error does not name the column: {trace!r}")
    if sql(f"SELECT COUNT(*) FROM {q(t)}")[0][0] != "1":
        raise AssertionError("the table changed")
    w.ok("DELETE", "/connectors/evil")
    print("ok   bad input: a wrong password (MariaDB's message, the password nowhere), table.types refused, SQL in a "
          "column name (a name, the task failed naming it)")

    # The server kills the source's sessions again and again while a writer adds rows.
    k = f"my_src_kill_{RUN}"
    sql(f"CREATE TABLE {q(k)} (id BIGINT AUTO_INCREMENT PRIMARY KEY, v VARCHAR(20)) ENGINE=InnoDB")
    out = os.path.join(d, "kill.out")
    w.ok("POST", "/connectors", {"name": "kill-src", "config": source_config(**{
        "mode": "incrementing", "incrementing.column.name": "id", "table.whitelist": k, "topic.prefix": "k-",
        "batch.max.rows": "200", "errors.retry.delay.max.ms": "500"})})
    file_sink(w, "kill-file", f"k-{k}", out)
    killed = 0
    total = 40000
    for i in range(40):
        sql(f"INSERT INTO {q(k)} (v) SELECT 'x' FROM seq_1_to_{total // 40}")
        killed += kill_worker_sessions(w)
        time.sleep(0.3)
    # INSERT ... SELECT leaves gaps in AUTO_INCREMENT: the table's own ids are what must arrive.
    written = {int(r[0]) for r in sql(f"SELECT id FROM {q(k)}")}
    if len(written) != total:
        raise AssertionError(f"the writer wrote {len(written)} rows, not {total}")
    wait_until(lambda: {e["payload"]["id"] for e in envelopes(out)} >= written, 120, f"all {total} rows")
    ids = {e["payload"]["id"] for e in envelopes(out)}
    if ids != written:
        raise AssertionError(f"rows missing after the kills: {len(written - ids)}, unknown: {len(ids - written)}")
    if task_state(w, "kill-src").get("task", {}).get("state") != "RUNNING":
        raise AssertionError(f"the task is not RUNNING: {task_state(w, 'kill-src')}")
    if killed < 5:
        raise AssertionError(f"only {killed} sessions killed: the fault did not happen")
    print(f"ok   {killed} sessions of the worker killed by the server while {total} rows were written: every row "
          "arrived, the task RUNNING")


def check_timezone(w, d):
    """db.timezone=+01:00: DATETIME columns hold wall clocks an hour ahead of UTC; the source reads
    them as instants and compares positions and its upper bound in that offset; JdbcSink with the
    same db.timezone writes the same wall clocks back."""
    t = f"my_src_tz_{RUN}"
    sql(f"CREATE TABLE {q(t)} (id BIGINT AUTO_INCREMENT PRIMARY KEY, fixed DATETIME(3), "
        "at DATETIME(6) NOT NULL DEFAULT (UTC_TIMESTAMP(6) + INTERVAL 1 HOUR)) ENGINE=InnoDB")
    sql(f"INSERT INTO {q(t)} (fixed) VALUES ('2026-07-15 14:00:00'), ('2026-12-06 16:00:00.250')")
    out = os.path.join(d, "tz.out")
    w.ok("POST", "/connectors", {"name": "tz-src", "config": source_config(**{
        "mode": "timestamp+incrementing", "incrementing.column.name": "id", "timestamp.column.name": "at",
        "table.whitelist": t, "topic.prefix": "tz-", "db.timezone": "+01:00"})})
    file_sink(w, "tz-file", f"tz-{t}", out)
    wait_until(lambda: len(envelopes(out)) >= 2, 30, "the 2 rows read at +01:00")
    got = {e["payload"]["id"]: e["payload"] for e in envelopes(out)}
    if (got[1]["fixed"], got[2]["fixed"]) != (1784120400000, 1796569200250):
        raise AssertionError(f"+01:00 wall clocks not read as their instants: {got[1]['fixed']}, {got[2]['fixed']}")
    if abs(got[1]["at"] - time.time() * 1000) > 120000:
        raise AssertionError(f"a row written now reads as {got[1]['at']}, not about now")
    copy = f"my_src_tz_copy_{RUN}"
    sql(f"CREATE TABLE {q(copy)} (id BIGINT PRIMARY KEY, fixed DATETIME(3), at DATETIME(3)) ENGINE=InnoDB")
    w.ok("POST", "/connectors", {"name": "tz-sink", "config": {
        "connector.class": "JdbcSink", "topics": f"tz-{t}", "connection.url": SERVER_URL,
        "connection.user": U.username, "connection.password": PASSWORD,
        "value.converter": "org.apache.kafka.connect.json.JsonConverter", "table.name.format": copy,
        "insert.mode": "upsert", "pk.mode": "record_value", "pk.fields": "id", "db.timezone": "+01:00"}})
    wait_until(lambda: sql(f"SELECT COUNT(*) FROM {q(copy)}")[0][0] == "2", 30, "2 rows copied")
    diff = sql(f"SELECT COUNT(*) FROM {q(t)} s JOIN {q(copy)} c USING (id) WHERE NOT (c.fixed <=> s.fixed) "
               f"OR c.at <> CAST(s.at AS DATETIME(3))")[0][0]
    if diff != "0":
        raise AssertionError(f"{diff} rows differ after the sink wrote them at +01:00")
    print("ok   db.timezone=+01:00: DATETIME wall clocks read as instants, positions and the upper bound at that "
          "offset, written back by JdbcSink as the same wall clocks")


def main():
    sql("SELECT 1")
    psql("SELECT 1")
    d = tmpdir("jdbc-source-mariadb")
    w = Worker(d)
    w.start()
    check_types(w, d)
    check_timestamps_and_bulk(w, d)
    check_timezone(w, d)
    check_bad_input(w, d)
    check_incrementing(w, d)
    w.stop()


if __name__ == "__main__":
    run(main)
