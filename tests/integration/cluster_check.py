"""Shared by the cluster tests: reads a topic of DatagenSource trace records
("<task>-<seq> <run> <ts>", run = "<pid>.<random>", a new run at every task start) from Kafka or
RocketMQ and checks them: every (task, seq) present, and per task no two runs overlapping in time."""
import json
import os
import random
import socket
import subprocess

from harness import Worker, tmpdir, wait_until


def topic_values(kind, topic, workdir, bootstrap, namesrv):
    if kind == "kafka":
        tool = os.environ.get("FERRY_KAFKA_TOOL", "")
        assert tool, "FERRY_KAFKA_TOOL must name kafka_tool"
        out = os.path.join(workdir, "values.txt")
        p = subprocess.run([tool, "consume", "--bootstrap", bootstrap, "--topic", topic, "--count", "0",
                            "--idle-ms", "3000", "--values-out", out, "--timeout-ms", "120000"],
                           capture_output=True, timeout=200)
        assert p.returncode == 0, p.stderr.decode()[-500:]
        with open(out) as f:
            return f.read().splitlines()
    tool = os.environ.get("FERRY_RMQ_TOOL", "")
    assert tool, "FERRY_RMQ_TOOL must name rmq_interop_tool"
    p = subprocess.run([tool, "consume", "--namesrv", namesrv, "--topic", topic, "--group",
                        f"check-{random.randrange(1 << 30)}", "--from", "first", "--idle-ms", "3000",
                        "--timeout-ms", "120000", "--commit", "false"], capture_output=True, timeout=200)
    assert p.returncode == 0, p.stderr.decode()[-500:]
    return [bytes.fromhex(json.loads(line)["body_hex"]).decode() for line in p.stdout.decode().splitlines()
            if line.strip()]


def parse_trace(lines):
    """-> (seen: {"task-seq": count}, runs: {(task, run): (first ts, last ts)})"""
    seen, runs = {}, {}
    for line in lines:
        parts = line.split()
        if len(parts) != 3:
            continue
        rec, run_id, ts = parts[0], parts[1], int(parts[2])
        seen[rec] = seen.get(rec, 0) + 1
        task = rec.split("-")[0]
        lo, hi = runs.get((task, run_id), (ts, ts))
        runs[(task, run_id)] = (min(lo, ts), max(hi, ts))
    return seen, runs


def wait_complete(kind, topic, workdir, bootstrap, namesrv, tasks, n, timeout=240):
    def complete():
        seen, runs = parse_trace(topic_values(kind, topic, workdir, bootstrap, namesrv))
        return (seen, runs) if len(seen) >= tasks * n else None
    return wait_until(complete, timeout, "every record", 2)


def check_delivery(seen, runs, tasks, n):
    """-> a summary dict; raises AssertionError on a lost record or overlapping runs of a task."""
    lost = [f"{t}-{s}" for t in range(tasks) for s in range(n) if f"{t}-{s}" not in seen]
    dups = sum(v - 1 for v in seen.values())
    overlaps = []
    for t in range(tasks):
        spans = sorted(span for (task, _), span in runs.items() if task == str(t))
        for (a_lo, a_hi), (b_lo, b_hi) in zip(spans, spans[1:]):
            if b_lo < a_hi:
                overlaps.append((t, a_lo, a_hi, b_lo, b_hi))
    summary = {"records": tasks * n, "lost": len(lost), "duplicates": dups, "task_runs": len(runs),
               "overlapping_runs": len(overlaps)}
    assert not lost, f"{len(lost)} lost, first {lost[:10]} ({summary})"
    assert not overlaps, f"two runs of a task overlapped (task, first run lo/hi, next run lo/hi): {overlaps[:5]}"
    return summary


def require_kafka(bootstrap, timeout=5):
    """Fails the test at once, saying how to start it, when the Kafka service is not reachable."""
    host, port = bootstrap.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=timeout).close()
    except OSError as e:
        raise AssertionError(f"Kafka {bootstrap} unreachable ({e}); scripts/services/kafka start")


def make_workers(label, base, n, extra=None, prefix=None):
    """n `ferry distributed` workers with worker.id w1..wn (not started yet). extra(i) adds worker
    keys, prefix(i) a command prefix (e.g. a network namespace) for worker i (0-based)."""
    workers = []
    for i in range(n):
        props = dict(base, **(extra(i) if extra else {}))
        props["worker.id"] = f"w{i + 1}"
        workers.append(Worker(tmpdir(f"{label}-w{i + 1}"), props, mode="distributed",
                              prefix=prefix(i) if prefix else ()))
    return workers
