"""The rocketmq backbone on a real RocketMQ: datagen -> RocketMQ topic -> file sink through a
standalone worker whose backbone is RocketMQ, with the worker kill -9ed mid-way and restarted.
Every sequence number must arrive (at-least-once); duplicates are counted. Needs the cluster that
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
    assert w.stop() == 0


if __name__ == "__main__":
    run(main)
