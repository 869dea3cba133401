"""The rocketmq-replicate scenario of bench/run: ferry's RocketMQReplicator (cluster A -> B, a
direct task in a standalone worker) against the limit of what B accepts from a raw producer, in
the same run on the same brokers.

After an unreported 5 s produce warm-up of each broker, per body size (128 B, 1 KB):
  1. N messages are preloaded into a fresh 4-queue topic on A with rmq_produce_bench (async; a
     short sync top-up if some sends failed), and A's queues are checked to hold exactly N;
  2. a fresh worker (the release `ferry`, embedded backbone, temp data dir, free REST port) gets a
     RocketMQReplicator for that topic (from the first offset, placement preserve, no heartbeats).
     The clock runs from the connector POST until B's copy of the topic holds N messages: progress
     from the worker's own ferry_task_records_out_total (records put to the sink), and once that
     reaches N the sum of B's queue max offsets (GET_MAX_OFFSET, a few-ms remoting call, so the
     end is when B acknowledged them, not when they were handed to the sender). The worker's CPU
     over that window (/proc/<pid>/stat) and its peak RSS (VmHWM) are measured; seconds_to_first
     (POST to the first record put: connector + task start, consumer rebalance, target topic
     creation) is reported apart, with the rate after it. After the clock,
     `mqadmin topicStatus` on B confirms the count once (a JVM, so not used for polling);
  3. the limit: rmq_produce_bench sends the same N messages of the same size into a fresh 4-queue
     topic on B, async (--repl-inflight in flight, one thread) and sync (64 threads, the Java
     benchmark's default); the ratios replicator / raw are reported.
No Java replicator is a peer: none is published on Maven Central (see bench/README.md for the
coordinates tried), so the comparison is against the raw producer limit.

Standard library only; clusters A and B come from scripts/services/rocketmq (started if not
running, stopped at the end only if started here).
"""
import itertools
import json
import os
import shutil
import socket
import struct
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


# --- a minimal RocketMQ remoting client (JSON headers), enough for route + max offsets ---------

_opaque = itertools.count(1)


def _rpc(addr, code, ext, timeout=5.0):
    """One request/response on a fresh connection: (header dict, body bytes)."""
    host, port = addr.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=timeout) as s:
        hdr = json.dumps({"code": code, "language": "PYTHON", "version": 479, "opaque": next(_opaque),
                          "flag": 0, "extFields": {k: str(v) for k, v in ext.items()}}).encode()
        s.sendall(struct.pack(">II", 4 + len(hdr), len(hdr)) + hdr)
        buf = b""
        while len(buf) < 4 or len(buf) < 4 + struct.unpack(">I", buf[:4])[0]:
            chunk = s.recv(65536)
            if not chunk:
                raise ConnectionError(f"{addr} closed the connection")
            buf += chunk
        hl = struct.unpack(">I", buf[4:8])[0] & 0xFFFFFF
        return json.loads(buf[8:8 + hl]), buf[8 + hl:]


def queue_offsets(ns, topic):
    """{(broker, queue): max offset} of the topic's read queues (master brokers), {} without a
    route. GET_ROUTEINFO_BY_TOPIC (105, standard JSON) then GET_MAX_OFFSET (30) per queue."""
    h, body = _rpc(ns, 105, {"topic": topic, "acceptStandardJsonOnly": "true"})
    if h.get("code") != 0:
        return {}
    route = json.loads(body)
    masters = {b["brokerName"]: b["brokerAddrs"].get("0") for b in route.get("brokerDatas", [])}
    out = {}
    for q in route.get("queueDatas", []):
        addr = masters.get(q["brokerName"])
        if not addr:
            continue
        for qid in range(q["readQueueNums"]):
            r, _ = _rpc(addr, 30, {"topic": topic, "queueId": qid})
            if r.get("code") != 0:
                raise RuntimeError(f"GET_MAX_OFFSET {topic}/{qid}: {r.get('remark')}")
            out[(q["brokerName"], qid)] = int(r["extFields"]["offset"])
    return out


def topic_count(ns, topic):
    return sum(queue_offsets(ns, topic).values())


def topic_status_count(ns, topic):
    """Sum of (max - min) offsets from `mqadmin topicStatus` (one JVM launch)."""
    p = subprocess.run([SERVICE, "mqadmin", "topicStatus", "-n", ns, "-t", topic],
                       capture_output=True, text=True, timeout=120)
    rows = [ln.split() for ln in p.stdout.splitlines()]
    rows = [r for r in rows if len(r) >= 4 and r[1].isdigit() and r[2].isdigit() and r[3].isdigit()]
    if not rows:
        return None
    return sum(int(r[3]) - int(r[2]) for r in rows)


# --- the runs ----------------------------------------------------------------------------------

def produce(binary, ns, topic, size, count, *extra):
    p = subprocess.run([binary, "--namesrv", ns, "--topic", topic, "--size", str(size),
                        "--count", str(count), *extra], capture_output=True, text=True, timeout=900)
    try:
        out = json.loads(p.stdout.strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise RuntimeError(f"rmq_produce_bench failed ({p.returncode}): {p.stderr[-1500:]}")
    out["exit"] = p.returncode  # non-zero when some sends failed ("failed" says how many)
    return out


def preload(binary, topic, size, count, inflight):
    """Exactly `count` messages in a fresh 4-queue topic on A (failed sends are topped up)."""
    pre = produce(binary, NS_A, topic, size, count, "--create-queues", "4", "--mode", "async",
                  "--inflight", str(inflight))
    have = topic_count(NS_A, topic)
    for _ in range(5):
        if have >= count:
            break
        log(f"preload: {pre.get('failed')} failed sends, topping up {count - have}")
        produce(binary, NS_A, topic, size, count - have, "--mode", "sync", "--threads", "4")
        have = topic_count(NS_A, topic)
    if have != count:
        raise RuntimeError(f"preload: A holds {have} messages in {topic}, wanted {count}")


def delivered(w, name):
    status, text = w.rest("GET", "/metrics")
    total = 0.0
    for line in (text if isinstance(text, str) else "").splitlines():
        if line.startswith("ferry_task_records_out_total{") and f'connector="{name}"' in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


def replicate(size, count, binary, inflight):
    topic = f"ferry-repl-bench-{uuid.uuid4().hex[:8]}"
    log(f"{size} B: preloading {count} messages into {topic} on A")
    preload(binary, topic, size, count, inflight)
    d = tempfile.mkdtemp(prefix="ferry-bench-repl-")
    w = Worker(d, {"offset.flush.interval.ms": "1000"})
    w.start()
    log(f"{size} B: worker pid {w.proc.pid} on port {w.port}, replicating")
    try:
        pid = w.proc.pid
        cpu0 = cpu_s(pid)
        t0 = time.time()
        w.ok("POST", "/connectors", {"name": "repl", "config": {
            "connector.class": "RocketMQReplicator", "source.namesrv": NS_A, "target.namesrv": NS_B,
            "source.alias": "A", "target.alias": "B", "topics": topic, "heartbeats.topic": "",
            "source.from": "first", "placement": "preserve",
            "source.group": f"ferry-bench-{topic}"}})
        # Progress from the worker's counter (cheap), then the end from B's offsets.
        t_first = None
        deadline = t0 + 900
        while True:
            n = delivered(w, "repl")
            if n > 0 and t_first is None:
                t_first = time.time() - t0
            if n >= count:
                break
            if time.time() > deadline:
                raise RuntimeError(f"replicator: {n} of {count} put to the sink after 900 s")
            time.sleep(0.02)
        t_put = time.time() - t0
        wait_until(lambda: topic_count(NS_B, topic) >= count, 120, f"{count} on B", 0.005)
        elapsed = time.time() - t0
        cpu = cpu_s(pid) - cpu0
        peak = hwm(pid)
        on_b = topic_count(NS_B, topic)
    finally:
        w.stop()
        shutil.rmtree(d, ignore_errors=True)
    confirmed = topic_status_count(NS_B, topic)
    return {"scenario": SCENARIO, "system": "ferry-replicator", "msg_bytes": size, "messages": count,
            "topic": topic, "seconds": round(elapsed, 3), "seconds_put": round(t_put, 3),
            "seconds_to_first": round(t_first, 3),
            "msgs_per_s": round(count / elapsed), "mb_per_s": round(count * size / elapsed / 1e6, 2),
            "msgs_per_s_after_first": round(count / (elapsed - t_first)),
            "cpu_s_per_million": round(cpu / count * 1e6, 3), "peak_rss_mb": round(peak / 1e6, 1),
            "target_count": on_b, "target_count_topicstatus": confirmed}


def raw(size, count, binary, mode, inflight, threads=64):
    topic = f"ferry-raw-bench-{uuid.uuid4().hex[:8]}"
    log(f"{size} B: raw produce into B ({mode})")
    extra = (["--mode", "async", "--inflight", str(inflight)] if mode == "async"
             else ["--mode", "sync", "--threads", str(threads)])
    r = produce(binary, NS_B, topic, size, count, "--create-queues", "4", *extra)
    return {"scenario": SCENARIO, "system": f"raw-produce-{mode}", "msg_bytes": size,
            "concurrency": inflight if mode == "async" else threads, "messages": count,
            "sent": r.get("sent"), "failed": r.get("failed"),
            "seconds": r.get("seconds"), "msgs_per_s": r.get("msgs_per_s"), "mb_per_s": r.get("mb_per_s"),
            "cpu_s_per_million": r.get("cpu_s_per_million"), "peak_rss_mb": r.get("peak_rss_mb")}


def running(c):
    return subprocess.run([SERVICE, "status", c], capture_output=True).returncode == 0


def scenario(binary, messages=200_000, sizes=(128, 1024), inflight=64):
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
        # Unreported warm-up of both brokers (JIT, page cache), as rocketmq-produce does.
        for ns in (NS_A, NS_B):
            log(f"warming up {ns} (5 s)")
            subprocess.run([binary, "--namesrv", ns, "--topic", f"ferry-repl-warmup-{uuid.uuid4().hex[:8]}",
                            "--create-queues", "4", "--duration-s", "5", "--mode", "async",
                            "--inflight", str(inflight)], capture_output=True, timeout=120)
        for size in sizes:
            f = replicate(size, messages, binary, inflight)
            yield f
            raws = {}
            for mode in ("async", "sync"):
                r = raws[mode] = raw(size, messages, binary, mode, inflight)
                yield r
            ratio = {f"msgs_per_s_vs_raw_{m}": round(f["msgs_per_s"] / r["msgs_per_s"], 2)
                     for m, r in raws.items() if r.get("msgs_per_s")}
            ratio.update({f"cpu_s_per_million_raw_{m}_vs_replicator":
                          round(r["cpu_s_per_million"] / f["cpu_s_per_million"], 2)
                          for m, r in raws.items() if r.get("cpu_s_per_million") and f["cpu_s_per_million"]})
            yield {"scenario": SCENARIO, "msg_bytes": size, "ratio": ratio,
                   "raw_failed": {m: r.get("failed") for m, r in raws.items()}}
    finally:
        for c in started:
            subprocess.run([SERVICE, "stop", c], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
