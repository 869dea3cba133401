"""MQTTSource and MQTTSink against a real broker — mosquitto (scripts/services/mosquitto) or, with
FERRY_MQTT_BROKER=mochi, mochi-mqtt (scripts/services/mochi); see mqtt_env.py — in a standalone
worker on the embedded backbone:

  (a) DatagenSource -> MQTTSink (direct task, QoS 1): a mosquitto_sub subscriber gets every one of
      2,000 sequence numbers;
  (b) mosquitto_pub (QoS 1) -> MQTTSource (`ferry/<run>/in/#`) -> backbone -> FileStreamSink: every
      one of 2,000 lines arrives, with the MQTT topic kept;
  (c) persistent session: the worker is stopped, 500 more QoS 1 messages are published while it
      is down, the worker is started again: all 500 arrive (0 lost);
  (d) a wrong password: the connector's task is FAILED and the trace says why;
  (e) two tasks sharing one subscription (tasks.max=2, mqtt.shared.group): 4,000 QoS 1 messages
      are split between them (each task's records_in > 0, per /metrics), none lost, none twice;
  (f) TLS (+ password): a source on mosquitto's TLS listener with the project CA receives; one with
      a CA that did not sign the broker's certificate is FAILED with a certificate error;
  (g) an unreachable broker: the task's status names the address and the refusal.

Needs the broker (scripts/test starts both for the `mqtt` and `integration` labels); fails when it
is unreachable. Uses the mosquitto_pub / mosquitto_sub tools of the mosquitto-clients package
(they speak to either broker)."""
import os
import random
import subprocess
import time

from harness import Worker, read_lines as lines, require_reachable, run, tmpdir, wait_until

from mqtt_env import AUTH_PORT, CA, HOST, NAME as BROKER, PASSWORD, PORT, START_HINT, TLS_PORT, USER, publish
SHARED = 4000
GEN = 2000
LINES = 2000
LATE = 500


def main():
    require_reachable(HOST, PORT, BROKER, START_HINT)
    run_id = random.randrange(1 << 30)
    d = tmpdir("mqtt-connectors")
    uri = f"tcp://{HOST}:{PORT}"
    w = Worker(d)
    w.start()

    # (a) datagen -> MQTT
    gen_topic = f"ferry/{run_id}/gen"
    sub = subprocess.Popen(["mosquitto_sub", "-h", HOST, "-p", str(PORT), "-q", "1", "-t", gen_topic,
                            "-C", str(GEN), "-W", "120"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(0.5)  # let mosquitto_sub subscribe before the first publish
    w.ok("POST", "/connectors", {"name": f"gen-{run_id}", "config": {
        "connector.class": "DatagenSource", "topic": "unused", "format": "string",
        "max.records": str(GEN), "sink.connector.class": "MQTTSink", "sink.mqtt.server.uri": uri,
        "sink.mqtt.topic": gen_topic, "sink.mqtt.qos": "1"}})
    out, err = sub.communicate(timeout=180)
    got = set(out.splitlines())
    missing = [i for i in range(GEN) if b"0-%d" % i not in got]
    assert not missing, f"(a) {len(missing)} of {GEN} never reached the subscriber, first {missing[:5]} ({err.decode()[-300:]})"
    print(f"(a) {GEN} datagen records published through MQTTSink", flush=True)

    # (b) MQTT -> backbone -> file
    out_file = os.path.join(d, "mqtt-in.txt")
    w.ok("POST", "/connectors", {"name": f"mqtt-in-{run_id}", "config": {
        "connector.class": "MQTTSource", "mqtt.server.uri": uri, "mqtt.topics": f"ferry/{run_id}/in/#",
        "mqtt.qos": "1", "mqtt.client.id": f"ferry-it-{run_id}", "topic": f"in-{run_id}"}})
    w.ok("POST", "/connectors", {"name": f"file-out-{run_id}", "config": {
        "connector.class": "FileStreamSink", "topics": f"in-{run_id}", "file": out_file}})
    w.wait_running(f"mqtt-in-{run_id}", 60)
    publish(f"ferry/{run_id}/in/a", [b"line-%d" % i for i in range(LINES)])
    wait_until(lambda: len(lines(out_file)) >= LINES, 120, f"{LINES} lines from MQTT", 0.2)
    assert sorted(lines(out_file)) == sorted(b"line-%d" % i for i in range(LINES)), "(b) lines differ"
    print(f"(b) {LINES} MQTT messages through the backbone", flush=True)

    # (c) persistent session across a worker restart
    assert w.stop() == 0
    publish(f"ferry/{run_id}/in/b", [b"late-%d" % i for i in range(LATE)])
    w.start()

    def late_arrived():
        have = set(lines(out_file))
        return all(b"late-%d" % i in have for i in range(LATE))
    wait_until(late_arrived, 120, f"{LATE} messages published while the worker was down", 0.2)
    print(f"(c) {LATE} messages published while down arrived after the restart", flush=True)

    # (d) wrong password
    w.ok("POST", "/connectors", {"name": f"badauth-{run_id}", "config": {
        "connector.class": "MQTTSource", "mqtt.server.uri": f"tcp://{HOST}:{AUTH_PORT}",
        "mqtt.topics": "x/#", "mqtt.username": "ferry", "mqtt.password": "wrong"}})

    def failed_clearly():
        status, s = w.rest("GET", f"/connectors/badauth-{run_id}/status")
        tasks = s.get("tasks", []) if status == 200 else []
        return any(t["state"] == "FAILED" and ("authori" in t.get("trace", "").lower() or
                                               "password" in t.get("trace", "").lower()) for t in tasks)
    wait_until(failed_clearly, 60, "a FAILED task naming the authentication problem", 0.5)
    print("(d) wrong password reported clearly", flush=True)

    # (e) two tasks sharing one subscription split the stream
    shared_file = os.path.join(d, "shared.txt")
    shared = f"shared-{run_id}"
    w.ok("POST", "/connectors", {"name": shared, "config": {
        "connector.class": "MQTTSource", "mqtt.server.uri": uri, "mqtt.topics": f"ferry/{run_id}/sh/#",
        "mqtt.shared.group": f"g{run_id}", "tasks.max": "2", "mqtt.qos": "1", "topic": f"sh-{run_id}"}})
    w.ok("POST", "/connectors", {"name": f"shared-out-{run_id}", "config": {
        "connector.class": "FileStreamSink", "topics": f"sh-{run_id}", "file": shared_file}})
    w.wait_running(shared, 60)
    status, tasks = w.rest("GET", f"/connectors/{shared}/tasks")
    assert status == 200 and len(tasks) == 2, f"(e) expected 2 tasks: {tasks}"
    for k in range(4):  # several publishers and topics so mosquitto spreads the shared stream
        publish(f"ferry/{run_id}/sh/{k}", [b"sh-%d" % i for i in range(k, SHARED, 4)])
    wait_until(lambda: len(lines(shared_file)) >= SHARED, 120, f"{SHARED} shared-subscription lines", 0.2)
    time.sleep(1.5)  # a duplicate would land within the next flush
    got = lines(shared_file)
    assert sorted(got) == sorted(b"sh-%d" % i for i in range(SHARED)), \
        f"(e) {len(got)} lines, {len(set(got))} distinct, want {SHARED} exactly once"
    status, text = w.rest("GET", "/metrics")
    per_task = {}
    for line in text.splitlines():
        if line.startswith("ferry_task_records_in_total{") and f'connector="{shared}"' in line:
            task = line.split('task="')[1].split('"')[0]
            per_task[task] = float(line.rsplit(" ", 1)[1])
    assert len(per_task) == 2 and all(v > 0 for v in per_task.values()) and sum(per_task.values()) == SHARED, \
        f"(e) per-task records_in {per_task}, want both > 0 summing to {SHARED}"
    print(f"(e) two tasks on one shared subscription split {SHARED} messages {per_task}, 0 lost, 0 twice",
          flush=True)

    # (f) TLS: the right CA works, a wrong one is reported
    tls_file = os.path.join(d, "tls.txt")
    w.ok("POST", "/connectors", {"name": f"tls-in-{run_id}", "config": {
        "connector.class": "MQTTSource", "mqtt.server.uri": f"ssl://{HOST}:{TLS_PORT}",
        "mqtt.ssl.ca.file": CA, "mqtt.username": USER, "mqtt.password": PASSWORD,
        "mqtt.topics": f"ferry/{run_id}/tls/#", "topic": f"tls-{run_id}"}})
    w.ok("POST", "/connectors", {"name": f"tls-out-{run_id}", "config": {
        "connector.class": "FileStreamSink", "topics": f"tls-{run_id}", "file": tls_file}})
    w.wait_running(f"tls-in-{run_id}", 60)
    publish(f"ferry/{run_id}/tls/a", [b"tls-%d" % i for i in range(100)])
    wait_until(lambda: len(lines(tls_file)) >= 100, 60, "100 messages over TLS", 0.2)
    # A CA file that is a valid certificate but did not sign the broker's: the client certificate.
    wrong_ca = os.path.join(os.path.dirname(CA), "client.crt")
    w.ok("POST", "/connectors", {"name": f"tls-bad-{run_id}", "config": {
        "connector.class": "MQTTSource", "mqtt.server.uri": f"ssl://{HOST}:{TLS_PORT}",
        "mqtt.ssl.ca.file": wrong_ca, "mqtt.username": USER, "mqtt.password": PASSWORD,
        "mqtt.topics": "x/#"}})

    def tls_failed_clearly():
        status, s = w.rest("GET", f"/connectors/tls-bad-{run_id}/status")
        tasks = s.get("tasks", []) if status == 200 else []
        return any(t["state"] == "FAILED" and "certificate" in t.get("trace", "").lower() for t in tasks)
    wait_until(tls_failed_clearly, 60, "a FAILED task naming the certificate problem", 0.5)
    print("(f) TLS with the right CA delivers; a wrong CA is reported clearly", flush=True)

    # (g) unreachable broker (a closed port)
    w.ok("POST", "/connectors", {"name": f"unreach-{run_id}", "config": {
        "connector.class": "MQTTSource", "mqtt.server.uri": f"tcp://{HOST}:1", "mqtt.topics": "x/#",
        "mqtt.connect.timeout.ms": "1000"}})
    seen = {}

    def unreachable_clearly():
        status, s = w.rest("GET", f"/connectors/unreach-{run_id}/status")
        tasks = s.get("tasks", []) if status == 200 else []
        seen["tasks"] = tasks
        return any(t["state"] == "FAILED" and f"{HOST}:1" in t.get("trace", "") and
                   "refused" in t.get("trace", "").lower() for t in tasks)
    wait_until(unreachable_clearly, 60, "a FAILED task naming the unreachable address", 0.5)
    print(f"(g) unreachable broker reported: {seen['tasks'][0]['trace'].splitlines()[0][:160]}", flush=True)
    assert w.stop() == 0


if __name__ == "__main__":
    run(main)
