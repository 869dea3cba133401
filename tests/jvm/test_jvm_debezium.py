"""Debezium's PostgreSQL connector 3.6.1, unmodified (from plugin.path, fetched at build time),
run by ferry's JVM host and by Kafka Connect 4.1.1 on the same table of a real PostgreSQL 15
(scripts/services/postgres, logical replication with pgoutput), both writing to the same Kafka
broker with JsonConverter (schemas on). Judged by what the topics hold.

  (a) snapshot then streaming: 1,000 rows snapshotted, then 200 inserts, 100 updates and 50
      deletes. Both topics hold r=1,000, c=200, u=100, d=50 (+50 tombstones), and the same
      (op, before, after) multiset; the value schemas are equal but for the topic prefix in their
      names. ferry's position is Debezium's own offset ({lsn, txId, ...}, read back as Longs).
      The database password is nowhere in ferry's log (which holds the JVM host's output).
  (b) kill -9 of the worker while rows are inserted (3,000 in small transactions): after a restart
      every inserted id is in ferry's topic (0 lost), duplicates counted;
  (c) kill -9 of the JVM host while rows are inserted: the task fails naming the host's end, is
      restarted on a new host, and every id arrives (0 lost);
  (d) Debezium's MySQL connector 3.6.1 against MariaDB 10.11 (scripts/services/mariadb, binlog on):
      Debezium refuses the server (it takes "10.11" for a MySQL >= 8.4 and asks SHOW BINARY LOG
      STATUS, which MariaDB has not got); ferry shows that refusal from the connector's own
      validate() on database.hostname and does not create the connector. Its MariaDB connector is
      not served by the package registry here. This part fails once Debezium accepts MariaDB.

With the argument `cluster-rocketmq`, instead:
  (e) the PostgreSQL connector in a distributed cluster of three workers on RocketMQ (cluster A of
      scripts/services/rocketmq), its records read by ferry's FileStreamSink in the same cluster:
      a snapshot of 500 rows, then the worker running the Debezium task is killed with kill -9
      while 2,000 rows are inserted; the task runs on another worker (its JVM host) from the
      committed offset, and every id is in the file (0 lost), duplicates counted. Debezium's
      topic `<prefix>.public.<table>` is used as it is: the RocketMQ backbone stores it as
      `<prefix>_public_<table>` (RocketMQ allows no '.'), for the source and the sink alike.

Environment: FERRY_BIN, FERRY_JVM_DEBEZIUM_PLUGINS (tests/jvm/CMakeLists.txt), FERRY_KAFKA_TOOL,
FERRY_POSTGRES_URL (default scripts/services/postgres's), FERRY_MARIADB_URL (default
scripts/services/mariadb's); the Kafka broker is started when not
running (bench/peers/kafka_connect.py), never stopped here."""
import atexit
import collections
import json
import os
import random
import signal
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
import harness  # noqa: E402
import kafka_connect  # noqa: E402
from test_jvm_vs_kafka_connect import topic_values  # noqa: E402

PLUGINS = os.environ.get("FERRY_JVM_DEBEZIUM_PLUGINS", "")
PG_URL = os.environ.get("FERRY_POSTGRES_URL", "postgresql://ferry:ferry-test-pw@127.0.0.1:15432/ferry")
PG = "io.debezium.connector.postgresql.PostgresConnector"
MYSQL = "io.debezium.connector.mysql.MySqlConnector"
MARIADB_URL = os.environ.get("FERRY_MARIADB_URL", "mysql://ferry:ferry-test-pw@127.0.0.1:13306/ferry")
JSON = "org.apache.kafka.connect.json.JsonConverter"


def psql(sql):
    p = subprocess.run(["psql", PG_URL, "-v", "ON_ERROR_STOP=1", "-qAt", "-c", sql], capture_output=True, text=True,
                       timeout=120)
    if p.returncode != 0:
        raise AssertionError(f"psql failed: {p.stderr}")
    return p.stdout


def connector(prefix, table, rid):
    return {"connector.class": PG, "database.hostname": "127.0.0.1", "database.port": PG_URL.rsplit(":", 1)[1].split("/")[0],
            "database.user": "ferry", "database.password": PG_URL.split(":")[2].split("@")[0], "database.dbname": "ferry",
            "topic.prefix": prefix, "plugin.name": "pgoutput", "slot.name": f"{prefix}_slot",
            "publication.name": f"{prefix}_pub", "publication.autocreate.mode": "filtered",
            "table.include.list": f"public.{table}", "key.converter": JSON, "value.converter": JSON}


def drop_slot(name):
    psql(f"SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots WHERE slot_name = '{name}' AND NOT active")


def events(values):
    """Parsed envelopes of a Debezium topic: (op counts incl. tombstones, [(op, before, after)], schema)."""
    ops, rows, schema = collections.Counter(), [], None
    for v in values:
        if v in (b"", b"null"):
            ops["tombstone"] += 1
            continue
        env = json.loads(v)
        if env.get("payload") is None:
            ops["tombstone"] += 1
            continue
        p = env["payload"]
        ops[p["op"]] += 1
        rows.append((p["op"], json.dumps(p["before"], sort_keys=True), json.dumps(p["after"], sort_keys=True)))
        schema = env["schema"]
    return ops, rows, schema


def inserter(table, first, n, stop):
    """Inserts ids first..first+n-1 in transactions of 10 rows until done or stopped."""
    i = first
    while i < first + n and not stop.is_set():
        psql(f"INSERT INTO {table} SELECT g, 'row ' || g FROM generate_series({i}, {min(i + 9, first + n - 1)}) g")
        i += 10
        time.sleep(0.02)


def inserted_ids(values):
    ids = collections.Counter()
    for v in values:
        if v in (b"", b"null"):
            continue
        p = json.loads(v).get("payload")
        if p and p["op"] in ("c", "r"):
            ids[p["after"]["id"]] += 1
    return ids


def main():
    if not PLUGINS or not os.path.isdir(os.path.join(PLUGINS, "debezium-connector-postgres")):
        raise AssertionError(f"no Debezium plugin at {PLUGINS!r}: tests/jvm/CMakeLists.txt fetches it (mvn)")
    rid = random.randrange(1 << 24)
    table = f"dbz_{rid}"
    work = harness.tmpdir("jvm-debezium")
    psql(f"CREATE TABLE {table}(id int PRIMARY KEY, v text); "
         f"INSERT INTO {table} SELECT g, 'row ' || g FROM generate_series(1, 1000) g")
    prefixes = {"kc": f"dbzkc{rid}", "ferry": f"dbzfr{rid}"}
    atexit.register(lambda: [drop_slot(f"{p}_slot") for p in prefixes.values()])
    broker = kafka_connect.Broker()
    broker.start()
    kc = kafka_connect.ConnectStandalone(os.path.join(work, "kc"), broker.bootstrap, {"plugin.path": PLUGINS})
    atexit.register(kc.stop)
    kc.start()
    os.makedirs(os.path.join(work, "ferry"))
    w = harness.Worker(os.path.join(work, "ferry"), {
        "plugin.path": PLUGINS, "backbone": "kafka", "backbone.kafka.bootstrap.servers": broker.bootstrap,
        "jvm.heap.max": "512m", "task.restart.backoff.initial.ms": "200", "task.restart.backoff.max.ms": "2000"})
    w.start(timeout=90)
    topics = {side: f"{p}.public.{table}" for side, p in prefixes.items()}
    kc.ok("POST", "/connectors", {"name": "dbz-kc", "config": connector(prefixes["kc"], table, rid)})
    w.ok("POST", "/connectors", {"name": "dbz-ferry", "config": connector(prefixes["ferry"], table, rid)})

    # (a) both snapshot, then the same changes stream to both.
    def snapshotted(side):
        return lambda: len(topic_values_quick(broker, topics[side], work)) >= 1000
    for side in ("kc", "ferry"):
        harness.wait_until(snapshotted(side), 180, f"{side}'s snapshot of 1,000 rows")
    psql(f"INSERT INTO {table} SELECT g, 'row ' || g FROM generate_series(1001, 1200) g; "
         f"UPDATE {table} SET v = 'updated ' || id WHERE id <= 100; DELETE FROM {table} WHERE id > 1150")
    want = {"r": 1000, "c": 200, "u": 100, "d": 50, "tombstone": 50}
    got = {}
    for side in ("kc", "ferry"):
        harness.wait_until(lambda: events(topic_values_quick(broker, topics[side], work))[0] == want, 120,
                           f"{side}: r=1,000 c=200 u=100 d=50 and 50 tombstones")
        got[side] = events(topic_values(broker.bootstrap, topics[side], work))
    if sorted(got["kc"][1]) != sorted(got["ferry"][1]):
        diff = set(got["kc"][1]) ^ set(got["ferry"][1])
        raise AssertionError(f"the change events differ: e.g. {sorted(diff)[:2]}")
    theirs = json.dumps(got["kc"][2], sort_keys=True).replace(prefixes["kc"], "PREFIX")
    ours = json.dumps(got["ferry"][2], sort_keys=True).replace(prefixes["ferry"], "PREFIX")
    if theirs != ours:
        raise AssertionError(f"value schemas differ:\nKafka Connect {theirs[:400]}\nferry         {ours[:400]}")
    code, offs = w.rest("GET", "/connectors/dbz-ferry/offsets")
    offset = offs["offsets"][0]["offset"] if code == 200 and offs.get("offsets") else {}
    if "lsn" not in offset or '"lsn":"l"' not in offset.get("ferry.types", ""):
        raise AssertionError(f"ferry's position is not Debezium's offset with a Long lsn: {offs}")
    print(f"ok   (a) snapshot + streaming in Kafka Connect and ferry: both {dict(got['ferry'][0])}, the same "
          f"{len(got['ferry'][1])} (op, before, after) events, equal value schemas; position {sorted(offset)}", flush=True)
    kc.stop()

    # (b) kill -9 of the worker while rows are inserted.
    for label, first, kill in (("worker", 10_001, "worker"), ("JVM host", 20_001, "host")):
        stop = threading.Event()
        t = threading.Thread(target=inserter, args=(f"{table}", first, 3000, stop))
        t.start()
        harness.wait_until(lambda: any(i >= first + 600 for i in inserted_ids(topic_values_quick(broker, topics["ferry"], work))),
                           120, f"600 inserts through before the {label}'s kill")
        if kill == "worker":
            w.kill9()
            time.sleep(1)
            w.start(timeout=90)
        else:
            hosts = subprocess.run(["pgrep", "-P", str(w.proc.pid), "java"], capture_output=True, text=True).stdout.split()
            if len(hosts) != 1:
                raise AssertionError(f"expected one JVM host, found {hosts}")
            os.kill(int(hosts[0]), signal.SIGKILL)
        t.join(300)
        want_ids = set(range(first, first + 3000))

        def complete():
            return want_ids <= set(inserted_ids(topic_values_quick(broker, topics["ferry"], work)))
        harness.wait_until(complete, 180, f"every id inserted around the {label}'s kill -9")
        ids = inserted_ids(topic_values(broker.bootstrap, topics["ferry"], work))
        dups = sum(c - 1 for i, c in ids.items() if i in want_ids)
        print(f"ok   ({'b' if kill == 'worker' else 'c'}) {label} kill -9 while 3,000 rows were inserted: "
              f"0 lost, {dups} duplicates", flush=True)
        if kill == "host" and "was killed by signal" not in open(w.log_path).read():
            raise AssertionError("the worker's log does not say how the JVM host ended")
    w.ok("DELETE", "/connectors/dbz-ferry")
    w.stop()
    # Debezium logs its config (Kafka's AbstractConfig hides PASSWORD keys); nothing else may echo it.
    if PG_URL.split(":")[2].split("@")[0] in open(w.log_path).read():
        raise AssertionError("the database password is in the worker's log (with the JVM host's output)")
    psql(f"DROP TABLE {table}")
    mysql_on_mariadb(work, rid)


def mysql_on_mariadb(work, rid):
    """(d)"""
    user, rest = MARIADB_URL.split("://", 1)[1].split(":", 1)
    password, hostport = rest.split("@", 1)
    port = hostport.split("/")[0].split(":")[1]
    os.makedirs(os.path.join(work, "mysql"))
    w = harness.Worker(os.path.join(work, "mysql"), {"plugin.path": PLUGINS, "jvm.heap.max": "256m"})
    w.start(timeout=90)
    config = {"connector.class": MYSQL, "database.hostname": "127.0.0.1", "database.port": port,
              "database.user": user, "database.password": password, "database.server.id": str(5400 + rid % 1000),
              "topic.prefix": f"dbzm{rid}", "database.include.list": "ferry", "snapshot.locking.mode": "none",
              "schema.history.internal": "io.debezium.storage.file.history.FileSchemaHistory",
              "schema.history.internal.file.filename": os.path.join(work, "mysql", "history.dat")}
    v = w.ok("PUT", f"/connector-plugins/{MYSQL}/config/validate", dict(config, name="dbz-mysql"))
    errors = {c["value"]["name"]: c["value"]["errors"] for c in v["configs"]}
    refusal = " ".join(errors.get("database.hostname", []))
    if "SHOW BINARY LOG STATUS" not in refusal or "MariaDB" not in refusal:
        raise AssertionError(f"Debezium's MySQL connector on MariaDB: expected its refusal on database.hostname, got {errors}")
    code, body = w.rest("POST", "/connectors", {"name": "dbz-mysql", "config": config})
    if code != 400 or "SHOW BINARY LOG STATUS" not in str(body):
        raise AssertionError(f"creating it answered {code}: {body}")
    if w.rest("GET", "/connectors/dbz-mysql")[0] != 404:
        raise AssertionError("the refused connector was created")
    if password in open(w.log_path).read():
        raise AssertionError("the database password is in the worker's log")
    print(f"ok   (d) Debezium's MySQL connector refuses MariaDB: {refusal[:120]}...; ferry shows it on "
          f"database.hostname and creates nothing", flush=True)
    w.stop()


def topic_values_quick(broker, topic, work):
    """The topic's values read to its current end (a short idle wait: for polling)."""
    tool = os.environ.get("FERRY_KAFKA_TOOL", "")
    out = os.path.join(work, f"{topic}.quick")
    p = subprocess.run([tool, "consume", "--bootstrap", broker.bootstrap, "--topic", topic, "--count", "0",
                        "--idle-ms", "500", "--values-out", out, "--timeout-ms", "30000"], capture_output=True, timeout=60)
    if p.returncode != 0:
        return []
    with open(out, "rb") as f:
        return f.read().splitlines()


def cluster_on_rocketmq():
    """(e)"""
    sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
    from cluster_check import make_workers
    namesrv = os.environ.get("FERRY_ROCKETMQ_NAMESRV", "127.0.0.1:19876")
    host, port = namesrv.rsplit(":", 1)
    harness.require_reachable(host, port, "RocketMQ NameServer", "scripts/services/rocketmq start A")
    if not PLUGINS or not os.path.isdir(os.path.join(PLUGINS, "debezium-connector-postgres")):
        raise AssertionError(f"no Debezium plugin at {PLUGINS!r}: tests/jvm/CMakeLists.txt fetches it (mvn)")
    rid = random.randrange(1 << 24)
    table = f"dbzc_{rid}"
    prefix = f"dbzrm{rid}"
    psql(f"CREATE TABLE {table}(id int PRIMARY KEY, v text); "
         f"INSERT INTO {table} SELECT g, 'row ' || g FROM generate_series(1, 500) g")
    atexit.register(lambda: drop_slot(f"{prefix}_slot"))
    out = os.path.join(harness.tmpdir("jvm-debezium-cluster"), "out.txt")
    base = {"backbone": "rocketmq", "backbone.rocketmq.namesrv": namesrv, "cluster.name": f"dbz{rid}",
            "cluster.session.timeout.ms": "2000", "cluster.heartbeat.interval.ms": "300",
            "cluster.lease.margin.ms": "500", "offset.flush.interval.ms": "500", "plugin.path": PLUGINS,
            "jvm.heap.max": "512m", "task.restart.backoff.initial.ms": "200", "task.restart.backoff.max.ms": "2000",
            "file.allowed.dirs": os.path.dirname(out)}
    workers = make_workers("jvm-debezium-cluster", base, 3)
    for w in workers:
        w.start(timeout=90)
    w1 = workers[0]
    topic = f"{prefix}.public.{table}"
    w1.ok("POST", "/connectors", {"name": "dbz", "config": connector(prefix, table, rid)})
    w1.ok("POST", "/connectors", {"name": "dbz-file", "config": {
        "connector.class": "FileStreamSink", "topics": topic, "file": out, "value.converter": "StringConverter",
        "key.converter": "StringConverter"}})

    def ids():
        got = collections.Counter()
        for raw in harness.read_lines(out):
            try:
                p = json.loads(raw).get("payload")
            except ValueError:
                continue
            if p and p["op"] in ("c", "r"):
                got[p["after"]["id"]] += 1
        return got
    harness.wait_until(lambda: set(range(1, 501)) <= set(ids()), 180, "the snapshot of 500 rows in the file", 0.5)

    def owner():
        code, st = w1.rest("GET", "/connectors/dbz/status")
        tasks = st.get("tasks", []) if code == 200 else []
        return tasks[0]["worker_id"] if tasks and tasks[0]["state"] == "RUNNING" else None
    victim_id = harness.wait_until(owner, 60, "the Debezium task RUNNING")
    victim = workers[int(victim_id[1:]) - 1]
    stop = threading.Event()
    t = threading.Thread(target=inserter, args=(table, 1001, 2000, stop))
    t.start()
    harness.wait_until(lambda: any(i >= 1001 + 400 for i in ids()), 120, "400 inserts through before the kill", 0.2)
    t_kill = time.time()
    victim.kill9()
    rest = [w for w in workers if w is not victim]

    def moved():
        code, st = rest[0].rest("GET", "/connectors/dbz/status")
        tasks = st.get("tasks", []) if code == 200 else []
        return bool(tasks) and tasks[0]["state"] == "RUNNING" and tasks[0]["worker_id"] != victim_id
    harness.wait_until(moved, 90, "the Debezium task RUNNING on another worker")
    moved_s = time.time() - t_kill
    t.join(300)
    want = set(range(1, 501)) | set(range(1001, 3001))
    harness.wait_until(lambda: want <= set(ids()), 240, "every id after the kill -9", 0.5)
    got = ids()
    dups = sum(c - 1 for i, c in got.items() if i in want)
    print(json.dumps({"test": "debezium_cluster_rocketmq_kill9", "rows": len(want), "lost": 0, "duplicates": dups,
                      "moved_s": round(moved_s, 1)}), flush=True)
    print(f"ok   (e) Debezium on a 3-worker RocketMQ cluster: snapshot 500 rows, kill -9 of {victim_id} while 2,000 "
          f"rows were inserted: the task RUNNING elsewhere after {moved_s:.1f} s, 0 lost, {dups} duplicates", flush=True)
    rest[0].ok("DELETE", "/connectors/dbz")
    for w in rest:
        w.stop()
    psql(f"DROP TABLE {table}")


if __name__ == "__main__":
    harness.run(cluster_on_rocketmq if sys.argv[1:] == ["cluster-rocketmq"] else main)
