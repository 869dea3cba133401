"""Java connectors in a distributed cluster (jvm/README.md, "Running"): three `ferry distributed`
workers on Kafka, each with its own JVM host, run a Java source (SeqSource, 3 tasks x 6,000
sequence-numbered typed records at 1,000/s each) into a Java sink (ErrantSink writing a file).
The worker running the most of the Java tasks is killed with kill -9 mid-stream: its tasks move to
the others like native ones (their JVM hosts start them, resuming from the committed positions
through the OffsetStorageReader), and the file ends holding every seq of every stream (0 lost);
duplicates are counted. Its JVM host is gone with it.

With the argument `rocketmq` the cluster runs on RocketMQ instead (cluster A of
scripts/services/rocketmq, its state, positions and the records' topic there).

Environment: FERRY_BIN, FERRY_JVM_TEST_PLUGINS, FERRY_KAFKA_BOOTSTRAP (scripts/services/kafka),
FERRY_ROCKETMQ_NAMESRV (scripts/services/rocketmq, cluster A)."""
import os
import random
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, HERE)
from cluster_check import make_workers, require_kafka  # noqa: E402
from harness import require_reachable, run, tmpdir, wait_until  # noqa: E402
from test_jvm_run import ERRANT_SINK, SEQ_SOURCE, check_complete, java_children, seqs_in  # noqa: E402

PLUGINS = os.environ.get("FERRY_JVM_TEST_PLUGINS", "")
BOOTSTRAP = os.environ.get("FERRY_KAFKA_BOOTSTRAP", "127.0.0.1:19092")
NAMESRV = os.environ.get("FERRY_ROCKETMQ_NAMESRV", "127.0.0.1:19876")
COUNT = 6000


def main():
    if not PLUGINS or not os.path.isdir(os.path.join(PLUGINS, "connect-file")):
        raise AssertionError(f"no test plugins at {PLUGINS!r}: the JVM host and its tests were not built")
    on_rocketmq = sys.argv[1:] == ["rocketmq"]
    if on_rocketmq:
        host, port = NAMESRV.rsplit(":", 1)
        require_reachable(host, port, "RocketMQ NameServer", "scripts/services/rocketmq start A")
        backbone = {"backbone": "rocketmq", "backbone.rocketmq.namesrv": NAMESRV}
    else:
        require_kafka(BOOTSTRAP)
        backbone = {"backbone": "kafka", "backbone.kafka.bootstrap.servers": BOOTSTRAP}
    rid = random.randrange(1 << 30)
    out = os.path.join(tmpdir("jvm-cluster"), "out.txt")
    base = {**backbone, "cluster.name": f"jvm{rid}",
            "cluster.session.timeout.ms": "2000", "cluster.heartbeat.interval.ms": "300",
            "cluster.lease.margin.ms": "500", "offset.flush.interval.ms": "500", "plugin.path": PLUGINS,
            "jvm.heap.max": "256m"}
    workers = make_workers("jvm-cluster", base, 3)
    for w in workers:
        w.start(timeout=90)
    w1 = workers[0]
    name = "k9"  # its streams are what test_jvm_run.RECORD matches; the cluster and topic are this run's own
    w1.ok("POST", "/connectors", {"name": f"{name}-src", "config": {
        "connector.class": SEQ_SOURCE, "topic": f"jvm-cluster-{rid}", "count": str(COUNT), "rate": "1000",
        "tasks.max": "3", "key.converter": "JsonConverter", "value.converter": "JsonConverter"}})
    w1.ok("POST", "/connectors", {"name": f"{name}-snk", "config": {
        "connector.class": ERRANT_SINK, "topics": f"jvm-cluster-{rid}", "file": out, "errant.every": "0",
        "key.converter": "JsonConverter", "value.converter": "JsonConverter"}})
    streams = [f"{name}-src-{i}" for i in range(3)]

    def owners():
        ids = {}
        for conn in (f"{name}-src", f"{name}-snk"):
            code, st = w1.rest("GET", f"/connectors/{conn}/status")
            if code != 200:
                return None
            for t in st["tasks"]:
                if t["state"] != "RUNNING":
                    return None
                ids[f"{conn}-{t['id']}"] = t["worker_id"]
        return ids if len(ids) == 4 else None
    wait_until(owners, 60, "the 4 Java tasks RUNNING")
    wait_until(lambda: sum(len(v) for v in seqs_in(out).values()) >= 4000, 90, "4,000 records before the kill")
    placed = owners()
    by_worker = {}
    for task, wid in placed.items():
        by_worker.setdefault(wid, []).append(task)
    victim_id = max(by_worker, key=lambda k: len(by_worker[k]))
    victim = workers[int(victim_id[1:]) - 1]  # make_workers names them w1..w3
    hosts = java_children(victim.proc.pid)
    t_kill = time.time()
    victim.kill9()
    before = sum(len(v) for v in seqs_in(out).values())
    rest = [w for w in workers if w is not victim]

    def moved():
        code, st = rest[0].rest("GET", f"/connectors/{name}-src/status")
        return code == 200 and all(t["state"] == "RUNNING" and t["worker_id"] != victim_id for t in st["tasks"])
    wait_until(moved, 60, "the killed worker's Java tasks RUNNING elsewhere")
    moved_s = time.time() - t_kill
    wait_until(lambda: all(len(set(seqs_in(out).get(s, []))) == COUNT for s in streams), 180,
               "every seq of every stream after the kill -9")
    dups = check_complete(out, streams, COUNT, "cluster kill -9")
    for pid in hosts:
        if os.path.exists(f"/proc/{pid}"):
            with open(f"/proc/{pid}/stat") as f:
                if f.read().split(") ", 1)[1][0] != "Z":
                    raise AssertionError(f"the killed worker's JVM host {pid} still runs")
    print(f"ok   [{backbone['backbone']}] kill -9 of {victim_id} (running {sorted(by_worker[victim_id])}) at {before} of {3 * COUNT}: "
          f"its Java tasks RUNNING elsewhere after {moved_s:.1f} s, 0 lost, {dups} duplicates, its JVM host gone")
    for w in rest:
        w.stop()


if __name__ == "__main__":
    run(main)
