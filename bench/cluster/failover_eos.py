"""Scenario cluster-failover-eos: failover with exactly.once.source.support=enabled, side by side
with the same cluster at at-least-once.

Three `ferry distributed` workers of one cluster on a Kafka broker (--bootstrap, default cluster A
of scripts/services/kafka), one DatagenSource of six tasks (rate 200/s each). For each mode
(at-least-once, then exactly-once: worker key exactly.once.source.support=enabled) and each of
--runs kills:

  failover    seconds from kill -9 of the worker holding the most tasks until a survivor's REST
              shows every task RUNNING on a survivor (the new owner's report for the new epoch);
  rest        the killed worker started again: seconds until its REST answers at all (GET /) and
              until /health says healthy (it joined and holds its lease);
  handback    from that start: seconds until every task is RUNNING again with the restarted worker
              holding its share, and the longest time one task was not RUNNING meanwhile (a task
              handed back to the restarted worker is UNASSIGNED between its release and its new
              owner's RUNNING).

Reported per mode: median and max of each, and every run. Environment: FERRY_BIN.
"""
import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import time
import urllib.error
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
os.environ.setdefault("FERRY_BIN", os.path.join(ROOT, "build", "release", "apps", "ferry", "ferry"))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from harness import FERRY_BIN, Worker, tmpdir  # noqa: E402

SCENARIO = "cluster-failover-eos"
TASKS = 6


def log(msg):
    print(f"bench: {SCENARIO}: {msg}", file=sys.stderr, flush=True)


def status_of(w, name):
    """{task: (state, worker)} or None."""
    try:
        st, body = w.rest("GET", f"/connectors/{name}/status", timeout=5)
    except OSError:
        return None
    if st != 200 or not isinstance(body, dict):
        return None
    return {t["id"]: (t["state"], t["worker_id"]) for t in body.get("tasks", [])}


def wait_all_running(w, name, allowed, timeout, need=None):
    """Seconds until every task is RUNNING on a worker in `allowed` (and `need` holds one), else None.
    Also returns the longest time any task was seen not RUNNING meanwhile."""
    t0 = time.time()
    down_since, longest = {}, 0.0
    while time.time() - t0 < timeout:
        o = status_of(w, name)
        now = time.time()
        if o:
            for t, (s, _) in o.items():
                if s != "RUNNING":
                    down_since.setdefault(t, now)
                elif t in down_since:
                    longest = max(longest, now - down_since.pop(t))
            if (len(o) == TASKS and all(s == "RUNNING" and wk in allowed for s, wk in o.values()) and
                    (need is None or any(wk == need for _, wk in o.values()))):
                return now - t0, longest
        time.sleep(0.05)
    for t, since in down_since.items():
        longest = max(longest, time.time() - since)
    return None, longest


def answers(w, path):
    try:
        with urllib.request.urlopen(w.url + path, timeout=1) as r:
            return r.status
    except urllib.error.HTTPError as e:
        return e.code
    except OSError:
        return None


def one_mode(bootstrap, runs, eos, warm_s=0):
    cluster = f"bencheos{random.randrange(1 << 30)}"
    base = {"backbone": "kafka", "backbone.kafka.bootstrap.servers": bootstrap, "cluster.name": cluster,
            "log.level": "info"}
    if eos:
        base["exactly.once.source.support"] = "enabled"
    workers = {}
    for i in range(3):
        wid = f"f{i + 1}"
        w = Worker(tmpdir(f"bench-eos-{wid}"), dict(base, **{"worker.id": wid}), mode="distributed")
        w.start(timeout=90)
        workers[wid] = w
    name = "gen"
    first = workers["f1"]
    first.ok("POST", "/connectors", {"name": name, "config": {
        "connector.class": "DatagenSource", "topic": f"{cluster}-data", "tasks.max": str(TASKS), "rate": "200",
        "format": "string"}})
    out = {"failover_s": [], "rest_answer_s": [], "rest_healthy_s": [], "handback_settled_s": [],
           "longest_task_down_in_handback_s": []}
    try:
        if wait_all_running(first, name, set(workers), 90)[0] is None:
            raise RuntimeError("tasks not RUNNING")
        time.sleep(warm_s)  # the positions topic grows (exactly-once: a record per transaction)
        for r in range(runs):
            time.sleep(5)  # transactions and positions accumulate; the cluster is steady
            counts = {}
            for s, wk in (status_of(first, name) or {}).values():
                counts[wk] = counts.get(wk, 0) + 1
            vid = max(sorted(counts), key=lambda k: counts[k])
            survivor = next(w for k, w in workers.items() if k != vid)
            workers[vid].kill9()
            took, _ = wait_all_running(survivor, name, set(workers) - {vid}, 120)
            if took is None:
                raise RuntimeError(f"run {r}: tasks not back within 120 s")
            out["failover_s"].append(round(took, 3))
            # The restart: REST, health, and the handback of its share.
            v = workers[vid]
            t0 = time.time()
            logf = open(v.log_path, "ab")  # not Worker.start(): it waits for health, we time both
            v.proc = subprocess.Popen([FERRY_BIN, v.mode, v.props], stdout=logf, stderr=subprocess.STDOUT,
                                      cwd=v.workdir)
            logf.close()
            answered = healthy = None
            while time.time() - t0 < 90 and healthy is None:
                st = answers(v, "/")
                if st is not None and answered is None:
                    answered = time.time() - t0
                if st is not None and answers(v, "/health") == 200:
                    healthy = time.time() - t0
                time.sleep(0.02)
            settled, longest = wait_all_running(survivor, name, set(workers), 120, need=vid)
            out["rest_answer_s"].append(round(answered, 3) if answered is not None else None)
            out["rest_healthy_s"].append(round(healthy, 3) if healthy is not None else None)
            out["handback_settled_s"].append(round(time.time() - t0, 3) if settled is not None else None)
            out["longest_task_down_in_handback_s"].append(round(longest, 3))
            log(f"{'eos' if eos else 'alo'} run {r}: failover {took:.2f} s, REST {answered}, healthy {healthy}, "
                f"handback settled {out['handback_settled_s'][-1]}, longest task down {longest:.2f} s")
    finally:
        for w in workers.values():
            w.stop()
    return out


def summarize(xs):
    xs = [x for x in xs if x is not None]
    return {"median": round(statistics.median(xs), 3), "max": round(max(xs), 3)} if xs else None


def scenario(bootstrap, runs=5, warm_s=0):
    results = []
    for eos in (False, True):
        r = one_mode(bootstrap, runs, eos, warm_s)
        results.append({"scenario": SCENARIO, "mode": "exactly-once" if eos else "at-least-once",
                        **{k: summarize(v) for k, v in r.items()}, "runs": r})
    return results


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--bootstrap", default=f"127.0.0.1:{os.environ.get('KAFKA_PORT', '19092')}")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--modes", default="alo,eos")
    ap.add_argument("--warm-s", type=float, default=0, help="seconds the cluster runs before the first kill")
    a = ap.parse_args()
    for eos in (False, True):
        if ("eos" if eos else "alo") not in a.modes.split(","):
            continue
        r = one_mode(a.bootstrap, a.runs, eos, a.warm_s)
        print(json.dumps({"scenario": SCENARIO, "mode": "exactly-once" if eos else "at-least-once", "warm_s": a.warm_s,
                          **{k: summarize(v) for k, v in r.items()}, "runs": r}), flush=True)
