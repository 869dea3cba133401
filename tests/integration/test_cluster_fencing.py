"""Fencing: a worker without its cluster lease sends nothing more, judged by the broker's append
time (argv[1]: sigstop or broker-kill9; kafka backbone, three `ferry distributed` workers,
cluster.session.timeout.ms=2000, lease margin 500 ms).

The target topic is created first with message.timestamp.type=LogAppendTime, so every record's
timestamp is the moment the broker appended it. DatagenSource (6 tasks, trace format
"<task>-<seq> <run> <ts>", a new run id "<pid>.<random>" at every task start) writes into it.
For every task the runs are ordered by their first append; a record of a run appended after the
first append of the task's next run is a *late record*: a stopped (fenced) instance of the task
still wrote after its successor had started. The cluster's position topic is read too: a
task's position must never move back in append order (a stopped instance committing after its
successor). Asserted: 0 lost (every (task, seq) in the topic; duplicates are counted,
at-least-once allows them), 0 positions moved back, and 0 late records, with one exception:

  sigstop      (the shared Kafka A on $FERRY_KAFKA_BOOTSTRAP) the worker that runs tasks is
               frozen (SIGSTOP) until the others run its tasks and have written, then thawed
               (SIGCONT). At SIGCONT every thread of the process resumes at once, and librdkafka's
               broker threads send the batch that sat in their queue (linger.ms) at the moment of
               the freeze before the worker's fencing thread (which purges ~2 ms after the thaw)
               can stop them: measured 3 records per task, old and new binary alike. Those records
               were made before the freeze; they are reported ("late_records") and tolerated
               unless FERRY_FENCING_STRICT=1. Anything made after the freeze, and any position
               written after the thaw, fails the test.
  broker-kill9 (a broker of this test's own, ports 47092/47093/47094/47095, its own run folder:
               the shared one is never killed) the broker is killed -9 mid-stream and relaunched
               on its data 12 s later: every worker loses its lease; each must stop its tasks
               within a few seconds of that (measured from its log: "lost its lease" to the last
               "stopped <unit>"), without waiting for a flush to the dead broker, and what it had
               queued must never reach the broker once it is back.
  rocketmq-sigstop
               sigstop on the rocketmq backbone (cluster A of scripts/services/rocketmq; append time
               = storeTimestamp). Its client has no linger queue, so little can sit in it at the
               freeze; the same tolerance applies.
  rocketmq-broker-kill9
               broker-kill9 on the rocketmq backbone (cluster A of scripts/services/rocketmq, whose
               broker JVM is kill -9ed and started again on its data 12 s later, as
               test_rocketmq_faults does; its NameServer stays up). The broker's append time is
               each message's storeTimestamp (rmq_interop_tool consume), and the positions are
               read from the cluster's position topic in queue order.

Environment: FERRY_BIN, FERRY_KAFKA_TOOL, FERRY_KAFKA_BOOTSTRAP (sigstop), FERRY_RMQ_TOOL and
FERRY_ROCKETMQ_NAMESRV (rocketmq-broker-kill9), FERRY_FENCING_RECORDS (per task; default 12000
for sigstop, 16000 for the broker kills)."""
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
# sigstop: also fail on the records a frozen worker had handed to librdkafka before the freeze
# (sent by librdkafka's threads at SIGCONT, before any fencing can run: see the module doc).
STRICT = os.environ.get("FERRY_FENCING_STRICT") == "1"


def kafka_tool(*args, timeout=200):
    p = subprocess.run([TOOL, *args], capture_output=True, timeout=timeout)
    assert p.returncode == 0, f"kafka_tool {args[0]}: {p.stderr.decode()[-800:]}"
    return p.stdout.decode()


def read_records(bootstrap, topic, with_keys=False):
    """-> [(append_ts_ms, value)] of every record in the topic, in each partition's offset order
    (with_keys: [(partition, offset, key, value)])."""
    out = kafka_tool("consume", "--bootstrap", bootstrap, "--topic", topic, "--count", "0", "--idle-ms", "4000",
                     "--timeout-ms", "150000")
    recs = []
    for line in out.splitlines():
        if not line.startswith("{"):
            continue
        j = json.loads(line)
        value = bytes.fromhex(j["value_hex"]).decode(errors="replace")
        if with_keys:
            recs.append((j["partition"], j["offset"], bytes.fromhex(j["key_hex"]).decode(errors="replace"), value))
        else:
            recs.append((int(j["ts"]), value))
    return recs


RMQ_TOOL = os.environ.get("FERRY_RMQ_TOOL", "")
NAMESRV = os.environ.get("FERRY_ROCKETMQ_NAMESRV", "127.0.0.1:19876")


def rmq_read_records(topic, with_keys=False):
    """read_records for a RocketMQ topic: every message from the first offset (a fresh group),
    with the broker's storeTimestamp as the append time; with_keys: (queue, offset, key, value),
    the key from the rocketmq backbone's FERRY_KEY property ("x" and the hex of the key)."""
    p = subprocess.run([RMQ_TOOL, "consume", "--namesrv", NAMESRV, "--topic", topic, "--group",
                        f"fence-check-{random.randrange(1 << 30)}", "--from", "first", "--idle-ms", "5000",
                        "--timeout-ms", "150000", "--commit", "false"], capture_output=True, timeout=200)
    assert p.returncode == 0, f"rmq_interop_tool consume {topic}: {p.stderr.decode()[-800:]}"
    recs = []
    for line in p.stdout.decode().splitlines():
        if not line.startswith("{"):
            continue
        j = json.loads(line)
        value = bytes.fromhex(j["body_hex"]).decode(errors="replace")
        if with_keys:
            key = bytes.fromhex(j["props"].get("FERRY_KEY", "x")[1:]).decode(errors="replace")  # "x" + hex
            recs.append(((j["broker"], j["queue"]), j["offset"], key, value))
        else:
            recs.append((int(j["store_ts"]), value))
    return recs


def position_regressions(bootstrap, cluster, gen, reader=None):
    """Positions of `gen` written to the cluster's position topic that move a task's position back
    (in append order): a stopped instance of a task committed after its successor had committed
    further - a write the old owner made without its lease."""
    reader = reader or (lambda topic, with_keys: read_records(bootstrap, topic, with_keys=with_keys))
    recs = reader(f"ferry-cluster-{cluster}-offsets", True)
    last, back = {}, []
    for part, off, key, value in sorted(recs):
        try:
            k = json.loads(key)
            v = json.loads(value) if value else None
        except ValueError:
            continue
        if not isinstance(k, list) or len(k) != 2 or k[0] != gen or not isinstance(v, dict) or "seq" not in v:
            continue
        task, seq = k[1].get("datagen.task"), int(v["seq"])
        if task in last and seq < last[task]:
            back.append({"task": task, "from": last[task], "to": seq, "offset": off})
        last[task] = max(seq, last.get(task, seq))
    return back


def judge(recs, n, pids, made_after_ms=None):
    """Lost records and late records (a run's records appended after its task's next run began)."""
    seen = {}
    runs = {}  # (task, run) -> [append ts]
    for ts, v in recs:
        parts = v.split()
        if len(parts) != 3:
            continue
        seen[parts[0]] = seen.get(parts[0], 0) + 1
        task = parts[0].split("-")[0]
        runs.setdefault((task, parts[1]), []).append((ts, int(parts[2])))
    lost = [f"{t}-{s}" for t in range(TASKS) for s in range(n) if f"{t}-{s}" not in seen]
    late = []
    for t in range(TASKS):
        mine = sorted(((min(x[0] for x in v), max(x[0] for x in v), run, v)
                       for (task, run), v in runs.items() if task == str(t)))
        for (a_first, a_last, a_run, a_recs), (b_first, _, b_run, _) in zip(mine, mine[1:]):
            late_recs = [x for x in a_recs if x[0] > b_first]
            if late_recs:
                late.append({"task": t, "old_run": a_run, "old_worker": pids.get(a_run.split(".")[0], "?"),
                             "new_run": b_run, "new_worker": pids.get(b_run.split(".")[0], "?"),
                             "late_records": len(late_recs), "last_late_after_ms": a_last - b_first,
                             "made_after_freeze": sum(1 for x in late_recs
                                                      if made_after_ms is not None and x[1] >= made_after_ms)})
    return {"records": TASKS * n, "lost": len(lost), "duplicates": sum(c - 1 for c in seen.values()),
            "task_runs": len(runs), "late_records": sum(x["late_records"] for x in late),
            "late_made_after_freeze": sum(x["made_after_freeze"] for x in late)}, lost, late


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
    try:
        status, st = w.rest("GET", f"/connectors/{name}/status", timeout=10)
    except OSError:  # a read that waited for the log longer than the timeout: ask again
        return {}
    if status != 200:
        return {}
    return {t["id"]: (t["state"], t["worker_id"]) for t in st["tasks"]}


def start_cluster(label, bootstrap, backbone="kafka"):
    base = {"backbone": backbone, "cluster.name": label, "cluster.session.timeout.ms": str(SESSION_MS),
            "cluster.heartbeat.interval.ms": "300", "cluster.lease.margin.ms": "500",
            "offset.flush.interval.ms": "500"}
    if backbone == "kafka":
        base["backbone.kafka.bootstrap.servers"] = bootstrap
    else:
        base["backbone.rocketmq.namesrv"] = NAMESRV
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


def finish(workers, bootstrap, topic, gen, n, cluster, extra, late_allowed_before_ms=None, reader=None):
    """Waits for every record, then asserts 0 lost, no position moved back, and 0 late records -
    except, with late_allowed_before_ms, records made before that time (what a frozen worker had
    handed to librdkafka before the freeze: see the module doc). reader(topic, with_keys) reads a
    topic (default: Kafka at `bootstrap`)."""
    reader = reader or (lambda t, with_keys: read_records(bootstrap, t, with_keys=with_keys))
    pids = {str(w.proc.pid): w.props_id for w in workers}
    def complete():
        try:
            recs = reader(topic, False)
        except AssertionError:  # e.g. a restarted broker that has not registered the topic yet
            return None
        summary, lost, late = judge(recs, n, pids, late_allowed_before_ms)
        return (summary, lost, late) if summary["lost"] == 0 else None
    try:
        summary, lost, late = wait_until(complete, 150, "every record in the topic", 3)
    except AssertionError:
        summary, lost, late = judge(reader(topic, False), n, pids, late_allowed_before_ms)
    back = position_regressions(bootstrap, cluster, gen, reader)
    print(json.dumps({"test": f"fencing_{MODE}", **extra, **summary, "positions_moved_back": len(back)}), flush=True)
    for x in late[:10]:
        print(json.dumps({"late": x}), flush=True)
    for x in back[:10]:
        print(json.dumps({"position_moved_back": x}), flush=True)
    assert not lost, f"{len(lost)} lost, first {lost[:10]}"
    assert not back, f"{len(back)} position(s) of stopped task runs were committed after their successor's: {back[:5]}"
    if late_allowed_before_ms is None or STRICT:
        assert not late, f"{summary['late_records']} record(s) of stopped task runs were appended after their " \
                         f"successor's first append: {late[:5]}"
    else:
        assert summary["late_made_after_freeze"] == 0, \
            f"records made after the freeze were appended after the successor's first append: {late[:5]}"


def all_threads_stopped(pid):
    """Whether every thread of the process is stopped (state T or t in /proc/<pid>/task/*/stat)."""
    try:
        for tid in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[0] not in ("T", "t"):
                    return False
    except (FileNotFoundError, ProcessLookupError):
        return False
    return True


def test_sigstop(backbone="kafka"):
    bootstrap = os.environ.get("FERRY_KAFKA_BOOTSTRAP", "127.0.0.1:19092") if backbone == "kafka" else None
    n = int(os.environ.get("FERRY_FENCING_RECORDS", "12000"))
    run_id = random.randrange(1 << 30)
    topic, gen = f"ferry-fence-{run_id}", f"fence-{run_id}"
    if backbone == "kafka":
        kafka_tool("create", "--bootstrap", bootstrap, "--topic", topic, "--partitions", str(TASKS),
                   "--config", "message.timestamp.type=LogAppendTime")
    else:
        p = subprocess.run([RMQ_TOOL, "create-topic", "--namesrv", NAMESRV, "--topic", topic, "--queues",
                            str(TASKS)], capture_output=True, timeout=120)
        assert p.returncode == 0, f"create-topic: {p.stderr.decode()[-800:]}"
    workers = start_cluster(f"fence{run_id}", bootstrap, backbone=backbone)
    for i, w in enumerate(workers):
        w.props_id = f"w{i + 1}"
    w1, w2, w3 = workers
    create_connector(w2, gen, topic, n)
    wait_until(lambda: all_running(w2, gen, {"w1", "w2", "w3"}), 60, "6 tasks RUNNING", 0.2)
    time.sleep(4)  # mid-stream: every task writes ~RATE records/s
    o = wait_until(lambda: owners(w2, gen), 10, "the tasks' owners", 0.2)
    victim = next(w for w in workers if any(wid == w.props_id for _, wid in o.values()))
    others = [w for w in workers if w is not victim]
    frozen = [t for t, (_, wid) in o.items() if wid == victim.props_id]
    t_stop = time.time()
    os.kill(victim.proc.pid, signal.SIGSTOP)
    # The freeze is complete once every thread shows state T; records made before that moment were
    # made before the freeze (a loaded machine takes a few ms to stop every thread), so "made after
    # the freeze" is judged from it, not from the kill.
    t_frozen = wait_until(lambda: all_threads_stopped(victim.proc.pid) and time.time(), 5,
                          f"every thread of {victim.props_id} stopped", 0.001)
    try:
        wait_until(lambda: all_running(others[0], gen, {x.props_id for x in others}), 30,
                   f"{victim.props_id}'s tasks RUNNING elsewhere", 0.05)
        moved_s = time.time() - t_stop
        time.sleep(2.5)  # the new owners have written for a while
    finally:
        os.kill(victim.proc.pid, signal.SIGCONT)
    frozen_s = time.time() - t_stop
    finish(workers, bootstrap, topic, gen, n, f"fence{run_id}",
           {"backbone": backbone, "frozen_worker": victim.props_id, "frozen_tasks": frozen,
            "moved_after_s": round(moved_s, 2), "frozen_for_s": round(frozen_s, 1),
            "freeze_took_ms": round((t_frozen - t_stop) * 1000, 1)},
           late_allowed_before_ms=int(t_frozen * 1000), reader=None if backbone == "kafka" else rmq_read_records)
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
        o = wait_until(lambda: owners(workers[1], gen), 10, "the tasks' owners", 0.2)
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
        finish(workers, bootstrap, topic, gen, n, f"fencek{run_id}",
               {"broker_down_s": round(t_back + relaunch_s - t_kill, 1), "relaunch_s": round(relaunch_s, 1),
                "lease_lost_to_tasks_stopped_s": {k: v[0] for k, v in stops.items()},
                "tasks_run_before": ran})
        check_stop_bound(stops)
        for w in workers:
            w.stop()
    finally:
        kill_workers(workers)
        subprocess.run(["bash", SERVICE, "stop", "A"], env={**os.environ, **env}, capture_output=True, timeout=120)


def check_stop_bound(stops):
    """stops: label -> (seconds from lease loss to the last task stopped, or None; lines)."""
    slow = {k: v[0] for k, v in stops.items() if v[0] is None or v[0] > STOP_BOUND_S}
    assert not slow, f"tasks stopped later than {STOP_BOUND_S} s after the lease was lost (None: not all " \
                     f"stopped before the broker was back): {slow}"


def kill_workers(workers):
    for w in workers:
        if w.proc and w.proc.poll() is None:
            w.proc.kill()
            w.proc.wait()


def fresh(w):
    """The worker's applied cluster state is current (GET /cluster's state_age_ms under 1 s)."""
    try:
        status, c = w.rest("GET", "/cluster", timeout=5)
    except OSError:
        return False
    return status == 200 and isinstance(c, dict) and (c.get("state_age_ms") or 0) < 1000


def test_rocketmq_broker_kill9():
    from test_rocketmq_faults import RUN_DIR, BROKER_ADDR, broker_routed, broker_serving, kill_broker
    n = int(os.environ.get("FERRY_FENCING_RECORDS", "16000"))
    run_id = random.randrange(1 << 30)
    topic, gen = f"ferry-fence-{run_id}", f"fence-{run_id}"
    p = subprocess.run([RMQ_TOOL, "create-topic", "--namesrv", NAMESRV, "--topic", topic, "--queues", str(TASKS)],
                       capture_output=True, timeout=120)
    assert p.returncode == 0, f"create-topic: {p.stderr.decode()[-800:]}"
    workers = start_cluster(f"fencer{run_id}", None, backbone="rocketmq")
    relaunch = None
    killed = None
    try:
        for i, w in enumerate(workers):
            w.props_id = f"w{i + 1}"
        create_connector(workers[1], gen, topic, n)
        # A sink connector too (its consumer group, and a dead-letter producer): its tasks must
        # stop as fast, with no consumer close or dead-letter flush waiting for the dead broker.
        sink = f"{gen}-sink"
        workers[1].ok("POST", "/connectors", {"name": sink, "config": {
            "connector.class": "BlackholeSink", "topics": topic, "tasks.max": "3", "errors.tolerance": "all",
            "errors.deadletterqueue.topic.name": f"{topic}-dlq"}})
        wait_until(lambda: all_running(workers[1], gen, {"w1", "w2", "w3"}), 60, "6 tasks RUNNING", 0.2)
        wait_until(lambda: len(owners(workers[1], sink)) == 3 and
                   all(st == "RUNNING" for st, _ in owners(workers[1], sink).values()), 60, "3 sink tasks RUNNING", 0.2)
        time.sleep(4)
        o = wait_until(lambda: owners(workers[1], gen), 10, "the tasks' owners", 0.2)
        ran = {w.props_id: [t for t, (_, wid) in o.items() if wid == w.props_id] for w in workers}
        so = wait_until(lambda: owners(workers[1], sink), 10, "the sink tasks' owners", 0.2)
        sank = {w.props_id: [t for t, (_, wid) in so.items() if wid == w.props_id] for w in workers}
        # The broker JVM (not the NameServer) kill -9ed, and started again on its data 12 s later.
        t_kill = time.time()
        killed = kill_broker(RUN_DIR)  # the broker must come back even if the test fails meanwhile
        time.sleep(12)
        t_back = time.time()
        relaunch = killed()
        wait_until(lambda: relaunch.poll() is None and broker_serving(BROKER_ADDR) and broker_routed(), 120,
                   "broker serving and registered again", 0.5)
        relaunch_s = time.time() - t_back
        # A worker without its lease answers from its applied state (RUNNING as before the kill):
        # wait until it has caught up with the log again.
        wait_until(lambda: all(fresh(w) for w in workers), 120, "every worker reading the cluster log again", 0.5)
        wait_until(lambda: all_running(workers[0], gen, {"w1", "w2", "w3"}), 120, "6 tasks RUNNING again", 0.5)
        stops = {w.props_id: stop_times(w, t_kill, gen, ran[w.props_id]) for w in workers}
        sink_stops = {w.props_id: stop_times(w, t_kill, sink, sank[w.props_id]) for w in workers}
        finish(workers, None, topic, gen, n, f"fencer{run_id}",
               {"backbone": "rocketmq", "broker_down_s": round(t_back + relaunch_s - t_kill, 1),
                "relaunch_s": round(relaunch_s, 1),
                "lease_lost_to_tasks_stopped_s": {k: v[0] for k, v in stops.items()},
                "lease_lost_to_sink_tasks_stopped_s": {k: v[0] for k, v in sink_stops.items()},
                "tasks_run_before": ran, "sink_tasks_run_before": sank},
               reader=rmq_read_records)
        check_stop_bound({**stops, **{f"{k} (sink)": v for k, v in sink_stops.items()}})
        for w in workers:
            w.stop()
    finally:
        kill_workers(workers)
        if killed is not None and relaunch is None:
            killed()


def main():
    if MODE.startswith("rocketmq-"):
        assert RMQ_TOOL, "FERRY_RMQ_TOOL must name rmq_interop_tool"
        if MODE == "rocketmq-broker-kill9":
            test_rocketmq_broker_kill9()
        elif MODE == "rocketmq-sigstop":
            test_sigstop("rocketmq")
        else:
            raise AssertionError(f"unknown mode {MODE}")
        return
    assert TOOL, "FERRY_KAFKA_TOOL must name kafka_tool"
    if MODE == "sigstop":
        test_sigstop()
    elif MODE == "broker-kill9":
        test_broker_kill9()
    else:
        raise AssertionError(f"unknown mode {MODE}")


if __name__ == "__main__":
    run(main)
