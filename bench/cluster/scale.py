"""Scenario cluster-scale: convergence of a large cluster and what a join costs.

W workers (default 5) of one cluster on the Kafka broker of scripts/services/kafka (cluster A).
C connectors of T tasks each (default 100 x 100 = 10,000 tasks) of DatagenSource at a trickle
(--rate records/s per task), created one POST after the other through worker 1. Measured:

  converge_s        from the first POST to GET /cluster on worker 1 showing every task RUNNING
                    (each owner's status report for the unit's current epoch is in the log);
  join              a (W+1)th worker starts: seconds until it holds its share, the handoffs are
                    done and every task is RUNNING again; units moved (each moved task restarts
                    once, on its new owner), units restarted without moving (must be 0: the
                    sticky strategy never stops an unaffected task), and the fewest moves a
                    balanced result allows (total - W * ceil(total / (W+1)) ... see below);
  per worker        threads and RSS (from /proc) once converged.

ferry only: Kafka Connect gives each task its own producer (thousands of client instances per
worker), which this 2-core machine cannot host; its join behaviour is in the Kafka Connect docs
(incremental cooperative rebalancing revokes only what must move, after a delay).
"""
import json
import math
import os
import random
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
os.environ.setdefault("FERRY_BIN", os.path.join(ROOT, "build", "release", "apps", "ferry", "ferry"))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from harness import Worker, tmpdir, wait_until  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
import kafka_connect as kc  # noqa: E402

SCENARIO = "cluster-scale"


def log(msg):
    print(f"bench: {SCENARIO}: {msg}", file=sys.stderr, flush=True)


def cluster(w):
    status, body = w.rest("GET", "/cluster", timeout=60)
    if status != 200 or not isinstance(body, dict):
        return None
    return body


def task_units(c):
    return {(a["connector"], a["task"]): a for a in c["assignment"] if "task" in a}


def proc_stats(pid):
    threads = rss = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("Threads:"):
                threads = int(line.split()[1])
            elif line.startswith("VmRSS:"):
                rss = int(line.split()[1]) // 1024
    return threads, rss


def scenario(workers=5, connectors=100, tasks=100, rate=0.5, session_ms=2000, timeout=900):
    broker = kc.Broker()
    broker.start()
    run = random.randrange(1 << 30)
    base = {"backbone": "kafka", "backbone.kafka.bootstrap.servers": broker.bootstrap,
            "cluster.name": f"scale{run}", "log.level": os.environ.get("SCALE_LOG_LEVEL", "warn"),
            "cluster.session.timeout.ms": str(session_ms)}
    ws = []
    for i in range(workers + 1):
        w = Worker(tmpdir(f"scale-w{i + 1}"), dict(base), mode="distributed")
        with open(w.props, "a") as f:
            f.write(f"worker.id=w{i + 1}\n")
        ws.append(w)
    total = connectors * tasks
    try:
        for w in ws[:workers]:
            w.start(timeout=60)
        w1 = ws[0]
        wait_until(lambda: (c := cluster(w1)) and len(c["workers"]) == workers, 60, "members", 0.2)
        topic = f"ferry-scale-{run}"
        t0 = time.time()
        for c in range(connectors):
            status, body = w1.rest("POST", "/connectors", {"name": f"s{c}", "config": {
                "connector.class": "DatagenSource", "topic": topic, "tasks.max": str(tasks), "rate": str(rate),
                "format": "string"}}, timeout=120)
            assert status == 201, (status, body)
        posted_s = time.time() - t0
        t_last = time.time()
        log(f"{connectors} connectors posted in {posted_s:.1f} s")

        def converged():
            c = cluster(w1)
            if not c:
                return None
            units = task_units(c)
            running = sum(1 for a in units.values() if a["state"] == "RUNNING")
            return c if len(units) == total and running == total else None
        last = [0.0]

        def progress():
            c = converged()
            if c is None and time.time() - last[0] > 10:
                last[0] = time.time()
                cc = cluster(w1)
                if cc:
                    units = task_units(cc)
                    log(f"{sum(1 for a in units.values() if a['state'] == 'RUNNING')}/{total} RUNNING "
                        f"at log offset {cc['log_offset']}")
            return c
        c = wait_until(progress, timeout, f"{total} tasks RUNNING", 0.5)
        converge_s = time.time() - t0
        after_last_post_s = time.time() - t_last
        per_worker = {m["id"]: m["units"] for m in c["workers"]}
        stats = {w.proc.pid: proc_stats(w.proc.pid) for w in ws[:workers]}
        log(f"converged in {converge_s:.1f} s: {per_worker}")
        before = {u: (a["owner"], a["epoch"]) for u, a in task_units(c).items()}

        # A 6th worker joins.
        new = ws[workers]
        t1 = time.time()
        new.start(timeout=60)
        new_id = f"w{workers + 1}"

        def settled():
            c = cluster(w1)
            if not c or not any(m["id"] == new_id and m["units"] > 0 for m in c["workers"]):
                return None
            units = task_units(c)
            if any(a.get("handoff_to") for a in c["assignment"]):
                return None
            if len(units) != total or any(a["state"] != "RUNNING" for a in units.values()):
                return None
            return c
        c2 = wait_until(settled, timeout, "the join settled", 0.5)
        join_s = time.time() - t1
        after = {u: (a["owner"], a["epoch"]) for u, a in task_units(c2).items()}
        moved = sum(1 for u in after if after[u][0] != before[u][0])
        restarted_in_place = sum(1 for u in after if after[u][0] == before[u][0] and after[u][1] != before[u][1])
        fair_share = total // (workers + 1)  # the newcomer's share: the fewest moves that balance
        return [{"scenario": SCENARIO, "runtime": "ferry", "workers": workers, "connectors": connectors,
                 "tasks": total, "rate_per_task": rate, "session_timeout_ms": session_ms, "posts_s": round(posted_s, 1),
                 "converge_s": round(converge_s, 1), "running_after_last_post_s": round(after_last_post_s, 1),
                 "units_per_worker": per_worker,
                 "threads_per_worker": [s[0] for s in stats.values()],
                 "rss_mb_per_worker": [s[1] for s in stats.values()],
                 "join_settle_s": round(join_s, 1), "join_tasks_moved": moved,
                 "join_min_moves": fair_share, "join_tasks_restarted_without_moving": restarted_in_place,
                 "log_offset": c2["log_offset"]}]
    finally:
        for w in ws:
            try:
                if w.proc and w.proc.poll() is None:
                    w.stop(timeout=120)
            except AssertionError:
                pass


if __name__ == "__main__":
    import argparse
    ap = argparse.ArgumentParser()
    ap.add_argument("--workers", type=int, default=5)
    ap.add_argument("--connectors", type=int, default=100)
    ap.add_argument("--tasks", type=int, default=100)
    ap.add_argument("--rate", type=float, default=0.5)
    ap.add_argument("--session-ms", type=int, default=2000)
    a = ap.parse_args()
    for r in scenario(a.workers, a.connectors, a.tasks, a.rate, a.session_ms):
        print(json.dumps(r), flush=True)
