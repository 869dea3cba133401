"""The tasks of a distributed worker are hosted as a standalone worker's are (control/task_host.h):
two `ferry distributed` workers on Kafka (127.0.0.1:19092), cluster.session.timeout.ms=2000.

  (a) /metrics: for every running task, the worker running it exports every per-task series
      src/runtime/README.md lists ("Metrics", read from the README itself), labelled with the
      connector and the task (before: 2 of them in distributed mode);
  (b) the automatic restart's failure count is reset after a healthy run, as in standalone: a
      TestBlockingSource task that fails (not retriable) after 3.5 s of healthy running, with
      task.restart.backoff.initial.ms=200 and .max.ms=3000, restarts each time after about the
      initial delay (before: 200, 400, 800, 1600 ms... as if the failures were in a row); the gaps
      between a failure and the next start are read from the plugin's events file;
  (c) a normal stop (PUT /stop, then resume, then DELETE) of a running DatagenSource logs no
      error: no "failed ... lost its lease" line, no error line about its tasks, on either worker.

Environment: FERRY_BIN, FERRY_BLOCKING_PLUGIN, FERRY_KAFKA_BOOTSTRAP, FERRY_CLUSTER_TASKS_PARTS (the
parts to check, default "abc"; the connector of (a) always runs, (c) stops it)."""
import json
import os
import random
import re
import time

from cluster_check import make_workers, require_kafka
from harness import run, tmpdir, wait_until

BOOTSTRAP = os.environ.get("FERRY_KAFKA_BOOTSTRAP", "127.0.0.1:19092")
PLUGIN = os.environ.get("FERRY_BLOCKING_PLUGIN", "build/release/test-plugins/blocking/blocking_plugin.so")
README = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "src", "runtime", "README.md")
PARTS = os.environ.get("FERRY_CLUSTER_TASKS_PARTS", "abc")
HEALTHY_MS = 3500
BACKOFF_INITIAL_MS, BACKOFF_MAX_MS = 200, 3000


def readme_task_series():
    """The ferry_task_* names the README's "Per task" paragraph lists (`_x` is short for ferry_task_x;
    a `..._seconds` histogram stands for its _bucket, _sum and _count series)."""
    text = open(README).read()
    para = text[text.index("Per task (labels"):]
    para = para[:para.index("\n\n")]
    names = []
    for tok in re.findall(r"`([a-z_]+)`", para):
        if tok.startswith("ferry_task_") and tok.endswith("_seconds"):
            names += [tok + "_bucket", tok + "_sum", tok + "_count"]  # a histogram's series
        elif tok.startswith("ferry_task_"):
            names.append(tok)
        elif tok.startswith("_"):
            names.append("ferry_task" + tok)
    return names


def series(w):
    status, text = w.rest("GET", "/metrics")
    assert status == 200, status
    out = {}
    for line in text.splitlines():
        m = re.match(r'^(ferry_task_[a-z_]+)\{(.*)\} (\S+)$', line)
        if m:
            labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group(2)))
            out.setdefault((labels.get("connector"), labels.get("task")), set()).add(m.group(1))
    return out


def owners(w, name):
    status, st = w.rest("GET", f"/connectors/{name}/status")
    if status != 200:
        return {}
    return {t["id"]: (t["state"], t["worker_id"]) for t in st["tasks"]}


def main():
    require_kafka(BOOTSTRAP, timeout=3)
    expected = readme_task_series()
    assert len(expected) >= 13, f"the README lists {expected}"
    run_id = random.randrange(1 << 30)
    base = {"backbone": "kafka", "backbone.kafka.bootstrap.servers": BOOTSTRAP, "cluster.name": f"tasks{run_id}",
            "cluster.session.timeout.ms": "2000", "cluster.heartbeat.interval.ms": "300",
            "cluster.lease.margin.ms": "500", "offset.flush.interval.ms": "500",
            "plugin.path": os.path.dirname(os.path.abspath(PLUGIN)),
            "task.restart.backoff.initial.ms": str(BACKOFF_INITIAL_MS),
            "task.restart.backoff.max.ms": str(BACKOFF_MAX_MS)}
    workers = make_workers("cluster-tasks", base, 2)
    for w in workers:
        w.start(timeout=60)
    by_id = {"w1": workers[0], "w2": workers[1]}
    w1 = workers[0]
    wait_until(lambda: len(w1.ok("GET", "/cluster")["workers"]) == 2, 30, "two members", 0.2)

    # (a) every README series for every running task, on the worker that runs it
    gen = f"gen-{run_id}"
    w1.ok("POST", "/connectors", {"name": gen, "config": {
        "connector.class": "DatagenSource", "topic": f"ferry-tasks-{run_id}", "tasks.max": "2",
        "rate": "200", "format": "trace", "key.mode": "seq"}})
    wait_until(lambda: len(owners(w1, gen)) == 2 and all(s == "RUNNING" for s, _ in owners(w1, gen).values()), 60,
               "2 tasks RUNNING", 0.2)
    missing = {}
    for task, (_, wid) in owners(w1, gen).items():
        got = series(by_id[wid]).get((gen, str(task)), set())
        lack = [n for n in expected if n not in got]
        if lack:
            missing[f"{gen}-{task}@{wid}"] = lack
    print(json.dumps({"test": "metrics", "expected_series": len(expected),
                      "missing": {k: len(v) for k, v in missing.items()}}), flush=True)
    assert not missing or "a" not in PARTS, f"per-task series missing in distributed mode: {missing}"

    if "b" in PARTS:
        restart_reset(w1, run_id)
    if "c" in PARTS:
        normal_stop(w1, by_id, gen)
    for w in workers:
        assert w.stop() == 0


def restart_reset(w1, run_id):
    """(b) the failure count resets after a healthy run."""
    events = os.path.join(tmpdir("cluster-tasks-events"), "events.txt")
    flaky = f"flaky-{run_id}"
    w1.ok("POST", "/connectors", {"name": flaky, "config": {
        "connector.class": "TestBlockingSource", "topic": f"ferry-flaky-{run_id}", "poll.wait.ms": "50",
        "fail.in": "poll", "fail.retriable": "false", "fail.after.ms": str(HEALTHY_MS), "events.file": events}})

    def parsed():
        if not os.path.exists(events):
            return []
        return [(l.split()[0], int(l.split()[1])) for l in open(events).read().splitlines() if l.strip()]

    def gaps():
        ev = parsed()
        out, last_fail = [], None
        for kind, ms in ev:
            if kind == "fail":
                last_fail = ms
            elif kind == "start" and last_fail is not None:
                out.append(ms - last_fail)
                last_fail = None
        return out
    g = wait_until(lambda: (lambda x: x if len(x) >= 4 else None)(gaps()), 60, "4 restarts of the flaky task", 0.5)
    print(json.dumps({"test": "restart_reset", "healthy_run_ms": HEALTHY_MS, "backoff_initial_ms": BACKOFF_INITIAL_MS,
                      "backoff_max_ms": BACKOFF_MAX_MS, "restart_gaps_ms": g}), flush=True)
    # Without the reset the 4th gap is at least 1600 ms (200 doubling); with it, the initial delay
    # plus at most one control pass (500 ms) and the task's start.
    assert all(x < 1400 for x in g[:4]), f"restart gaps {g}: the failure count was not reset after healthy runs"
    w1.ok("DELETE", f"/connectors/{flaky}", expect=(204,))



def normal_stop(w1, by_id, gen):
    """(c) a normal stop, resume and delete log no error about the tasks."""
    marks = {wid: len(open(w.log_path, errors="replace").read().splitlines()) for wid, w in by_id.items()}
    time.sleep(1)
    w1.ok("PUT", f"/connectors/{gen}/stop", expect=(202, 204))
    wait_until(lambda: w1.ok("GET", f"/connectors/{gen}/status")["connector"]["state"] == "STOPPED", 30,
               "STOPPED", 0.2)
    time.sleep(2)
    w1.ok("PUT", f"/connectors/{gen}/resume", expect=(202, 204))
    wait_until(lambda: len(owners(w1, gen)) == 2 and all(s == "RUNNING" for s, _ in owners(w1, gen).values()), 60,
               "RUNNING again", 0.2)
    time.sleep(2)
    w1.ok("DELETE", f"/connectors/{gen}", expect=(204,))
    time.sleep(3)
    bad = []
    for wid, w in by_id.items():
        lines = open(w.log_path, errors="replace").read().splitlines()[marks[wid]:]
        bad += [f"{wid}: {l}" for l in lines
                if "lost its lease" in l or (" error " in l and gen in l)]
    print(json.dumps({"test": "normal_stop", "error_lines": len(bad)}), flush=True)
    assert not bad, "a normal stop/delete logged errors:\n" + "\n".join(bad[:10])


if __name__ == "__main__":
    run(main)
