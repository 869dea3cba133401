#!/usr/bin/env python3
"""Schemas travelling by id through the backbone (src/runtime/schema_registry.h), end to end on a
standalone worker and the PostgreSQL service (scripts/test jdbc starts it), on the backbone named
by the first argument: embedded (default), kafka (the Kafka service, 127.0.0.1:19092) or rocketmq
(the RocketMQ service, namesrv 127.0.0.1:19876). The schema topic is this run's own
(schema.storage.topic=ferry-schemas-<run>).

  1. JdbcSource reads a typed table (bigint, numeric(10,2), timestamp, uuid, jsonb, nullable
     text) with value.converter=JsonConverter and schemas.enable=false: the backbone holds plain
     JSON payloads (no envelope; FileStreamSink shows them), each record naming its schema in a
     header; JdbcSink reading the topic with the same converter settings gets typed records:
     auto.create makes numeric, timestamp, uuid and jsonb columns (not text) and every row equals
     the original;
  2. the worker restarted (its schema cache empty): a new JdbcSink reads the same topic from the
     start and gets the same typed rows from the schema topic;
  3. hostile headers: records naming an id the schema topic does not hold, and records naming the
     real id with data that does not match the schema, are VALUE_CONVERTER errors: dead-lettered
     with errors.tolerance=all (the worker log says why), the good records beside them written.

FERRY_BIN names the ferry binary; FERRY_POSTGRES_URL overrides the server. Standard library only.
"""
import json
import os
import sys
import urllib.parse
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
sys.path.insert(0, HERE)
from harness import Worker, run, tmpdir, wait_until  # noqa: E402
from test_jdbc_source import PG_URL, envelopes, file_sink, psql  # noqa: E402

U = urllib.parse.urlparse(PG_URL)
RUN = uuid.uuid4().hex[:8]
KIND = sys.argv[1] if len(sys.argv) > 1 else "embedded"
SCHEMA_TOPIC = f"ferry-schemas-{RUN}"
WORKER = {"schema.storage.topic": SCHEMA_TOPIC}
if KIND == "kafka":
    WORKER.update({"backbone": "kafka",
                   "backbone.kafka.bootstrap.servers": os.environ.get("FERRY_KAFKA_BOOTSTRAP", "127.0.0.1:19092")})
elif KIND == "rocketmq":
    WORKER.update({"backbone": "rocketmq",
                   "backbone.rocketmq.namesrv": os.environ.get("FERRY_ROCKETMQ_NAMESRV", "127.0.0.1:19876")})
BY_ID = {"value.converter": "org.apache.kafka.connect.json.JsonConverter", "value.converter.schemas.enable": "false"}
CONN = {"connection.url": f"postgresql://{U.hostname}:{U.port}{U.path}", "connection.user": U.username,
        "connection.password": urllib.parse.unquote(U.password or "")}
N = 1000
COLS = "id, price::text, at::text, u::text, doc::text, coalesce(note, '<null>')"


def table_rows(t):
    return psql(f'SELECT {COLS} FROM "{t}" ORDER BY id').splitlines()


def copy_sink(w, name, topic, table, **extra):
    c = {"connector.class": "JdbcSink", "topics": topic, "table.name.format": table, "auto.create": "true",
         "insert.mode": "upsert", "pk.mode": "record_value", "pk.fields": "id", **CONN, **BY_ID}
    c.update(extra)
    w.ok("POST", "/connectors", {"name": name, "config": c})


def copied_n(t, n):
    def check():
        try:
            return len(table_rows(t)) == n
        except AssertionError:
            return False
    return check


def column_types(t):
    return dict(line.split("|") for line in psql(
        f"SELECT column_name, data_type FROM information_schema.columns WHERE table_name = '{t}'").splitlines())


def main():
    src = f"byid_src_{RUN}"
    psql(f'CREATE TABLE "{src}" (id BIGINT PRIMARY KEY, price NUMERIC(10,2) NOT NULL, at TIMESTAMP NOT NULL, '
         f'u UUID NOT NULL, doc JSONB NOT NULL, note TEXT)')
    psql(f"INSERT INTO \"{src}\" SELECT g, g * 1.25, '2026-12-06'::timestamp + g * interval '1 second', "
         f"md5(g::text)::uuid, jsonb_build_object('g', g), CASE WHEN g % 3 = 0 THEN NULL ELSE 'n' || g END "
         f"FROM generate_series(1, {N}) g")
    d = tmpdir("schema-by-id")
    w = Worker(d, extra=WORKER)
    w.start(timeout=60)
    topic = f"byid-{RUN}"
    w.ok("POST", "/connectors", {"name": "src", "config": {
        "connector.class": "JdbcSource", **CONN, "mode": "incrementing", "incrementing.column.name": "id",
        "query": f'SELECT * FROM "{src}"', "topic.prefix": topic, "poll.interval.ms": "200", **BY_ID}})
    raw = os.path.join(d, "raw.out")
    file_sink(w, "raw", topic, raw)
    copy1 = f"byid_copy1_{RUN}"
    copy_sink(w, "copy1", topic, copy1)
    wait_until(lambda: len(envelopes(raw)) >= N, 60, f"{N} records in the backbone")
    first = envelopes(raw)[0]
    if "schema" in first or "payload" in first or set(first) != {"id", "price", "at", "u", "doc", "note"}:
        raise AssertionError(f"the backbone holds an envelope, not the plain payload: {first}")

    def copied(t):
        return copied_n(t, N)
    wait_until(copied(copy1), 60, f"{N} rows copied by JdbcSink")
    want_types = {"id": "bigint", "price": "numeric", "at": "timestamp without time zone", "u": "uuid",
                  "doc": "jsonb", "note": "text"}
    if column_types(copy1) != want_types:
        raise AssertionError(f"the sink's table has types {column_types(copy1)}, expected {want_types} (typed records)")
    if table_rows(copy1) != table_rows(src):
        raise AssertionError("the copy differs from the original")
    print(f"ok   ({KIND} backbone) {N} rows as plain JSON payloads in the backbone (no envelope), the schema by id: JdbcSink "
          "made typed columns (numeric, timestamp, uuid, jsonb) and every row equals the original")

    # A restarted worker has no cached schema: it reads the schema topic.
    w.stop()
    w.start(timeout=60)
    copy2 = f"byid_copy2_{RUN}"
    copy_sink(w, "copy2", topic, copy2)
    wait_until(copied(copy2), 60, f"{N} rows copied by a new JdbcSink after a restart")
    if column_types(copy2) != want_types or table_rows(copy2) != table_rows(src):
        raise AssertionError("after the restart the copy is not typed or differs")
    print("ok   after a restart (empty cache) a new sink reads the schemas from the schema topic: the same typed rows")

    # Hostile headers: an unknown id, and the real id over data that does not match. The real id
    # is read from the schema topic itself (a FileStreamSink on ferry-schemas).
    entries = os.path.join(d, "schemas.out")
    file_sink(w, "schemas", SCHEMA_TOPIC, entries)
    wait_until(lambda: len(envelopes(entries)) >= 1, 30, "the schema topic's entry")
    ids = [e["id"] for e in envelopes(entries)]
    if len(ids) != 1 or len(ids[0]) != 16:
        raise AssertionError(f"the schema topic holds {ids}, expected one 16-digit id (one schema, written once)")
    real = ids[0]
    dlq = f"byid-dlq-{RUN}"
    dead = os.path.join(d, "dead.out")
    file_sink(w, "dead", dlq, dead)
    good = {"id": 5, "price": "Anw=", "at": 1796515205000, "u": "e4da3b7f-bbce-2345-d777-2b0674a318d5",
            "doc": "{\"g\": 5}", "note": "n5"}
    for name, header, rows in (("unknown", "0123456789abcdef", [good]),
                               ("mismatch", real, [{**good, "id": 6, "price": 12.5}, {**good, "id": 7}])):
        path = os.path.join(d, f"{name}.jsonl")
        with open(path, "w") as f:
            for r in rows:
                f.write(json.dumps(r) + "\n")
        w.ok("POST", "/connectors", {"name": f"{name}-src", "config": {
            "connector.class": "FileStreamSource", "file": path, "topic": f"byid-{name}-{RUN}",
            "transforms": "h", "transforms.h.type": "org.apache.kafka.connect.transforms.InsertHeader",
            "transforms.h.header": "ferry.schema.value", "transforms.h.value.literal": header}})
        copy_sink(w, f"{name}-copy", f"byid-{name}-{RUN}", f"byid_{name}_{RUN}",
                  **{"errors.tolerance": "all", "errors.log.enable": "true", "errors.deadletterqueue.topic.name": dlq})
    wait_until(lambda: len(envelopes(dead)) >= 2, 60, "the 2 hostile records dead-lettered")
    if sorted(e["id"] for e in envelopes(dead)) != [5, 6]:
        raise AssertionError(f"dead-lettered: {envelopes(dead)}")
    wait_until(copied_n(f"byid_mismatch_{RUN}", 1), 60, "the good record beside the bad one written")
    with open(w.log_path, errors="replace") as f:
        log = f.read()
    for reason in ("holds no schema with id '0123456789abcdef'", "does not match the schema its header names"):
        if reason not in log:
            raise AssertionError(f"the worker log does not say '{reason}'")
    print("ok   hostile headers: an unknown id and data that does not match the named schema are VALUE_CONVERTER "
          "errors (dead-lettered, the reason logged); the good record beside them is written")
    w.stop()


if __name__ == "__main__":
    run(main)
