"""Scenario cluster-failover: how long a dead worker's tasks stay down.

Three workers of one cluster on the Kafka broker of scripts/services/kafka (cluster A), six
source tasks spread over them. One worker holding tasks is kill -9ed; the clock runs until a
surviving worker's REST status shows every task RUNNING on a survivor. The killed worker is then
started again and the cluster settles before the next run. Reported: the median and every run.

  ferry       `ferry distributed`, DatagenSource tasks.max=6, defaults (cluster.session.timeout.ms
              2000) unless --ferry-session-ms says otherwise.
  connect     Kafka Connect distributed (same Kafka version as the broker), six FileStreamSource
              connectors of one task each (its file connectors have one task), with
              scheduled.rebalance.max.delay.ms=0, and, once, with its default (300,000 ms): the
              default run is capped at --connect-default-cap-s and reported as at least the cap
              when it does not finish.

Same machine, same broker, same run; ratios are connect / ferry medians.
"""
import json
import os
import random
import signal
import statistics
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
os.environ.setdefault("FERRY_BIN", os.path.join(ROOT, "build", "release", "apps", "ferry", "ferry"))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from harness import Worker, tmpdir, wait_until  # noqa: E402

sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
import kafka_connect as kc  # noqa: E402

SCENARIO = "cluster-failover"
TASKS = 6


def log(msg):
    print(f"bench: {SCENARIO}: {msg}", file=sys.stderr, flush=True)


def task_owners(rest, names):
    """{(connector, task): (state, worker_id)} from one worker's REST, or None if it did not answer."""
    out = {}
    for n in names:
        try:
            status, body = rest("GET", f"/connectors/{n}/status")
        except OSError:
            return None
        if status != 200 or not isinstance(body, dict):
            return None
        for t in body.get("tasks", []):
            out[(n, t["id"])] = (t["state"], t["worker_id"])
    return out


def wait_all_running(rest, names, allowed, expected, timeout):
    """Seconds until every task is RUNNING on a worker in `allowed` (None on timeout)."""
    t0 = time.time()
    while time.time() - t0 < timeout:
        o = task_owners(rest, names)
        if o and len(o) == expected and all(s == "RUNNING" and w in allowed for s, w in o.values()):
            return time.time() - t0
        time.sleep(0.05)
    return None


def victim(rest, names):
    """The worker id holding the most tasks."""
    counts = {}
    for s, w in (task_owners(rest, names) or {}).values():
        counts[w] = counts.get(w, 0) + 1
    return max(sorted(counts), key=lambda w: counts[w])


def ferry_runs(bootstrap, runs, session_ms):
    cluster = f"bench{random.randrange(1 << 30)}"
    base = {"backbone": "kafka", "backbone.kafka.bootstrap.servers": bootstrap, "cluster.name": cluster,
            "log.level": "warn"}
    if session_ms:
        base["cluster.session.timeout.ms"] = str(session_ms)
        base["cluster.heartbeat.interval.ms"] = str(max(50, session_ms // 6))
    workers = {}
    for i in range(3):
        wid = f"f{i + 1}"
        w = Worker(tmpdir(f"bench-cluster-{wid}"), dict(base), mode="distributed")
        with open(w.props, "a") as f:
            f.write(f"worker.id={wid}\n")
        w.start(timeout=60)
        workers[wid] = w
    names = ["gen"]
    first = workers["f1"]
    first.ok("POST", "/connectors", {"name": "gen", "config": {
        "connector.class": "DatagenSource", "topic": f"{cluster}-data", "tasks.max": str(TASKS), "rate": "200",
        "format": "string"}})
    times = []
    try:
        if wait_all_running(first.rest, names, set(workers), TASKS, 60) is None:
            raise RuntimeError("ferry: tasks not RUNNING")
        for r in range(runs):
            time.sleep(2)
            vid = victim(first.rest, names)
            survivor = next(w for k, w in workers.items() if k != vid)
            workers[vid].kill9()
            t0 = time.time()
            took = wait_all_running(survivor.rest, names, set(workers) - {vid}, TASKS, 120)
            if took is None:
                raise RuntimeError(f"ferry run {r}: tasks not back within 120 s")
            times.append(round(time.time() - t0, 3))
            log(f"ferry run {r}: {times[-1]} s")
            workers[vid].start(timeout=60)
            wait_all_running(survivor.rest, names, set(workers), TASKS, 60)
    finally:
        for w in workers.values():
            w.stop()
    return times


def connect_runs(broker, runs, extra, cap_s):
    gid = "ferry-bench-" + os.urandom(4).hex()
    shared = {"group.id": gid, "config.storage.topic": gid + "-configs", "offset.storage.topic": gid + "-offsets",
              "status.storage.topic": gid + "-status"}
    shared.update(extra)
    workers = {}
    for i in range(3):
        w = kc.ConnectDistributed(tmpdir(f"bench-connect-{i}"), broker.bootstrap, shared)
        w.start()
        workers[f"127.0.0.1:{w.port}"] = w
    first = next(iter(workers.values()))
    names = [f"fs{i}" for i in range(TASKS)]
    times = []
    try:
        for n in names:
            path = os.path.join(first.workdir, n + ".txt")
            with open(path, "w") as f:
                f.write("x\n")
            first.ok("POST", "/connectors", {"name": n, "config": {
                "connector.class": "org.apache.kafka.connect.file.FileStreamSourceConnector", "file": path,
                "topic": gid + "-data", "tasks.max": "1"}})
        if wait_all_running(first.rest, names, set(workers), TASKS, 120) is None:
            raise kc.PeerError("Connect: tasks not RUNNING")
        for r in range(runs):
            time.sleep(2)
            vid = victim(first.rest, names)
            survivor = next(w for k, w in workers.items() if k != vid)
            workers[vid].proc.send_signal(signal.SIGKILL)
            workers[vid].proc.wait(10)
            t0 = time.time()
            took = wait_all_running(survivor.rest, names, set(workers) - {vid}, TASKS, cap_s)
            times.append(round(took, 3) if took is not None else None)
            log(f"connect {extra or 'default'} run {r}: {times[-1]} s (None: not within {cap_s} s)")
            if took is None:
                break
            workers[vid].start()
            wait_all_running(survivor.rest, names, set(workers), TASKS, 120)
    finally:
        for w in workers.values():
            w.stop()
    return times


def median(xs):
    xs = [x for x in xs if x is not None]
    return round(statistics.median(xs), 3) if xs else None


def scenario(runs=5, connect_runs_n=3, default_cap_s=420, ferry_session_ms=0, peers=True):
    broker = kc.Broker()
    broker.start()
    out = []
    f = ferry_runs(broker.bootstrap, runs, ferry_session_ms)
    fm = median(f)
    out.append({"scenario": SCENARIO, "runtime": "ferry", "session_timeout_ms": ferry_session_ms or 2000,
                "failover_s_median": fm, "runs_s": f})
    if not peers:
        return out
    try:
        c0 = connect_runs(broker, connect_runs_n, {"scheduled.rebalance.max.delay.ms": "0"}, 180)
        m0 = median(c0)
        out.append({"scenario": SCENARIO, "runtime": "kafka-connect", "settings": "scheduled.rebalance.max.delay.ms=0",
                    "failover_s_median": m0, "runs_s": c0,
                    "ratio_vs_ferry": round(m0 / fm, 2) if m0 and fm else None})
    except kc.PeerError as e:
        out.append({"scenario": SCENARIO, "runtime": "kafka-connect", "error": str(e)[-800:]})
    try:
        cd = connect_runs(broker, 1, {}, default_cap_s)
        md = median(cd)
        out.append({"scenario": SCENARIO, "runtime": "kafka-connect", "settings": "defaults",
                    "failover_s_median": md if md is not None else f">{default_cap_s}", "runs_s": cd,
                    "ratio_vs_ferry": round((md or default_cap_s) / fm, 1) if fm else None,
                    "note": None if md is not None else f"not back within {default_cap_s} s"})
    except kc.PeerError as e:
        out.append({"scenario": SCENARIO, "runtime": "kafka-connect", "settings": "defaults", "error": str(e)[-800:]})
    return out


if __name__ == "__main__":
    for r in scenario():
        print(json.dumps(r), flush=True)
