"""The MQTT <-> RocketMQ pipelines in distributed mode: three `ferry distributed` workers on a
RocketMQ backbone (cluster A of scripts/services/rocketmq, cluster.session.timeout.ms=2000) carry
both directions at once while a worker is kill -9ed mid-stream.

  up:   MQTTSource (persistent session, QoS 1) -> MqttRocketMQBridge rules -> RocketMQSink,
        a direct pipeline; mqtt_tool publishes COUNT sequence-numbered QoS 1 messages to
        up<run>/<seq % 10> at RATE/s; rule: first level -> RocketMQ topic, second -> tag dev<n>;
  down: RocketMQSource (DOWN_TASKS tasks over the topic's 4 queues) -> rules -> MQTTSink, a direct
        pipeline; rmq_interop_tool produces COUNT sequence-numbered messages to dn<run> in chunks
        at about the same rate; rule: tag -> MQTT topic dn<run>/<tag>; a persistent QoS 1
        subscriber (its session made before the first message) reads them.

The pipelines' tasks spread over the workers. Mid-stream the worker running the up task (the
MQTT session) is kill -9ed; the failover time (kill -> every task of both pipelines RUNNING on the
other two workers) is printed as JSON; the killed worker starts again and rejoins. Judged at the
far ends: every seq of each direction is in RocketMQ / at the MQTT subscriber with the right tag,
topic and body (0 lost); duplicates are counted and printed.

Needs mosquitto and RocketMQ cluster A. Environment: FERRY_BIN, FERRY_MQTT_TOOL, FERRY_RMQ_TOOL,
FERRY_ROCKETMQ_NAMESRV, FERRY_MQTT_HOST/PORT, FERRY_CLUSTER_BRIDGE_COUNT (per direction, default
20000), FERRY_CLUSTER_BRIDGE_RATE (per direction, messages/s, default 500)."""
import json
import os
import random
import subprocess
import threading
import time

from cluster_check import make_workers
from harness import require_reachable, run, wait_until
from test_mqtt_bridge import (MQTT_HOST, MQTT_PORT, MQTT_TOOL, NS, RMQ_TOOL, as_transform, check_down,
                              check_up, down_rules, mqtt_consume, mqtt_publish, rmq, up_rules)

COUNT = int(os.environ.get("FERRY_CLUSTER_BRIDGE_COUNT", "20000"))
RATE = int(os.environ.get("FERRY_CLUSTER_BRIDGE_RATE", "500"))
SESSION_MS = 2000
DOWN_TASKS = 2
CHUNK = 500


def main():
    assert MQTT_TOOL and RMQ_TOOL, "FERRY_MQTT_TOOL and FERRY_RMQ_TOOL must name the test tools"
    require_reachable(MQTT_HOST, MQTT_PORT, "mosquitto", "scripts/services/mosquitto start")
    host, port = NS.rsplit(":", 1)
    require_reachable(host, port, "RocketMQ NameServer", "scripts/services/rocketmq start A")
    run_id = random.randrange(1 << 30)
    base = {"backbone": "rocketmq", "backbone.rocketmq.namesrv": NS, "cluster.name": f"br{run_id}",
            "cluster.session.timeout.ms": str(SESSION_MS), "cluster.heartbeat.interval.ms": "300",
            "cluster.lease.margin.ms": "500", "offset.flush.interval.ms": "500"}
    workers = make_workers("cluster-bridge", base, 3)
    for w in workers:
        w.start(timeout=60)
    w1 = workers[0]

    def members(w):
        status, body = w.rest("GET", "/cluster")
        return len(body["workers"]) if status == 200 else 0
    wait_until(lambda: all(members(w) == 3 for w in workers), 30, "three members everywhere", 0.2)

    uri = f"tcp://{MQTT_HOST}:{MQTT_PORT}"
    up_topic, dn_topic = f"up{run_id}", f"dn{run_id}"
    rmq("create-topic", "--namesrv", NS, "--topic", up_topic, "--queues", "4")
    rmq("create-topic", "--namesrv", NS, "--topic", dn_topic, "--queues", "4")
    sub_id = f"ferry-check-cdn-{run_id}"
    p = mqtt_consume(f"{dn_topic}/#", sub_id, 0, idle_ms=0, timeout_ms=10000)  # the session first
    p.communicate(timeout=30)
    assert p.returncode == 0, "could not create the subscriber's session"

    up, dn = f"up-{run_id}", f"dn-{run_id}"
    w1.ok("POST", "/pipelines", {"name": up, "source": {
        "connector.class": "MQTTSource", "mqtt.server.uri": uri, "mqtt.topics": f"{up_topic}/+",
        "mqtt.qos": "1", "mqtt.client.id": f"ferry-cup-{run_id}"},
        "transforms": [as_transform(up_rules(run_id))],
        "sink": {"connector.class": "RocketMQSink", "rocketmq.namesrv": NS}})
    workers[1].ok("POST", "/pipelines", {"name": dn, "source": {
        "connector.class": "RocketMQSource", "rocketmq.namesrv": NS, "rocketmq.topics": dn_topic,
        "rocketmq.from": "first", "tasks.max": str(DOWN_TASKS)},
        "transforms": [as_transform(down_rules(run_id, dn_topic))],
        "sink": {"connector.class": "MQTTSink", "mqtt.server.uri": uri, "mqtt.qos": "1",
                 "mqtt.client.id": f"ferry-cdn-{run_id}"}})
    for name in (up, dn):
        status, body = w1.rest("GET", f"/pipelines/{name}")
        assert status == 200 and body["mode"] == "direct", f"GET /pipelines/{name}: {status} {body}"

    def owners(w):
        """{(connector, task id): (state, worker_id)} over both pipelines, or None while unreadable."""
        out = {}
        for name in (up, dn):
            status, st = w.rest("GET", f"/connectors/{name}/status")
            if status != 200:
                return None
            for t in st.get("tasks", []):
                out[(name, t["id"])] = (t["state"], t.get("worker_id"))
        return out

    def all_running(w, allowed):
        o = owners(w)
        return o is not None and len(o) == 1 + DOWN_TASKS and \
            all(s == "RUNNING" and wid in allowed for s, wid in o.values())
    wait_until(lambda: all_running(w1, {"w1", "w2", "w3"}), 60, "every task RUNNING", 0.2)
    placed = owners(w1)
    print(json.dumps({"test": "placed", "tasks": {f"{c}/{t}": wid for (c, t), (_, wid) in placed.items()}}),
          flush=True)

    # Both directions at about RATE/s each.
    sub = mqtt_consume(f"{dn_topic}/#", sub_id, COUNT, idle_ms=10000, timeout_ms=int((COUNT / RATE + 150) * 1000))
    t0 = time.time()
    pub = mqtt_publish(up_topic, COUNT, rate=RATE, topics=10)
    produce_err = []

    def produce():
        try:
            for first in range(0, COUNT, CHUNK):
                due = t0 + first / RATE
                time.sleep(max(0.0, due - time.time()))
                rmq("produce", "--namesrv", NS, "--topic", dn_topic, "--count", str(min(CHUNK, COUNT - first)),
                    "--seed", "7", "--batch", "32", "--first-seq", str(first))
        except Exception as e:  # reported by the main thread
            produce_err.append(e)
    producer = threading.Thread(target=produce)
    producer.start()

    # kill -9 the worker running the MQTT session (the up task) a third of the way in.
    time.sleep(COUNT / RATE / 3)
    victim_id = placed[(up, 0)][1]
    victim = workers[int(victim_id[1:]) - 1]
    witness = next(w for w in workers if w is not victim)
    moved = sorted(f"{c}/{t}" for (c, t), (_, wid) in owners(witness).items() if wid == victim_id)
    victim.kill9()
    t_kill = time.time()
    print(f"worker {victim_id} killed at {t_kill - t0:.1f} s", flush=True)
    survivors = {f"w{i + 1}" for i, w in enumerate(workers) if w is not victim}
    wait_until(lambda: all_running(witness, survivors), 60, f"{victim_id}'s tasks RUNNING elsewhere", 0.05)
    failover_s = time.time() - t_kill
    now = owners(witness)
    print(json.dumps({"test": "kill9_failover", "killed": victim_id, "session_timeout_ms": SESSION_MS,
                      "moved_tasks": moved, "failover_s": round(failover_s, 2),
                      "now": {f"{c}/{t}": wid for (c, t), (_, wid) in now.items()}}), flush=True)
    assert failover_s < SESSION_MS / 1000 + 5, f"failover took {failover_s:.1f} s"
    time.sleep(2)
    victim.start(timeout=60)
    wait_until(lambda: all(members(w) == 3 for w in workers), 30, "the killed worker rejoined", 0.2)
    wait_until(lambda: all_running(witness, {"w1", "w2", "w3"}), 60, "every task RUNNING after the rejoin", 0.2)
    print(f"worker {victim_id} rejoined at {time.time() - t0:.1f} s", flush=True)

    out, err = pub.communicate(timeout=600)
    assert pub.returncode == 0, f"publisher failed: {err.decode()[-1000:]}"
    producer.join(600)
    assert not produce_err, f"producer failed: {produce_err[0]}"
    print(f"both directions published/produced at {time.time() - t0:.1f} s", flush=True)

    # Both readers stop at COUNT messages (plus an idle time for late duplicates) or, when fewer
    # arrived, at their timeout with exit 3: then check_* names what was lost.
    p = subprocess.run([RMQ_TOOL, "consume", "--namesrv", NS, "--topic", up_topic, "--group",
                        f"check-cup-{run_id}", "--from", "first", "--count", str(COUNT), "--idle-ms", "8000",
                        "--timeout-ms", "90000"], capture_output=True, timeout=200)
    assert p.returncode in (0, 3), f"rmq_interop_tool consume exited {p.returncode}: {p.stderr.decode()[-1000:]}"
    rows = [json.loads(line) for line in p.stdout.decode().splitlines() if line.strip()]
    up_dups = check_up(rows, run_id, COUNT, "up (MQTT -> RocketMQ)")
    out, err = sub.communicate(timeout=600)
    assert sub.returncode in (0, 3), f"subscriber exited {sub.returncode}: {err.decode()[-1000:]}"
    rows = [json.loads(line) for line in out.decode().splitlines() if line.strip()]
    dn_dups = check_down(rows, dn_topic, COUNT, "down (RocketMQ -> MQTT)")
    print(json.dumps({"test": "delivery", "per_direction": COUNT, "rate": RATE, "killed": victim_id,
                      "failover_s": round(failover_s, 2), "up_lost": 0, "up_duplicates": up_dups,
                      "down_lost": 0, "down_duplicates": dn_dups,
                      "elapsed_s": round(time.time() - t0, 1)}), flush=True)
    for w in workers:
        assert w.stop() == 0, f"{w.workdir}: not a clean stop"


if __name__ == "__main__":
    run(main)
