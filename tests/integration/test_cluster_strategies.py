"""The other two assignment strategies with real processes (Kafka cluster A of
scripts/services/kafka; the default sticky-balanced one is test_cluster.py's):

  consistent-hashing (cluster.assignment.strategy=consistent-hashing): three workers agree on one
      assignment; kill -9 of one (w2 or w3, whichever holds more) moves only its units (every other unit keeps owner and epoch)
      within the session timeout plus a margin; when it starts again, the units that hash to it
      come back by handoff and nothing else moves;
  load-weighted (cluster.assignment.strategy=load-weighted): workers declare
      cluster.worker.capacity 1, 1 and 2, tasks declare task.cost: the capacity-2 worker carries
      about twice the cost of each other one; after it is kill -9ed its units spread over the rest.

Each runs DatagenSource, 8 tasks x N trace records; at the end every (task, seq) is in the topic
(0 lost) and no two runs of a task overlapped in time.

Environment: FERRY_BIN, FERRY_KAFKA_TOOL, FERRY_KAFKA_BOOTSTRAP, FERRY_CLUSTER_RECORDS (default 8000)."""
import json
import os
import random
import time

from cluster_check import check_delivery, make_workers, wait_complete
from harness import run, wait_until

BOOTSTRAP = os.environ.get("FERRY_KAFKA_BOOTSTRAP", "127.0.0.1:19092")
N = int(os.environ.get("FERRY_CLUSTER_RECORDS", "8000"))
TASKS = 8
SESSION_MS = 2000


def units(w):
    """{(connector, task): (owner, epoch)} from GET /cluster (task -1: the connector instance)."""
    c = w.ok("GET", "/cluster")
    return {(a["connector"], a.get("task", -1)): (a["owner"], a["epoch"]) for a in c["assignment"]}, c


def settled(w, members, tasks):
    u, c = units(w)
    return (len(c["workers"]) == len(members) and len(u) == tasks + 1 and
            all(a["owner"] in members and a["state"] == "RUNNING" and not a.get("handoff_to")
                for a in c["assignment"]))


def start_cluster(strategy, capacities, run_id):
    base = {"backbone": "kafka", "backbone.kafka.bootstrap.servers": BOOTSTRAP,
            "cluster.name": f"{strategy}{run_id}", "cluster.session.timeout.ms": str(SESSION_MS),
            "cluster.heartbeat.interval.ms": "300", "cluster.assignment.strategy": strategy,
            "offset.flush.interval.ms": "500"}
    workers = make_workers(strategy, base, len(capacities), extra=lambda i: {"cluster.worker.capacity": str(capacities[i])})
    for w in workers:
        w.start(timeout=60)
    return workers


def datagen(w, name, topic, extra=None):
    cfg = {"connector.class": "DatagenSource", "topic": topic, "tasks.max": str(TASKS), "max.records": str(N),
           "rate": "800", "format": "trace", "key.mode": "seq"}
    cfg.update(extra or {})
    w.ok("POST", "/connectors", {"name": name, "config": cfg})


def consistent_hashing(run_id):
    w1, w2, w3 = workers = start_cluster("consistent-hashing", [1, 1, 1], run_id)
    topic, name = f"ferry-ch-{run_id}", f"ch-{run_id}"
    datagen(w1, name, topic)
    wait_until(lambda: settled(w2, {"w1", "w2", "w3"}, TASKS), 60, "all RUNNING on three workers", 0.2)
    wait_until(lambda: units(w1)[0] == units(w3)[0], 10, "the same assignment everywhere", 0.1)
    before, _ = units(w1)
    per = {w: sum(1 for o, _ in before.values() if o == w) for w in ("w1", "w2", "w3")}
    # The victim: whichever of w2/w3 hashes more units (w1 answers the test's reads).
    vid = "w3" if per["w3"] >= per["w2"] else "w2"
    victim = w3 if vid == "w3" else w2
    rest = {"w1", "w2", "w3"} - {vid}
    assert per[vid] >= 1, per
    time.sleep(2)
    victim.kill9()
    t0 = time.time()
    wait_until(lambda: settled(w1, rest, TASKS), 30, f"{vid}'s units RUNNING elsewhere", 0.05)
    moved_s = time.time() - t0
    after, _ = units(w1)
    kept = [u for u in before if before[u][0] != vid]
    for u in kept:
        assert after[u] == before[u], f"{u} did not belong to {vid} but moved or restarted: {before[u]} -> {after[u]}"
    # The victim again (a new incarnation): the units that hash to it come back, nothing else moves.
    victim.start(timeout=60)
    wait_until(lambda: settled(w1, {"w1", "w2", "w3"}, TASKS), 60, f"settled with {vid} back", 0.2)
    back, _ = units(w1)
    returned = [u for u in back if back[u][0] == vid]
    assert sorted(returned) == sorted(u for u in before if before[u][0] == vid), (before, back)
    for u in kept:
        assert back[u] == before[u], f"{u} moved when {vid} came back: {before[u]} -> {back[u]}"
    seen, runs = wait_complete("kafka", topic, w1.workdir, BOOTSTRAP, "", TASKS, N)
    summary = check_delivery(seen, runs, TASKS, N)
    print(json.dumps({"test": "consistent_hashing", "units_per_worker": per, "killed": vid,
                      "kill9_moved_s": round(moved_s, 2), "untouched_units": len(kept),
                      "returned": len(returned), **summary}), flush=True)
    for w in workers:
        w.stop()


def load_weighted(run_id):
    w1, w2, w3 = workers = start_cluster("load-weighted", [1, 1, 2], run_id)
    topic, name = f"ferry-lw-{run_id}", f"lw-{run_id}"
    datagen(w1, name, topic, {"task.cost": "1"})
    wait_until(lambda: settled(w1, {"w1", "w2", "w3"}, TASKS), 60, "all RUNNING on three workers", 0.2)
    before, _ = units(w1)
    per = {w: sum(1 for o, _ in before.values() if o == w) for w in ("w1", "w2", "w3")}
    # 9 units of cost 1 over capacities 1:1:2 -> fair shares 2.25, 2.25, 4.5.
    assert per["w3"] >= 4 and per["w3"] > per["w1"] and per["w3"] > per["w2"], per
    time.sleep(2)
    w3.kill9()
    t0 = time.time()
    wait_until(lambda: settled(w1, {"w1", "w2"}, TASKS), 30, "w3's units RUNNING on w1/w2", 0.05)
    moved_s = time.time() - t0
    after, _ = units(w1)
    per_after = {w: sum(1 for o, _ in after.values() if o == w) for w in ("w1", "w2")}
    assert abs(per_after["w1"] - per_after["w2"]) <= 1, per_after
    seen, runs = wait_complete("kafka", topic, w1.workdir, BOOTSTRAP, "", TASKS, N)
    summary = check_delivery(seen, runs, TASKS, N)
    print(json.dumps({"test": "load_weighted", "capacities": [1, 1, 2], "units_per_worker": per,
                      "after_kill9": per_after, "kill9_moved_s": round(moved_s, 2), **summary}), flush=True)
    for w in (w1, w2):
        w.stop()


def main():
    run_id = random.randrange(1 << 30)
    consistent_hashing(run_id)
    load_weighted(run_id)


if __name__ == "__main__":
    run(main)
