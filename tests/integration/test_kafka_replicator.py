"""KafkaReplicator on two real, independent Kafka clusters (A 127.0.0.1:19092 -> B 127.0.0.1:29092,
scripts/services/kafka start all), in a standalone worker (direct task, no backbone hop).

  (1) 1,000,000 sequence-numbered records (FERRY_KAFKA_REPL_RECORDS) on a 4-partition topic of A
      are replicated to B as "A.<topic>" (prefix policy) while the worker is kill -9ed at 1/4,
      broker B is kill -9ed and started again on its data at 1/2 (scripts/services/kafka
      restart-hard B) and the worker is kill -9ed again at 3/4. Every sequence number must be on
      B (0 lost; duplicates counted). For the first 1,250 records of each partition on both sides
      the copy keeps the partition number, key, headers and timestamp.
  (2) Consumer-group offsets: group G read 300,000 records on A (committed) before replication;
      the replicator translates G's offsets onto B, and G, moved to B, reads the rest there:
      every record is seen by G on A or on B (0 lost for a failing-over consumer), and G does not
      start over on B (re-reads counted).
  (3) A topic created on A after the replicator started is picked up without a restart; after
      its partitions are grown from 2 to 4 on A, the copy on B is grown too and records written
      to the new partitions arrive.
  (4) Loop prevention: a second replicator B -> A (aliases B, A) runs beside the first; a topic
      created on B reaches A as "B.<topic>" and is not copied back to B as "A.B.<topic>", and
      "A.<topic>" on B is not copied back to A.

With the argument `eos` instead (integration_kafka_replicator_eos):
  (5) exactly.once=true: 1,000,000 records replicated while the worker is kill -9ed at 1/3 and
      2/3; a read_committed consumer on B sees every sequence number exactly once (0 lost,
      0 duplicated), although aborted copies of the killed transactions sit in the log.

Needs both Kafka clusters (scripts/test starts them for the `kafka` and `integration` labels).
Environment: FERRY_BIN, FERRY_KAFKA_TOOL, FERRY_KAFKA_BOOTSTRAP, FERRY_KAFKA_B_BOOTSTRAP,
FERRY_KAFKA_REPL_RECORDS. Result lines are JSON."""
import json
import os
import random
import socket
import subprocess
import time

from harness import Worker, run, tmpdir, wait_until

A = os.environ.get("FERRY_KAFKA_BOOTSTRAP", "127.0.0.1:19092")
B = os.environ.get("FERRY_KAFKA_B_BOOTSTRAP", "127.0.0.1:29092")
TOOL = os.environ.get("FERRY_KAFKA_TOOL", "")
N = int(os.environ.get("FERRY_KAFKA_REPL_RECORDS", "1000000"))
GROUP_READ = min(300000, N // 3)
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def tool(*args, timeout=300):
    p = subprocess.run([TOOL, *args], capture_output=True, timeout=timeout)
    assert p.returncode == 0, f"kafka_tool {' '.join(args)}: rc {p.returncode}: {p.stderr.decode()[-800:]}"
    return p.stdout.decode()


def ends(bootstrap, topic):
    """Partitions and summed end offsets of a topic; a topic being created or a broker being
    restarted answers with errors for a moment: asked again for up to 60 s."""
    last = None
    for _ in range(120):
        p = subprocess.run([TOOL, "ends", "--bootstrap", bootstrap, "--topic", topic], capture_output=True,
                           timeout=60)
        if p.returncode == 0:
            return json.loads(p.stdout.decode().strip().splitlines()[-1])
        last = p.stderr.decode()[-300:]
        time.sleep(0.5)
    raise AssertionError(f"kafka_tool ends {topic} on {bootstrap}: {last}")


def topics(bootstrap):
    return json.loads(tool("topics", "--bootstrap", bootstrap).strip().splitlines()[-1])


def read_values(bootstrap, topic, path, group=None, max_records=None, idle_ms=5000):
    args = ["consume", "--bootstrap", bootstrap, "--topic", topic, "--count", "0", "--idle-ms", str(idle_ms),
            "--values-out", path, "--timeout-ms", "600000"]
    if group:
        args += ["--group", group]
    if max_records:
        args += ["--max", str(max_records)]
    tool(*args, timeout=700)
    with open(path, "rb") as f:
        return [int(v) for v in f.read().split()]


def sample(bootstrap, topic, partition, n):
    """The first n records of one partition, by sequence number."""
    out = tool("consume", "--bootstrap", bootstrap, "--topic", topic, "--count", str(n), "--partition",
               str(partition), "--timeout-ms", "60000")
    rows = {}
    for line in out.splitlines():
        r = json.loads(line)
        seq = int(bytes.fromhex(r["value_hex"]).decode())
        rows.setdefault(seq, r)
    return rows


def replicator(name, src, dst, src_alias, dst_alias, topics_regex, extra=None):
    cfg = {"connector.class": "KafkaReplicator", "tasks.max": "2",
           "source.bootstrap.servers": src, "target.bootstrap.servers": dst,
           "source.alias": src_alias, "target.alias": dst_alias, "topics": topics_regex,
           "topics.refresh.interval.ms": "1000"}
    cfg.update(extra or {})
    return {"name": name, "config": cfg}


def main():
    assert TOOL, "FERRY_KAFKA_TOOL must name kafka_tool"
    for b in (A, B):
        host, port = b.rsplit(":", 1)
        try:
            socket.create_connection((host, int(port)), timeout=3).close()
        except OSError as e:
            raise AssertionError(f"Kafka {b} unreachable ({e}); scripts/services/kafka start all")
    rid = random.randrange(1 << 30)
    d = tmpdir("kafka-repl")
    orders, grow, local = f"orders-{rid}", f"grow-{rid}", f"local-{rid}"
    group = f"g-{rid}"
    t0 = time.time()
    tool("produce", "--bootstrap", A, "--topic", orders, "--count", str(N), "--partitions", "4", timeout=600)
    produce_s = time.time() - t0
    # (2) group G reads part of the topic on A and commits, before replication starts
    ga = read_values(A, orders, os.path.join(d, "g-on-a.txt"), group=group, max_records=GROUP_READ)
    assert len(ga) == GROUP_READ, len(ga)

    w = Worker(d, {"offset.flush.interval.ms": "500"})
    w.start()
    w.ok("POST", "/connectors", replicator(f"a2b-{rid}", A, B, "A", "B", f".*-{rid}",
                                           {"groups": f"g-{rid}", "sync.group.offsets.interval.ms": "1000"}))
    target = f"A.{orders}"
    t1 = time.time()

    def copied():
        return ends(B, target)["end"]

    # (1) faults mid-stream
    wait_until(lambda: copied() >= N // 4, 300, f"{N // 4} copied", 0.2)
    w.kill9()
    at_kill1 = copied()
    w.start()
    wait_until(lambda: copied() >= N // 2, 300, f"{N // 2} copied", 0.2)
    at_broker = copied()
    p = subprocess.run([os.path.join(ROOT, "scripts/services/kafka"), "restart-hard", "B"], capture_output=True,
                       timeout=300)
    assert p.returncode == 0, p.stderr.decode()[-800:]
    broker_msg = p.stderr.decode().strip().splitlines()[-1] if p.stderr.strip() else p.stdout.decode().strip()
    wait_until(lambda: copied() >= 3 * N // 4, 300, f"{3 * N // 4} copied", 0.2)
    w.kill9()
    at_kill2 = copied()
    w.start()
    wait_until(lambda: copied() >= N, 600, f"{N} copied", 0.5)
    # B's end counts duplicates too: it can pass N while the restarted worker has not yet copied
    # the tail (its group waits out the killed member's session first). Done = every sequence
    # number is on B; a record that never arrives fails the wait below.
    last = {}

    def complete():
        last["got"] = read_values(B, target, os.path.join(d, "b.txt"), idle_ms=2000)
        present = set(last["got"])
        return all(i in present for i in range(N))
    try:
        wait_until(complete, 180, f"all {N} sequence numbers on B", 1)
    except AssertionError:
        pass  # reported below with the numbers that are missing
    repl_s = time.time() - t1
    got = last["got"]
    seen = set(got)
    lost = [i for i in range(N) if i not in seen]
    print(json.dumps({"test": "replication", "records": N, "lost": len(lost), "duplicates": len(got) - len(seen),
                      "copied_at_kill1": at_kill1, "copied_at_broker_restart": at_broker,
                      "copied_at_kill2": at_kill2, "broker_restart": broker_msg,
                      "produce_s": round(produce_s, 1), "replication_s": round(repl_s, 1)}), flush=True)
    assert not lost, f"{len(lost)} lost, first {lost[:10]}"
    assert at_broker < N, "broker B was restarted after replication had finished"
    assert ends(B, target)["partitions"] == 4

    # The first 1,250 records of each partition on both sides: copies start with the first run, so
    # partition p of B begins with partition p of A (a record in both is in the same partition).
    compared = 0
    for part in range(4):
        src_rows, dst_rows = sample(A, orders, part, 1250), sample(B, target, part, 1250)
        both = set(src_rows) & set(dst_rows)
        assert len(both) > 600, f"partition {part}: only {len(both)} of 1,250 records in both samples"
        for seq in both:
            s, t = src_rows[seq], dst_rows[seq]
            for field in ("partition", "key_hex", "headers", "ts"):
                assert s[field] == t[field], f"seq {seq}: {field} {s[field]} on A, {t[field]} on B"
        compared += len(both)
    print(json.dumps({"test": "fidelity", "compared": compared,
                      "kept": ["partition", "key", "headers", "timestamp"]}), flush=True)

    # (2) G fails over to B and reads the rest there
    time.sleep(3)  # a few sync intervals after the end
    gb = read_values(B, target, os.path.join(d, "g-on-b.txt"), group=group)
    union = set(ga) | set(gb)
    g_lost = [i for i in range(N) if i not in union]
    reread = len(set(ga) & set(gb))
    print(json.dumps({"test": "group_failover", "read_on_a": len(ga), "read_on_b": len(gb),
                      "lost": len(g_lost), "read_again_on_b": reread}), flush=True)
    assert not g_lost, f"group {group}: {len(g_lost)} never seen, first {g_lost[:10]}"
    assert len(gb) < len(got), f"group {group} started over on B ({len(gb)} of {len(got)})"

    # (3) a new topic, then more partitions, without a restart
    tool("produce", "--bootstrap", A, "--topic", grow, "--count", "1000", "--partitions", "2")
    wait_until(lambda: ends(B, f"A.{grow}")["end"] >= 1000, 60, f"A.{grow} on B", 0.5)
    tool("grow", "--bootstrap", A, "--topic", grow, "--partitions", "4")
    tool("produce", "--bootstrap", A, "--topic", grow, "--count", "4000", "--first-seq", "1000")
    wait_until(lambda: ends(B, f"A.{grow}")["end"] >= 5000, 120, f"5000 records in A.{grow}", 0.5)

    def grown_missing():
        vals = set(read_values(B, f"A.{grow}", os.path.join(d, "grow.txt"), idle_ms=2000))
        return [i for i in range(5000) if i not in vals]
    deadline = time.time() + 60
    g_missing = grown_missing()
    while g_missing and time.time() < deadline:
        g_missing = grown_missing()
    info = ends(B, f"A.{grow}")
    print(json.dumps({"test": "new_topic_and_partitions", "target_partitions": info["partitions"],
                      "records": info["end"], "lost": len(g_missing)}), flush=True)
    assert info["partitions"] == 4, info
    assert not g_missing, f"{len(g_missing)} of the grown topic lost"

    # (4) loop prevention with a replicator the other way
    w.ok("POST", "/connectors", replicator(f"b2a-{rid}", B, A, "B", "A", f".*-{rid}"))
    tool("produce", "--bootstrap", B, "--topic", local, "--count", "500", "--partitions", "1")
    wait_until(lambda: ends(A, f"B.{local}")["end"] >= 500, 60, f"B.{local} on A", 0.5)
    time.sleep(4)  # several topic refreshes of both replicators
    on_a, on_b = topics(A), topics(B)
    loops = [t for t in on_a if t.startswith(f"B.A.") and t.endswith(str(rid))] + \
            [t for t in on_b if t.startswith(f"A.B.") and t.endswith(str(rid))]
    print(json.dumps({"test": "loop_prevention", "copied_back": loops,
                      "b_local_on_a": ends(A, f"B.{local}")["end"]}), flush=True)
    assert not loops, f"copied back: {loops}"
    for name in (f"a2b-{rid}", f"b2a-{rid}"):
        st = w.ok("GET", f"/connectors/{name}/status")
        assert all(t["state"] == "RUNNING" for t in st["tasks"]), st
    assert w.stop() == 0


def main_eos():
    assert TOOL, "FERRY_KAFKA_TOOL must name kafka_tool"
    rid = random.randrange(1 << 30)
    d = tmpdir("kafka-repl-eos")
    topic = f"eos-{rid}"
    tool("produce", "--bootstrap", A, "--topic", topic, "--count", str(N), "--partitions", "4", timeout=600)
    w = Worker(d, {"offset.flush.interval.ms": "500"})
    w.start()
    name = f"eos-a2b-{rid}"
    w.ok("POST", "/connectors", replicator(name, A, B, "A", "B", topic, {"exactly.once": "true"}))

    def positions():
        status, body = w.rest("GET", f"/connectors/{name}/offsets")
        if status != 200:
            return 0
        return sum(int(o["offset"]["kafka.offset"]) for o in body.get("offsets", []))
    t0 = time.time()
    wait_until(lambda: positions() >= N // 3, 300, f"{N // 3} positions committed", 0.2)
    at_kill1 = positions()
    w.kill9()
    w.start()
    wait_until(lambda: positions() >= 2 * N // 3, 300, f"{2 * N // 3} positions committed", 0.2)
    at_kill2 = positions()
    w.kill9()
    w.start()
    wait_until(lambda: positions() >= N, 600, f"{N} positions committed", 0.5)
    repl_s = time.time() - t0
    log_end = ends(B, f"A.{topic}")["end"]
    got = read_values(B, f"A.{topic}", os.path.join(d, "committed.txt"))  # read_committed: librdkafka's default
    seen = set(got)
    lost = [i for i in range(N) if i not in seen]
    print(json.dumps({"test": "exactly_once", "records": N, "lost": len(lost), "duplicates": len(got) - len(seen),
                      "read_committed": len(got), "target_log_end": log_end, "positions_at_kill1": at_kill1,
                      "positions_at_kill2": at_kill2, "replication_s": round(repl_s, 1)}), flush=True)
    assert not lost, f"{len(lost)} lost, first {lost[:10]}"
    assert len(got) == len(seen), f"{len(got) - len(seen)} duplicates seen by a read_committed consumer"
    assert w.stop() == 0


if __name__ == "__main__":
    import sys
    run(main_eos if sys.argv[1:] == ["eos"] else main)
