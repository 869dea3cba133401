"""A JdbcSource's load progress in a cluster: every worker's status shows it, not only the owner's.

Two `ferry distributed` workers on the Kafka service (127.0.0.1:19092; $FERRY_KAFKA_BOOTSTRAP) and
the PostgreSQL service (scripts/test starts both for this test's labels). A table of 400,000 rows
is read by a JdbcSource (mode=incrementing, one task). While it loads, the worker that does not
run the task is asked for the connector's status again and again: it must show the task's
progress as the owner reports it in its heartbeats (phase, rows done of rows estimated, rate),
at least once part-way through the load; after it, both workers show "initial load done" with
every row and 100 %. Before the heartbeats carried progress, only the owner's answers had it.

FERRY_BIN names the ferry binary; FERRY_POSTGRES_URL overrides the server. Standard library only.
"""
import os
import sys
import time
import urllib.parse
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
sys.path.insert(0, HERE)
from cluster_check import require_kafka  # noqa: E402
from harness import run, start_cluster, tmpdir, wait_until  # noqa: E402
from test_jdbc_source import PG_URL, psql  # noqa: E402

U = urllib.parse.urlparse(PG_URL)
BOOTSTRAP = os.environ.get("FERRY_KAFKA_BOOTSTRAP", "127.0.0.1:19092")
RUN = uuid.uuid4().hex[:8]
ROWS = 400_000


def task0(w, name):
    status, s = w.rest("GET", f"/connectors/{name}/status")
    if status != 200:
        return {}
    tasks = s.get("tasks") or []
    return tasks[0] if tasks else {}


def main():
    require_kafka(BOOTSTRAP)
    table = f"progress_{RUN}"
    psql(f'CREATE TABLE "{table}" (id BIGSERIAL PRIMARY KEY, v TEXT NOT NULL)')
    psql(f'INSERT INTO "{table}" (v) SELECT repeat(\'x\', 40) || g FROM generate_series(1, {ROWS}) g')
    psql(f'ANALYZE "{table}"')
    base = {"backbone": "kafka", "backbone.kafka.bootstrap.servers": BOOTSTRAP, "cluster.name": f"progress{RUN}",
            "cluster.session.timeout.ms": "3000", "cluster.heartbeat.interval.ms": "300",
            "offset.flush.interval.ms": "500"}
    try:
        w1, w2 = start_cluster(tmpdir("jdbc-progress-cluster"), base, n=2)
        wait_until(lambda: len(w1.ok("GET", "/cluster")["workers"]) == 2, 60, "two members", 0.2)
        name = f"progress-src-{RUN}"
        w1.ok("POST", "/connectors", {"name": name, "config": {
            "connector.class": "JdbcSource", "connection.url": f"postgresql://{U.hostname}:{U.port}{U.path}",
            "connection.user": U.username, "connection.password": urllib.parse.unquote(U.password or ""),
            "mode": "incrementing", "incrementing.column.name": "id", "table.whitelist": table,
            "topic.prefix": f"progress-{RUN}-", "batch.max.rows": "500", "tasks.max": "1"}})
        wait_until(lambda: task0(w1, name).get("worker_id"), 60, "the task assigned", 0.1)
        owner_id = task0(w1, name)["worker_id"]  # the owner's REST address, or its worker.id
        ids = {w: (w.url.split("//", 1)[-1], f"w{i + 1}") for i, w in enumerate((w1, w2))}
        owners = [w for w in (w1, w2) if owner_id in ids[w]]
        if len(owners) != 1:
            raise AssertionError(f"cannot tell which worker {owner_id} is")
        owner = owners[0]
        other = w2 if owner is w1 else w1
        # Part-way: the other worker's answer carries the owner's progress.
        seen = []
        deadline = time.time() + 120
        while time.time() < deadline:
            p = task0(other, name).get("progress") or {}
            if p:
                seen.append(p)
            if p.get("phase") == "initial load done":
                break
            time.sleep(0.05)
        partway = [p for p in seen if p.get("phase") != "initial load done" and 0 < p.get("done", 0) < ROWS]
        if not partway:
            raise AssertionError(f"the worker that does not run the task never showed the load part-way: {seen[-3:]}")
        p = partway[-1]
        if p.get("estimated") != ROWS or p.get("unit") != "rows" or not 0 <= p.get("percent", -1) < 100:
            raise AssertionError(f"progress part-way, as the other worker shows it: {p}")
        # After the load: the same on both workers.
        for w in (owner, other):
            def done(w=w):
                p = task0(w, name).get("progress") or {}
                return p.get("phase") == "initial load done" and p.get("done") == ROWS and p.get("percent") == 100.0
            wait_until(done, 30, f"'initial load done' with {ROWS} rows on {w.url}", 0.2)
        print(f"ok   progress of a load on {owner_id} shown by the other worker too: {len(partway)} reports part-way "
              f"(e.g. {partway[0].get('done')} of {ROWS} rows, {partway[0].get('rate_per_second')} rows/s), "
              f"then 'initial load done' at 100 % on both")
    finally:
        psql(f'DROP TABLE IF EXISTS "{table}"')


if __name__ == "__main__":
    run(main)
