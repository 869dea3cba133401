"""The MQTT <-> RocketMQ bridge on real mosquitto and a real RocketMQ (cluster A), in a standalone
worker, with the MqttRocketMQBridge rules:

  (0) a bad rule is refused when the connector is created, naming the key;
  (1) MQTT -> RocketMQ, direct task: mqtt_tool publishes COUNT sequence-numbered QoS 1 messages to
      up<run>/<seq % 10> at a fixed rate; rule: first level -> RocketMQ topic, second -> tag,
      original topic kept in the mqtt.topic property. Mid-stream the worker is kill -9ed and
      started again, later mosquitto is stopped and started again. Every seq must arrive in
      RocketMQ with the right tag and property (0 lost; duplicates counted);
  (2) RocketMQ -> MQTT, direct task created as a pipeline (POST /pipelines): COUNT messages produced to dn<run> in ten chunks; rule: tag ->
      MQTT topic dn<run>/<tag>; a persistent QoS 1 subscriber must see every seq on the right
      topic; the worker is kill -9ed after chunk 3 and mosquitto restarted after chunk 6;
  (3) both directions through the backbone, each created as one backbone pipeline (MQTTSource ->
      backbone -> rules + RocketMQSink, and RocketMQSource -> backbone -> rules + MQTTSink),
      BACKBONE_COUNT messages each, 0 lost.

Needs mosquitto and RocketMQ cluster A (scripts/test starts both for `integration`, `mqtt` and
`rocketmq`). Environment: FERRY_BIN, FERRY_MQTT_TOOL, FERRY_RMQ_TOOL, FERRY_BRIDGE_COUNT
(default 100000)."""
import json
import os
import random
import socket
import subprocess
import time

from harness import Worker, run, tmpdir, wait_until

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NS = os.environ.get("FERRY_ROCKETMQ_NAMESRV", "127.0.0.1:19876")
MQTT_HOST = os.environ.get("FERRY_MQTT_HOST", "127.0.0.1")
MQTT_PORT = int(os.environ.get("FERRY_MQTT_PORT", "18830"))
MQTT_TOOL = os.environ.get("FERRY_MQTT_TOOL", "")
RMQ_TOOL = os.environ.get("FERRY_RMQ_TOOL", "")
COUNT = int(os.environ.get("FERRY_BRIDGE_COUNT", "100000"))
RATE = int(os.environ.get("FERRY_BRIDGE_RATE", "10000"))
BACKBONE_COUNT = int(os.environ.get("FERRY_BRIDGE_BACKBONE_COUNT", "10000"))
CHUNKS = 10


def reachable(host, port, what):
    try:
        socket.create_connection((host, port), timeout=3).close()
    except OSError as e:
        raise AssertionError(f"{what} {host}:{port} unreachable ({e}); scripts/test starts it")


def rmq(*args, timeout=900):
    p = subprocess.run([RMQ_TOOL, *args], capture_output=True, timeout=timeout)
    if p.returncode != 0:
        raise AssertionError(f"rmq_interop_tool {' '.join(args)} exited {p.returncode}:\n"
                             f"{p.stderr.decode(errors='replace')[-2000:]}")
    return [json.loads(line) for line in p.stdout.decode().splitlines() if line.strip()]


def mqtt_consume(filter_, client_id, count, idle_ms=5000, timeout_ms=600000):
    # --reconnect-idle-ms: once, after a mosquitto restart, the subscriber got nothing more for 10
    # minutes although mosquitto had acknowledged every message to ferry (see mqtt_tool.cc); it
    # connects again after 20 s without a message and prints the stall (stalls()) with what it
    # held unacknowledged. What mosquitto does not hold still counts as lost.
    # --distinct-prop seq: duplicates (replays after a kill -9) do not count toward `count`. They
    # used to: the subscriber then stopped at `count` after an 8 s pause while the last few
    # thousand distinct messages were still coming, and the test reported them lost although
    # ferry had them acknowledged by mosquitto (seen twice: 2,901 and 3,248 "lost").
    args = [MQTT_TOOL, "consume", "--host", MQTT_HOST, "--port", str(MQTT_PORT), "--filter", filter_,
            "--client-id", client_id, "--count", str(count), "--idle-ms", str(idle_ms),
            "--timeout-ms", str(timeout_ms), "--reconnect-idle-ms", "20000", "--distinct-prop", "seq"]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def mqtt_publish(topic, count, first=0, rate=0, topics=1):
    args = [MQTT_TOOL, "publish", "--host", MQTT_HOST, "--port", str(MQTT_PORT), "--topic", topic,
            "--count", str(count), "--first-seq", str(first), "--qos", "1", "--rate", str(rate),
            "--topics", str(topics)]
    return subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def mosquitto(cmd):
    p = subprocess.run([os.path.join(ROOT, "scripts/services/mosquitto"), cmd], capture_output=True,
                       timeout=60)
    assert p.returncode == 0, f"mosquitto {cmd}: {p.stderr.decode()[-500:]}"


def restart_mosquitto():
    mosquitto("restart")  # TERM: mosquitto saves sessions and queued messages, then starts again


def up_rules(run_id):
    return {"transforms": "bridge", "transforms.bridge.type": "MqttRocketMQBridge",
            "transforms.bridge.direction": "mqtt-to-rocketmq", "transforms.bridge.rules": "r",
            "transforms.bridge.rule.r.mqtt.filter": f"up{run_id}/+",
            "transforms.bridge.rule.r.rocketmq.topic": "${level:1}",
            "transforms.bridge.rule.r.rocketmq.tag": "dev${level:2}"}


def down_rules(run_id, topic):
    return {"transforms": "bridge", "transforms.bridge.type": "MqttRocketMQBridge",
            "transforms.bridge.direction": "rocketmq-to-mqtt", "transforms.bridge.rules": "r",
            "transforms.bridge.rule.r.rocketmq.topic": topic,
            "transforms.bridge.rule.r.mqtt.topic": f"{topic}/${{tag}}"}


def as_transform(rules):
    """A connector's transforms.bridge.* keys as a pipeline transform entry."""
    t = {"alias": "bridge"}
    for k, v in rules.items():
        if k.startswith("transforms.bridge."):
            t[k[len("transforms.bridge."):]] = v
    return t


def expected_body(seed, seq):
    """rmq_interop_tool's deterministic body (tests/interop/README.md)."""
    n = 8 + (seq * 131 + seed) % 97
    return bytes(0 if i % 5 == 0 else (seq * 31 + i * 17 + seed * 7) % 256 for i in range(n))


def dup_ranges(seqs, what):
    """Prints where the duplicates are (re-deliveries after a fault come in runs)."""
    runs, start, prev = [], None, None
    for s in sorted(k for k, n in seqs.items() if n > 1):
        if start is None or s != prev + 1:
            if start is not None:
                runs.append((start, prev))
            start = s
        prev = s
    if start is not None:
        runs.append((start, prev))
    if runs:
        print(f"{what} duplicated seq ranges: {runs[:8]}{' ...' if len(runs) > 8 else ''}", flush=True)


def ranges(seqs):
    """[(first, last), ...] of the runs of consecutive numbers in seqs."""
    runs = []
    for s in sorted(seqs):
        if runs and s == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], s)
        else:
            runs.append((s, s))
    return runs


def runs_by_step(seqs, step=4):
    """[(first, last), ...] of the runs of `seqs` (sorted) whose members are `step` apart: the
    seqs of one RocketMQ queue."""
    out = []
    for s in seqs:
        if out and s == out[-1][1] + step:
            out[-1] = (out[-1][0], s)
        else:
            out.append((s, s))
    return out


def stalls(what, err):
    """Prints the subscriber's stalls (see mqtt_consume)."""
    for line in err.decode(errors="replace").splitlines():
        if line.startswith("stalled"):
            print(f"{what} subscriber {line}", flush=True)


def subscriber_failed(what, out, err, count):
    """The subscriber's error, with which seqs it had not received (mqtt_tool prints every
    message as it arrives, so its output holds what came before the failure)."""
    got = {}
    for line in out.decode(errors="replace").splitlines():
        try:
            m = json.loads(line)
            got[int(m["props"]["seq"])] = m.get("dup", False)
        except (ValueError, KeyError):
            continue
    missing = ranges(s for s in range(count) if s not in got)
    return (f"{what} subscriber: {err.decode(errors='replace')[-1000:]}; {len(got)} distinct seqs, "
            f"missing {sum(b - a + 1 for a, b in missing)} in {len(missing)} runs: {missing[:10]}")


def task_counters(w, connector):
    """The connector's status and its task metrics (records in/out, in flight, commits, retries,
    errors) as /metrics gives them, for a failure message."""
    status, body = w.rest("GET", f"/connectors/{connector}/status")
    lines = []
    code, text = w.rest("GET", "/metrics")
    for line in str(text).splitlines():
        if f'connector="{connector}"' in line and any(k in line for k in (
                "records_in_total", "records_out_total", "inflight_records", "commits_total",
                "retries_total", "errors_total", "records_dropped_total")):
            lines.append(line)
    if code != 200:
        lines.append(f"/metrics answered {code}")
    return f"status {status} {json.dumps(body)[:600]}; " + "; ".join(lines)


def check_up(rows, run_id, count, what):
    seqs = {}
    for m in rows:
        seq = int(m["props"]["seq"])
        assert bytes.fromhex(m["body_hex"]) == str(seq).encode(), f"{what}: seq {seq} body differs"
        assert m["tags"] == f"dev{seq % 10}", f"{what}: seq {seq} tag {m['tags']!r}"
        assert m["props"].get("mqtt.topic") == f"up{run_id}/{seq % 10}", \
            f"{what}: seq {seq} mqtt.topic {m['props'].get('mqtt.topic')!r}"
        seqs[seq] = seqs.get(seq, 0) + 1
    missing = [s for s in range(count) if s not in seqs]
    assert not missing, f"{what}: {len(missing)} of {count} lost, first {missing[:10]}"
    dup_ranges(seqs, what)
    return sum(seqs.values()) - count


def check_down(rows, topic, count, what, w=None, connector=None):
    seqs = {}
    for m in rows:
        seq = int(m["props"]["seq"])
        assert m["topic"] == f"{topic}/T{seq % 3}", f"{what}: seq {seq} on {m['topic']!r}"
        assert bytes.fromhex(m["payload_hex"]) == expected_body(7, seq), f"{what}: seq {seq} payload differs"
        seqs[seq] = seqs.get(seq, 0) + 1
    missing = [s for s in range(count) if s not in seqs]
    if missing:
        # Where it went: the producer puts seq on RocketMQ queue seq % 4, so the missing runs per
        # queue tell a source-side skip (whole runs of some queues) from a broker's time window;
        # ferry's committed positions and counters say what it believes it delivered.
        print(f"{what}: {len(missing)} of {count} lost; {sum(seqs.values()) - len(seqs)} duplicates received",
              flush=True)
        for q in range(4):
            mine = [s for s in missing if s % 4 == q]
            print(f"{what}: queue {q}: {len(mine)} missing, runs {runs_by_step(mine)[:5]}", flush=True)
        if w is not None and connector is not None:
            print(f"{what}: ferry's view: {task_counters(w, connector)}", flush=True)
            print(f"{what}: ferry's committed positions: {w.rest('GET', f'/connectors/{connector}/offsets')}",
                  flush=True)
    assert not missing, f"{what}: {len(missing)} of {count} lost, first {missing[:10]}"
    dup_ranges(seqs, what)
    return sum(seqs.values()) - count


def main():
    assert MQTT_TOOL and RMQ_TOOL, "FERRY_MQTT_TOOL and FERRY_RMQ_TOOL must name the test tools"
    reachable(MQTT_HOST, MQTT_PORT, "mosquitto")
    host, port = NS.rsplit(":", 1)
    reachable(host, int(port), "RocketMQ NameServer")
    run_id = random.randrange(1 << 30)
    d = tmpdir("mqtt-bridge")
    w = Worker(d)
    w.start()
    uri = f"tcp://{MQTT_HOST}:{MQTT_PORT}"

    # (0) a bad rule is refused at create time, naming the key.
    bad = {"connector.class": "MQTTSource", "mqtt.server.uri": uri, "mqtt.topics": "x/#",
           **up_rules(run_id), "transforms.bridge.rule.r.rocketmq.topic": "${level:3}",
           "sink.connector.class": "RocketMQSink", "sink.rocketmq.namesrv": NS}
    status, body = w.rest("POST", "/connectors", {"name": f"bad-{run_id}", "config": bad})
    text = json.dumps(body)
    assert status == 400 and "transforms.bridge.rule.r.rocketmq.topic" in text and "guarantees" in text, \
        f"(0) expected 400 naming the rule key, got {status}: {text[:500]}"
    bad_rules = {**up_rules(run_id), "transforms.bridge.rule.r.rocketmq.topic": "${level:3}"}
    status, body = w.rest("POST", "/pipelines", {"name": f"bad-{run_id}", "source": {
        "connector.class": "MQTTSource", "mqtt.server.uri": uri, "mqtt.topics": "x/#"},
        "transforms": [as_transform(bad_rules)],
        "sink": {"connector.class": "RocketMQSink", "rocketmq.namesrv": NS}})
    text = json.dumps(body)
    assert status == 400 and "transforms.bridge.rule.r.rocketmq.topic" in text, \
        f"(0) expected the pipeline refused naming the rule key, got {status}: {text[:500]}"
    status, body = w.rest("GET", "/connectors")
    assert status == 200 and not [c for c in body if str(run_id) in c], f"(0) left behind: {body}"
    print("(0) a rule using a level its filter does not guarantee is refused at create time", flush=True)

    # (1) MQTT -> RocketMQ, direct, with a worker kill -9 and a mosquitto restart mid-stream.
    up_topic = f"up{run_id}"
    rmq("create-topic", "--namesrv", NS, "--topic", up_topic, "--queues", "4")
    up = f"up-{run_id}"
    w.ok("POST", "/connectors", {"name": up, "config": {
        "connector.class": "MQTTSource", "mqtt.server.uri": uri, "mqtt.topics": f"up{run_id}/+",
        "mqtt.qos": "1", "mqtt.client.id": f"ferry-up-{run_id}", **up_rules(run_id),
        "sink.connector.class": "RocketMQSink", "sink.rocketmq.namesrv": NS}})
    w.wait_running(up, 60)
    t0 = time.time()
    pub = mqtt_publish(up_topic, COUNT, rate=RATE, topics=10)
    time.sleep(COUNT / RATE * 0.3)
    w.kill9()
    print(f"(1) worker killed at {time.time() - t0:.1f} s", flush=True)
    w.start()
    time.sleep(COUNT / RATE * 0.3)
    restart_mosquitto()
    print(f"(1) mosquitto restarted at {time.time() - t0:.1f} s", flush=True)
    out, err = pub.communicate(timeout=900)
    assert pub.returncode == 0, f"(1) publisher failed: {err.decode()[-1000:]}"
    print(f"(1) publisher: {out.decode().strip()}", flush=True)
    rows = rmq("consume", "--namesrv", NS, "--topic", up_topic, "--group", f"check-up-{run_id}",
               "--from", "first", "--count", str(COUNT), "--idle-ms", "8000", "--timeout-ms", "600000")
    dups = check_up(rows, run_id, COUNT, "(1)")
    print(f"(1) MQTT -> RocketMQ direct: {COUNT} QoS 1 messages, 0 lost, {dups} duplicates, "
          f"{time.time() - t0:.1f} s", flush=True)

    # (2) RocketMQ -> MQTT, direct, with a worker kill -9 and a mosquitto restart mid-stream.
    dn_topic = f"dn{run_id}"
    rmq("create-topic", "--namesrv", NS, "--topic", dn_topic, "--queues", "4")
    sub_id = f"ferry-check-dn-{run_id}"
    # Create the subscriber's persistent session first, so nothing published is missed.
    p = mqtt_consume(f"{dn_topic}/#", sub_id, 0, idle_ms=0, timeout_ms=10000)
    p.communicate(timeout=30)
    assert p.returncode == 0, "(2) could not create the subscriber's session"
    # This direction is declared as a direct pipeline (one object; one direct connector).
    dn = f"dn-{run_id}"
    w.ok("POST", "/pipelines", {"name": dn, "source": {
        "connector.class": "RocketMQSource", "rocketmq.namesrv": NS, "rocketmq.topics": dn_topic,
        "rocketmq.from": "first"},
        "transforms": [as_transform(down_rules(run_id, dn_topic))],
        "sink": {"connector.class": "MQTTSink", "mqtt.server.uri": uri, "mqtt.qos": "1",
                 "mqtt.client.id": f"ferry-dn-{run_id}"}})
    status, body = w.rest("GET", f"/pipelines/{dn}")
    assert status == 200 and body["mode"] == "direct" and body["connectors"][0]["name"] == dn, \
        f"(2) GET /pipelines/{dn}: {status} {body}"
    w.wait_running(dn, 60)
    sub = mqtt_consume(f"{dn_topic}/#", sub_id, COUNT, idle_ms=8000)
    t0 = time.time()
    chunk = COUNT // CHUNKS
    for i in range(CHUNKS):
        n = chunk if i < CHUNKS - 1 else COUNT - chunk * (CHUNKS - 1)
        rmq("produce", "--namesrv", NS, "--topic", dn_topic, "--count", str(n), "--seed", "7",
            "--batch", "32", "--first-seq", str(i * chunk))
        if i == 2:
            w.kill9()
            print(f"(2) worker killed at {time.time() - t0:.1f} s", flush=True)
            w.start()
        if i == 5:
            restart_mosquitto()
            print(f"(2) mosquitto restarted at {time.time() - t0:.1f} s", flush=True)
    out, err = sub.communicate(timeout=900)
    stalls("(2)", err)
    if sub.returncode != 0:
        # Which side stopped: ferry (records in/out, in flight, its status) or after it.
        print(f"(2) ferry's view after the subscriber gave up: {task_counters(w, dn)}", flush=True)
    assert sub.returncode == 0, subscriber_failed("(2)", out, err, COUNT)
    rows = [json.loads(line) for line in out.decode().splitlines() if line.strip()]
    dups = check_down(rows, dn_topic, COUNT, "(2)", w, dn)
    print(f"(2) RocketMQ -> MQTT direct: {COUNT} messages, 0 lost, {dups} duplicates, "
          f"{time.time() - t0:.1f} s", flush=True)

    # (3) both directions through the backbone, each declared as a backbone pipeline: the source
    # writes to the pipeline's backbone topic, the sink applies the rules.
    bb_up = f"up{run_id}b"
    rmq("create-topic", "--namesrv", NS, "--topic", bb_up, "--queues", "4")
    w.ok("POST", "/pipelines", {"name": f"bb-up-{run_id}", "mode": "backbone", "source": {
        "connector.class": "MQTTSource", "mqtt.server.uri": uri, "mqtt.topics": f"{bb_up}/+",
        "mqtt.qos": "1", "mqtt.client.id": f"ferry-bb-up-{run_id}"},
        "transforms": [as_transform(up_rules(f"{run_id}b"))],
        "sink": {"connector.class": "RocketMQSink", "rocketmq.namesrv": NS}})
    bb_dn = f"dn{run_id}b"
    rmq("create-topic", "--namesrv", NS, "--topic", bb_dn, "--queues", "4")
    bb_sub_id = f"ferry-check-bbdn-{run_id}"
    p = mqtt_consume(f"{bb_dn}/#", bb_sub_id, 0, idle_ms=0, timeout_ms=10000)
    p.communicate(timeout=30)
    w.ok("POST", "/pipelines", {"name": f"bb-dn-{run_id}", "mode": "backbone", "source": {
        "connector.class": "RocketMQSource", "rocketmq.namesrv": NS, "rocketmq.topics": bb_dn,
        "rocketmq.from": "first"},
        "transforms": [as_transform(down_rules(run_id, bb_dn))],
        "sink": {"connector.class": "MQTTSink", "mqtt.server.uri": uri, "mqtt.qos": "1"}})
    for name in (f"bb-up-{run_id}-source", f"bb-up-{run_id}-sink-1", f"bb-dn-{run_id}-source",
                 f"bb-dn-{run_id}-sink-1"):
        w.wait_running(name, 60)
    sub = mqtt_consume(f"{bb_dn}/#", bb_sub_id, BACKBONE_COUNT, idle_ms=5000)
    pub = mqtt_publish(bb_up, BACKBONE_COUNT, topics=10)
    rmq("produce", "--namesrv", NS, "--topic", bb_dn, "--count", str(BACKBONE_COUNT), "--seed", "7",
        "--batch", "32")
    out, err = pub.communicate(timeout=600)
    assert pub.returncode == 0, f"(3) publisher failed: {err.decode()[-1000:]}"
    rows = rmq("consume", "--namesrv", NS, "--topic", bb_up, "--group", f"check-bbup-{run_id}",
               "--from", "first", "--count", str(BACKBONE_COUNT), "--idle-ms", "5000",
               "--timeout-ms", "300000")
    up_dups = check_up(rows, f"{run_id}b", BACKBONE_COUNT, "(3) up")
    out, err = sub.communicate(timeout=600)
    stalls("(3)", err)
    assert sub.returncode == 0, subscriber_failed("(3)", out, err, BACKBONE_COUNT)
    rows = [json.loads(line) for line in out.decode().splitlines() if line.strip()]
    dn_dups = check_down(rows, bb_dn, BACKBONE_COUNT, "(3) down")
    print(f"(3) through the backbone: {BACKBONE_COUNT} each way, 0 lost "
          f"({up_dups} / {dn_dups} duplicates)", flush=True)
    assert w.stop() == 0


if __name__ == "__main__":
    run(main)
