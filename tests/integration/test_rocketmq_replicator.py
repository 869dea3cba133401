"""RocketMQReplicator between two real RocketMQ clusters (A -> B), as a direct connector in a
standalone worker that is kill -9ed mid-way and restarted.

  1. 100,000 sequence-numbered messages with binary bodies (zero bytes and the properties
     separators included), tags T<seq%3>, keys k<seq> and a user property seq=<seq> are produced
     to a 4-queue topic on A (queue seq % 4) by rmq_interop_tool (ferry's client), the same
     deterministic messages the interop tests use;
  2. a consumer group G reads the first part of the topic on A and commits (a consumer that will
     fail over to B later);
  3. the worker starts the replicator (rename A-<topic>, placement preserve, checkpoints of G) and
     is kill -9ed once about 40 % went through, then restarted;
  4. on B a fresh group reads A-<topic>: every seq arrives with identical body bytes, tags, keys
     and seq property, on queue seq % 4 (placement kept), the first copies of each queue in seq
     order; duplicates are counted and reported;
  5. G on B (failed over) resumes from the checkpointed offsets: every message G had not consumed
     on A arrives (0 lost); how many it sees again is reported;
  6. heartbeats were replicated (A-ferry_heartbeats on B has messages).

Needs clusters A and B (scripts/services/rocketmq start all; scripts/test does it for the
`rocketmq` and `integration` labels); fails when either is unreachable.
Environment: FERRY_BIN, FERRY_RMQ_TOOL (rmq_interop_tool), FERRY_REPL_COUNT (default 100000)."""
import json
import os
import random
import socket
import subprocess
import time

from harness import Worker, run, tmpdir, wait_until

NS_A = os.environ.get("FERRY_ROCKETMQ_NAMESRV", "127.0.0.1:19876")
NS_B = os.environ.get("FERRY_ROCKETMQ_NAMESRV_B", "127.0.0.1:29876")
TOOL = os.environ.get("FERRY_RMQ_TOOL", "")
COUNT = int(os.environ.get("FERRY_REPL_COUNT", "100000"))
QUEUES = 4


def expected_body(seed, seq):
    """The interop tests' deterministic body (tests/interop/README.md)."""
    n = 8 + (seq * 131 + seed) % 97
    return bytes(0 if i % 5 == 0 else (seq * 31 + i * 17 + seed * 7) % 256 for i in range(n))


def reachable(ns):
    host, port = ns.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=3).close()
    except OSError as e:
        raise AssertionError(f"RocketMQ NameServer {ns} unreachable ({e}); start both clusters "
                             "with scripts/services/rocketmq start all")


def tool(*args, timeout=600):
    p = subprocess.run([TOOL, *args], capture_output=True, timeout=timeout)
    if p.returncode not in (0,):
        raise AssertionError(f"rmq_interop_tool {' '.join(args)} exited {p.returncode}:\n"
                             f"{p.stderr.decode(errors='replace')[-3000:]}")
    return [json.loads(line) for line in p.stdout.decode().splitlines() if line.strip()]


def consume(ns, topic, group, count=None, idle_ms=5000, timeout_ms=300000):
    args = ["consume", "--namesrv", ns, "--topic", topic, "--group", group, "--from", "first",
            "--idle-ms", str(idle_ms), "--timeout-ms", str(timeout_ms)]
    if count is not None:
        args += ["--count", str(count)]
    return tool(*args, timeout=timeout_ms / 1000 + 60)


def metric(w, name):
    status, body = w.rest("GET", "/metrics")
    total = 0.0
    for line in body.decode().splitlines() if isinstance(body, bytes) else str(body).splitlines():
        if line.startswith(name + "{") or line.startswith(name + " "):
            total += float(line.rsplit(" ", 1)[1])
    return total


def check_message(seed, m):
    seq = int(m["props"]["seq"])
    body = bytes.fromhex(m["body_hex"])
    assert body == expected_body(seed, seq), f"seq {seq}: body differs"
    assert m["tags"] == f"T{seq % 3}", f"seq {seq}: tags {m['tags']!r}"
    assert m["keys"] == f"k{seq}", f"seq {seq}: keys {m['keys']!r}"
    return seq


def main():
    assert TOOL and os.path.exists(TOOL), "FERRY_RMQ_TOOL (rmq_interop_tool) not built"
    reachable(NS_A)
    reachable(NS_B)
    run_id = random.randrange(1 << 30)
    seed = random.randrange(1000)
    topic = f"ferry-repl-{run_id}"
    target = f"A-{topic}"
    group = f"ferry-repl-g-{run_id}"
    tool("create-topic", "--namesrv", NS_A, "--topic", topic, "--queues", str(QUEUES))
    t0 = time.time()
    tool("produce", "--namesrv", NS_A, "--topic", topic, "--count", str(COUNT), "--seed", str(seed),
         "--batch", "32")
    print(f"produced {COUNT} to A in {time.time() - t0:.1f} s", flush=True)

    # G consumes the first part on A and commits.
    g_on_a = consume(NS_A, topic, group, count=COUNT // 5, idle_ms=200)
    consumed_on_a = {int(m["props"]["seq"]) for m in g_on_a}
    assert len(consumed_on_a) >= COUNT // 5, f"G read {len(consumed_on_a)} on A"

    d = tmpdir("rmq-replicator")
    w = Worker(d, {"offset.flush.interval.ms": "1000"})
    w.start()
    w.ok("POST", "/connectors", {"name": f"repl-{run_id}", "config": {
        "connector.class": "RocketMQReplicator", "source.namesrv": NS_A, "target.namesrv": NS_B,
        "source.alias": "A", "target.alias": "B", "topics": topic,
        "topic.rename": "${source.alias}-${topic}", "checkpoint.groups": group,
        "checkpoint.interval.ms": "1000", "source.group": f"ferry-repl-src-{run_id}"}})
    w.wait_running(f"repl-{run_id}", 60)
    t1 = time.time()
    wait_until(lambda: metric(w, "ferry_task_records_out_total") >= COUNT * 0.4, 300,
               "40 % replicated", 0.1)
    w.kill9()
    print(f"killed at {time.time() - t1:.1f} s", flush=True)
    w.start()
    w.wait_running(f"repl-{run_id}", 60)

    # Everything on B, read by a fresh group.
    def on_b():
        rows = consume(NS_B, target, f"ferry-repl-check-{run_id}-{random.randrange(1 << 20)}",
                       idle_ms=3000, timeout_ms=120000)
        seqs = {int(m["props"]["seq"]) for m in rows}
        return rows if len(seqs) >= COUNT else None
    rows = wait_until(on_b, 600, f"all {COUNT} sequence numbers on B", 2.0)
    elapsed = time.time() - t1
    seen = {}
    last_per_queue = {}
    for m in rows:
        seq = check_message(seed, m)
        assert m["queue"] == seq % QUEUES, f"seq {seq} on queue {m['queue']}, expected {seq % QUEUES}"
        assert m["props"].get("FERRY_REPL_PATH") == "A", f"seq {seq}: path {m['props'].get('FERRY_REPL_PATH')!r}"
        if seq not in seen:
            q = m["queue"]
            assert seq > last_per_queue.get(q, -1), f"queue {q}: first copy of {seq} after {last_per_queue[q]}"
            last_per_queue[q] = seq
        seen[seq] = seen.get(seq, 0) + 1
    lost = [s for s in range(COUNT) if s not in seen]
    dups = sum(c - 1 for c in seen.values())
    assert not lost, f"{len(lost)} lost, first {lost[:10]}"

    # G fails over to B: it resumes at the checkpoint and misses nothing it had not consumed.
    time.sleep(3)  # a checkpoint interval after the last replicated batch
    g_on_b = consume(NS_B, target, group, idle_ms=3000)
    g_seqs = {int(m["props"]["seq"]) for m in g_on_b}
    missing = [s for s in range(COUNT) if s not in consumed_on_a and s not in g_seqs]
    again = len([s for s in g_seqs if s in consumed_on_a])
    assert not missing, f"G lost {len(missing)} messages on failover, first {missing[:10]}"
    assert again < len(consumed_on_a), \
        f"G re-read all {again} messages it had consumed on A: no checkpoint was applied"

    beats = consume(NS_B, "A-ferry_heartbeats", f"ferry-repl-hb-{run_id}", idle_ms=1000)
    assert beats, "no heartbeat replicated to B"
    assert w.stop() == 0
    print(json.dumps({"records": COUNT, "lost": 0, "duplicates": dups, "seconds": round(elapsed, 1),
                      "group_consumed_on_a": len(consumed_on_a), "group_reread_on_b": again,
                      "heartbeats_on_b": len(beats)}))


if __name__ == "__main__":
    run(main)
