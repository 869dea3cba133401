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
     and seq property and the message id (UNIQ_KEY) the send to A returned — ids are distinct
     though A was written in batches of 32 —, on queue seq % 4 (placement kept), the first copies
     of each queue in seq order; duplicates are counted and reported;
  5. G on B (failed over) resumes from the checkpointed offsets: every message G had not consumed
     on A arrives (0 lost); how many it sees again is reported;
  6. heartbeats were replicated (A-ferry_heartbeats on B has messages);
  7. B's broker is kill -9ed and restarted while 20,000 more messages stream through (single
     synchronous sends to A): the task reports the outage (retries, or FAILED and restarted),
     resumes by itself, and every one of them arrives on B with its id — 0 lost, first copies
     in order.

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
from test_rocketmq_faults import restart_broker

NS_A = os.environ.get("FERRY_ROCKETMQ_NAMESRV", "127.0.0.1:19876")
NS_B = os.environ.get("FERRY_ROCKETMQ_NAMESRV_B", "127.0.0.1:29876")
TOOL = os.environ.get("FERRY_RMQ_TOOL", "")
COUNT = int(os.environ.get("FERRY_REPL_COUNT", "100000"))
QUEUES = 4
RUN_DIR_B = os.environ.get("FERRY_ROCKETMQ_RUN_DIR_B", os.path.join(os.path.expanduser(
    "~/.cache/ferry-peers/rocketmq-" + os.environ.get("ROCKETMQ_VERSION", "5.3.3")), "run-b"))
BROKER_B = os.environ.get("FERRY_ROCKETMQ_BROKER_B", "127.0.0.1:30911")
STREAM = int(os.environ.get("FERRY_REPL_STREAM", "20000"))


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


def tool(*args, timeout=600, env=None):
    p = subprocess.run([TOOL, *args], capture_output=True, timeout=timeout, env=env)
    if p.returncode not in (0,):
        raise AssertionError(f"rmq_interop_tool {' '.join(args)} exited {p.returncode}:\n"
                             f"{p.stderr.decode(errors='replace')[-3000:]}")
    return [json.loads(line) for line in p.stdout.decode().splitlines() if line.strip()]


def consume(ns, topic, group, count=None, idle_ms=5000, timeout_ms=300000, exact=False, env=None):
    args = ["consume", "--namesrv", ns, "--topic", topic, "--group", group, "--from", "first",
            "--idle-ms", str(idle_ms), "--timeout-ms", str(timeout_ms)]
    if count is not None:
        args += ["--count", str(count)]
    if exact:
        args.append("--exact")
    return tool(*args, timeout=timeout_ms / 1000 + 60, env=env)


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
    sent = tool("produce", "--namesrv", NS_A, "--topic", topic, "--count", str(COUNT), "--seed",
                str(seed), "--batch", "32")
    print(f"produced {COUNT} to A in {time.time() - t0:.1f} s", flush=True)
    # The message id each send returned: one per message, batches included.
    id_of = {int(r["seq"]): r["msg_id"] for r in sent}
    assert len(id_of) == COUNT, f"{len(id_of)} send results for {COUNT} messages"
    distinct = len(set(id_of.values()))
    assert distinct == COUNT, f"{distinct} distinct message ids for {COUNT} messages sent in batches"

    # G consumes the first part on A and commits.
    g_on_a = consume(NS_A, topic, group, count=COUNT // 5, exact=True)
    consumed_on_a = {int(m["props"]["seq"]) for m in g_on_a}
    assert len(consumed_on_a) == COUNT // 5, f"G read {len(consumed_on_a)} on A, expected {COUNT // 5}"
    for m in g_on_a:  # stored on A with the id the send returned
        seq = int(m["props"]["seq"])
        assert m["msg_id"] == id_of[seq], f"seq {seq} on A: id {m['msg_id']}, sent as {id_of[seq]}"

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
        assert m["msg_id"] == id_of[seq], \
            f"seq {seq}: replicated with id {m['msg_id']}, sent to A as {id_of[seq]}"
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
    assert again < len(consumed_on_a) // 2, \
        f"G re-read {again} of the {len(consumed_on_a)} messages it had consumed on A: the " \
        "checkpoint was not applied"

    beats = consume(NS_B, "A-ferry_heartbeats", f"ferry-repl-hb-{run_id}", idle_ms=1000)
    assert beats, "no heartbeat replicated to B"

    # 7. B's broker restarted mid-stream.
    retries_before = metric(w, "ferry_task_retries_total")
    out_before = metric(w, "ferry_task_records_out_total")
    stream_out = open(os.path.join(d, "stream-sends.jsonl"), "w+")
    producer = subprocess.Popen([TOOL, "produce", "--namesrv", NS_A, "--topic", topic, "--count", str(STREAM),
                                 "--seed", str(seed), "--first-seq", str(COUNT)],
                                stdout=stream_out, stderr=subprocess.PIPE)
    # Killed once the replicator has passed a quarter of the stream on (the counter also holds
    # everything replicated before, so it is compared with its value at the stream's start).
    wait_until(lambda: metric(w, "ferry_task_records_out_total") >= out_before + STREAM // 4
               or producer.poll() is not None, 120, "the stream flowing", 0.05)
    assert producer.poll() is None, "the stream ended before the broker kill; raise FERRY_REPL_STREAM"
    down_s, _ = restart_broker(RUN_DIR_B, BROKER_B, NS_B)
    assert producer.wait(300) == 0, f"producer failed: {producer.stderr.read().decode()[-2000:]}"
    stream_out.seek(0)
    for line in stream_out:
        if line.strip():
            r = json.loads(line)
            id_of[int(r["seq"])] = r["msg_id"]
    stream_out.close()
    total = COUNT + STREAM

    def streamed():
        try:
            rows = consume(NS_B, target, f"ferry-repl-check2-{run_id}-{random.randrange(1 << 20)}",
                           idle_ms=3000, timeout_ms=180000)
        except AssertionError as e:  # the restarted broker may not have re-registered the topic yet
            print(f"not yet readable: {str(e)[:300]}", flush=True)
            return None
        seqs = {int(m["props"]["seq"]) for m in rows}
        return rows if all(s in seqs for s in range(COUNT, total)) else None
    rows = wait_until(streamed, 600, f"the {STREAM} streamed messages on B", 2.0)
    seen2, last2 = {}, {}
    for m in rows:
        seq = check_message(seed, m)
        if seq < COUNT:
            continue
        assert m["msg_id"] == id_of.get(seq), \
            f"seq {seq}: replicated with id {m['msg_id']}, sent to A as {id_of.get(seq)}"
        if seq not in seen2:
            q = m["queue"]
            assert seq > last2.get(q, -1), f"queue {q}: first copy of {seq} after {last2[q]} (after the restart)"
            last2[q] = seq
        seen2[seq] = seen2.get(seq, 0) + 1
    log_text = open(w.log_path, errors="replace").read()
    retried = metric(w, "ferry_task_retries_total") - retries_before
    # A short outage may be absorbed by the producer's own retries (its sends wait for the
    # reconnect): then the lost connection is the trace.
    saw_outage = retried > 0 or "FAILED" in log_text or "retriable" in log_text.lower() \
        or "unavailable" in log_text.lower() or "timeout" in log_text.lower() \
        or f"connection to {BROKER_B} lost" in log_text
    assert saw_outage, "the broker outage left no trace (retries metric, worker log)"
    assert w.stop() == 0
    print(json.dumps({"records": COUNT, "lost": 0, "duplicates": dups, "seconds": round(elapsed, 1),
                      "ids_kept": True,
                      "group_consumed_on_a": len(consumed_on_a), "group_reread_on_b": again,
                      "heartbeats_on_b": len(beats), "stream": STREAM, "stream_lost": 0,
                      "stream_duplicates": sum(c - 1 for c in seen2.values()),
                      "broker_b_down_s": round(down_s, 1), "retries_during_outage": retried}))


if __name__ == "__main__":
    run(main)
