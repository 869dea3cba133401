"""A network partition in distributed mode (argv[1]: kafka or rocketmq, cluster A of
scripts/services/<kind>): three `ferry distributed` workers, the third in its own network namespace
whose only way to the broker is a proxy this test can sever (tests/integration/netpart.py; the
proxy holds the packets, as a link that drops them would - nothing is closed).

DatagenSource, 6 tasks x N trace records ("<task>-<seq> <run> <ts>", run = "<pid>.<random>").
When worker 3 is cut off from the broker:
  - it loses its lease (GET /cluster on it, which answers from its local state, says lease=false)
    and stops its tasks by itself within the session timeout (its /metrics: 0 tasks running);
  - its tasks run on worker 1 or 2 within the session timeout plus a margin;
  - while the partition lasts it runs nothing.
When the partition heals, worker 3 rejoins as a new incarnation and takes units back by handoff.
At the end every (task, seq) is in the topic (0 lost), no two runs of a task overlap in time, and no
record of worker 3's process carries a timestamp between its lease's end and the heal.

Needs root (ip netns). Environment: FERRY_BIN, FERRY_KAFKA_TOOL / FERRY_RMQ_TOOL,
FERRY_KAFKA_BOOTSTRAP, FERRY_ROCKETMQ_NAMESRV, FERRY_ROCKETMQ_BROKER_PORT (cluster A: 20911),
FERRY_CLUSTER_RECORDS (per task, default 30000)."""
import json
import os
import random
import re
import sys
import time

from cluster_check import check_delivery, make_workers, wait_complete
from harness import run, wait_until
from netpart import Partition

KIND = sys.argv[1] if len(sys.argv) > 1 else "kafka"
BOOTSTRAP = os.environ.get("FERRY_KAFKA_BOOTSTRAP", "127.0.0.1:19092")
NAMESRV = os.environ.get("FERRY_ROCKETMQ_NAMESRV", "127.0.0.1:19876")
BROKER_PORT = int(os.environ.get("FERRY_ROCKETMQ_BROKER_PORT", "20911"))
N = int(os.environ.get("FERRY_CLUSTER_RECORDS", "30000"))
TASKS = 6
SESSION_MS = 2000
PARTITION_S = 3 * SESSION_MS / 1000


def owners(w, name):
    st = w.ok("GET", f"/connectors/{name}/status")
    return {t["id"]: (t["state"], t["worker_id"]) for t in st["tasks"]}


def local_view(w):
    """(lease, tasks running) as the worker itself sees them, without a broker round trip."""
    status, c = w.rest("GET", "/cluster", timeout=2)
    assert status == 200, (status, c)
    status, text = w.rest("GET", "/metrics", timeout=2)
    assert status == 200, (status, text)
    m = re.search(r"^ferry_worker_tasks(?:\{\})? ([0-9.e+]+)$", text, re.M)
    assert m, text[:500]
    return c["lease"], int(float(m.group(1)))


def main():
    run_id = random.randrange(1 << 30)
    part = Partition(f"ferrypart{os.getpid()}")
    try:
        body(run_id, part)
    finally:
        part.close()


def body(run_id, part):
    base = {"backbone": KIND, "cluster.name": f"part{run_id}", "cluster.session.timeout.ms": str(SESSION_MS),
            "cluster.heartbeat.interval.ms": "300", "cluster.lease.margin.ms": "500",
            "offset.flush.interval.ms": "500"}
    if KIND == "kafka":
        base["backbone.kafka.bootstrap.servers"] = BOOTSTRAP
        ports = [int(hp.rsplit(":", 1)[1]) for hp in BOOTSTRAP.split(",")]
    else:
        base["backbone.rocketmq.namesrv"] = NAMESRV
        ports = [int(NAMESRV.rsplit(":", 1)[1]), BROKER_PORT, BROKER_PORT - 2]
    for p in ports:
        part.forward(p)
    workers = make_workers("partition", base, 3, prefix=lambda i: part.prefix() if i == 2 else ())
    w1, w2, w3 = workers
    part.expose(w3.port)
    for w in workers:
        w.start(timeout=60)
    wait_until(lambda: all(len(w.ok("GET", "/cluster")["workers"]) == 3 for w in workers), 30,
               "three members everywhere", 0.2)

    topic = f"ferry-partition-{run_id}"
    gen = f"gen-{run_id}"
    w1.ok("POST", "/connectors", {"name": gen, "config": {
        "connector.class": "DatagenSource", "topic": topic, "tasks.max": str(TASKS), "max.records": str(N),
        "rate": "1000", "format": "trace", "key.mode": "seq"}})

    def all_running(w, allowed):
        o = owners(w, gen)
        return len(o) == TASKS and all(s == "RUNNING" and wid in allowed for s, wid in o.values())
    wait_until(lambda: all_running(w1, {"w1", "w2", "w3"}), 60, "6 tasks RUNNING", 0.2)
    time.sleep(3)
    cut_tasks = [t for t, (s, wid) in owners(w1, gen).items() if wid == "w3"]
    assert cut_tasks, owners(w1, gen)
    assert local_view(w3) == (True, len(cut_tasks)), (local_view(w3), cut_tasks)

    # The cut: worker 3 can no longer reach the broker (the test still reaches its REST port).
    part.sever()
    t_cut = time.time()
    lease_lost = stopped = moved = None
    deadline = t_cut + 30
    while time.time() < deadline and None in (lease_lost, stopped, moved):
        now = time.time() - t_cut
        lease, running = local_view(w3)
        if lease_lost is None and not lease:
            lease_lost = now
        if stopped is None and running == 0:
            stopped = now
        if moved is None and all_running(w1, {"w1", "w2"}):
            moved = now
        time.sleep(0.05)
    result = {"test": "partition", "backbone": KIND, "session_timeout_ms": SESSION_MS, "cut_tasks": cut_tasks,
              "lease_lost_s": lease_lost and round(lease_lost, 2), "tasks_stopped_s": stopped and round(stopped, 2),
              "moved_s": moved and round(moved, 2)}
    print(json.dumps(result), flush=True)
    assert lease_lost is not None and lease_lost <= SESSION_MS / 1000 + 0.5, result
    assert stopped is not None and stopped <= SESSION_MS / 1000 + 1.0, result
    assert moved is not None and moved <= SESSION_MS / 1000 + 3.0, result

    # While the partition lasts, worker 3 runs nothing.
    while time.time() < t_cut + PARTITION_S:
        assert local_view(w3) == (False, 0), local_view(w3)
        time.sleep(0.2)
    part.heal()
    t_heal = time.time()
    wait_until(lambda: w3.ok("GET", "/cluster")["lease"], 30, "worker 3 holds a lease again", 0.1)
    rejoin_s = time.time() - t_heal
    wait_until(lambda: any(m["id"] == "w3" and m["units"] >= 1 for m in w1.ok("GET", "/cluster")["workers"]), 30,
               "worker 3 took units back", 0.2)
    wait_until(lambda: all(u.get("handoff_to") is None for u in w1.ok("GET", "/cluster")["assignment"]), 30,
               "handoffs done", 0.2)
    wait_until(lambda: all_running(w1, {"w1", "w2", "w3"}), 30, "all RUNNING after the heal", 0.2)
    print(json.dumps({"test": "heal", "lease_again_s": round(rejoin_s, 2),
                      "held_connections": part.held_connections}), flush=True)

    seen, runs = wait_complete(KIND, topic, w1.workdir, BOOTSTRAP, NAMESRV, TASKS, N)
    summary = check_delivery(seen, runs, TASKS, N)
    # Worker 3's runs: each ended before its lease could have ended, or began after the heal.
    lease_end_ms = (t_cut * 1000) + SESSION_MS
    pid = f"{w3.proc.pid}."
    w3_runs = {k: v for k, v in runs.items() if k[1].startswith(pid)}
    late = [(k, v) for k, v in w3_runs.items() if v[1] > lease_end_ms and v[0] < t_heal * 1000]
    print(json.dumps({"test": "delivery", **summary, "worker3_runs": len(w3_runs),
                      "worker3_records_during_partition": len(late)}), flush=True)
    assert w3_runs, "no record of worker 3 at all"
    assert not late, f"worker 3 produced records after its lease ended, before the heal: {late[:5]}"
    for w in workers:
        w.stop()


if __name__ == "__main__":
    run(main)
