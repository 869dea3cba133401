"""Every worker of a cluster shows every task's record counters, not only its own (issue 20's
cluster-wide figures): three `ferry distributed` workers on Kafka (127.0.0.1:19092).

A DatagenSource of 6 tasks (2 per worker) writes 2,000 sequence-keyed records each at 100/s to a
backbone topic; a FileStreamSink of one task writes them to a file. Checked, judged by the far end
(the file):

  (a) while the records flow, the status each worker answers has `metrics` for all 6 source tasks,
      also for the 4 that run on other workers (their owner's heartbeats carry them);
  (b) the metrics history each worker answers for the source has a point of at least 70 % of the
      cluster's rate (600/s): more than the tasks on any one worker (at most 3 x 100/s) make;
  (c) once the file holds all 12,000 records (each task's 0..1999 exactly once), every worker's
      status adds the source's `records_out` up to 12,000 and the sink's to 12,000.
  (d) each task's connection travels the same way: w1's status shows `connection` "connected" for
      the tasks other workers run, and its GET /cluster carries a `connection` per task unit.

Before the heartbeats carried counters, a worker's status had no `metrics` and its history only
its own tasks' records.

Environment: FERRY_BIN, FERRY_KAFKA_BOOTSTRAP."""
import json
import os
import uuid

from cluster_check import make_workers, require_kafka
from harness import run, tmpdir, wait_until

BOOTSTRAP = os.environ.get("FERRY_KAFKA_BOOTSTRAP", "127.0.0.1:19092")
RUN = uuid.uuid4().hex[:8]
TASKS, PER_TASK, RATE = 6, 2000, 100


def status(w, name):
    code, s = w.rest("GET", f"/connectors/{name}/status")
    return s if code == 200 else {}


def sums(w, name):
    """(tasks with metrics, records_out summed over them) as w answers."""
    tasks = [t for t in status(w, name).get("tasks", []) if "metrics" in t]
    return len(tasks), sum(t["metrics"]["records_out"] for t in tasks)


def file_records(path):
    """{(task, seq): count} of the sink's file (DatagenSource json values: {"task", "seq", ...})."""
    out = {}
    if not os.path.exists(path):
        return out
    with open(path) as f:
        for line in f:
            try:
                v = json.loads(line)
            except ValueError:
                continue  # a line being written
            k = (str(v.get("task")), int(v.get("seq", -1)))
            out[k] = out.get(k, 0) + 1
    return out


def main():
    require_kafka(BOOTSTRAP)
    base = {"backbone": "kafka", "backbone.kafka.bootstrap.servers": BOOTSTRAP, "cluster.name": f"counters{RUN}",
            "cluster.session.timeout.ms": "3000", "cluster.heartbeat.interval.ms": "300",
            "offset.flush.interval.ms": "500"}
    out_dir = tmpdir("cluster-counters-out")
    base["file.allowed.dirs"] = out_dir  # the sink's file, wherever its task runs
    workers = make_workers("cluster-counters", base, 3)
    for w in workers:
        w.start(timeout=60)
    w1 = workers[0]
    wait_until(lambda: all(len(w.ok("GET", "/cluster")["workers"]) == 3 for w in workers), 60, "three members", 0.2)
    topic = f"counters-{RUN}"
    out_file = os.path.join(out_dir, "out.jsonl")
    w1.ok("POST", "/connectors", {"name": "out", "config": {
        "connector.class": "FileStreamSink", "topics": topic, "file": out_file, "tasks.max": "1"}})
    w1.ok("POST", "/connectors", {"name": "gen", "config": {
        "connector.class": "DatagenSource", "topic": topic, "tasks.max": str(TASKS), "rate": str(RATE),
        "max.records": str(PER_TASK), "format": "json"}})

    # (a) Every worker shows all six tasks' counters while they run, the other workers' too.
    def per_worker_tasks():
        owners = {}
        for t in status(w1, "gen").get("tasks", []):
            if t.get("state") == "RUNNING":
                owners.setdefault(t["worker_id"], 0)
                owners[t["worker_id"]] += 1
        return owners if len(owners) == 3 else None
    owners = wait_until(per_worker_tasks, 60, "the source's tasks running on all three workers", 0.1)
    for w in workers:
        def counted(w=w):
            n, out = sums(w, "gen")
            return n == TASKS and out > 0
        wait_until(counted, 30, f"{w.url}'s status with the counters of all {TASKS} source tasks", 0.1)
    remote = [t for t in status(w1, "gen")["tasks"] if t["worker_id"] != "w1"]  # worker_id is the worker.id
    if not remote or any(t["metrics"]["records_in"] <= 0 for t in remote):
        raise AssertionError(f"w1 shows no running counters for the tasks on other workers: {remote}")
    print(f"ok   (a) each worker's status has the counters of all {TASKS} tasks; w1 shows "
          f"{len(remote)} of other workers' (tasks per worker: {owners})", flush=True)

    # (d) The connection of every task, also of those other workers run, and in GET /cluster.
    def connected_everywhere():
        tasks = status(w1, "gen").get("tasks", [])
        units = [a for a in w1.ok("GET", "/cluster")["assignment"] if a["connector"] == "gen" and "task" in a]
        return len(tasks) == TASKS and all(t.get("connection", {}).get("state") == "connected" for t in tasks) and \
            len(units) == TASKS and all(a.get("connection", {}).get("state") == "connected" for a in units)
    wait_until(connected_everywhere, 30, "every task's connection in w1's status and GET /cluster", 0.2)
    print("ok   (d) w1's status and GET /cluster show the connection of all tasks, the other workers' too", flush=True)

    # (c) The far end holds every record once; every worker's counters add up to it.
    expected = {(str(t), s) for t in range(TASKS) for s in range(PER_TASK)}

    def all_in_file():
        got = file_records(out_file)
        return got if expected <= set(got) else None
    got = wait_until(all_in_file, PER_TASK / RATE + 90, f"all {len(expected)} records in the sink's file", 0.5)
    dups = sum(c - 1 for c in got.values() if c > 1)
    for w in workers:
        wait_until(lambda w=w: sums(w, "gen") == (TASKS, TASKS * PER_TASK), 30,
                   f"{w.url}: the source's records_out adding up to {TASKS * PER_TASK}", 0.2)
        wait_until(lambda w=w: sums(w, "out")[1] == len(expected) + dups, 30,
                   f"{w.url}: the sink's records_out adding up to what the file holds", 0.2)
    print(f"ok   (c) the file holds all {len(expected)} records ({dups} duplicate(s)); every worker's status adds "
          f"the source's and the sink's records_out up to it", flush=True)

    # (b) Each worker's history of the source shows the cluster's rate, not its own tasks' only.
    most_here = max(owners.values()) * RATE
    for w in workers:
        h = w.ok("GET", "/connectors/gen/metrics/history")
        peak = max((p["records_out_per_second"] for p in h["points"]), default=0)
        if peak < 0.7 * TASKS * RATE or peak <= most_here:
            raise AssertionError(f"{w.url}'s history of the source peaks at {peak:.0f}/s; the cluster made "
                                 f"{TASKS * RATE}/s, one worker's tasks at most {most_here}/s: {h['points']}")
        print(f"ok   (b) {w.url}'s history of the source peaks at {peak:.0f}/s (cluster {TASKS * RATE}/s)", flush=True)


if __name__ == "__main__":
    run(main)
