"""Exactly-once sources on the kafka backbone (cluster A of scripts/services/kafka, 127.0.0.1:19092):
a standalone worker with backbone=kafka and exactly.once.source.support=enabled, where every
source task writes its records and its positions (to offset.storage.topic) in one transaction.

  (a) DatagenSource, 2 tasks x N sequence-numbered records (transaction.boundary=poll), the
      worker kill -9ed twice mid-way and started again: a read_committed consumer of the topic
      sees every (task, seq) exactly once - 0 lost, 0 duplicated; the aborted remains of the
      killed transactions are counted from the topic's end offsets;
  (b) zombie fencing (transaction.boundary=interval): while worker 1 runs a connector, worker 2
      (its own data.dir, the same Kafka and offset.storage.topic) starts the same connector: its
      task fences worker 1's, which fails naming the fencing and writes nothing more; worker 2
      finishes from worker 1's last committed positions: every seq exactly once;
  (c) the positions are Kafka Connect's offsets-topic records (key ["<connector>", {partition}],
      value {offset}) and GET /connectors/<c>/offsets serves them;
  (d) exactly.once.source.support=enabled with the embedded backbone: the worker refuses to start,
      naming the key.

Needs Kafka (scripts/test starts it for the `kafka` label). Environment: FERRY_BIN,
FERRY_KAFKA_TOOL, FERRY_KAFKA_BOOTSTRAP, FERRY_EOS_RECORDS (per task, default 100000)."""
import json
import os
import random
import socket
import subprocess
import time

from harness import FERRY_BIN, Worker, run, tmpdir, wait_until

BOOTSTRAP = os.environ.get("FERRY_KAFKA_BOOTSTRAP", "127.0.0.1:19092")
TOOL = os.environ.get("FERRY_KAFKA_TOOL", "")
N = int(os.environ.get("FERRY_EOS_RECORDS", "100000"))


def tool(*args, timeout=180):
    p = subprocess.run([TOOL, *args, "--bootstrap", BOOTSTRAP], capture_output=True, timeout=timeout)
    return p


def end_of(topic):
    p = tool("ends", "--topic", topic, timeout=60)
    assert p.returncode == 0, p.stderr.decode()[-500:]
    return json.loads(p.stdout.decode())["end"]


def committed_values(topic, workdir, idle_ms=6000):
    """Every value a read_committed consumer (librdkafka's default) reads from topic."""
    out = os.path.join(workdir, f"values-{random.randrange(1 << 30)}.txt")
    p = tool("consume", "--topic", topic, "--count", "0", "--idle-ms", str(idle_ms), "--values-out", out,
             "--timeout-ms", "300000", timeout=400)
    assert p.returncode == 0, f"kafka_tool consume: {p.stderr.decode()[-800:]}"
    with open(out, "rb") as f:
        return [line.rstrip(b"\n").decode() for line in f if line.strip()]


def tally(values, tasks, n):
    seen = {}
    for v in values:
        seen[v] = seen.get(v, 0) + 1
    want = [f"{t}-{s}" for t in range(tasks) for s in range(n)]
    lost = [w for w in want if w not in seen]
    dups = sum(c - 1 for c in seen.values())
    extra = [v for v in seen if v not in set(want)] if len(seen) > len(want) - len(lost) else []
    return lost, dups, extra


def wait_committed(topic, workdir, expected, timeout):
    deadline = time.time() + timeout
    values = []
    while time.time() < deadline:
        values = committed_values(topic, workdir, idle_ms=3000)
        if len(values) >= expected:
            return values
        time.sleep(2)
    return values


def main():
    assert TOOL, "FERRY_KAFKA_TOOL must name kafka_tool"
    host, port = BOOTSTRAP.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=3).close()
    except OSError as e:
        raise AssertionError(f"Kafka {BOOTSTRAP} unreachable ({e}); scripts/services/kafka start")
    run_id = random.randrange(1 << 30)
    positions_topic = f"ferry-eos-offsets-{run_id}"
    eos = {"backbone": "kafka", "backbone.kafka.bootstrap.servers": BOOTSTRAP,
           "exactly.once.source.support": "enabled", "offset.storage.topic": positions_topic}

    # (d) refused without kafka
    d0 = tmpdir("eos-refused")
    w0 = Worker(d0, {"exactly.once.source.support": "enabled"})
    p = subprocess.run([FERRY_BIN, "standalone", w0.props], capture_output=True, timeout=30)
    err = (p.stdout + p.stderr).decode()
    assert p.returncode != 0 and "exactly.once.source.support" in err and "backbone=kafka" in err, \
        f"(d) exit {p.returncode}: {err[-500:]}"
    print(json.dumps({"test": "refused_without_kafka", "exit": p.returncode}), flush=True)

    # (a) kill -9 twice
    d = tmpdir("kafka-eos")
    topic = f"ferry-eos-{run_id}"
    gen = f"eosgen-{run_id}"
    w = Worker(d, eos)
    w.start(timeout=60)
    w.ok("POST", "/connectors", {"name": gen, "config": {
        "connector.class": "DatagenSource", "topic": topic, "tasks.max": "2", "max.records": str(N),
        "rate": "15000", "format": "string", "key.mode": "seq", "exactly.once.support": "required"}})
    t0 = time.time()
    kills = []
    for frac in (0.3, 0.6):
        wait_until(lambda: end_of(topic) >= int(2 * N * frac), 180, f"{frac:.0%} written", 0.3)
        w.kill9()
        kills.append(end_of(topic))
        w.start(timeout=60)
    values = wait_committed(topic, d, 2 * N, 300)
    lost, dups, extra = tally(values, 2, N)
    written = end_of(topic)
    print(json.dumps({"test": "kill9_twice", "tasks": 2, "records": 2 * N, "read_committed": len(values),
                      "lost": len(lost), "duplicates": dups, "unexpected": len(extra),
                      "topic_end_offsets_incl_aborted_and_markers": written, "ends_at_kills": kills,
                      "seconds": round(time.time() - t0, 1)}), flush=True)
    assert not lost, f"(a) {len(lost)} lost, first {lost[:10]}"
    assert dups == 0, f"(a) {dups} duplicates seen by a read_committed consumer"
    assert not extra, f"(a) unexpected values {extra[:5]}"
    st = w.ok("GET", f"/connectors/{gen}/status")
    assert all(t["state"] == "RUNNING" for t in st["tasks"]), st

    # (c) positions: REST and the topic's records
    offs = w.ok("GET", f"/connectors/{gen}/offsets")["offsets"]
    got = sorted((o["partition"]["datagen.task"], o["offset"]["seq"]) for o in offs)
    # An integer offset reads back as a JSON number, as in Kafka Connect.
    assert got == [("0", N), ("1", N)], f"(c) REST offsets {offs}"
    p = tool("consume", "--topic", positions_topic, "--count", "0", "--idle-ms", "3000", "--timeout-ms", "60000")
    assert p.returncode == 0, p.stderr.decode()[-500:]
    last = {}
    for line in p.stdout.decode().splitlines():
        r = json.loads(line)
        key = json.loads(bytes.fromhex(r["key_hex"]).decode())
        assert isinstance(key, list) and len(key) == 2 and isinstance(key[1], dict), f"(c) key {key}"
        if key[0] == gen:
            last[key[1]["datagen.task"]] = json.loads(bytes.fromhex(r["value_hex"]).decode())
    assert last == {"0": {"seq": str(N)}, "1": {"seq": str(N)}}, f"(c) positions topic: {last}"
    print(json.dumps({"test": "positions_topic", "format": "kafka-connect", "final": last}), flush=True)
    assert w.stop() == 0

    # (b) zombie fencing between two workers
    n2 = max(10000, N // 4)
    topic2 = f"ferry-eos-fence-{run_id}"
    gen2 = f"eosfence-{run_id}"
    cfg2 = {"connector.class": "DatagenSource", "topic": topic2, "tasks.max": "1", "max.records": str(n2),
            "rate": "4000", "format": "string", "key.mode": "seq", "transaction.boundary": "interval",
            "transaction.boundary.interval.ms": "500"}
    w1 = Worker(tmpdir("kafka-eos-w1"), dict(eos, **{"task.restart.enable": "false"}))
    w2 = Worker(tmpdir("kafka-eos-w2"), eos)
    w1.start(timeout=60)
    w1.ok("POST", "/connectors", {"name": gen2, "config": cfg2})
    wait_until(lambda: end_of(topic2) >= n2 // 3, 120, "a third written by worker 1", 0.3)
    w2.start(timeout=60)
    t_fence = time.time()
    w2.ok("POST", "/connectors", {"name": gen2, "config": cfg2})

    def w1_fenced():
        s = w1.ok("GET", f"/connectors/{gen2}/status")
        t = s["tasks"][0]
        return t if t["state"] == "FAILED" else None
    t = wait_until(w1_fenced, 60, "worker 1's task FAILED after worker 2 took over", 0.2)
    fenced_s = round(time.time() - t_fence, 2)
    assert "fenced" in t.get("trace", "").lower(), f"(b) trace does not name the fencing: {t.get('trace')}"
    values2 = wait_committed(topic2, w2.workdir, n2, 240)
    lost2, dups2, extra2 = tally(values2, 1, n2)
    print(json.dumps({"test": "zombie_fencing", "records": n2, "read_committed": len(values2), "lost": len(lost2),
                      "duplicates": dups2, "zombie_failed_after_s": fenced_s}), flush=True)
    assert not lost2 and dups2 == 0 and not extra2, f"(b) lost {lost2[:10]} dups {dups2} extra {extra2[:5]}"
    w1.stop()
    w2.stop()


if __name__ == "__main__":
    run(main)
