"""The rocketmq-replicate scenario of bench/run: ferry's RocketMQReplicator (cluster A -> B, a
direct task in a standalone worker) against the limit of what B accepts from a raw producer, in
the same run on the same brokers.

Per body size (128 B, 1 KB):
  1. N messages are preloaded into a fresh 4-queue topic on A with rmq_produce_bench (async);
  2. a worker starts a RocketMQReplicator for that topic (from the first offset, no heartbeats);
     the time from the connector POST until the worker reports N records delivered is the
     replication time; the worker's CPU (/proc/<pid>/stat) and peak RSS (VmHWM) are measured;
  3. the limit: rmq_produce_bench sends the same N messages of the same size into a fresh topic
     on B, async (256 in flight, one thread: the replicator's shape) and sync (64 threads, the Java
     benchmark's default); the ratios replicator / raw are reported.
No Java replicator is a peer: none is published on Maven Central (tried
org.apache.rocketmq:rocketmq-replicator 0.1.0 / 1.0.0, rocketmq-connect-replicator 1.0.0,
rocketmq-connect-runtime: not found), so the comparison is against the raw producer limit.

Standard library only; clusters A and B come from scripts/services/rocketmq (started if not
running, stopped at the end only if started here).
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SERVICE = os.path.join(ROOT, "scripts", "services", "rocketmq")
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from harness import Worker, wait_until  # noqa: E402

NS_A = "127.0.0.1:" + os.environ.get("ROCKETMQ_A_NAMESRV_PORT", "19876")
NS_B = "127.0.0.1:" + os.environ.get("ROCKETMQ_B_NAMESRV_PORT", "29876")
SCENARIO = "rocketmq-replicate"
CLK = os.sysconf("SC_CLK_TCK")


def log(msg):
    print(f"bench: {SCENARIO}: {msg}", file=sys.stderr, flush=True)


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK


def hwm(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def produce(binary, ns, topic, size, count, *extra):
    p = subprocess.run([binary, "--namesrv", ns, "--topic", topic, "--size", str(size),
                        "--count", str(count), *extra], capture_output=True, text=True, timeout=600)
    try:
        out = json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise RuntimeError(f"rmq_produce_bench failed ({p.returncode}): {p.stderr[-1500:]}")
    out["exit"] = p.returncode  # non-zero when some sends failed ("failed" says how many)
    return out


def delivered(w, name):
    status, text = w.rest("GET", "/metrics")
    total = 0.0
    for line in (text if isinstance(text, str) else "").splitlines():
        if line.startswith("ferry_task_records_out_total{") and f'connector="{name}"' in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


def replicate(size, count, binary):
    topic = f"ferry-repl-bench-{uuid.uuid4().hex[:8]}"
    pre = produce(binary, NS_A, topic, size, count, "--create-queues", "4", "--mode", "async",
                  "--inflight", "256")
    if pre.get("sent", 0) < count:
        raise RuntimeError(f"preload sent {pre.get('sent')} of {count}")
    d = tempfile.mkdtemp(prefix="ferry-bench-repl-")
    w = Worker(d, {"offset.flush.interval.ms": "1000"})
    w.start()
    try:
        pid = w.proc.pid
        cpu0 = cpu_s(pid)
        t0 = time.time()
        w.ok("POST", "/connectors", {"name": "repl", "config": {
            "connector.class": "RocketMQReplicator", "source.namesrv": NS_A, "target.namesrv": NS_B,
            "source.alias": "A", "target.alias": "B", "topics": topic, "heartbeats.topic": "",
            "source.from": "first", "source.group": f"ferry-bench-{topic}"}})
        wait_until(lambda: delivered(w, "repl") >= count, 900, f"{count} replicated", 0.02)
        elapsed = time.time() - t0
        cpu = cpu_s(pid) - cpu0
        peak = hwm(pid)
    finally:
        w.stop()
        shutil.rmtree(d, ignore_errors=True)
    return {"scenario": SCENARIO, "system": "ferry-replicator", "size": size, "messages": count,
            "seconds": round(elapsed, 3), "msgs_per_s": round(count / elapsed),
            "mb_per_s": round(count * size / elapsed / 1e6, 2),
            "cpu_s_per_million": round(cpu / count * 1e6, 3), "peak_rss_mb": round(peak / 1e6, 1)}


def raw(size, count, binary, mode):
    topic = f"ferry-raw-bench-{uuid.uuid4().hex[:8]}"
    extra = ["--mode", "async", "--inflight", "256"] if mode == "async" else ["--mode", "sync", "--threads", "64"]
    r = produce(binary, NS_B, topic, size, count, "--create-queues", "4", *extra)
    return {"scenario": SCENARIO, "system": f"raw-produce-{mode}", "size": size, "messages": count,
            "sent": r.get("sent"), "failed": r.get("failed"),
            "seconds": r.get("seconds"), "msgs_per_s": r.get("msgs_per_s"),
            "cpu_s_per_million": r.get("cpu_s_per_million"), "peak_rss_mb": r.get("peak_rss_mb")}


def running(c):
    return subprocess.run([SERVICE, "status", c], capture_output=True).returncode == 0


def scenario(binary, messages=200_000, sizes=(128, 1024)):
    """Yields the result objects (see the module docstring)."""
    if not os.access(binary, os.X_OK):
        yield {"scenario": SCENARIO, "error": f"{binary} not built (target rmq_produce_bench)"}
        return
    started = []
    try:
        for c in ("A", "B"):
            if not running(c):
                log(f"starting cluster {c}")
                subprocess.run([SERVICE, "start", c], check=True, stdout=subprocess.DEVNULL)
                started.append(c)
        for size in sizes:
            f = replicate(size, messages, binary)
            yield f
            for mode in ("async", "sync"):
                r = raw(size, messages, binary, mode)
                yield r
                if r.get("msgs_per_s"):
                    yield {"scenario": SCENARIO, "size": size, "ratio": f"replicator/raw-produce-{mode}",
                           "msgs_per_s": round(f["msgs_per_s"] / r["msgs_per_s"], 2)}
    finally:
        for c in started:
            subprocess.run([SERVICE, "stop", c], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
