"""KafkaSink against a real Kafka broker (cluster A of scripts/services/kafka, KRaft, 127.0.0.1:19092),
in a standalone worker on the embedded backbone:

  (a) DatagenSource -> KafkaSink (direct task): 20,000 sequence-numbered records with keys
      (key.mode=seq) and a header added by InsertHeader; a librdkafka consumer (kafka_tool) reads
      the topic from the earliest offset: every seq arrives (0 lost; duplicates counted), its key
      is its seq, the header is kept, and each key's records stay in one partition in seq order:
      the partition a Java producer picks (murmur2 of the key, over the topic's 4 partitions);
  (b) a bad producer override (producer.override.acks=maybe) makes the task FAILED with a trace
      naming the key;
  (c) kafka_tool produces 20,000 records -> KafkaSource -> backbone -> FileStreamSink: every one
      arrives; then the worker is kill -9ed, started again and 5,000 more are produced: all 25,000
      arrive (0 lost) and fewer than 20,000 are read twice (the group resumed from the offsets
      KafkaSource committed, not from the start), within 9 s of the restart (static membership:
      no wait for the dead member's 10 s session to expire);
  (d) KafkaSink with SASL/PLAIN settings passed through producer.override.* delivers to the
      broker's SASL_PLAINTEXT listener (127.0.0.1:19094); a wrong password fails the task with a
      trace saying the brokers refused the client (not minutes of delivery timeouts);
  (e) TLS through the same pass-through: KafkaSink writes 1,000 records to the broker's SSL
      listener (127.0.0.1:19095, the server certificate checked against the test CA of
      `scripts/services/kafka ca`), KafkaSource reads them back over TLS into a file, and a sink
      given another CA fails its task naming the TLS handshake.

Needs Kafka (scripts/test starts it for the `kafka` and `integration` labels); fails when it is
unreachable. Environment: FERRY_BIN, FERRY_KAFKA_TOOL, FERRY_KAFKA_BOOTSTRAP."""
import json
import os
import random
import socket
import subprocess
import time

from harness import Worker, run, thread_names, tmpdir, wait_until

BOOTSTRAP = os.environ.get("FERRY_KAFKA_BOOTSTRAP", "127.0.0.1:19092")
SASL_BOOTSTRAP = os.environ.get("FERRY_KAFKA_SASL_BOOTSTRAP", "127.0.0.1:19094")
SSL_BOOTSTRAP = os.environ.get("FERRY_KAFKA_SSL_BOOTSTRAP", "127.0.0.1:19095")
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
TOOL = os.environ.get("FERRY_KAFKA_TOOL", "")
COUNT = 20000


PARTITIONS = 4


def murmur2(data):
    """Kafka's murmur2 (org.apache.kafka.common.utils.Utils.murmur2): 32-bit, seed 0x9747b28c."""
    mask = 0xFFFFFFFF
    m, r = 0x5BD1E995, 24
    h = (0x9747B28C ^ len(data)) & mask
    n4 = len(data) // 4
    for i in range(n4):
        k = int.from_bytes(data[4 * i:4 * i + 4], "little")
        k = (k * m) & mask
        k ^= k >> r
        k = (k * m) & mask
        h = (h * m) & mask
        h ^= k
    tail = data[4 * n4:]
    if len(tail) == 3:
        h ^= tail[2] << 16
    if len(tail) >= 2:
        h ^= tail[1] << 8
    if len(tail) >= 1:
        h ^= tail[0]
        h = (h * m) & mask
    h ^= h >> 13
    h = (h * m) & mask
    h ^= h >> 15
    return h


def java_partition(key, partitions):
    """The Java producer's partition of a keyed record: toPositive(murmur2(key)) % partitions."""
    return (murmur2(key) & 0x7FFFFFFF) % partitions


def main():
    assert TOOL, "FERRY_KAFKA_TOOL must name kafka_tool"
    host, port = BOOTSTRAP.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=3).close()
    except OSError as e:
        raise AssertionError(f"Kafka {BOOTSTRAP} unreachable ({e}); scripts/services/kafka start")
    run_id = random.randrange(1 << 30)
    d = tmpdir("kafka-connectors")
    w = Worker(d)
    w.start()

    # (a) datagen -> Kafka, into a topic of 4 partitions
    topic = f"ferry-gen-{run_id}"
    name = f"gen-kafka-{run_id}"
    p = subprocess.run([TOOL, "produce", "--bootstrap", BOOTSTRAP, "--topic", topic, "--count", "0",
                        "--partitions", str(PARTITIONS)], capture_output=True, timeout=120)
    assert p.returncode == 0, f"(a) kafka_tool create: {p.stderr.decode()[-800:]}"
    w.ok("POST", "/connectors", {"name": name, "config": {
        "connector.class": "DatagenSource", "topic": "unused", "format": "string", "key.mode": "seq",
        "max.records": str(COUNT), "transforms": "h", "transforms.h.type": "InsertHeader",
        "transforms.h.header": "origin", "transforms.h.value.literal": "ferry",
        "sink.connector.class": "KafkaSink", "sink.kafka.bootstrap.servers": BOOTSTRAP,
        "sink.kafka.topic": topic}})
    p = subprocess.run([TOOL, "consume", "--bootstrap", BOOTSTRAP, "--topic", topic, "--count", str(COUNT),
                        "--timeout-ms", "180000"], capture_output=True, timeout=240)
    assert p.returncode == 0, f"(a) kafka_tool: {p.stderr.decode()[-800:]}\n{w.tail_log()}"
    rows = [json.loads(line) for line in p.stdout.decode().splitlines() if line.strip()]
    seen = {}
    by_partition = {}
    for r in rows:
        value = bytes.fromhex(r["value_hex"]).decode()
        seq = int(value.split("-", 1)[1])
        assert bytes.fromhex(r["key_hex"]).decode() == str(seq), f"(a) seq {seq}: key {r['key_hex']}"
        assert r["headers"].get("origin") == "ferry", f"(a) seq {seq}: headers {r['headers']}"
        assert r["ts"] > 0, f"(a) seq {seq}: no timestamp"
        seen[seq] = seen.get(seq, 0) + 1
        by_partition.setdefault(r["partition"], []).append((r["offset"], seq))
        want = java_partition(bytes.fromhex(r["key_hex"]), PARTITIONS)
        assert r["partition"] == want, \
            f"(a) key {seq} in partition {r['partition']}, a Java producer puts it in {want}"

    missing = [s for s in range(COUNT) if s not in seen]
    assert not missing, f"(a) {len(missing)} of {COUNT} lost, first {missing[:10]}"
    for part, items in by_partition.items():
        seqs = [s for _, s in sorted(items)]
        assert seqs == sorted(seqs), f"(a) partition {part} out of seq order"
    print(f"(a) {COUNT} datagen records through KafkaSink: 0 lost, {len(rows) - COUNT} duplicates, "
          f"keys and headers kept, {len(by_partition)} partition(s) in order", flush=True)

    # (b) a bad producer override fails the task, naming the key
    bad = f"bad-kafka-{run_id}"
    w.ok("POST", "/connectors", {"name": bad, "config": {
        "connector.class": "DatagenSource", "topic": "unused", "format": "string", "max.records": "10",
        "sink.connector.class": "KafkaSink", "sink.kafka.bootstrap.servers": BOOTSTRAP,
        "sink.kafka.topic": topic, "sink.producer.override.acks": "maybe"}})

    def failed_clearly():
        status, s = w.rest("GET", f"/connectors/{bad}/status")
        tasks = s.get("tasks", []) if status == 200 else []
        return any(t["state"] == "FAILED" and "producer.override.acks" in t.get("trace", "") for t in tasks)
    wait_until(failed_clearly, 60, "a FAILED task naming producer.override.acks", 0.5)
    print("(b) a bad producer override is reported naming the key", flush=True)

    # (c) Kafka -> backbone -> file, with a kill -9
    src = f"ferry-src-{run_id}"
    out_file = os.path.join(d, "from-kafka.txt")

    def produce(n, first):
        p = subprocess.run([TOOL, "produce", "--bootstrap", BOOTSTRAP, "--topic", src, "--count", str(n),
                            "--first-seq", str(first)], capture_output=True, timeout=180)
        assert p.returncode == 0, f"(c) kafka_tool produce: {p.stderr.decode()[-800:]}"

    def lines():
        try:
            with open(out_file, "rb") as f:
                return f.read().splitlines()
        except FileNotFoundError:
            return []

    produce(COUNT, 0)
    w.ok("POST", "/connectors", {"name": f"ksrc-{run_id}", "config": {
        "connector.class": "KafkaSource", "kafka.bootstrap.servers": BOOTSTRAP, "kafka.topics": src,
        "topic": f"kin-{run_id}"}})
    w.ok("POST", "/connectors", {"name": f"kfile-{run_id}", "config": {
        "connector.class": "FileStreamSink", "topics": f"kin-{run_id}", "file": out_file}})
    wait_until(lambda: len(set(lines())) >= COUNT, 120, f"{COUNT} lines from Kafka", 0.2)
    time.sleep(1.5)  # an offset commit happens every second
    w.kill9()
    w.start()
    t_restart = time.time()
    produce(5000, COUNT)
    total = COUNT + 5000
    wait_until(lambda: len(set(lines())) >= total, 120, f"{total} lines from Kafka after the restart", 0.2)
    resumed_s = time.time() - t_restart
    # The KafkaSource task waits on the worker's shared threads, woken by librdkafka's consumer
    # queue: no thread of its own ("task-own", what a blocking source gets).
    names = thread_names(w.proc.pid)
    assert "task-own" not in names, f"(c) the KafkaSource task runs on a thread of its own: {sorted(names)}"
    got = lines()
    want = {str(i).encode() for i in range(total)}
    missing = want - set(got)
    assert not missing, f"(c) {len(missing)} lost"
    dups = len(got) - len(set(got))
    assert dups < COUNT, f"(c) {dups} read twice: the group did not resume from committed offsets"
    print(f"(c) {total} records Kafka -> backbone -> file across a kill -9: 0 lost, {dups} duplicates, "
          f"the 5,000 produced after the restart were in the file {resumed_s:.1f} s after it", flush=True)
    # Static membership: the restarted task takes its partitions back at once; without it the
    # group waits for the dead member's session to expire (10 s here) before anything flows.
    assert resumed_s < 9, f"(c) {resumed_s:.1f} s to resume: the group waited for the dead member"

    # (d) client security passes through: SASL/PLAIN on the broker's SASL_PLAINTEXT listener
    sasl_topic = f"ferry-sasl-{run_id}"
    sasl = {"sink.producer.override.security.protocol": "SASL_PLAINTEXT",
            "sink.producer.override.sasl.mechanisms": "PLAIN",
            "sink.producer.override.sasl.username": "ferry"}
    w.ok("POST", "/connectors", {"name": f"sasl-{run_id}", "config": {
        "connector.class": "DatagenSource", "topic": "unused", "format": "string", "max.records": "1000",
        "sink.connector.class": "KafkaSink", "sink.kafka.bootstrap.servers": SASL_BOOTSTRAP,
        "sink.kafka.topic": sasl_topic, "sink.producer.override.sasl.password": "ferry-secret", **sasl}})
    p = subprocess.run([TOOL, "consume", "--bootstrap", BOOTSTRAP, "--topic", sasl_topic, "--count", "1000",
                        "--timeout-ms", "60000"], capture_output=True, timeout=120)
    assert p.returncode == 0, f"(d) kafka_tool: {p.stderr.decode()[-800:]}\n{w.tail_log()}"
    w.ok("POST", "/connectors", {"name": f"sasl-bad-{run_id}", "config": {
        "connector.class": "DatagenSource", "topic": "unused", "format": "string", "max.records": "1000",
        "sink.connector.class": "KafkaSink", "sink.kafka.bootstrap.servers": SASL_BOOTSTRAP,
        "sink.kafka.topic": sasl_topic, "sink.producer.override.sasl.password": "wrong", **sasl}})

    def refused_clearly():
        status, s = w.rest("GET", f"/connectors/sasl-bad-{run_id}/status")
        tasks = s.get("tasks", []) if status == 200 else []
        return next((t.get("trace", "") for t in tasks
                     if t["state"] == "FAILED" and "refused the client" in t.get("trace", "")), None)
    trace = wait_until(refused_clearly, 60, "a FAILED task saying the brokers refused the client", 0.5)
    print(f"(d) SASL/PLAIN through producer.override.*: 1000 records arrive; a wrong password fails the "
          f"task: {trace.splitlines()[0][:160]}", flush=True)

    # (e) TLS: sink and source over the SSL listener, verified against the test CA
    p = subprocess.run([os.path.join(ROOT, "scripts/services/kafka"), "ca"], capture_output=True, timeout=30)
    assert p.returncode == 0, p.stderr.decode()
    ca = p.stdout.decode().strip()
    assert os.path.isfile(ca), f"(e) no CA at {ca}"
    tls_topic = f"ferry-tls-{run_id}"
    tls = {"sink.producer.override.security.protocol": "SSL", "sink.producer.override.ssl.ca.location": ca}
    w.ok("POST", "/connectors", {"name": f"tls-{run_id}", "config": {
        "connector.class": "DatagenSource", "topic": "unused", "format": "string", "max.records": "1000",
        "sink.connector.class": "KafkaSink", "sink.kafka.bootstrap.servers": SSL_BOOTSTRAP,
        "sink.kafka.topic": tls_topic, **tls}})
    tls_file = os.path.join(d, "tls-out.txt")
    w.ok("POST", "/connectors", {"name": f"tlsin-{run_id}", "config": {
        "connector.class": "KafkaSource", "kafka.bootstrap.servers": SSL_BOOTSTRAP, "kafka.topics": tls_topic,
        "consumer.override.security.protocol": "SSL", "consumer.override.ssl.ca.location": ca,
        "topic": f"tlsin-{run_id}"}})
    w.ok("POST", "/connectors", {"name": f"tlsfile-{run_id}", "config": {
        "connector.class": "FileStreamSink", "topics": f"tlsin-{run_id}", "file": tls_file}})

    def tls_lines():
        try:
            with open(tls_file, "rb") as f:
                return set(f.read().splitlines())
        except FileNotFoundError:
            return set()
    wait_until(lambda: len(tls_lines()) >= 1000, 90, "1,000 records written and read back over TLS", 0.3)
    got = tls_lines()
    assert got == {f"0-{i}".encode() for i in range(1000)}, f"(e) unexpected lines {sorted(got)[:5]}"
    other_ca = os.path.join(d, "other-ca.crt")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=not ours",
                    "-keyout", os.path.join(d, "other-ca.key"), "-out", other_ca], check=True, capture_output=True)
    w.ok("POST", "/connectors", {"name": f"tls-bad-{run_id}", "config": {
        "connector.class": "DatagenSource", "topic": "unused", "format": "string", "max.records": "1000",
        "sink.connector.class": "KafkaSink", "sink.kafka.bootstrap.servers": SSL_BOOTSTRAP,
        "sink.kafka.topic": tls_topic, **dict(tls, **{"sink.producer.override.ssl.ca.location": other_ca})}})

    def tls_refused():
        status, s = w.rest("GET", f"/connectors/tls-bad-{run_id}/status")
        tasks = s.get("tasks", []) if status == 200 else []
        return next((t.get("trace", "") for t in tasks
                     if t["state"] == "FAILED" and "TLS handshake" in t.get("trace", "")), None)
    trace = wait_until(tls_refused, 60, "a FAILED task naming the TLS handshake", 0.5)
    print(f"(e) TLS: 1000 records KafkaSink -> SSL listener -> KafkaSource -> file, all there; another CA fails "
          f"the task: {trace.splitlines()[0][:200]}", flush=True)
    assert w.stop() == 0


if __name__ == "__main__":
    run(main)
