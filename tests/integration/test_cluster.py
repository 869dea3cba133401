"""Distributed mode with three `ferry distributed` worker processes on a real backbone
(argv[1]: kafka, cluster A of scripts/services/kafka, or rocketmq, cluster A of
scripts/services/rocketmq), cluster.session.timeout.ms=2000.

  (a) the workers form one cluster: GET /cluster on each shows the same three members and the
      same assignment; a connector created through worker 2 is visible at once on worker 3
      (REST writes go to any worker);
  (b) DatagenSource, 6 tasks x N sequence-numbered records into a backbone topic; worker 3 is
      kill -9ed mid-stream: its tasks run on the other two within the session timeout plus a
      margin (the failover time is printed), and at the end every (task, seq) is in the topic -
      0 lost (duplicates counted: at-least-once);
  (c) worker 3 starts again (a new incarnation) and takes a share back by handoff: units that did
      not move keep their epoch (they were never restarted);
  (e) worker 1 is frozen (SIGSTOP) for twice the session timeout: its tasks move to the others;
      after SIGCONT it must not run its old tasks again (its lease ended while it was frozen) and
      it rejoins;
  (d) worker 2 leaves gracefully (SIGTERM): its units move at once, without waiting for the
      session to expire;
  (f) the whole cluster stops (SIGTERM to every worker) and starts again: the connector and its
      tasks come back from the log (no worker keeps state on disk) and resume from the positions
      in the position topic;
  (g) a config change during a membership change: worker 3 leaves while the connector's config
      is replaced through worker 1; every task ends RUNNING on worker 1 or 2 with the new config.
Records are DatagenSource's trace format ("<task>-<seq> <run> <ts>", a new run id at every task
start): per task, the runs' time spans must not overlap - no task ever ran on two workers at once
(outside the lease margin) - and on Kafka every (task, seq) must be in the topic (0 lost).

Environment: FERRY_BIN, FERRY_KAFKA_TOOL (kafka), FERRY_RMQ_TOOL (rocketmq), FERRY_KAFKA_BOOTSTRAP,
FERRY_ROCKETMQ_NAMESRV,
FERRY_CLUSTER_RECORDS (per task, default 20000)."""
import json
import os
import random
import signal
import sys
import time

from cluster_check import check_delivery, make_workers, wait_complete
from harness import run, wait_until

KIND = sys.argv[1] if len(sys.argv) > 1 else "kafka"
BOOTSTRAP = os.environ.get("FERRY_KAFKA_BOOTSTRAP", "127.0.0.1:19092")
NAMESRV = os.environ.get("FERRY_ROCKETMQ_NAMESRV", "127.0.0.1:19876")
TOOL = os.environ.get("FERRY_KAFKA_TOOL", "")
N = int(os.environ.get("FERRY_CLUSTER_RECORDS", "20000"))
TASKS = 6
SESSION_MS = 2000


def cluster_of(w):
    status, body = w.rest("GET", "/cluster")
    assert status == 200, f"GET /cluster -> {status} {body}"
    return body


def owners(w, name):
    st = w.ok("GET", f"/connectors/{name}/status")
    return {t["id"]: (t["state"], t["worker_id"]) for t in st["tasks"]}


def main():
    run_id = random.randrange(1 << 30)
    cluster = f"it{run_id}"
    base = {"backbone": KIND, "cluster.name": cluster, "cluster.session.timeout.ms": str(SESSION_MS),
            "cluster.heartbeat.interval.ms": "300", "cluster.lease.margin.ms": "500",
            "offset.flush.interval.ms": "500"}
    if KIND == "kafka":
        assert TOOL, "FERRY_KAFKA_TOOL must name kafka_tool"
        base["backbone.kafka.bootstrap.servers"] = BOOTSTRAP
    else:
        base["backbone.rocketmq.namesrv"] = NAMESRV
    workers = make_workers("cluster", base, 3)
    for w in workers:
        w.start(timeout=60)
    w1, w2, w3 = workers

    # (a) one cluster, writes anywhere
    wait_until(lambda: all(len(cluster_of(w)["workers"]) == 3 for w in workers), 30, "three members everywhere", 0.2)
    topic = f"ferry-cluster-{run_id}"
    gen = f"gen-{run_id}"
    w2.ok("POST", "/connectors", {"name": gen, "config": {
        "connector.class": "DatagenSource", "topic": topic, "tasks.max": str(TASKS), "max.records": str(N),
        "rate": "2000", "format": "trace", "key.mode": "seq"}})
    got = w3.ok("GET", f"/connectors/{gen}")
    assert got["config"]["topic"] == topic, got

    def all_running(w, allowed):
        o = owners(w, gen)
        return len(o) == TASKS and all(s == "RUNNING" and wid in allowed for s, wid in o.values())
    wait_until(lambda: all_running(w1, {"w1", "w2", "w3"}), 60, "6 tasks RUNNING", 0.2)
    c1, c3 = cluster_of(w1), cluster_of(w3)
    wait_until(lambda: cluster_of(w1)["assignment"] == cluster_of(w3)["assignment"], 10, "same assignment", 0.1)
    per_worker = {m["id"]: m["units"] for m in cluster_of(w1)["workers"]}
    print(json.dumps({"test": "formed", "workers": sorted(per_worker), "units_per_worker": per_worker,
                      "log_offset": c1["log_offset"]}), flush=True)
    assert all(v >= 2 for v in per_worker.values()), per_worker

    # (b) kill -9 of worker 3 mid-stream
    time.sleep(3)
    victim_tasks = [t for t, (s, wid) in owners(w1, gen).items() if wid == "w3"]
    assert victim_tasks, owners(w1, gen)
    w3.kill9()
    t_kill = time.time()
    wait_until(lambda: all_running(w1, {"w1", "w2"}), 30, "w3's tasks RUNNING on w1/w2", 0.05)
    failover_s = time.time() - t_kill
    print(json.dumps({"test": "kill9_failover", "backbone": KIND, "session_timeout_ms": SESSION_MS,
                      "moved_tasks": victim_tasks, "failover_s": round(failover_s, 2)}), flush=True)
    assert failover_s < SESSION_MS / 1000 + 3, f"failover took {failover_s:.1f} s"

    # (c) worker 3 comes back: takes a share by handoff; units that stay keep their epoch
    before = {(a["connector"], a.get("task", -1)): (a["owner"], a["epoch"]) for a in cluster_of(w1)["assignment"]}
    w3.start(timeout=60)
    wait_until(lambda: any(m["id"] == "w3" and m["units"] >= 2 for m in cluster_of(w1)["workers"]), 30,
               "w3 took units back", 0.2)
    wait_until(lambda: all(u.get("handoff_to") is None for u in cluster_of(w1)["assignment"]), 30,
               "handoffs done", 0.2)
    after = {(a["connector"], a.get("task", -1)): (a["owner"], a["epoch"]) for a in cluster_of(w1)["assignment"]}
    stayed = [u for u in after if u in before and after[u][0] == before[u][0]]
    moved = [u for u in after if u in before and after[u][0] != before[u][0]]
    assert stayed and moved, (before, after)
    for u in stayed:
        assert after[u][1] == before[u][1], f"{u} stayed on {after[u][0]} but was restarted (epoch {before[u][1]} -> {after[u][1]})"
    print(json.dumps({"test": "rejoin", "moved_to_w3": len(moved), "untouched": len(stayed)}), flush=True)

    # (e) worker 1 frozen past its lease, then thawed
    wait_until(lambda: all_running(w3, {"w1", "w2", "w3"}), 30, "all RUNNING before the freeze", 0.2)
    frozen_tasks = [t for t, (s, wid) in owners(w3, gen).items() if wid == "w1"]
    os.kill(w1.proc.pid, signal.SIGSTOP)
    t_stop = time.time()
    wait_until(lambda: all_running(w3, {"w2", "w3"}), 30, "w1's tasks RUNNING on w2/w3", 0.05)
    freeze_failover_s = time.time() - t_stop
    time.sleep(max(0.0, 2 * SESSION_MS / 1000 - (time.time() - t_stop)))
    os.kill(w1.proc.pid, signal.SIGCONT)
    wait_until(lambda: any(m["id"] == "w1" and m["units"] >= 1 for m in cluster_of(w3)["workers"]), 30,
               "w1 rejoined and took units", 0.2)
    wait_until(lambda: all(u.get("handoff_to") is None for u in cluster_of(w3)["assignment"]), 30,
               "handoffs done", 0.2)
    print(json.dumps({"test": "sigstop", "frozen_tasks": frozen_tasks, "moved_after_s": round(freeze_failover_s, 2),
                      "frozen_for_s": round(2 * SESSION_MS / 1000, 1)}), flush=True)

    # (d) graceful leave of worker 2
    wait_until(lambda: all_running(w1, {"w1", "w2", "w3"}), 30, "all RUNNING before the leave", 0.2)
    t_leave = time.time()
    assert w2.stop() == 0
    wait_until(lambda: all_running(w1, {"w1", "w3"}), 30, "w2's tasks RUNNING elsewhere", 0.05)
    leave_s = time.time() - t_leave
    print(json.dumps({"test": "graceful_leave", "moved_after_s": round(leave_s, 2)}), flush=True)
    assert leave_s < SESSION_MS / 1000, f"a graceful leave waited {leave_s:.1f} s (the session timeout?)"

    # (f) full cluster restart
    assert w1.stop() == 0 and w3.stop() == 0
    for w in workers:
        w.start(timeout=60)
    wait_until(lambda: all_running(w2, {"w1", "w2", "w3"}), 60, "all RUNNING after a full restart", 0.2)
    print(json.dumps({"test": "full_restart", "members": len(cluster_of(w2)["workers"])}), flush=True)

    # (g) config change while a worker leaves
    cfg = w1.ok("GET", f"/connectors/{gen}/config")
    cfg["rate"] = "2500"
    os.kill(w3.proc.pid, signal.SIGTERM)  # returns at once: the leave and the PUT overlap
    w1.ok("PUT", f"/connectors/{gen}/config", cfg)
    w3.proc.wait(30)

    def new_config_everywhere():
        tasks = w2.ok("GET", f"/connectors/{gen}/tasks")
        return len(tasks) == TASKS and all(t["config"].get("rate") == "2500" for t in tasks) and \
            all_running(w2, {"w1", "w2"})
    wait_until(new_config_everywhere, 60, "new task configs RUNNING on w1/w2", 0.2)
    print(json.dumps({"test": "config_change_during_leave", "rate": "2500"}), flush=True)

    # 0 lost: every (task, seq) in the topic; no two runs of one task overlap in time
    seen, runs = wait_complete(KIND, topic, w1.workdir, BOOTSTRAP, NAMESRV, TASKS, N)
    summary = check_delivery(seen, runs, TASKS, N)
    print(json.dumps({"test": "delivery", **summary}), flush=True)
    for w in (w1, w2):
        w.stop()


if __name__ == "__main__":
    run(main)
