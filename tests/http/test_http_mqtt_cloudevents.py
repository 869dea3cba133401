"""MQTT -> CloudEvent -> HTTP end to end, with a worker kill -9 mid-stream (labels http and mqtt:
the broker is scripts/services/mosquitto, or the one tests/integration/mqtt_env.py names).

N sequence-numbered QoS 1 messages ({"seq": i}, MQTT topics ferry/<run>/ce/dev0..dev3) are
published with mosquitto_pub (no MQTT library) to two connectors, each with its own persistent
session (clean start off, session expiry 600 s) and the same CloudEvent transform (id
mqtt-${value:seq}, source /mqtt/${key}, type io.ferry.test.mqtt, datacontenttype
application/json, extension partitionkey:${key}, the key being the MQTT topic):
  - backbone: MQTTSource -> CloudEvent -> topic -> HttpSink http.batch.format=cloudevents;
  - direct: MQTTSource -> CloudEvent -> HttpSink cloudevents in one direct task.
The worker is killed (-9) after about a third of the messages and started again while the
publisher goes on (the broker queues the sessions' messages meanwhile). At the target
(tests/http/http_target.py, which checks every event: specversion 1.0, id, source, type), for
each connector: every seq arrived (0 lost), each event's id, source, type, datacontenttype,
partitionkey and data match its seq and MQTT topic; duplicates are counted and printed.
"""
import json
import os
import random
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))

from http_env import Target  # noqa: E402
from harness import Worker, free_port, require_reachable, run, tmpdir, wait_until  # noqa: E402
from mqtt_env import HOST, NAME, PORT, START_HINT, publish  # noqa: E402

N = 4000
CHUNK = 100
DEVICES = 4
TYPE = "io.ferry.test.mqtt"


def events(target, path):
    return [json.loads(line) for line in target.lines(path)]


def main():
    require_reachable(HOST, PORT, NAME, START_HINT)
    run_id = random.randrange(1 << 30)
    d = tmpdir("http-mqtt-ce")
    target = Target(free_port(), os.path.join(d, "received"))
    w = Worker(d, {"task.restart.backoff.initial.ms": "200", "task.restart.backoff.max.ms": "1000"})
    base = f"ferry/{run_id}/ce"
    try:
        target.start()
        w.start()
        ce = {"transforms": "ce", "transforms.ce.type": "CloudEvent", "transforms.ce.id": "mqtt-${value:seq}",
              "transforms.ce.source": "/mqtt/${key}", "transforms.ce.event.type": TYPE,
              "transforms.ce.datacontenttype": "application/json",
              "transforms.ce.extensions": "partitionkey:${key}"}

        def mqtt(tag):
            return {"connector.class": "MQTTSource", "mqtt.server.uri": f"tcp://{HOST}:{PORT}",
                    "mqtt.topics": f"{base}/#", "mqtt.qos": "1", "mqtt.client.id": f"ferry-ce-{tag}-{run_id}",
                    "mqtt.clean.start": "false", "mqtt.session.expiry.s": "600", **ce}
        sink = {"http.batch.format": "cloudevents", "http.batch.max.records": "200",
                "http.retry.backoff.max.ms": "1000"}
        w.ok("POST", "/connectors", {"name": "mqtt-bb", "config": {**mqtt("bb"), "topic": f"ce-{run_id}"}})
        w.ok("POST", "/connectors", {"name": "http-bb", "config": {
            "connector.class": "HttpSink", "topics": f"ce-{run_id}", "http.url": f"{target.url}/bb", **sink}})
        w.ok("POST", "/connectors", {"name": "mqtt-direct", "config": {
            **mqtt("direct"), "sink.connector.class": "HttpSink", "sink.http.url": f"{target.url}/direct",
            **{f"sink.{k}": v for k, v in sink.items()}}})
        for name in ("mqtt-bb", "http-bb", "mqtt-direct"):
            w.wait_running(name, 60)

        # The sessions are subscribed once a probe message reaches the target through both.
        def probed():
            publish(f"{base}/probe", [b'{"seq": -1}'])
            return all(any(e["data"]["seq"] == -1 for e in events(target, p)) for p in ("bb", "direct"))
        wait_until(probed, 60, "a probe message through both connectors", 1.0)

        published = [0]
        failure = []

        def publisher():
            try:
                for start in range(0, N, CHUNK):
                    by_topic = {}
                    for i in range(start, min(start + CHUNK, N)):
                        by_topic.setdefault(f"{base}/dev{i % DEVICES}", []).append(json.dumps({"seq": i}).encode())
                    for topic, payloads in by_topic.items():
                        publish(topic, payloads)
                    published[0] = min(start + CHUNK, N)
                    time.sleep(0.05)
            except Exception as e:  # reported by the main thread
                failure.append(e)
        t = threading.Thread(target=publisher, daemon=True)
        t.start()
        wait_until(lambda: published[0] >= N // 3 or failure, 60, "a third of the messages published", 0.02)
        w.kill9()
        at_kill = published[0]
        time.sleep(1)
        w.start()
        t.join(120)
        assert not failure, f"publishing failed: {failure[0]}"
        assert published[0] == N, f"published only {published[0]} of {N}"

        for path in ("bb", "direct"):
            def seqs():
                return {e["data"]["seq"] for e in events(target, path)}
            wait_until(lambda: seqs() >= set(range(N)), 120, f"({path}) all {N} events at the target", 0.2)
            got = [e for e in events(target, path) if e["data"]["seq"] >= 0]
            for e in got:
                seq = e["data"]["seq"]
                topic = f"{base}/dev{seq % DEVICES}"
                want = {"specversion": "1.0", "id": f"mqtt-{seq}", "source": f"/mqtt/{topic}", "type": TYPE,
                        "datacontenttype": "application/json", "partitionkey": topic, "data": {"seq": seq}}
                have = {k: e.get(k) for k in want}
                assert have == want, f"({path}) event {e} is not {want}"
            ids = [e["id"] for e in got]
            print(f"({path}) {N} QoS 1 messages -> CloudEvent -> HttpSink cloudevents through a worker kill -9 "
                  f"({at_kill} published before it): 0 lost, {len(ids) - len(set(ids))} duplicates, every event "
                  f"valid with its seq, id, source and partitionkey", flush=True)
        assert w.stop() == 0
    finally:
        target.stop()


if __name__ == "__main__":
    run(main)
