"""Fencing: a worker without its cluster lease sends nothing more, judged by the broker's append
time (argv[1]: sigstop or broker-kill9; kafka backbone, three `ferry distributed` workers,
cluster.session.timeout.ms=2000, lease margin 500 ms).

The target topic is created first with message.timestamp.type=LogAppendTime, so every record's
timestamp is the moment the broker appended it. DatagenSource (6 tasks, trace format
"<task>-<seq> <run> <ts>", a new run id "<pid>.<random>" at every task start) writes into it.
For every task the runs are ordered by their first append; a record of a run appended after the
first append of the task's next run is a *late record*: a stopped (fenced) instance of the task
still wrote after its successor had started. The test asserts 0 late records and 0 lost
(every (task, seq) in the topic; duplicates are counted, at-least-once allows them).

  sigstop      (the shared Kafka A on $FERRY_KAFKA_BOOTSTRAP) the worker that runs tasks is
               frozen (SIGSTOP) until the others run its tasks and have written, then thawed
               (SIGCONT): records it had handed to librdkafka before the freeze, or was handing
               over, must not be sent after the thaw.
  broker-kill9 (a broker of this test's own, ports 47092/47093/47094/47095, its own run folder:
               the shared one is never killed) the broker is killed -9 mid-stream and relaunched
               on its data 12 s later: every worker loses its lease; each must stop its tasks
               within a few seconds of that (measured from its log: "lost its lease" to the last
               "stopped <unit>"), without waiting for a flush to the dead broker, and what it had
               queued must never reach the broker once it is back.

Environment: FERRY_BIN, FERRY_KAFKA_TOOL, FERRY_KAFKA_BOOTSTRAP (sigstop),
FERRY_FENCING_RECORDS (per task; default 12000 for sigstop, 16000 for broker-kill9)."""
import datetime
import json
import os
import random
import re
import signal
import subprocess
import sys
import time

from cluster_check import make_workers
from harness import run, tmpdir, wait_until

MODE = sys.argv[1] if len(sys.argv) > 1 else "sigstop"
TOOL = os.environ.get("FERRY_KAFKA_TOOL", "")
SERVICE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "scripts", "services", "kafka")
TASKS = 6
SESSION_MS = 2000
RATE = 600  # records/s per task
OWN_PORTS = {"KAFKA_PORT": "47092", "KAFKA_CONTROLLER_PORT": "47093", "KAFKA_SASL_PORT": "47094",
             "KAFKA_SSL_PORT": "47095"}
STOP_BOUND_S = 3.0  # lease lost -> every task stopped, per worker


def kafka_tool(*args, timeout=200):
    p = subprocess.run([TOOL, *args], capture_output=True, timeout=timeout)
    assert p.returncode == 0, f"kafka_tool {args[0]}: {p.stderr.decode()[-800:]}"
    return p.stdout.decode()


def read_records(bootstrap, topic):
    """-> [(append_ts_ms, value)] of every record in the topic."""
    out = kafka_tool("consume", "--bootstrap", bootstrap, "--topic", topic, "--count", "0", "--idle-ms", "4000",
                     "--timeout-ms", "150000")
    recs = []
    for line in out.splitlines():
        if not line.startswith("{"):
            continue
        j = json.loads(line)
        recs.append((int(j["ts"]), bytes.fromhex(j["value_hex"]).decode()))
    return recs


def judge(recs, n, pids):
    """Lost records and late records (a run's records appended after its task's next run began)."""
    seen = {}
    runs = {}  # (task, run) -> [append ts]
    for ts, v in recs:
        parts = v.split()
        if len(parts) != 3:
            continue
        seen[parts[0]] = seen.get(parts[0], 0) + 1
        task = parts[0].split("-")[0]
        runs.setdefault((task, parts[1]), []).append(ts)
    lost = [f"{t}-{s}" for t in range(TASKS) for s in range(n) if f"{t}-{s}" not in seen]
    late = []
    for t in range(TASKS):
        mine = sorted(((min(v), max(v), run, v) for (task, run), v in runs.items() if task == str(t)))
        for (a_first, a_last, a_run, a_ts), (b_first, _, b_run, _) in zip(mine, mine[1:]):
            n_late = sum(1 for x in a_ts if x > b_first)
            if n_late:
                late.append({"task": t, "old_run": a_run, "old_worker": pids.get(a_run.split(".")[0], "?"),
                             "new_run": b_run, "new_worker": pids.get(b_run.split(".")[0], "?"),
                             "late_records": n_late, "last_late_after_ms": a_last - b_first})
    return {"records": TASKS * n, "lost": len(lost), "duplicates": sum(c - 1 for c in seen.values()),
            "task_runs": len(runs), "late_records": sum(x["late_records"] for x in late)}, lost, late


LOG_TS = re.compile(r"^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}) ")


def log_time(line):
    m = LOG_TS.match(line)
    return datetime.datetime.strptime(m.group(1), "%Y-%m-%dT%H:%M:%S.%f").timestamp() if m else None


def stop_times(worker, since, gen, tasks):
    """(seconds from this worker's lease loss after `since` (epoch s) - its first "lost its lease"
    or "lease lost" line, else `since` - to the line "stopped <gen>-<task>" of the last of its
    `tasks` tasks, or None when not all of them were stopped; lines seen)."""
    with open(worker.log_path, errors="replace") as f:
        lines = f.read().splitlines()
    lost = None
    stopped = []
    for line in lines:
        t = log_time(line)
        if t is None or t < since:
            continue
        if lost is None and ("lost its lease" in line or "lease lost" in line):
            lost = t
        m = re.search(rf"\bstopped ({re.escape(gen)}-\d+)\b", line)
        if m:
            stopped.append((t, m.group(1)))
    lost = lost or since
    done = {}
    for t, unit in stopped:
        done.setdefault(unit, t)
    want = [f"{gen}-{k}" for k in tasks]
    if not want:
        return 0.0, 0
    if not all(u in done for u in want):
        return None, len(done)
    return round(max(done[u] for u in want) - lost, 2), len(done)


def owners(w, name):
    status, st = w.rest("GET", f"/connectors/{name}/status", timeout=10)
    if status != 200:
        return {}
    return {t["id"]: (t["state"], t["worker_id"]) for t in st["tasks"]}


def start_cluster(label, bootstrap):
    base = {"backbone": "kafka", "cluster.name": label, "cluster.session.timeout.ms": str(SESSION_MS),
            "cluster.heartbeat.interval.ms": "300", "cluster.lease.margin.ms": "500",
            "offset.flush.interval.ms": "500", "backbone.kafka.bootstrap.servers": bootstrap}
    workers = make_workers(label, base, 3)
    for w in workers:
        w.start(timeout=60)
    return workers


def create_connector(w, gen, topic, n):
    w.ok("POST", "/connectors", {"name": gen, "config": {
        "connector.class": "DatagenSource", "topic": topic, "tasks.max": str(TASKS), "max.records": str(n),
        "rate": str(RATE), "format": "trace", "key.mode": "seq"}})


def all_running(w, gen, allowed):
    o = owners(w, gen)
    return len(o) == TASKS and all(s == "RUNNING" and wid in allowed for s, wid in o.values())


def finish(workers, bootstrap, topic, gen, n, extra):
    pids = {str(w.proc.pid): w.props_id for w in workers}
    def complete():
        recs = read_records(bootstrap, topic)
        summary, lost, late = judge(recs, n, pids)
        return (summary, lost, late) if summary["lost"] == 0 else None
    try:
        summary, lost, late = wait_until(complete, 150, "every record in the topic", 3)
    except AssertionError:
        summary, lost, late = judge(read_records(bootstrap, topic), n, pids)
    print(json.dumps({"test": f"fencing_{MODE}", **extra, **summary}), flush=True)
    for x in late[:10]:
        print(json.dumps({"late": x}), flush=True)
    assert not lost, f"{len(lost)} lost, first {lost[:10]}"
    assert not late, f"{summary['late_records']} record(s) of stopped task runs were appended after their " \
                     f"successor's first append: {late[:5]}"


def test_sigstop():
    bootstrap = os.environ.get("FERRY_KAFKA_BOOTSTRAP", "127.0.0.1:19092")
    n = int(os.environ.get("FERRY_FENCING_RECORDS", "12000"))
    run_id = random.randrange(1 << 30)
    topic, gen = f"ferry-fence-{run_id}", f"fence-{run_id}"
    kafka_tool("create", "--bootstrap", bootstrap, "--topic", topic, "--partitions", str(TASKS),
               "--config", "message.timestamp.type=LogAppendTime")
    workers = start_cluster(f"fence{run_id}", bootstrap)
    for i, w in enumerate(workers):
        w.props_id = f"w{i + 1}"
    w1, w2, w3 = workers
    create_connector(w2, gen, topic, n)
    wait_until(lambda: all_running(w2, gen, {"w1", "w2", "w3"}), 60, "6 tasks RUNNING", 0.2)
    time.sleep(4)  # mid-stream: every task writes ~RATE records/s
    o = owners(w2, gen)
    victim = next(w for w in workers if any(wid == w.props_id for _, wid in o.values()))
    others = [w for w in workers if w is not victim]
    frozen = [t for t, (_, wid) in o.items() if wid == victim.props_id]
    os.kill(victim.proc.pid, signal.SIGSTOP)
    t_stop = time.time()
    try:
        wait_until(lambda: all_running(others[0], gen, {x.props_id for x in others}), 30,
                   f"{victim.props_id}'s tasks RUNNING elsewhere", 0.05)
        moved_s = time.time() - t_stop
        time.sleep(2.5)  # the new owners have written for a while
    finally:
        os.kill(victim.proc.pid, signal.SIGCONT)
    frozen_s = time.time() - t_stop
    finish(workers, bootstrap, topic, gen, n, {"frozen_worker": victim.props_id, "frozen_tasks": frozen,
                                               "moved_after_s": round(moved_s, 2), "frozen_for_s": round(frozen_s, 1)})
    for w in workers:
        w.stop()


def service(cmd, env):
    p = subprocess.run(["bash", SERVICE, cmd, "A"], env={**os.environ, **env}, capture_output=True, timeout=240)
    assert p.returncode == 0, f"kafka {cmd}: {p.stderr.decode()[-1500:]}"
    return p.stderr.decode().strip()


def test_broker_kill9():
    n = int(os.environ.get("FERRY_FENCING_RECORDS", "16000"))
    run_dir = tmpdir("fencing-kafka")
    env = dict(OWN_PORTS, KAFKA_RUN_DIR=os.path.join(run_dir, "run"), KAFKA_HEAP="-Xmx512m -Xms512m")
    bootstrap = f"127.0.0.1:{OWN_PORTS['KAFKA_PORT']}"
    service("start", env)
    workers = []
    try:
        run_id = random.randrange(1 << 30)
        topic, gen = f"ferry-fence-{run_id}", f"fence-{run_id}"
        kafka_tool("create", "--bootstrap", bootstrap, "--topic", topic, "--partitions", str(TASKS),
                   "--config", "message.timestamp.type=LogAppendTime")
        workers = start_cluster(f"fencek{run_id}", bootstrap)
        for i, w in enumerate(workers):
            w.props_id = f"w{i + 1}"
        create_connector(workers[1], gen, topic, n)
        wait_until(lambda: all_running(workers[1], gen, {"w1", "w2", "w3"}), 60, "6 tasks RUNNING", 0.2)
        time.sleep(4)
        o = owners(workers[1], gen)
        ran = {w.props_id: [t for t, (_, wid) in o.items() if wid == w.props_id] for w in workers}
        t_kill = time.time()
        service("kill9", env)
        # Every worker loses its lease; the broker stays down long enough for a flush to it to hang.
        time.sleep(12)
        t_back = time.time()
        service("relaunch", env)
        relaunch_s = time.time() - t_back
        wait_until(lambda: all_running(workers[0], gen, {"w1", "w2", "w3"}), 90, "6 tasks RUNNING again", 0.5)
        stops = {w.props_id: stop_times(w, t_kill, gen, ran[w.props_id]) for w in workers}
        finish(workers, bootstrap, topic, gen, n,
               {"broker_down_s": round(time.time() - t_kill - relaunch_s, 1), "relaunch_s": round(relaunch_s, 1),
                "lease_lost_to_tasks_stopped_s": {k: v[0] for k, v in stops.items()},
                "tasks_run_before": ran})
        slow = {k: v[0] for k, v in stops.items() if v[0] is None or v[0] > STOP_BOUND_S}
        assert not slow, f"tasks stopped later than {STOP_BOUND_S} s after the lease was lost (None: not all " \
                         f"stopped before the broker was back): {slow}"
        for w in workers:
            w.stop()
    finally:
        for w in workers:
            if w.proc and w.proc.poll() is None:
                w.proc.kill()
                w.proc.wait()
        subprocess.run(["bash", SERVICE, "stop", "A"], env={**os.environ, **env}, capture_output=True, timeout=120)


def main():
    assert TOOL, "FERRY_KAFKA_TOOL must name kafka_tool"
    if MODE == "sigstop":
        test_sigstop()
    elif MODE == "broker-kill9":
        test_broker_kill9()
    else:
        raise AssertionError(f"unknown mode {MODE}")


if __name__ == "__main__":
    run(main)
