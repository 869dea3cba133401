"""The rocketmq backbone on a real RocketMQ: datagen -> RocketMQ topic -> file sink through a
standalone worker whose backbone is RocketMQ, with the worker kill -9ed mid-way and restarted.
Every sequence number must arrive (at-least-once); duplicates are counted. Then the sink is
stopped, a fresh worker process reads its committed offsets (from the brokers, not from what it
saw itself), `DELETE /connectors/<sink>/offsets` resets them and the resumed sink reads the topic
again from the start. Needs the cluster that
scripts/test starts for the `rocketmq` and `integration` labels (NameServer in
$FERRY_ROCKETMQ_NAMESRV, default 127.0.0.1:19876); fails when it is unreachable."""
import json
import os
import random
import socket
import time

from harness import Worker, run, tmpdir, wait_until

NAMESRV = os.environ.get("FERRY_ROCKETMQ_NAMESRV", "127.0.0.1:19876")
TOTAL = int(os.environ.get("FERRY_RMQ_RECORDS", "30000"))
RATE = 10000


def count_lines(path):
    try:
        with open(path, "rb") as f:
            return f.read().count(b"\n")
    except FileNotFoundError:
        return 0


def main():
    host, port = NAMESRV.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=3).close()
    except OSError as e:
        raise AssertionError(f"RocketMQ NameServer {NAMESRV} unreachable ({e}); start it with "
                             "scripts/services/rocketmq start")
    d = tmpdir("rmq-backbone")
    out = os.path.join(d, "out.txt")
    run_id = random.randrange(1 << 30)
    topic = f"ferry-bb-{run_id}"
    gen, sink = f"gen-{run_id}", f"sink-{run_id}"  # fresh consumer group per run
    w = Worker(d, {"backbone": "rocketmq", "backbone.rocketmq.namesrv": NAMESRV})
    w.start()
    w.ok("POST", "/connectors", {"name": gen, "config": {
        "connector.class": "DatagenSource", "topic": topic, "max.records": str(TOTAL),
        "rate": str(RATE), "format": "string"}})
    w.ok("POST", "/connectors", {"name": sink, "config": {
        "connector.class": "FileStreamSink", "topics": topic, "file": out}})
    t0 = time.time()
    wait_until(lambda: count_lines(out) >= TOTAL // 3, 120, f"{TOTAL // 3} lines", 0.2)
    w.kill9()
    w.start()
    wait_until(lambda: count_lines(out) >= TOTAL, 180, f"{TOTAL} lines", 0.5)

    def counts():
        c = {}
        with open(out, "rb") as f:
            for line in f:
                t, s = line.strip().split(b"-")
                c[int(s)] = c.get(int(s), 0) + 1
        return c
    c = wait_until(lambda: (lambda c: c if len(c) >= TOTAL else None)(counts()), 120, "every sequence number", 1.0)
    lost = [i for i in range(TOTAL) if i not in c]
    dups = sum(v - 1 for v in c.values())
    st = w.ok("GET", f"/connectors/{sink}/status")
    print(json.dumps({"records": TOTAL, "lost": len(lost), "duplicates": dups,
                      "seconds": round(time.time() - t0, 1)}))
    assert not lost, f"{len(lost)} lost, first {lost[:10]}"
    assert st["tasks"][0]["state"] == "RUNNING", st
    offs = w.ok("GET", f"/connectors/{sink}/offsets")["offsets"]
    assert offs and all(o["partition"]["kafka_topic"] == topic for o in offs), offs

    # Offsets of a stopped sink from a worker process in which it never ran (the group's topics
    # come from the brokers' consume stats), then DELETE .../offsets and a full re-read.
    def committed():
        got = w.ok("GET", f"/connectors/{sink}/offsets")["offsets"]
        return {int(o["partition"]["kafka_partition"]): int(o["offset"]["kafka_offset"]) for o in got}
    # Every record is in the file, so the group commits up to the end of each queue.
    wait_until(lambda: sum(committed().values()) >= TOTAL, 60, "offsets committed up to the end", 0.5)
    # The topic may hold a few more than TOTAL (the source re-sends after its kill -9), so the
    # group's final offsets are read once the sink is stopped and can commit no more.
    w.ok("PUT", f"/connectors/{sink}/stop")
    wait_until(lambda: w.ok("GET", f"/connectors/{sink}/status")["connector"]["state"] == "STOPPED",
               30, "sink STOPPED", 0.2)
    before = committed()
    assert w.stop() == 0
    w.start()
    fresh = committed()
    assert fresh == before, f"offsets seen by a fresh worker {fresh} != {before}"
    w.ok("DELETE", f"/connectors/{sink}/offsets")
    after_reset = committed()
    assert after_reset == {}, after_reset
    lines_before = count_lines(out)
    w.ok("PUT", f"/connectors/{sink}/resume")
    # The topic holds every record the source sent, duplicates included, so a full re-read is
    # more than TOTAL lines: wait until every sequence number was written a second time.
    def reread_all():
        c2 = counts()
        return all(c2.get(i, 0) >= 2 for i in range(TOTAL))
    wait_until(reread_all, 180, "a full re-read after the reset (every sequence number twice)", 0.5)
    again = counts()
    missing = [i for i in range(TOTAL) if again.get(i, 0) < 2]
    print(json.dumps({"offsets_fresh_worker": sum(fresh.values()), "queues": len(fresh),
                      "after_reset": len(after_reset), "reread_lines": count_lines(out) - lines_before}))
    assert not missing, f"{len(missing)} not re-read after the reset, first {missing[:10]}"
    assert w.stop() == 0


if __name__ == "__main__":
    run(main)
