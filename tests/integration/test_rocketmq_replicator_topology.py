"""RocketMQReplicator topologies on two real RocketMQ clusters:

  (a) bidirectional A <-> B on one topic name (identity rename): 1,000 messages produced on each
      side end up on both sides exactly once more — 2,000 on each — and stay 2,000 (messages
      that came from the other side are not sent back: loop prevention by replication path);
  (b) topic pick-up: a replicator selecting topics by regex is running before any matching topic
      exists; a topic created later on A (and the queues added to it later) is replicated
      without a restart;
  (c) placement=hash: the target queue is a hash of the message key (not the source queue);
  (d) into the secured cluster S (ACL): with target.access.key / target.secret.key every message
      arrives; with a wrong secret the task reports FAILED with the broker's NO_PERMISSION.

Needs clusters A, B and S (scripts/services/rocketmq start all); fails when one is unreachable.
Environment: FERRY_BIN, FERRY_RMQ_TOOL (rmq_interop_tool)."""
import os
import random
import time

from harness import Worker, run, tmpdir, wait_until
from test_rocketmq_replicator import NS_A, NS_B, TOOL, consume, reachable, tool

NS_S = os.environ.get("FERRY_ROCKETMQ_SECURE_NAMESRV", "127.0.0.1:39876")
ACCESS_KEY = os.environ.get("FERRY_ROCKETMQ_SECURE_ACCESS_KEY", "ferryAdmin")
SECRET_KEY = os.environ.get("FERRY_ROCKETMQ_SECURE_SECRET_KEY", "ferrySecret12345")

FNV_OFFSET, FNV_PRIME = 0x811C9DC5, 0x01000193


def key_hash(data):
    """ferry's key hash (rocketmq::keyHash): 32-bit FNV-1a with the sign bit cleared."""
    h = FNV_OFFSET
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & 0xFFFFFFFF
    return h & 0x7FFFFFFF


def count(ns, topic, run_id, env=None):
    """Every message of `topic` (read by a fresh group); [] while the topic does not exist yet."""
    try:
        return consume(ns, topic, f"ferry-topo-count-{run_id}-{random.randrange(1 << 30)}", idle_ms=2500,
                       env=env)
    except AssertionError as e:
        if "TOPIC_NOT_EXIST" not in str(e):
            raise
        return []


def main():
    assert TOOL and os.path.exists(TOOL), "FERRY_RMQ_TOOL (rmq_interop_tool) not built"
    reachable(NS_A)
    reachable(NS_B)
    reachable(NS_S)
    run_id = random.randrange(1 << 30)
    d = tmpdir("rmq-topology")
    w = Worker(d, {"offset.flush.interval.ms": "500"})
    w.start()

    # (a) A <-> B on topic X.
    x = f"ferry-bidi-{run_id}"
    for ns in (NS_A, NS_B):
        tool("create-topic", "--namesrv", ns, "--topic", x, "--queues", "2",
             "--cluster", "ferry-a" if ns == NS_A else "ferry-b")
    common = {"connector.class": "RocketMQReplicator", "topics": x, "heartbeats.topic": "",
              "source.from": "first"}
    w.ok("POST", "/connectors", {"name": f"a2b-{run_id}", "config": {
        **common, "source.namesrv": NS_A, "target.namesrv": NS_B, "source.alias": "A", "target.alias": "B"}})
    w.ok("POST", "/connectors", {"name": f"b2a-{run_id}", "config": {
        **common, "source.namesrv": NS_B, "target.namesrv": NS_A, "source.alias": "B", "target.alias": "A"}})
    w.wait_running(f"a2b-{run_id}", 60)
    w.wait_running(f"b2a-{run_id}", 60)
    tool("produce", "--namesrv", NS_A, "--topic", x, "--count", "1000", "--seed", "11", "--batch", "16")
    tool("produce", "--namesrv", NS_B, "--topic", x, "--count", "1000", "--seed", "22", "--batch", "16")

    def settled(ns):
        rows = count(ns, x, run_id)
        return rows if len(rows) >= 2000 else None
    on_a = wait_until(lambda: settled(NS_A), 120, "2,000 messages on A", 1.0)
    on_b = wait_until(lambda: settled(NS_B), 120, "2,000 messages on B", 1.0)
    time.sleep(5)  # a loop would keep adding copies
    on_a, on_b = count(NS_A, x, run_id), count(NS_B, x, run_id)
    assert len(on_a) == 2000, f"A holds {len(on_a)} messages of {x}, expected 2000"
    assert len(on_b) == 2000, f"B holds {len(on_b)} messages of {x}, expected 2000"
    paths_a = sorted({m["props"].get("FERRY_REPL_PATH", "") for m in on_a})
    paths_b = sorted({m["props"].get("FERRY_REPL_PATH", "") for m in on_b})
    assert paths_a == ["", "B"], f"paths on A: {paths_a}"
    assert paths_b == ["", "A"], f"paths on B: {paths_b}"
    print("(a) bidirectional: 2000 on each side, no loop", flush=True)

    # (b) topic pick-up by regex, then queue pick-up.
    prefix = f"ferry-new-{run_id}"
    w.ok("POST", "/connectors", {"name": f"pick-{run_id}", "config": {
        "connector.class": "RocketMQReplicator", "source.namesrv": NS_A, "target.namesrv": NS_B,
        "source.alias": "A", "target.alias": "B", "topics.regex": prefix + "-.*",
        "topic.rename": "${topic}-copy", "topics.refresh.interval.ms": "1000",
        "source.rebalance.interval.ms": "1000", "heartbeats.topic": f"ferry-hb-{run_id}",
        "source.from": "first"}})
    w.wait_running(f"pick-{run_id}", 60)
    new_topic = f"{prefix}-1"
    tool("create-topic", "--namesrv", NS_A, "--topic", new_topic, "--queues", "2")
    tool("produce", "--namesrv", NS_A, "--topic", new_topic, "--count", "500", "--seed", "33", "--batch", "8")
    wait_until(lambda: len(count(NS_B, new_topic + "-copy", run_id)) >= 500, 120,
               "the new topic replicated", 1.0)
    tool("create-topic", "--namesrv", NS_A, "--topic", new_topic, "--queues", "4")  # 2 more queues
    tool("produce", "--namesrv", NS_A, "--topic", new_topic, "--count", "400", "--seed", "44", "--batch", "8")
    rows = wait_until(lambda: (lambda r: r if len(r) >= 900 else None)(count(NS_B, new_topic + "-copy", run_id)),
                      120, "messages of the added queues replicated", 1.0)
    assert len(rows) == 900, f"{len(rows)} messages on B, expected 900"
    print("(b) new topic and new queues picked up", flush=True)

    # (c) hash placement.
    h = f"ferry-hash-{run_id}"
    tool("create-topic", "--namesrv", NS_A, "--topic", h, "--queues", "4")
    tool("create-topic", "--namesrv", NS_B, "--topic", h + "-h", "--queues", "3", "--cluster", "ferry-b")
    w.ok("POST", "/connectors", {"name": f"hash-{run_id}", "config": {
        "connector.class": "RocketMQReplicator", "source.namesrv": NS_A, "target.namesrv": NS_B,
        "source.alias": "A", "target.alias": "B", "topics": h, "topic.rename": "${topic}-h",
        "placement": "hash", "heartbeats.topic": "", "source.from": "first"}})
    tool("produce", "--namesrv", NS_A, "--topic", h, "--count", "300", "--seed", "55", "--batch", "8")
    rows = wait_until(lambda: (lambda r: r if len(r) >= 300 else None)(count(NS_B, h + "-h", run_id)),
                      120, "hash-placed messages", 1.0)
    for m in rows:
        want = key_hash(m["keys"].encode()) % 3
        assert m["queue"] == want, f"key {m['keys']} on queue {m['queue']}, expected {want}"
    print("(c) hash placement by key", flush=True)

    # (d) A -> S (secured).
    sec = f"ferry-acl-{run_id}"
    tool("create-topic", "--namesrv", NS_A, "--topic", sec, "--queues", "2")
    tool("produce", "--namesrv", NS_A, "--topic", sec, "--count", "300", "--seed", "66", "--batch", "8")
    secure = {"connector.class": "RocketMQReplicator", "source.namesrv": NS_A, "target.namesrv": NS_S,
              "source.alias": "A", "target.alias": "S", "topics": sec, "heartbeats.topic": "",
              "source.from": "first", "target.cluster": "ferry-s", "target.access.key": ACCESS_KEY}
    w.ok("POST", "/connectors", {"name": f"bad-{run_id}", "config": {
        **secure, "target.secret.key": "wrong", "source.group": f"ferry-bad-{run_id}"}})
    w.ok("POST", "/connectors", {"name": f"sec-{run_id}", "config": {
        **secure, "target.secret.key": SECRET_KEY}})

    def failed_with_reason():
        status, s = w.rest("GET", f"/connectors/bad-{run_id}/status")
        tasks = s.get("tasks", []) if status == 200 else []
        return any(t["state"] == "FAILED" and "NO_PERMISSION" in t.get("trace", "") for t in tasks)
    wait_until(failed_with_reason, 120, "the wrongly keyed replicator FAILED with NO_PERMISSION", 0.5)
    env = {**os.environ, "FERRY_RMQ_ACCESS_KEY": ACCESS_KEY, "FERRY_RMQ_SECRET_KEY": SECRET_KEY}
    rows = wait_until(lambda: (lambda r: r if len(r) >= 300 else None)(count(NS_S, sec, run_id, env)),
                      120, "messages replicated into the secured cluster", 1.0)
    assert len(rows) == 300, f"{len(rows)} messages on S, expected 300"
    print("(d) secured target: signed requests accepted, a wrong secret FAILED clearly", flush=True)
    assert w.stop() == 0


if __name__ == "__main__":
    run(main)
