#!/usr/bin/env python3
"""Tasks share the worker's task threads, and a blocked task does not stall the others.

One standalone worker with task.threads=2 runs:
  - two tasks wedged for good in start() on the executor's shared threads (TestBlockingSource,
    block.in=start, block.ms=-1): without moving blocked steps off the shared threads, these two
    would hold both and nothing else would ever run;
  - 8 DatagenSource connectors of 50 tasks each (400 tasks, 5 records/s per task);
  - 8 FileStreamSink connectors (one per datagen topic) and 4 BlackholeSink connectors of 25 tasks
    each on four of the topics (108 sink tasks, most of them idle: a topic has fewer queues than
    25): sink tasks whose backbone consumer wakes them (Consumer::setWaker) poll on the shared
    threads instead of waiting in poll() on a thread each.
Checked:
  - every one of the 400 datagen tasks is RUNNING and has records acknowledged by the backbone
    (ferry_task_records_out_total > 0 for each), within 30 s of the last POST;
  - each task's records arrive in sequence at the far end: a FileStreamSink reads the topic and
    every task's sequence numbers it holds are 0..n-1 with no gap;
  - every BlackholeSink task is RUNNING and together they took records;
  - the worker runs on < 100 threads (a thread per task would be > 500) and /metrics shows the
    two wedged steps as blocked (ferry_worker_task_threads_blocked >= 2).
"""
import os
import re
import sys
import time
import urllib.request

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from harness import Worker, tmpdir, wait_until  # noqa: E402

PLUGIN = os.environ.get("FERRY_BLOCKING_PLUGIN", "build/release/test-plugins/blocking/blocking_plugin.so")
CONNECTORS, TASKS = 8, 50
HOLES, HOLE_TASKS = 4, 25


def metrics(w):
    try:
        text = urllib.request.urlopen(f"http://127.0.0.1:{w.port}/metrics", timeout=10).read().decode()
    except OSError as e:  # a worker busy starting hundreds of threads may drop a scrape: asked again
        print(f"/metrics: {e}", flush=True)
        return {}
    out = {}
    for line in text.splitlines():
        if line.startswith("#") or " " not in line:
            continue
        k, v = line.rsplit(" ", 1)
        out[k] = float(v)
    return out


def threads(pid):
    return len(os.listdir(f"/proc/{pid}/task"))


def main():
    d = tmpdir("task-threads")
    out = os.path.join(d, "out")
    w = Worker(d, {"task.threads": "2", "tasks.max.limit": "1000",
                   "plugin.path": os.path.dirname(os.path.abspath(PLUGIN))})
    w.start()
    try:
        for i in range(2):
            w.ok("POST", "/connectors", {"name": f"wedged{i}", "config": {
                "connector.class": "TestBlockingSource", "topic": "x", "block.in": "start", "block.ms": "-1",
                "block.marker": os.path.join(d, f"marker{i}")}})
        wait_until(lambda: all(os.path.exists(os.path.join(d, f"marker{i}")) for i in range(2)), 15,
                   "both wedged tasks inside start()")
        for c in range(CONNECTORS):
            w.ok("POST", "/connectors", {"name": f"far{c}", "config": {
                "connector.class": "FileStreamSink", "topics": f"gen{c}", "file": f"{out}.{c}"}})
        for c in range(HOLES):
            w.ok("POST", "/connectors", {"name": f"hole{c}", "config": {
                "connector.class": "BlackholeSink", "topics": f"gen{c}", "tasks.max": str(HOLE_TASKS)}})
        for c in range(CONNECTORS):
            w.ok("POST", "/connectors", {"name": f"gen{c}", "config": {
                "connector.class": "DatagenSource", "topic": f"gen{c}", "tasks.max": str(TASKS), "rate": "5",
                "format": "json"}})
        posted = time.time()

        pattern = re.compile(r'^ferry_task_records_out_total\{connector="(gen\d+)",task="(\d+)"\}$')

        def all_flowing():
            m = metrics(w)
            flowing = {(mm.group(1), mm.group(2)) for k, v in m.items() if (mm := pattern.match(k)) and v > 0}
            return len(flowing) == CONNECTORS * TASKS and m
        m = wait_until(all_flowing, 30, f"records out of all {CONNECTORS * TASKS} datagen tasks")
        flowing_s = time.time() - posted
        n_threads = threads(w.proc.pid)
        blocked = m.get("ferry_worker_task_threads_blocked", -1)
        print(f"all {CONNECTORS * TASKS} tasks flowing {flowing_s:.1f} s after the last POST; worker threads "
              f"{n_threads}; task threads {m.get('ferry_worker_task_threads')}, blocked {blocked}", flush=True)
        for c in range(CONNECTORS):
            status, s = w.rest("GET", f"/connectors/gen{c}/status")
            states = [t["state"] for t in s["tasks"]]
            assert states == ["RUNNING"] * TASKS, (c, states)
        for c in range(HOLES):
            status, s = w.rest("GET", f"/connectors/hole{c}/status")
            states = [t["state"] for t in s["tasks"]]
            assert states == ["RUNNING"] * HOLE_TASKS, (f"hole{c}", states)
        hole = re.compile(r'^ferry_task_records_out_total\{connector="hole\d+",task="\d+"\}$')
        taken = wait_until(lambda: sum(v for k, v in metrics(w).items() if hole.match(k)), 30,
                           "records taken by the BlackholeSink tasks")
        print(f"{HOLES * HOLE_TASKS} BlackholeSink tasks RUNNING, {taken:.0f} records taken", flush=True)
        for i in range(2):
            status, s = w.rest("GET", f"/connectors/wedged{i}/status")
            assert s["tasks"][0]["state"] != "RUNNING", s  # still inside start()
        n_tasks = CONNECTORS * TASKS + 2 + CONNECTORS + HOLES * HOLE_TASKS
        assert n_threads < 100, f"{n_threads} threads for {n_tasks} tasks: not shared"
        assert blocked >= 2, f"ferry_worker_task_threads_blocked={blocked}, want the 2 wedged starts"
        blocked_steps = m.get("ferry_worker_task_steps_blocked_total", -1)
        assert blocked_steps >= 2, f"ferry_worker_task_steps_blocked_total={blocked_steps}, want the 2 wedged starts"

        # The far end holds every task's records in sequence (json values {"task":t,"seq":n,...}),
        # one file per connector: per task, the sequence numbers 0..k without a gap.
        time.sleep(2)
        value = re.compile(r'"task":(\d+),"seq":(\d+)')
        total = 0
        for c in range(CONNECTORS):
            seqs = {}
            with open(f"{out}.{c}") as f:
                for line in f:
                    mm = value.search(line)
                    assert mm, line
                    seqs.setdefault(int(mm.group(1)), []).append(int(mm.group(2)))
            assert sorted(seqs) == list(range(TASKS)), (c, sorted(seqs))
            for t, got in seqs.items():
                assert sorted(set(got)) == list(range(max(got) + 1)), f"gen{c} task {t}: a gap in {sorted(got)[:30]}"
                total += len(got)
        print(f"far end: {total} records, every task's sequence without a gap")
    finally:
        w.stop(timeout=60) if w.proc and w.proc.poll() is None else None


if __name__ == "__main__":
    main()
    print("PASS")
