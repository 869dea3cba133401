"""RocketMQSource and RocketMQSink against a real RocketMQ (RocketMQ as an outside system), in a
standalone worker with the embedded backbone:

  (a) FileStreamSource (2,000 lines) -> backbone -> RocketMQSink (topic T1, tag TagA,
      rocketmq.order=key: null keys = one key, so batches go one at a time, in order)
  (b) RocketMQSource (T1, from first, tags TagA) -> backbone -> FileStreamSink
      the output file holds the same 2,000 lines, each once, in order (T1 has one queue);
  (c) a direct connector DatagenSource -> RocketMQSink (sink.* keys) into T2, read back by
      another RocketMQSource -> FileStreamSink: every sequence number arrives;
  (d) a plain consumer (rmq_interop_tool) reads T1 and T2: every message has an id of its own
      (RocketMQSink sends batches; ids shared within a batch were a defect);
  (e) while (b) and (c) run, no RocketMQSource task holds a thread of its own ("task-own"): they
      wait on the worker's shared threads, woken by their consumers.

Needs cluster A (NameServer $FERRY_ROCKETMQ_NAMESRV, default 127.0.0.1:19876), which
scripts/test starts for the `rocketmq` / `integration` labels; fails when it is unreachable.
Topics and groups are fresh per run. Topics are created with mqadmin (scripts/services/rocketmq)."""
import json
import os
import random
import socket
import subprocess

from harness import Worker, run, thread_names, tmpdir, wait_until

NAMESRV = os.environ.get("FERRY_ROCKETMQ_NAMESRV", "127.0.0.1:19876")
CLUSTER = os.environ.get("FERRY_ROCKETMQ_CLUSTER", "ferry-a")
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
LINES = 2000
GENERATED = 1000


def read_lines(path):
    try:
        with open(path, "rb") as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return []


def create_topic(topic, queues):
    cmd = [os.path.join(ROOT, "scripts", "services", "rocketmq"), "mqadmin", "updateTopic",
           "-n", NAMESRV, "-c", CLUSTER, "-t", topic, "-r", str(queues), "-w", str(queues)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    if p.returncode != 0 or "success" not in p.stdout.lower():
        raise AssertionError(f"mqadmin updateTopic {topic} failed ({p.returncode}):\n"
                             f"{p.stdout}\n{p.stderr}")


def main():
    host, port = NAMESRV.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=3).close()
    except OSError as e:
        raise AssertionError(f"RocketMQ NameServer {NAMESRV} unreachable ({e}); start it with "
                             "scripts/services/rocketmq start")
    run_id = random.randrange(1 << 30)
    t1, t2 = f"ferry-conn-a-{run_id}", f"ferry-conn-b-{run_id}"
    create_topic(t1, 1)
    create_topic(t2, 2)

    d = tmpdir("rmq-connectors")
    src_file = os.path.join(d, "in.txt")
    out_file = os.path.join(d, "out.txt")
    gen_out = os.path.join(d, "gen-out.txt")
    lines = [f"line {i} {'x' * (i % 37)}".encode() for i in range(LINES)]
    with open(src_file, "wb") as f:
        f.write(b"\n".join(lines) + b"\n")

    w = Worker(d)
    w.start()
    # (a) file -> backbone -> RocketMQ T1 (tag TagA)
    w.ok("POST", "/connectors", {"name": f"file-in-{run_id}", "config": {
        "connector.class": "FileStreamSource", "file": src_file, "topic": f"in-{run_id}"}})
    w.ok("POST", "/connectors", {"name": f"rmq-out-{run_id}", "config": {
        "connector.class": "RocketMQSink", "topics": f"in-{run_id}", "rocketmq.namesrv": NAMESRV,
        "rocketmq.topic": t1, "rocketmq.tag": "TagA", "rocketmq.order": "key"}})
    # (b) RocketMQ T1 -> backbone -> file
    w.ok("POST", "/connectors", {"name": f"rmq-in-{run_id}", "config": {
        "connector.class": "rocketmq-source", "rocketmq.namesrv": NAMESRV, "rocketmq.topics": t1,
        "rocketmq.tags": "TagA", "rocketmq.from": "first", "topic": f"out-{run_id}"}})
    w.ok("POST", "/connectors", {"name": f"file-out-{run_id}", "config": {
        "connector.class": "FileStreamSink", "topics": f"out-{run_id}", "file": out_file}})
    for name in (f"file-in-{run_id}", f"rmq-out-{run_id}", f"rmq-in-{run_id}",
                 f"file-out-{run_id}"):
        w.wait_running(name, 60)
    wait_until(lambda: len(read_lines(out_file)) >= LINES, 120, f"{LINES} lines in {out_file}", 0.2)
    got = read_lines(out_file)
    assert len(got) == LINES, f"{len(got)} lines, expected {LINES} (duplicates?)"
    first_bad = next((i for i in range(LINES) if got[i] != lines[i]), None)
    assert first_bad is None, f"line {first_bad}: {got[first_bad]!r} != {lines[first_bad]!r}"

    # (c) direct: datagen -> RocketMQ T2, read back through a second source
    w.ok("POST", "/connectors", {"name": f"gen-{run_id}", "config": {
        "connector.class": "DatagenSource", "topic": "unused", "format": "string",
        "max.records": str(GENERATED), "tasks.max": "1",
        "sink.connector.class": "RocketMQSink", "sink.rocketmq.namesrv": NAMESRV,
        "sink.rocketmq.topic": t2}})
    w.ok("POST", "/connectors", {"name": f"rmq-in2-{run_id}", "config": {
        "connector.class": "RocketMQSource", "rocketmq.namesrv": NAMESRV, "rocketmq.topics": t2,
        "rocketmq.from": "first", "topic": f"gen-out-{run_id}", "tasks.max": "2"}})
    w.ok("POST", "/connectors", {"name": f"file-gen-{run_id}", "config": {
        "connector.class": "FileStreamSink", "topics": f"gen-out-{run_id}", "file": gen_out}})
    w.wait_running(f"gen-{run_id}", 60)

    def all_seqs():
        seen = set(read_lines(gen_out))
        return all(b"0-%d" % i in seen for i in range(GENERATED))
    wait_until(all_seqs, 120, f"{GENERATED} generated records read back from RocketMQ", 0.2)
    assert len(read_lines(out_file)) == LINES, "pipeline (b) wrote extra lines"
    # (e) RocketMQSource tasks (3 of them run now) wait on the worker's shared threads, woken by
    # their consumers: none holds a thread of its own (a blocking source's "task-own").
    names = thread_names(w.proc.pid)
    assert "task-own" not in names, f"a RocketMQSource task runs on a thread of its own: {sorted(names)}"
    assert w.stop() == 0

    # (d) every message RocketMQSink wrote (in batches) carries an id of its own, read back by a
    # plain consumer: ids shared inside a batch would make id-based de-duplication drop data.
    ids = []
    for topic, n in ((t1, LINES), (t2, GENERATED)):
        msgs = consume_all(topic, f"ferry-ids-{run_id}", n)
        assert len(msgs) >= n, f"{len(msgs)} messages in {topic}, expected {n}"
        distinct = {m["msg_id"] for m in msgs}
        assert "" not in distinct, f"a message in {topic} has no id"
        assert len(distinct) == len(msgs), \
            f"{topic}: {len(msgs)} messages share {len(distinct)} distinct message ids"
        ids.append(len(distinct))
    print(f"{LINES} lines file->RocketMQ->file in order, {GENERATED} datagen records direct, "
          f"{ids[0]} + {ids[1]} distinct message ids")


def consume_all(topic, group, count):
    """Every message of the topic, read from the first offset by rmq_interop_tool."""
    tool = os.environ.get("FERRY_RMQ_TOOL", "")
    assert tool, "FERRY_RMQ_TOOL (rmq_interop_tool) is not set"
    p = subprocess.run([tool, "consume", "--namesrv", NAMESRV, "--topic", topic, "--group", group,
                        "--count", str(count), "--idle-ms", "2000", "--timeout-ms", "60000"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, f"rmq_interop_tool consume {topic} exited {p.returncode}: {p.stderr}"
    return [json.loads(line) for line in p.stdout.splitlines() if line.strip()]


if __name__ == "__main__":
    run(main)
