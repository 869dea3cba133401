"""Exactly-once sources in distributed mode (kafka backbone, cluster A of scripts/services/kafka
unless FERRY_KAFKA_BOOTSTRAP says otherwise): three `ferry distributed` workers with
exactly.once.source.support=enabled, one DatagenSource of 6 tasks x N sequence-numbered records.

  (a) while the tasks commit a transaction per poll, GET /connectors/<c>/offsets (which reads the
      positions topic to its end) answers within 1 s every time: a partition written all the
      time is read to its end in one fetch round. Before, the read waited for a moment when a
      fetch brought nothing new in every partition (librdkafka's end signal): seconds, and the
      same read delayed every exactly-once task's start after a failover;
  (b) the worker holding the most tasks is kill -9ed mid-way: its tasks RUNNING on the others
      within 6 s; it is started again and takes its share back;
  (c) a read_committed consumer sees every (task, seq) exactly once: 0 lost, 0 duplicated.

Environment: FERRY_BIN, FERRY_KAFKA_TOOL, FERRY_KAFKA_BOOTSTRAP, FERRY_CLUSTER_EOS_RECORDS (per
task, default 20000)."""
import json
import os
import random
import time

from harness import run, start_cluster, tmpdir, wait_until
from test_kafka_eos_source import committed_values, end_of, tally

BOOTSTRAP = os.environ.get("FERRY_KAFKA_BOOTSTRAP", "127.0.0.1:19092")
N = int(os.environ.get("FERRY_CLUSTER_EOS_RECORDS", "20000"))
TASKS = 6
OFFSETS_LIMIT_S = 1.0
FAILOVER_LIMIT_S = 6.0


def owners(w, name):
    status, body = w.rest("GET", f"/connectors/{name}/status", timeout=10)
    if status != 200:
        return None
    return {t["id"]: (t["state"], t["worker_id"]) for t in body["tasks"]}


def main():
    assert os.environ.get("FERRY_KAFKA_TOOL"), "FERRY_KAFKA_TOOL must name kafka_tool"
    run_id = random.randrange(1 << 30)
    base = {"backbone": "kafka", "backbone.kafka.bootstrap.servers": BOOTSTRAP, "cluster.name": f"eos{run_id}",
            "exactly.once.source.support": "enabled", "log.level": "info"}
    workers = {f"w{i + 1}": w for i, w in enumerate(start_cluster(tmpdir("cluster-eos"), base, timeout=90))}
    topic = f"cluster-eos-{run_id}"
    name = "eosgen"
    first = workers["w1"]
    # rate per task: N records in ~40 s, a transaction per poll batch
    first.ok("POST", "/connectors", {"name": name, "config": {
        "connector.class": "DatagenSource", "topic": topic, "tasks.max": str(TASKS), "max.records": str(N),
        "rate": str(max(100, N // 40)), "format": "string", "key.mode": "seq", "exactly.once.support": "required"}})
    wait_until(lambda: (o := owners(first, name)) and len(o) == TASKS and
               all(s == "RUNNING" for s, _ in o.values()), 90, "every task RUNNING", 0.2)

    # (a) the positions topic read to its end while it is written all the time
    times = []
    for _ in range(10):
        t0 = time.time()
        status, body = first.rest("GET", f"/connectors/{name}/offsets", timeout=60)
        times.append(round(time.time() - t0, 3))
        assert status == 200, (status, body)
        time.sleep(0.3)
    print(json.dumps({"test": "offsets_while_committing", "seconds": times}), flush=True)
    assert max(times) <= OFFSETS_LIMIT_S, f"(a) GET offsets took {max(times)} s (limit {OFFSETS_LIMIT_S}): {times}"

    # (b) kill -9 mid-way
    wait_until(lambda: end_of(topic) >= TASKS * N // 3, 180, "a third written", 0.5)
    counts = {}
    for _, wk in owners(first, name).values():
        counts[wk] = counts.get(wk, 0) + 1
    vid = max(sorted(counts), key=lambda k: counts[k])
    survivor = next(w for k, w in workers.items() if k != vid)
    workers[vid].kill9()
    t0 = time.time()
    wait_until(lambda: (o := owners(survivor, name)) and all(s == "RUNNING" and wk != vid for s, wk in o.values()),
               60, "the killed worker's tasks RUNNING elsewhere", 0.05)
    failover = round(time.time() - t0, 2)
    workers[vid].start(timeout=90)
    wait_until(lambda: (o := owners(survivor, name)) and all(s == "RUNNING" for s, _ in o.values()) and
               any(wk == vid for _, wk in o.values()), 90, "the restarted worker's share back", 0.1)
    print(json.dumps({"test": "kill9_failover", "victim": vid, "tasks_moved": counts[vid],
                      "failover_s": failover}), flush=True)
    assert failover <= FAILOVER_LIMIT_S, f"(b) failover took {failover} s (limit {FAILOVER_LIMIT_S})"

    # (c) exactly once at the far end
    deadline = time.time() + 300
    values = []
    while time.time() < deadline:
        values = committed_values(topic, workers["w1"].workdir, idle_ms=3000)
        if len(values) >= TASKS * N:
            break
        time.sleep(2)
    lost, dups, extra = tally(values, TASKS, N)
    print(json.dumps({"test": "exactly_once", "records": TASKS * N, "read_committed": len(values),
                      "lost": len(lost), "duplicates": dups, "unexpected": len(extra)}), flush=True)
    assert not lost, f"(c) {len(lost)} lost, first {lost[:10]}"
    assert dups == 0, f"(c) {dups} duplicates seen by a read_committed consumer"
    assert not extra, f"(c) unexpected values {extra[:5]}"
    for w in workers.values():
        w.stop()


if __name__ == "__main__":
    run(main)
