"""Kafka's MirrorSourceConnector 4.1.1 (MirrorMaker 2's source connector, unmodified, from
plugin.path with connect-runtime beside it) replicating a topic of Kafka cluster A into cluster B,
in ferry (on its kafka backbone, cluster B) and in Kafka Connect 4.1.1 standalone (its worker on
cluster B), side by side, judged by what cluster B holds:

  (a) 6,000 sequence-numbered records in 3 partitions on A: ferry's A.<topic> and Kafka Connect's
      AK.<topic> on B (the same source, another alias) hold the same 6,000 values, and the same
      per partition; ferry's positions are MirrorMaker's own ({cluster, topic, partition} ->
      {offset: Long});
  (b) 3,000 more records produced while ferry's worker is killed with kill -9 and started again:
      every value reaches B (0 lost), duplicates counted.

  (c) commitRecord's RecordMetadata carries the offset the record got on B: MirrorMaker never logs
      "RecordMetadata has no offset", and it writes offset syncs (mm2-offset-syncs.B.internal on A)
      for ferry's records in (b).

Environment: FERRY_BIN, FERRY_JVM_MIRROR_PLUGINS (tests/jvm/CMakeLists.txt), FERRY_KAFKA_TOOL,
FERRY_KAFKA_BOOTSTRAP (A), FERRY_KAFKA_B_BOOTSTRAP (B) (scripts/services/kafka start all)."""
import atexit
import collections
import os
import random
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
import harness  # noqa: E402
import kafka_connect  # noqa: E402
from cluster_check import require_kafka  # noqa: E402

PLUGINS = os.environ.get("FERRY_JVM_MIRROR_PLUGINS", "")
A = os.environ.get("FERRY_KAFKA_BOOTSTRAP", "127.0.0.1:19092")
B = os.environ.get("FERRY_KAFKA_B_BOOTSTRAP", "127.0.0.1:29092")
TOOL = os.environ.get("FERRY_KAFKA_TOOL", "")
MIRROR = "org.apache.kafka.connect.mirror.MirrorSourceConnector"


def produce(topic, count, first):
    p = subprocess.run([TOOL, "produce", "--bootstrap", A, "--topic", topic, "--count", str(count), "--first-seq",
                        str(first), "--partitions", "3"], capture_output=True, text=True, timeout=120)
    if p.returncode != 0:
        raise AssertionError(f"producing to {topic}: {p.stderr[-500:]}")


def values(topic, work, idle_ms=3000, bootstrap=B):
    out = os.path.join(work, f"{topic}.values")
    p = subprocess.run([TOOL, "consume", "--bootstrap", bootstrap, "--topic", topic, "--count", "0", "--idle-ms", str(idle_ms),
                        "--values-out", out, "--timeout-ms", "60000"], capture_output=True, timeout=120)
    if p.returncode != 0:
        return []
    with open(out, "rb") as f:
        return f.read().splitlines()


def mirror(alias, topic):
    return {"connector.class": MIRROR, "source.cluster.alias": alias, "target.cluster.alias": "B",
            "source.cluster.bootstrap.servers": A, "target.cluster.bootstrap.servers": B, "topics": topic,
            "tasks.max": "2", "replication.factor": "1", "offset-syncs.topic.replication.factor": "1",
            "sync.topic.acls.enabled": "false", "sync.topic.configs.enabled": "false",
            "refresh.topics.interval.seconds": "2",
            "key.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
            "value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter"}


def main():
    if not PLUGINS or not os.path.isdir(os.path.join(PLUGINS, "connect-mirror")):
        raise AssertionError(f"no connect-mirror plugin at {PLUGINS!r}: tests/jvm/CMakeLists.txt fetches it (mvn)")
    if not TOOL:
        raise AssertionError("FERRY_KAFKA_TOOL must name kafka_tool")
    require_kafka(A)
    require_kafka(B)
    rid = random.randrange(1 << 24)
    topic = f"mirror-src-{rid}"
    work = harness.tmpdir("jvm-mirror")
    produce(topic, 6000, 0)

    kc = kafka_connect.ConnectStandalone(os.path.join(work, "kc"), B, {
        "key.converter": "org.apache.kafka.connect.converters.ByteArrayConverter",
        "value.converter": "org.apache.kafka.connect.converters.ByteArrayConverter"})
    atexit.register(kc.stop)
    kc.start()
    kc.ok("POST", "/connectors", {"name": f"mm-kc-{rid}", "config": mirror("AK", topic)})
    os.makedirs(os.path.join(work, "ferry"))
    w = harness.Worker(os.path.join(work, "ferry"), {"plugin.path": PLUGINS, "jvm.heap.max": "512m",
                                                     "backbone": "kafka", "backbone.kafka.bootstrap.servers": B})
    w.start(timeout=90)
    w.ok("POST", "/connectors", {"name": f"mm-{rid}", "config": mirror("A", topic)})

    want = sorted(str(i).encode() for i in range(6000))
    harness.wait_until(lambda: len(values(f"A.{topic}", work, 500)) >= 6000, 120, "ferry's 6,000 mirrored records")
    harness.wait_until(lambda: len(values(f"AK.{topic}", work, 500)) >= 6000, 120, "Kafka Connect's 6,000 mirrored records")
    ours, theirs = values(f"A.{topic}", work), values(f"AK.{topic}", work)
    if sorted(theirs) != want:
        raise AssertionError(f"Kafka Connect mirrored {len(theirs)} records, not the 6,000 produced: {theirs[:3]}")
    if sorted(ours) != want:
        raise AssertionError(f"ferry mirrored {len(ours)} records, not the 6,000 produced: {ours[:3]}")
    code, offs = w.rest("GET", f"/connectors/mm-{rid}/offsets")
    parts = {o["partition"].get("partition"): o["offset"] for o in offs.get("offsets", [])} if code == 200 else {}
    if sorted(parts) != ["0", "1", "2"] or any('"offset":"l"' not in o.get("ferry.types", "") for o in parts.values()):
        raise AssertionError(f"ferry's positions are not MirrorMaker's offsets per partition: {offs}")
    kc.stop()
    syncs = "mm2-offset-syncs.B.internal"
    syncs_before = len(values(syncs, work, 1000, A))
    print(f"ok   (a) 6,000 records of 3 partitions mirrored A -> B by ferry and by Kafka Connect: the same values; "
          f"positions {dict(sorted((k, v['offset']) for k, v in parts.items()))}", flush=True)

    # (b) kill -9 while records are produced.
    p = subprocess.Popen([sys.executable, "-c", f"""
import subprocess, time
for i in range(30):
    subprocess.run([{TOOL!r}, "produce", "--bootstrap", {A!r}, "--topic", {topic!r}, "--count", "100",
                    "--first-seq", str(6000 + i * 100), "--partitions", "3"], check=True, capture_output=True)
    time.sleep(0.1)
"""])
    harness.wait_until(lambda: len(values(f"A.{topic}", work, 300)) >= 6600, 60, "records mirrored before the kill")
    w.kill9()
    time.sleep(1)
    w.start(timeout=90)
    if p.wait(120) != 0:
        raise AssertionError("producing the second batch failed")
    want = {str(i).encode() for i in range(9000)}
    harness.wait_until(lambda: want <= set(values(f"A.{topic}", work, 500)), 120, "every record after the kill -9")
    got = collections.Counter(values(f"A.{topic}", work))
    dups = sum(c - 1 for c in got.values())
    print(f"ok   (b) worker kill -9 while 3,000 more were produced: all 9,000 on B (0 lost), {dups} duplicates",
          flush=True)
    no_offset = open(w.log_path, errors="replace").read().count("RecordMetadata has no offset")
    if no_offset:
        raise AssertionError(f"MirrorMaker logged 'RecordMetadata has no offset' {no_offset} times")
    harness.wait_until(lambda: len(values(syncs, work, 1000, A)) > syncs_before, 60, "offset syncs of ferry's records")
    print(f"ok   (c) MirrorMaker got the records' offsets on B: no 'RecordMetadata has no offset', offset syncs "
          f"{syncs_before} -> {len(values(syncs, work, 1000, A))} on A", flush=True)
    w.stop()


if __name__ == "__main__":
    harness.run(main)
