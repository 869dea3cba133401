"""The kafka backbone on a real Kafka broker (cluster A of scripts/services/kafka, KRaft,
127.0.0.1:19092): a standalone worker with backbone=kafka.

  (a) DatagenSource (30,000 sequence-numbered records at 5,000/s, key = seq, an `origin` header)
      -> Kafka topic -> FileStreamSink, with the worker kill -9ed after a third arrived and started
      again: every sequence number arrives (at-least-once, 0 lost), duplicates counted; the time
      from the restart to the first new line is printed (static membership: the restarted sink
      gets its partitions back without waiting for the dead member's session to expire);
  (b) a plain librdkafka consumer (kafka_tool) reads the backbone topic as any Kafka topic: keys,
      the header and timestamps are Kafka's own fields;
  (c) the sink's committed offsets, read by a fresh worker process in which the sink never ran
      (from Kafka's __consumer_offsets), equal the end of every partition; the sink is stopped,
      `DELETE /connectors/<sink>/offsets` clears them and the resumed sink reads everything again;
  (e) the sink's topics are changed (PUT config): the restarted task reads the new topic;
  (d) an unreachable bootstrap server makes `ferry standalone` exit non-zero naming it.

Needs Kafka (scripts/test starts it for the `kafka` and `integration` labels); fails when it is
unreachable. Environment: FERRY_BIN, FERRY_KAFKA_TOOL, FERRY_KAFKA_BOOTSTRAP."""
import json
import os
import random
import socket
import subprocess
import time

from harness import FERRY_BIN, Worker, run, tmpdir, wait_until

BOOTSTRAP = os.environ.get("FERRY_KAFKA_BOOTSTRAP", "127.0.0.1:19092")
TOOL = os.environ.get("FERRY_KAFKA_TOOL", "")
TOTAL = int(os.environ.get("FERRY_KAFKA_RECORDS", "30000"))
RATE = 5000


def count_lines(path):
    try:
        with open(path, "rb") as f:
            return f.read().count(b"\n")
    except FileNotFoundError:
        return 0


def counts(path):
    c = {}
    with open(path, "rb") as f:
        for line in f:
            s = int(line.strip().rsplit(b"-", 1)[1])
            c[s] = c.get(s, 0) + 1
    return c


def main():
    assert TOOL, "FERRY_KAFKA_TOOL must name kafka_tool"
    host, port = BOOTSTRAP.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=3).close()
    except OSError as e:
        raise AssertionError(f"Kafka {BOOTSTRAP} unreachable ({e}); scripts/services/kafka start")
    d = tmpdir("kafka-backbone")
    out = os.path.join(d, "out.txt")
    run_id = random.randrange(1 << 30)
    topic = f"ferry-kbb-{run_id}"
    gen, sink = f"gen-{run_id}", f"sink-{run_id}"  # fresh consumer group per run
    w = Worker(d, {"backbone": "kafka", "backbone.kafka.bootstrap.servers": BOOTSTRAP})
    w.start()

    # (a) datagen -> Kafka -> file across a kill -9
    w.ok("POST", "/connectors", {"name": gen, "config": {
        "connector.class": "DatagenSource", "topic": topic, "max.records": str(TOTAL),
        "rate": str(RATE), "format": "string", "key.mode": "seq",
        "transforms": "h", "transforms.h.type": "InsertHeader",
        "transforms.h.header": "origin", "transforms.h.value.literal": "ferry"}})
    w.ok("POST", "/connectors", {"name": sink, "config": {
        "connector.class": "FileStreamSink", "topics": topic, "file": out}})
    t0 = time.time()
    wait_until(lambda: count_lines(out) >= TOTAL // 3, 120, f"{TOTAL // 3} lines", 0.2)
    w.kill9()
    at_kill = count_lines(out)
    all_there = len(counts(out)) >= TOTAL  # a cold broker can make the source burst at the end
    w.start()
    t_restart = time.time()
    resume_s = None
    if not all_there:
        wait_until(lambda: count_lines(out) > at_kill, 60, "the first line after the restart", 0.05)
        resume_s = round(time.time() - t_restart, 2)
    wait_until(lambda: count_lines(out) >= TOTAL, 180, f"{TOTAL} lines", 0.5)
    c = wait_until(lambda: (lambda c: c if len(c) >= TOTAL else None)(counts(out)), 120, "every sequence number", 1.0)
    lost = [i for i in range(TOTAL) if i not in c]
    dups = sum(v - 1 for v in c.values())
    print(json.dumps({"test": "kill9", "records": TOTAL, "lost": len(lost), "duplicates": dups,
                      "resume_after_restart_s": resume_s, "seconds": round(time.time() - t0, 1)}),
          flush=True)
    assert not lost, f"{len(lost)} lost, first {lost[:10]}"
    st = w.ok("GET", f"/connectors/{sink}/status")
    assert st["tasks"][0]["state"] == "RUNNING", st

    # (b) the topic as any Kafka client sees it
    p = subprocess.run([TOOL, "consume", "--bootstrap", BOOTSTRAP, "--topic", topic, "--count", str(TOTAL),
                        "--timeout-ms", "60000"], capture_output=True, timeout=120)
    assert p.returncode == 0, f"(b) kafka_tool: {p.stderr.decode()[-800:]}"
    rows = [json.loads(line) for line in p.stdout.decode().splitlines() if line.strip()]
    assert len(rows) == TOTAL, len(rows)
    for r in rows:
        value = bytes.fromhex(r["value_hex"]).decode()
        seq = int(value.rsplit("-", 1)[1])
        assert bytes.fromhex(r["key_hex"]).decode() == str(seq), f"(b) seq {seq}: key {r['key_hex']}"
        assert r["headers"].get("origin") == "ferry", f"(b) seq {seq}: headers {r['headers']}"
        assert r["ts"] > 1_600_000_000_000, f"(b) seq {seq}: timestamp {r['ts']}"
    print(json.dumps({"test": "plain_consumer", "rows": len(rows), "keys_headers_timestamps": "kept"}), flush=True)

    # (c) offsets from a fresh process, reset, full re-read
    def committed():
        got = w.ok("GET", f"/connectors/{sink}/offsets")["offsets"]
        return {int(o["partition"]["kafka_partition"]): int(o["offset"]["kafka_offset"]) for o in got}
    offs = w.ok("GET", f"/connectors/{sink}/offsets")["offsets"]
    assert offs and all(o["partition"]["kafka_topic"] == topic for o in offs), offs
    wait_until(lambda: sum(committed().values()) >= TOTAL, 60, "offsets committed up to the end", 0.5)
    before = committed()
    w.ok("PUT", f"/connectors/{sink}/stop")
    wait_until(lambda: w.ok("GET", f"/connectors/{sink}/status")["connector"]["state"] == "STOPPED",
               30, "sink STOPPED", 0.2)
    assert w.stop() == 0
    w.start()
    fresh = committed()
    assert fresh == before, f"offsets seen by a fresh worker {fresh} != {before}"
    t_reset = time.time()
    # A static member stays in its group for the session timeout (10 s) after its consumer
    # closed; the reset waits for that (up to session + 5 s), longer than the harness's 10 s.
    status, body = w.rest("DELETE", f"/connectors/{sink}/offsets", timeout=40)
    assert status in (200, 202, 204), f"DELETE offsets: {status} {body}"
    reset_s = time.time() - t_reset
    after_reset = committed()
    assert after_reset == {}, after_reset
    lines_before = count_lines(out)
    w.ok("PUT", f"/connectors/{sink}/resume")

    def reread_all():
        c2 = counts(out)
        return all(c2.get(i, 0) >= 2 for i in range(TOTAL))
    wait_until(reread_all, 180, "a full re-read after the reset (every sequence number twice)", 0.5)
    print(json.dumps({"test": "offsets", "offsets_fresh_worker": sum(fresh.values()), "partitions": len(fresh),
                      "reset_s": round(reset_s, 1), "reread_lines": count_lines(out) - lines_before}), flush=True)

    # (e) the sink moved to another topic: its restarted task must read the new topic, not keep the
    # old topic's partitions (a static member that rejoins is handed its old assignment)
    topic2, out2 = f"{topic}-2", os.path.join(d, "out2.txt")
    w.ok("PUT", f"/connectors/{sink}/config", {"connector.class": "FileStreamSink", "topics": topic2, "file": out2})
    w.ok("POST", "/connectors", {"name": f"gen2-{run_id}", "config": {
        "connector.class": "DatagenSource", "topic": topic2, "max.records": "2000", "format": "string"}})
    t_move = time.time()
    wait_until(lambda: count_lines(out2) >= 2000, 90, "2000 lines of the new topic", 0.2)
    print(json.dumps({"test": "topics_changed", "lines": count_lines(out2),
                      "seconds": round(time.time() - t_move, 1)}), flush=True)
    assert w.stop() == 0

    # (d) unreachable bootstrap server
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{s.getsockname()[1]}"
    d2 = tmpdir("kafka-nobroker")
    w2 = Worker(d2, {"backbone": "kafka", "backbone.kafka.bootstrap.servers": dead,
                     "backbone.kafka.request.timeout.ms": "2000"})
    with open(w2.log_path, "ab") as log:
        p = subprocess.Popen([FERRY_BIN, "standalone", w2.props], stdout=log, stderr=subprocess.STDOUT, cwd=d2)
    try:
        rc = p.wait(60)
    except subprocess.TimeoutExpired:
        p.kill()
        raise AssertionError("ferry kept running with an unreachable Kafka")
    with open(w2.log_path, errors="replace") as f:
        text = f.read()
    print(json.dumps({"test": "unreachable", "exit_code": rc,
                      "message": text.strip().splitlines()[-1][:300] if text.strip() else ""}), flush=True)
    assert rc != 0, text
    assert dead in text, f"the message does not name {dead}:\n{text}"


if __name__ == "__main__":
    run(main)
