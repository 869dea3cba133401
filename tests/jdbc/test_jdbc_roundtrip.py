#!/usr/bin/env python3
"""1,000,000 rows PostgreSQL -> JdbcSource -> backbone -> JdbcSink -> MariaDB, under faults.

scripts/services/postgres and scripts/services/mariadb must be running (scripts/test starts them
for the `jdbc` label); this test stops and starts each of them once itself.

A writer keeps inserting (10,000 rows a statement) and updating (2,000 random rows a round:
version + 1, updated = now()) a PostgreSQL table of mixed types until it holds FERRY_RT_ROWS rows
(default 1,000,000). A standalone ferry worker reads it with JdbcSource
(mode=timestamp+incrementing on updated, id) into the embedded backbone (JsonConverter envelopes)
and writes it with JdbcSink (insert.mode=upsert, pk id, auto.create) into MariaDB; a FileStreamSink
of the same topic keeps every record (the payload) to count repeats. Faults, each at a point of
the copy's progress: the worker kill -9ed (and started again) twice, PostgreSQL stopped and
started once, MariaDB stopped and started once.

At the end the MariaDB table must equal the PostgreSQL table row by row (every column compared
after the writer stopped; a checksum of the whole table printed for both), 0 rows missing, 0
extra; the repeats (records of the same row version delivered more than once, absorbed by the
upserts) are counted and printed.

FERRY_BIN names the ferry binary. Standard library only.
"""
import datetime
import json
import hashlib
import os
import random
import subprocess
import sys
import threading
import time
import urllib.parse
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from harness import Worker, run, tmpdir, wait_until  # noqa: E402

PG_URL = os.environ.get("FERRY_POSTGRES_URL", "postgresql://ferry:ferry-test-pw@127.0.0.1:15432/ferry")
MY_URL = os.environ.get("FERRY_MARIADB_URL", "mysql://ferry:ferry-test-pw@127.0.0.1:13306/ferry")
PG = urllib.parse.urlparse(PG_URL)
MY = urllib.parse.urlparse(MY_URL)
ROWS = int(os.environ.get("FERRY_RT_ROWS", "1000000"))
RUN = uuid.uuid4().hex[:8]
TABLE = f"rt_{RUN}"
SERVICES = os.path.join(ROOT, "scripts", "services")


def psql(sql, timeout=300):
    p = subprocess.run(["psql", PG_URL, "-v", "ON_ERROR_STOP=1", "-At", "-c", sql], capture_output=True, text=True,
                       timeout=timeout)
    if p.returncode != 0:
        raise AssertionError(f"psql failed: {p.stderr}")
    return p.stdout


def mariadb(sql, timeout=300):
    p = subprocess.run(["mariadb", "-h", MY.hostname, "-P", str(MY.port), "-u", MY.username,
                        f"--password={urllib.parse.unquote(MY.password)}", MY.path.lstrip("/"), "-N", "-B", "-e", sql],
                       capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise AssertionError(f"mariadb failed: {p.stderr}")
    return p.stdout


def retrying(fn, *args):
    """fn(*args), again while its server is restarting (up to 60 s)."""
    deadline = time.time() + 60
    while True:
        try:
            return fn(*args)
        except (AssertionError, subprocess.TimeoutExpired):
            if time.time() > deadline:
                raise
            time.sleep(0.5)


def copied():
    try:
        return int(mariadb(f"SELECT count(*) FROM `{TABLE}`").strip())
    except AssertionError:
        return 0


def restart_service(name):
    subprocess.run([os.path.join(SERVICES, name), "stop"], check=True, capture_output=True, timeout=120)
    time.sleep(2)
    subprocess.run([os.path.join(SERVICES, name), "start"], check=True, capture_output=True, timeout=300)


def pg_rows():
    out = psql(f"COPY (SELECT id, i, n, f, b, t, encode(by, 'hex'), d, ts, u, j, version, "
               f"date_trunc('milliseconds', updated AT TIME ZONE 'UTC') FROM \"{TABLE}\") TO STDOUT")
    rows = {}
    for line in out.splitlines():
        c = line.split("\t")
        rows[int(c[0])] = norm(c[1:], pg=True)
    return rows


def my_rows():
    out = mariadb(f"SELECT id, i, n, f, b, t, LOWER(HEX(`by`)), d, ts, u, j, version, updated FROM `{TABLE}`")
    rows = {}
    for line in out.splitlines():
        c = line.split("\t")
        rows[int(c[0])] = norm(c[1:], pg=False)
    return rows


def norm(c, pg):
    null = "\\N" if pg else "NULL"
    v = [None if x == null else x for x in c]
    i, n, f, b, t, by, d, ts, u, j, version, updated = v
    as_time = lambda s: None if s is None else datetime.datetime.fromisoformat(s)  # noqa: E731
    return (int(i), n, None if f is None else float(f), None if b is None else b in ("t", "1"), t, by or None, d,
            as_time(ts), u, None if j is None else json.loads(j), int(version), as_time(updated))


def main():
    d = tmpdir("jdbc-roundtrip")
    psql(f'CREATE TABLE "{TABLE}" (id BIGSERIAL PRIMARY KEY, i INTEGER NOT NULL, n NUMERIC(12,2), f DOUBLE PRECISION, '
         'b BOOLEAN, t TEXT, by BYTEA, d DATE, ts TIMESTAMP(3), u UUID, j JSONB, version INTEGER NOT NULL DEFAULT 0, '
         'updated TIMESTAMPTZ NOT NULL DEFAULT now())')
    insert = (f'INSERT INTO "{TABLE}" (i, n, f, b, t, by, d, ts, u, j) SELECT g, (g * 7 % 100000) / 100.0, g / 3.0, '
              "g % 2 = 0, CASE WHEN g % 10 = 0 THEN NULL ELSE 'row ' || g || ' gr\u00fc\u00dfe' END, "
              "CASE WHEN g % 7 = 0 THEN NULL ELSE decode(lpad(to_hex(g), 8, '0'), 'hex') END, "
              "DATE '2000-01-01' + (g % 9000), TIMESTAMP '2020-01-01' + g * interval '1.001 second', "
              "md5(g::text)::uuid, jsonb_build_object('g', g, 'tag', 'x') FROM generate_series($1, $2) g")
    w = Worker(d)
    w.start()
    my_url = f"mysql://{MY.hostname}:{MY.port}{MY.path}"
    w.ok("POST", "/connectors", {"name": "rt-src", "config": {
        "connector.class": "JdbcSource", "connection.url": f"postgresql://{PG.hostname}:{PG.port}{PG.path}",
        "connection.user": PG.username, "connection.password": urllib.parse.unquote(PG.password),
        "mode": "timestamp+incrementing", "timestamp.column.name": "updated", "incrementing.column.name": "id",
        "table.whitelist": TABLE, "topic.prefix": "", "batch.max.rows": "5000", "poll.interval.ms": "200",
        "errors.retry.delay.max.ms": "2000",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter"}})
    w.ok("POST", "/connectors", {"name": "rt-sink", "config": {
        "connector.class": "JdbcSink", "topics": TABLE, "connection.url": my_url, "connection.user": MY.username,
        "connection.password": urllib.parse.unquote(MY.password), "insert.mode": "upsert", "pk.mode": "record_value",
        "pk.fields": "id", "auto.create": "true", "errors.retry.delay.max.ms": "2000",
        "value.converter": "org.apache.kafka.connect.json.JsonConverter"}})
    records = os.path.join(d, "records.out")
    w.ok("POST", "/connectors", {"name": "rt-file", "config": {
        "connector.class": "FileStreamSink", "topics": TABLE, "file": records,
        "value.converter": "org.apache.kafka.connect.json.JsonConverter"}})

    done = threading.Event()
    written = [0, 0]  # rows inserted, update rounds
    errors = []

    def writer():
        try:
            rnd = random.Random(7)
            while written[0] < ROWS:
                lo = written[0] + 1
                hi = min(ROWS, written[0] + 10000)
                retrying(psql, insert.replace("$1", str(lo)).replace("$2", str(hi)))
                written[0] = hi
                ids = ",".join(str(rnd.randint(1, hi)) for _ in range(2000))
                retrying(psql, f'UPDATE "{TABLE}" SET version = version + 1, updated = now(), i = i + 1 '
                               f"WHERE id IN ({ids})")
                written[1] += 1
                time.sleep(0.05)
        except Exception as e:  # noqa: BLE001
            errors.append(e)
        finally:
            done.set()
    wt = threading.Thread(target=writer)
    started = time.time()
    wt.start()
    faults = []
    plan = [(0.15, "kill"), (0.35, "postgres"), (0.55, "mariadb"), (0.75, "kill")]
    for at, what in plan:
        wait_until(lambda: copied() >= at * ROWS, 900, f"{int(at * ROWS)} rows copied before the {what} fault",
                   interval=0.5)
        n = copied()
        if what == "kill":
            w.kill9()
            time.sleep(1)
            w.start()
        else:
            restart_service(what)
        faults.append(f"{what} at {n} rows ({time.time() - started:.0f} s)")
        print(f"fault: {faults[-1]}", flush=True)
    done.wait(1800)
    wt.join()
    if errors:
        raise AssertionError(f"the writer failed: {errors[0]}")
    final = int(psql(f'SELECT count(*) FROM "{TABLE}"').strip())
    if final != ROWS:
        raise AssertionError(f"PostgreSQL holds {final} rows, not {ROWS}")
    want_sum = psql(f'SELECT sum(version), sum(i) FROM "{TABLE}"').strip()

    def caught_up():
        try:
            return copied() == ROWS and mariadb(f"SELECT sum(version), sum(i) FROM `{TABLE}`").strip().replace("\t", "|") == want_sum
        except AssertionError:
            return False
    wait_until(caught_up, 900, f"MariaDB holding all {ROWS} rows at their last versions", interval=1)
    elapsed = time.time() - started
    src, dst = pg_rows(), my_rows()
    missing = set(src) - set(dst)
    extra = set(dst) - set(src)
    differ = [k for k in src if k in dst and src[k] != dst[k]]
    if missing or extra or differ:
        k = differ[0] if differ else None
        raise AssertionError(f"{len(missing)} rows missing, {len(extra)} extra, {len(differ)} differ"
                             + (f"; e.g. id {k}:\n  pg      {src[k]}\n  mariadb {dst[k]}" if k else ""))
    digest = lambda rows: hashlib.sha256(repr(sorted(rows.items())).encode()).hexdigest()[:16]  # noqa: E731
    # Repeats: records of one row version delivered more than once (the kill -9s replay the
    # records after the last committed position).
    seen = set()
    total = repeats = 0
    with open(records) as f:
        for line in f:
            if not line.strip():
                continue
            p = json.loads(line)
            total += 1
            key = (p["id"], p["version"])
            if key in seen:
                repeats += 1
            seen.add(key)
    for s in ("rt-src", "rt-sink"):
        _, st = w.rest("GET", f"/connectors/{s}/status")
        if any(t.get("state") != "RUNNING" for t in st.get("tasks", [])):
            raise AssertionError(f"{s} is not RUNNING: {st}")
    w.stop()
    print(f"ok   {ROWS:,} rows ({written[1]} update rounds of 2,000 rows) PostgreSQL -> JdbcSource -> backbone -> "
          f"JdbcSink -> MariaDB in {elapsed:.0f} s with {'; '.join(faults)}: tables equal row by row "
          f"(checksum {digest(src)} = {digest(dst)}), 0 missing, 0 extra; {total:,} records delivered, "
          f"{repeats:,} repeats absorbed by the upserts")


if __name__ == "__main__":
    run(main)
