"""Exactly-once Java sources (jvm/README.md, "Exactly-once"): a standalone worker on Kafka (cluster
A of scripts/services/kafka) with exactly.once.source.support=enabled runs a Kafka Connect source
from the JVM host; each poll's records and its positions are written in one transaction.

  (a) KIP-618's preflight with exactly.once.support=required: a connector whose
      exactlyOnceSupport() returns null or UNSUPPORTED is refused at creation (400, the error on
      exactly.once.support naming the answer); SUPPORTED is accepted; transaction.boundary=connector
      (connector-defined transactions) is refused by the framework's keys;
  (b) SeqSource (Java), 2 tasks x N typed records, JsonConverter: the worker is killed with kill -9
      and started again, then the JVM host is killed with kill -9 mid-stream: a read_committed
      consumer of the topic sees every (stream, seq) exactly once - 0 lost, 0 duplicated.

Environment: FERRY_BIN, FERRY_JVM_TEST_PLUGINS, FERRY_KAFKA_TOOL, FERRY_KAFKA_BOOTSTRAP,
FERRY_JVM_EOS_RECORDS (per task, default 20000)."""
import json
import os
import random
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, HERE)
from cluster_check import require_kafka  # noqa: E402
from harness import Worker, run, tmpdir, wait_until  # noqa: E402
from test_kafka_eos_source import BOOTSTRAP, TOOL, tool  # noqa: E402
from test_jvm_plugins import PLUGINS, java_children  # noqa: E402
from test_jvm_run import SEQ_SOURCE  # noqa: E402

N = int(os.environ.get("FERRY_JVM_EOS_RECORDS", "20000"))


def end_of(topic):
    p = tool("ends", "--topic", topic, timeout=60)
    if p.returncode != 0:
        return 0
    return json.loads(p.stdout.decode())["end"]


def committed(topic, workdir, idle_ms=3000):
    """(stream, seq) of every value a read_committed consumer (librdkafka's default) reads."""
    out = os.path.join(workdir, f"values-{random.randrange(1 << 30)}.txt")
    p = tool("consume", "--topic", topic, "--count", "0", "--idle-ms", str(idle_ms), "--values-out", out,
             "--timeout-ms", "300000", timeout=400)
    assert p.returncode == 0, f"kafka_tool consume: {p.stderr.decode()[-800:]}"
    got = []
    with open(out, "rb") as f:
        for line in f:
            if line.strip():
                v = json.loads(line)
                v = v.get("payload", v)
                got.append((v["stream"], v["seq"]))
    return got


def main():
    if not PLUGINS or not os.path.isdir(os.path.join(PLUGINS, "test-plugins")):
        raise AssertionError(f"no test plugins at {PLUGINS!r}: the JVM host and its tests were not built")
    assert TOOL, "FERRY_KAFKA_TOOL must name kafka_tool"
    require_kafka(BOOTSTRAP)
    rid = random.randrange(1 << 30)
    d = tmpdir("jvm-eos")
    w = Worker(d, {"backbone": "kafka", "backbone.kafka.bootstrap.servers": BOOTSTRAP,
                   "exactly.once.source.support": "enabled", "offset.storage.topic": f"ferry-jvm-eos-offsets-{rid}",
                   "plugin.path": PLUGINS, "jvm.heap.max": "256m", "task.restart.backoff.initial.ms": "200",
                   "task.restart.backoff.max.ms": "2000"})
    w.start(timeout=90)

    # (a) the preflight.
    base = {"connector.class": SEQ_SOURCE, "topic": f"pre-{rid}", "count": "10", "exactly.once.support": "required"}
    for said, want in (("", "returns null"), ("unsupported", "says UNSUPPORTED")):
        code, body = w.rest("POST", "/connectors", {"name": f"pre-{said or 'null'}", "config": dict(
            base, **({"exactly.once": said} if said else {}))})
        if code != 400 or want not in json.dumps(body) or "exactly.once.support" not in json.dumps(body):
            raise AssertionError(f"(a) exactly.once.support=required with exactlyOnceSupport() {want}: {code} {body}")
    w.ok("POST", "/connectors", {"name": "pre-ok", "config": dict(base, **{"exactly.once": "supported"})})
    code, body = w.rest("POST", "/connectors", {"name": "pre-conn", "config": dict(
        base, **{"exactly.once": "supported", "transaction.boundary": "connector"})})
    if code != 400 or "transaction.boundary" not in json.dumps(body):
        raise AssertionError(f"(a) transaction.boundary=connector: {code} {body}")
    w.ok("DELETE", "/connectors/pre-ok")
    print("(a) exactly.once.support=required: null and UNSUPPORTED refused naming the answer, SUPPORTED accepted; "
          "transaction.boundary=connector refused", flush=True)

    # (b) kill -9 of the worker, then of the JVM host, mid-stream.
    topic = f"jvm-eos-{rid}"
    w.ok("POST", "/connectors", {"name": "eos", "config": {
        "connector.class": SEQ_SOURCE, "topic": topic, "count": str(N), "rate": "4000", "tasks.max": "2",
        "exactly.once": "supported", "exactly.once.support": "required",
        "key.converter": "JsonConverter", "value.converter": "JsonConverter",
        "value.converter.schemas.enable": "false"}})
    t0 = time.time()
    wait_until(lambda: end_of(topic) >= int(2 * N * 0.3), 180, "30% written", 0.3)
    w.kill9()
    at_worker_kill = end_of(topic)
    w.start(timeout=90)
    wait_until(lambda: end_of(topic) >= int(2 * N * 0.6), 180, "60% written", 0.3)
    hosts = java_children(w.proc.pid)
    if len(hosts) != 1:
        raise AssertionError(f"expected one JVM host under the worker, found {hosts}")
    os.kill(hosts[0], signal.SIGKILL)
    at_host_kill = end_of(topic)
    streams = [f"eos-{i}" for i in range(2)]
    deadline = time.time() + 300
    got = []
    while time.time() < deadline:
        got = committed(topic, d)
        if len(got) >= 2 * N:
            break
        time.sleep(2)
    seen = {}
    for k in got:
        seen[k] = seen.get(k, 0) + 1
    lost = [(s, q) for s in streams for q in range(N) if (s, q) not in seen]
    dups = sum(c - 1 for c in seen.values())
    extra = [k for k in seen if k[0] not in streams or not 0 <= k[1] < N]
    print(json.dumps({"test": "jvm_eos_kill9", "tasks": 2, "records": 2 * N, "read_committed": len(got),
                      "lost": len(lost), "duplicates": dups, "unexpected": len(extra),
                      "topic_end_at_worker_kill": at_worker_kill, "topic_end_at_host_kill": at_host_kill,
                      "topic_end_incl_aborted_and_markers": end_of(topic),
                      "seconds": round(time.time() - t0, 1)}), flush=True)
    assert not lost, f"(b) {len(lost)} lost, first {lost[:10]}"
    assert dups == 0, f"(b) {dups} duplicates seen by a read_committed consumer"
    assert not extra, f"(b) unexpected records {extra[:5]}"
    print(f"(b) worker kill -9, then JVM host kill -9: 2 x {N:,} exactly once (read_committed), 0 lost, 0 duplicates")
    assert w.stop() == 0


if __name__ == "__main__":
    run(main)
