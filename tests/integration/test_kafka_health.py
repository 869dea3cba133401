"""KafkaSource and KafkaSink report their connection (SourceTaskContext / SinkTaskContext
::reportConnection, from librdkafka's signals: kafka::ConnectionWatch) and resume as soon as the
broker is back.

The test runs its OWN Kafka broker (scripts/services/kafka with KAFKA_PORT, KAFKA_CONTROLLER_PORT,
KAFKA_SASL_PORT, KAFKA_SSL_PORT and KAFKA_RUN_DIR overridden: ports $FERRY_HEALTH_KAFKA_PORT..+3,
default 46192..46195, a run directory in a temporary folder), because it kills it; the shared
clusters are never touched. One standalone worker on the embedded backbone:

  kafka_tool -> Kafka topic IN -> KafkaSource -> backbone -> FileStreamSink (a file)
  DatagenSource (sequence numbers, 40/s) -> backbone -> KafkaSink -> Kafka topic OUT

  (a) healthy: both tasks RUNNING with connection "connected"; 200 records of IN in the file;
  (b) the broker kill -9ed: within a few seconds both tasks' status say RUNNING with connection
      "reconnecting", a reason naming the brokers being down (also the trace), and /metrics
      ferry_task_connected is 0 for both (without the reporting the source said "connected":
      its polls do not fail, librdkafka only stops delivering);
  (c) the broker relaunched on its data after FERRY_HEALTH_OUTAGE_S (70) s: 200 more records are
      produced to IN as soon as it accepts connections, and the source takes the first of them
      (its records_in moves; the file follows through the backbone) within 2 s of the broker serving again (the producer's records acknowledged: a Kafka broker
      accepts connections some time before it serves them); both tasks say "connected" again and
      ferry_task_connected is 1;
  (d) every record of IN is in the file, and every sequence number DatagenSource made (most of
      them during the outage, held by librdkafka) is in OUT: 0 lost, duplicates counted;
  (e) input the converter refuses (a line "not json" read by a KafkaSink with JsonConverter):
      with errors.tolerance=all the two good records reach Kafka and the bad one the dead-letter
      topic (ferry_task_dead_letter_records_total 1); with tolerance none the task is FAILED with
      a trace naming the converter.

A `ferry distributed` worker (kafka backbone on the shared broker, FERRY_KAFKA_BOOTSTRAP, default
127.0.0.1:19092, which is only read and written) runs another KafkaSource on the private broker: at
(a) GET /cluster shows its unit "connected", at (b) "reconnecting" with the reason, at (c)
"connected" again.

Needs FERRY_KAFKA_TOOL and the Kafka distribution of scripts/services/kafka (~/.cache).
Environment: FERRY_BIN, FERRY_KAFKA_TOOL, FERRY_HEALTH_KAFKA_PORT, FERRY_HEALTH_OUTAGE_S."""
import json
import os
import random
import shutil
import socket
import subprocess
import tempfile
import time

from harness import Worker, run, tmpdir, wait_until

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SERVICE = os.path.join(ROOT, "scripts", "services", "kafka")
TOOL = os.environ.get("FERRY_KAFKA_TOOL", "")
PORT = int(os.environ.get("FERRY_HEALTH_KAFKA_PORT", "46192"))
SHARED = os.environ.get("FERRY_KAFKA_BOOTSTRAP", "127.0.0.1:19092")  # the distributed worker's backbone
OUTAGE_S = float(os.environ.get("FERRY_HEALTH_OUTAGE_S", "70"))
SHOW_LIMIT_S = 5.0      # broker killed -> both tasks say reconnecting
FIRST_RECORD_S = 2.0    # broker serving again (kafka_tool's records acknowledged) -> the source took the first new record
GEN_RATE = 40
GEN_COUNT = 4000        # 100 s at 40/s: most of it made while the broker is down


class Broker:
    """A private single-node Kafka on its own ports and run directory."""

    def __init__(self):
        self.run_dir = tempfile.mkdtemp(prefix="ferry-health-kafka-")
        self.env = dict(os.environ, KAFKA_PORT=str(PORT), KAFKA_CONTROLLER_PORT=str(PORT + 1),
                        KAFKA_SASL_PORT=str(PORT + 2), KAFKA_SSL_PORT=str(PORT + 3),
                        KAFKA_RUN_DIR=os.path.join(self.run_dir, "run"), KAFKA_HEAP="-Xmx512M -Xms512M")
        self.bootstrap = f"127.0.0.1:{PORT}"

    def cmd(self, what, timeout=300):
        p = subprocess.run(["bash", SERVICE, what, "A"], env=self.env, capture_output=True, timeout=timeout)
        assert p.returncode == 0, f"private Kafka {what}: {p.stderr.decode()[-1500:]}"

    def relaunch_async(self):
        return subprocess.Popen(["bash", SERVICE, "relaunch", "A"], env=self.env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)

    def accepts(self):
        try:
            socket.create_connection(("127.0.0.1", PORT), timeout=0.2).close()
            return True
        except OSError:
            return False

    def stop(self):
        subprocess.run(["bash", SERVICE, "stop", "A"], env=self.env, capture_output=True, timeout=120)
        shutil.rmtree(self.run_dir, ignore_errors=True)


def tool(*args, timeout=200):
    p = subprocess.run([TOOL, *args], capture_output=True, timeout=timeout)
    assert p.returncode == 0, f"kafka_tool {args[0]}: {p.stderr.decode()[-800:]}"
    return p.stdout.decode()


def task0(w, name):
    status, st = w.rest("GET", f"/connectors/{name}/status")
    return st["tasks"][0] if status == 200 and st.get("tasks") else {}


def conn_state(w, name):
    return task0(w, name).get("connection", {}).get("state")


def main():
    assert TOOL, "FERRY_KAFKA_TOOL must name kafka_tool"
    broker = Broker()
    w = dw = None
    relaunch = None
    try:
        broker.cmd("start")
        run_id = random.randrange(1 << 30)
        t_in, t_out = f"health-in-{run_id}", f"health-out-{run_id}"
        tool("create", "--bootstrap", broker.bootstrap, "--topic", t_in, "--partitions", "2")
        tool("create", "--bootstrap", broker.bootstrap, "--topic", t_out, "--partitions", "2")
        d = tmpdir("kafka-health")
        out_file = os.path.join(d, "from-kafka.txt")
        w = Worker(d)
        w.start()
        # A distributed worker (kafka backbone on the shared broker) with a KafkaSource of its own
        # group on the private broker: its unit's connection in GET /cluster.
        os.makedirs(os.path.join(d, "dist"))
        dw = Worker(os.path.join(d, "dist"), {
            "backbone": "kafka", "backbone.kafka.bootstrap.servers": SHARED, "cluster.name": f"health{run_id}",
            "worker.id": "w1", "cluster.session.timeout.ms": "3000", "cluster.heartbeat.interval.ms": "300"},
            mode="distributed")
        dw.start(timeout=60)
        dsrc = f"dsrc-{run_id}"
        dw.ok("POST", "/connectors", {"name": dsrc, "config": {
            "connector.class": "KafkaSource", "kafka.bootstrap.servers": broker.bootstrap, "kafka.topics": t_in,
            "kafka.group.id": f"health-dist-{run_id}", "topic": f"dkin-{run_id}"}})

        def unit_connection(state):
            status, c = dw.rest("GET", "/cluster", timeout=5)
            if status != 200:
                return None
            for a in c.get("assignment", []):
                if a.get("connector") == dsrc and "task" in a and a.get("connection", {}).get("state") == state:
                    return a
            return None
        src, sink = f"ksrc-{run_id}", f"ksink-{run_id}"
        # errors.retry.delay.max.ms at its default (60 s): the runner's back-off must not be what
        # bounds the resume.
        w.ok("POST", "/connectors", {"name": src, "config": {
            "connector.class": "KafkaSource", "kafka.bootstrap.servers": broker.bootstrap,
            "kafka.topics": t_in, "topic": f"kin-{run_id}"}})
        w.ok("POST", "/connectors", {"name": f"kfile-{run_id}", "config": {
            "connector.class": "FileStreamSink", "topics": f"kin-{run_id}", "file": out_file}})
        w.ok("POST", "/connectors", {"name": f"gen-{run_id}", "config": {
            "connector.class": "DatagenSource", "topic": f"gen-{run_id}", "format": "string",
            "key.mode": "seq", "rate": str(GEN_RATE), "max.records": str(GEN_COUNT)}})
        w.ok("POST", "/connectors", {"name": sink, "config": {
            "connector.class": "KafkaSink", "topics": f"gen-{run_id}", "kafka.bootstrap.servers": broker.bootstrap,
            "kafka.topic": t_out}})

        def lines():
            try:
                with open(out_file, "rb") as f:
                    return [l for l in f.read().splitlines() if l.strip()]
            except FileNotFoundError:
                return []

        # (a) healthy
        tool("produce", "--bootstrap", broker.bootstrap, "--topic", t_in, "--count", "200", "--first-seq", "0")
        wait_until(lambda: len(set(lines())) >= 200, 60, "(a) 200 records of IN in the file", 0.2)
        wait_until(lambda: (w.metric("ferry_task_records_in_total", sink) or 0) > 50, 30, "(a) the sink writing", 0.2)
        for name in (src, sink):
            wait_until(lambda: conn_state(w, name) == "connected", 15, f"(a) {name} connected", 0.2)
        wait_until(lambda: unit_connection("connected") and
                   (dw.metric("ferry_task_records_out_total", dsrc) or 0) >= 200, 60,
                   "(a) the distributed KafkaSource read IN, its unit connected in GET /cluster", 0.2)
        print("(a) healthy: both tasks connected, 200 records read; the distributed worker's unit connected "
              "in GET /cluster", flush=True)

        # (b) the broker killed
        t_kill = time.time()
        broker.cmd("kill9", timeout=60)
        shown = {}

        def both_reconnecting():
            for name in (src, sink):
                if name not in shown and conn_state(w, name) == "reconnecting":
                    shown[name] = time.time() - t_kill
            return len(shown) == 2
        wait_until(both_reconnecting, 30, "(b) both tasks reconnecting in the status", 0.1)
        for name in (src, sink):
            t = task0(w, name)
            c = t["connection"]
            assert t["state"] == "RUNNING", t
            assert "brokers are down" in c["error"] and "brokers are down" in t.get("trace", ""), t
            assert w.metric("ferry_task_connected", name) == 0, f"(b) {name}: ferry_task_connected is not 0"
            assert shown[name] < SHOW_LIMIT_S, f"(b) {name} said reconnecting only {shown[name]:.1f} s after the kill"
        a = wait_until(lambda: unit_connection("reconnecting"), 10, "(b) the unit reconnecting in GET /cluster", 0.1)
        assert "brokers are down" in a["connection"]["reason"], a
        cluster_s = time.time() - t_kill
        reason = task0(w, src)["connection"]["error"]
        print(f"(b) broker killed: source reconnecting after {shown[src]:.1f} s, sink after {shown[sink]:.1f} s "
              f"({reason!r}); ferry_task_connected 0 for both; GET /cluster on the distributed worker showed its "
              f"unit reconnecting {cluster_s:.1f} s after the kill", flush=True)

        # (c) the broker back after the outage
        time.sleep(max(0.0, OUTAGE_S - (time.time() - t_kill)))
        before = set(lines())
        relaunch = broker.relaunch_async()
        wait_until(broker.accepts, 120, "the private broker accepting connections", 0.02)
        t_back = time.time()
        producer = subprocess.Popen([TOOL, "produce", "--bootstrap", broker.bootstrap, "--topic", t_in,
                                     "--count", "200", "--first-seq", "200"],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        produced = []  # when kafka_tool had every record acknowledged: the broker serving again

        # When the source took its first new record (its records_in moved): what the reconnect is
        # measured by. The file, behind the backbone and a sink, follows.
        taken_before = w.metric("ferry_task_records_in_total", src) or 0

        def first_new():
            if not produced and producer.poll() is not None:
                produced.append(time.time() - t_back)
            return (w.metric("ferry_task_records_in_total", src) or 0) > taken_before
        wait_until(first_new, 60, "(c) the first new source record", 0.02)
        first_s = time.time() - t_back
        wait_until(lambda: len(set(lines()) - before) > 0, 60, "(c) the first new source record in the file", 0.05)
        file_s = time.time() - t_back
        out, err = producer.communicate(timeout=120)
        if not produced:
            produced.append(time.time() - t_back)
        assert producer.returncode == 0, f"(c) kafka_tool produce: {err.decode()[-800:]}"
        back = {}
        for name in (src, sink):
            wait_until(lambda: conn_state(w, name) == "connected", 30, f"(c) {name} connected again", 0.1)
            back[name] = time.time() - t_back
            assert w.metric("ferry_task_connected", name) == 1, f"(c) {name}: ferry_task_connected is not 1"
        wait_until(lambda: unit_connection("connected"), 15, "(c) the unit connected again in GET /cluster", 0.1)
        cluster_back_s = time.time() - t_back
        rc = relaunch.wait(timeout=300)
        assert rc == 0, f"relaunch: {relaunch.stderr.read().decode()[-1500:]}"
        assert first_s - produced[0] < FIRST_RECORD_S, \
            f"(c) the first new source record came {first_s - produced[0]:.2f} s after the broker served again " \
            f"({first_s:.2f} s after it accepted connections, kafka_tool's producer done after {produced[0]:.2f} s)"
        print(f"(c) broker back after {t_back - t_kill:.0f} s: the source took the first new record "
              f"{first_s:.2f} s after it accepted connections (in the file after {file_s:.2f} s; kafka_tool's "
              f"producer, started then, done after "
              f"{produced[0]:.2f} s); connected again after "
              f"{back[src]:.1f} s (source), {back[sink]:.1f} s (sink); in GET /cluster after {cluster_back_s:.1f} s",
              flush=True)

        # (d) nothing lost
        wait_until(lambda: len(set(lines())) >= 400, 60, "(d) 400 records of IN in the file", 0.2)
        got = lines()
        missing = [s for s in range(400) if str(s).encode() not in set(got)]
        assert not missing, f"(d) {len(missing)} of IN lost, first {missing[:10]}"
        # Judged at the far end (the sink's own counters start again when its task restarts, which
        # a fatal producer error after the broker's return may cause): OUT read whole until it
        # holds every sequence number.
        seen = {}

        def out_complete():
            seen.clear()
            rows = tool("consume", "--bootstrap", broker.bootstrap, "--topic", t_out, "--count", "0",
                        "--idle-ms", "2000", "--timeout-ms", "30000", timeout=60)
            for line in rows.splitlines():
                if line.strip():
                    r = json.loads(line)
                    seq = int(bytes.fromhex(r["value_hex"]).decode().split("-", 1)[1])
                    seen[seq] = seen.get(seq, 0) + 1
            return all(q in seen for q in range(GEN_COUNT))
        try:
            wait_until(out_complete, 180, "(d) every generated record in OUT", 1.0)
        except AssertionError:
            pass  # the assertion below names what is missing
        lost = [s for s in range(GEN_COUNT) if s not in seen]
        assert not lost, f"(d) {len(lost)} of {GEN_COUNT} generated records missing from OUT, first {lost[:10]}"
        dups = sum(seen.values()) - GEN_COUNT
        print(f"(d) IN -> file: 400 of 400 ({len(got) - len(set(got))} duplicates); Datagen -> OUT: "
              f"{GEN_COUNT} of {GEN_COUNT}, 0 lost, {dups} duplicates", flush=True)
        print(json.dumps({"reconnecting_shown_s": {k: round(v, 2) for k, v in shown.items()},
                          "outage_s": round(t_back - t_kill, 1), "first_source_record_s": round(first_s, 2),
                          "producer_done_s": round(produced[0], 2),
                          "connected_again_s": {k: round(v, 2) for k, v in back.items()},
                          "out_duplicates": dups}), flush=True)

        # (e) input the converter refuses: errors.tolerance and the dead-letter topic
        poison_in = os.path.join(d, "poison.txt")
        with open(poison_in, "w") as f:
            f.write('{"a": 1}\nnot json\n{"a": 3}\n')
        t_poison, t_strict = f"health-poison-{run_id}", f"health-strict-{run_id}"
        json_value = {"value.converter": "org.apache.kafka.connect.json.JsonConverter",
                      "value.converter.schemas.enable": "false"}
        w.ok("POST", "/connectors", {"name": f"poison-src-{run_id}", "config": {
            "connector.class": "FileStreamSource", "file": poison_in, "topic": f"poison-{run_id}"}})
        w.ok("POST", "/connectors", {"name": f"ptol-{run_id}", "config": {
            "connector.class": "KafkaSink", "topics": f"poison-{run_id}", "kafka.bootstrap.servers": broker.bootstrap,
            "kafka.topic": t_poison, "errors.tolerance": "all",
            "errors.deadletterqueue.topic.name": f"poison-dlq-{run_id}", **json_value}})
        w.ok("POST", "/connectors", {"name": f"pstrict-{run_id}", "config": {
            "connector.class": "KafkaSink", "topics": f"poison-{run_id}", "kafka.bootstrap.servers": broker.bootstrap,
            "kafka.topic": t_strict, **json_value}})
        wait_until(lambda: w.metric("ferry_task_dead_letter_records_total", f"ptol-{run_id}") == 1, 30,
                   "(e) the refused record in the dead-letter topic", 0.2)
        rows = tool("consume", "--bootstrap", broker.bootstrap, "--topic", t_poison, "--count", "0",
                    "--idle-ms", "3000", "--timeout-ms", "30000", timeout=60)
        values = [bytes.fromhex(json.loads(l)["value_hex"]).decode() for l in rows.splitlines() if l.strip()]
        assert len(values) == 2 and all("not json" not in v for v in values), f"(e) written to Kafka: {values}"
        t = wait_until(lambda: (lambda t: t if t.get("state") == "FAILED" else None)(task0(w, f"pstrict-{run_id}")),
                       30, "(e) the strict sink FAILED", 0.2)
        assert "VALUE_CONVERTER" in t.get("trace", "") or "onverter" in t.get("trace", ""), t
        print(f"(e) 'not json' with errors.tolerance=all: 2 records in Kafka, 1 in the dead-letter topic; "
              f"tolerance none: FAILED ({t['trace'].splitlines()[0][:160]!r})", flush=True)
        w.stop()
        w = None
        dw.stop()
        dw = None
    finally:
        if relaunch and relaunch.poll() is None:
            relaunch.wait(timeout=300)
        for x in (w, dw):
            if x is not None and x.proc is not None:
                x.proc.kill()
        broker.stop()


if __name__ == "__main__":
    run(main)
