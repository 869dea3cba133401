"""Config providers in distributed mode: the secret stays on the workers, the cluster log carries
the reference. Three `ferry distributed` workers on the Kafka backbone (cluster A of
scripts/services/kafka), each with `config.providers=file` allowed to read one temp folder that
holds `secrets.properties` (every worker can read it); mosquitto's password listener
(scripts/services/mosquitto start all; user ferry / ferry-secret).

  (a) an MQTTSource whose mqtt.username and mqtt.password are `${file:<tmp>/secrets.properties:…}`
      is created through one worker while its task runs on another (checked with the worker ids
      of /connectors/x/status); N sequence-numbered MQTT messages reach its backbone topic (read
      back with kafka_tool) and a FileStreamSink's file, none lost;
  (b) the REST answers of all three workers (the connector, its config, tasks, status,
      ?expand=info, /connectors/list, /allocated/*, /cluster) hold the reference or `[hidden]`,
      never the password, and /config and /tasks hold the reference;
  (c) the cluster-log topic, its snapshot topic and the position topic, read raw from Kafka
      (kafka_tool: every record's key, value and headers), do not contain the password's bytes
      (nor its hex, base64 or JSON-escaped forms), while the cluster log does hold the reference
      (in the connector's config and in its task config);
  (d) kill -9 of the worker running the task: the task runs RUNNING on a survivor, which resolves
      the secret itself (it logs in to the password listener: N more messages, published after
      the kill, arrive), and (b) and (c) still hold; the survivors' logs never show the password.

The checks can fail: with a worker whose startConnectorInstance skipped runtime::reReference (task
configs built from resolved values) the test failed in (b) (GET …/tasks showed `[hidden]`, not the
reference) and, with (b)'s reference check taken out for that run, in (c) (the cluster log's task
config event held the password); with a worker that resolved the config before appending the create
event it failed at the POST answer.

Environment: FERRY_BIN, FERRY_KAFKA_TOOL, FERRY_KAFKA_BOOTSTRAP (default 127.0.0.1:19092),
FERRY_MQTT_HOST, FERRY_MQTT_AUTH_PORT, FERRY_MQTT_USER, FERRY_MQTT_PASSWORD."""
import base64
import json
import os
import random
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from harness import run, start_cluster, tmpdir, wait_until  # noqa: E402

BOOTSTRAP = os.environ.get("FERRY_KAFKA_BOOTSTRAP", "127.0.0.1:19092")
TOOL = os.environ.get("FERRY_KAFKA_TOOL", "")
HOST = os.environ.get("FERRY_MQTT_HOST", "127.0.0.1")
AUTH_PORT = int(os.environ.get("FERRY_MQTT_AUTH_PORT", "18831"))
USER = os.environ.get("FERRY_MQTT_USER", "ferry")
PASSWORD = os.environ.get("FERRY_MQTT_PASSWORD", "ferry-secret")
N = 500

# Every form in which the password's bytes could sit in a record: raw (as kafka_tool's hex), the
# text itself (headers), base64, and JSON-escaped (\uXXXX for every character).
SECRET_HEX = PASSWORD.encode().hex()
SECRET_FORMS = [PASSWORD, base64.b64encode(PASSWORD.encode()).decode(),
                "".join("\\u%04x" % ord(c) for c in PASSWORD)]


def kafka_tool(*args, timeout=180):
    p = subprocess.run([TOOL, *args], capture_output=True, timeout=timeout)
    assert p.returncode == 0, f"kafka_tool {' '.join(args)}: rc {p.returncode}: {p.stderr.decode()[-800:]}"
    return p.stdout.decode()


def read_topic(topic):
    """Every record of `topic` from its start (until nothing came for 4 s): a list of dicts with
    key_hex, value_hex, headers."""
    ends = json.loads(kafka_tool("ends", "--bootstrap", BOOTSTRAP, "--topic", topic).strip().splitlines()[-1])
    if ends["end"] == 0:
        return []
    # The cluster log grows all the time (heartbeats): read up to the end it had a moment ago.
    out = kafka_tool("consume", "--bootstrap", BOOTSTRAP, "--topic", topic, "--count", "0", "--idle-ms", "4000",
                     "--max", str(ends["end"]), "--timeout-ms", "120000")
    return [json.loads(line) for line in out.splitlines() if line.strip()]


def leaks_in(records):
    """The records (as 'partition/offset: where') whose key, value or headers hold the password."""
    hits = []
    for r in records:
        for part in ("key_hex", "value_hex"):
            raw = r.get(part) or ""
            if SECRET_HEX in raw:
                hits.append(f"{r['partition']}/{r['offset']} {part}")
            else:
                text = bytes.fromhex(raw).decode("utf-8", "replace")
                if any(f in text for f in SECRET_FORMS[1:]):
                    hits.append(f"{r['partition']}/{r['offset']} {part} (encoded)")
        if any(f in json.dumps(r.get("headers") or {}) for f in SECRET_FORMS) or \
                any(SECRET_HEX in str(v) for v in (r.get("headers") or {}).values()):
            hits.append(f"{r['partition']}/{r['offset']} headers")
    return hits


def values_text(records):
    return "\n".join(bytes.fromhex(r.get("value_hex") or "").decode("utf-8", "replace") for r in records)


def no_secret(where, payload):
    text = payload if isinstance(payload, str) else json.dumps(payload)
    assert not any(f in text for f in SECRET_FORMS), f"{where} shows the password: {text[:1500]}"
    return text


def publish(topic, payloads):
    p = subprocess.run(["mosquitto_pub", "-h", HOST, "-p", str(AUTH_PORT), "-u", USER, "-P", PASSWORD, "-q", "1",
                        "-t", topic, "-l"], input=b"\n".join(payloads) + b"\n", capture_output=True, timeout=120)
    assert p.returncode == 0, f"mosquitto_pub failed: {p.stderr.decode()}"


def main():
    assert TOOL, "FERRY_KAFKA_TOOL must name kafka_tool"
    for host, port, what in ((HOST, AUTH_PORT, "mosquitto (scripts/services/mosquitto start all)"),
                             (BOOTSTRAP.split(":")[0], int(BOOTSTRAP.split(":")[1]),
                              "Kafka (scripts/services/kafka start all)")):
        try:
            socket.create_connection((host, port), timeout=3).close()
        except OSError as e:
            raise AssertionError(f"{what} {host}:{port} unreachable ({e})")
    run_id = random.randrange(1 << 30)
    root = tmpdir("providers-cluster")
    secrets = os.path.join(root, "secrets")
    os.makedirs(secrets, mode=0o700)
    props_file = os.path.join(secrets, "secrets.properties")
    with open(props_file, "w") as f:
        f.write(f"# the broker's login\nmqtt.user = {USER}\nmqtt.password = {PASSWORD}\n")
    pw_ref = "${file:%s:mqtt.password}" % props_file
    user_ref = "${file:%s:mqtt.user}" % props_file

    files = os.path.join(root, "files")  # the sink's output, allowed on every worker
    os.makedirs(files, mode=0o700)
    out_file = os.path.join(files, "out.txt")
    cluster = f"prov{run_id}"
    base = {"backbone": "kafka", "backbone.kafka.bootstrap.servers": BOOTSTRAP, "cluster.name": cluster,
            "cluster.session.timeout.ms": "2000", "cluster.heartbeat.interval.ms": "300",
            "cluster.snapshot.interval.events": "50", "offset.flush.interval.ms": "500",
            "config.providers": "file", "config.providers.file.param.allowed.paths": secrets,
            "file.allowed.dirs": files}
    workers = start_cluster(root, base)
    by_id = {f"w{i + 1}": w for i, w in enumerate(workers)}

    def members(w):
        status, body = w.rest("GET", "/cluster")
        return status == 200 and len(body["workers"]) == 3
    wait_until(lambda: all(members(w) for w in workers), 60, "three members everywhere", 0.2)

    topic = f"prov-cluster-{run_id}"
    mqtt_topic = f"ferry/{run_id}/prov"

    def config(name):
        return {"connector.class": "MQTTSource", "mqtt.server.uri": f"tcp://{HOST}:{AUTH_PORT}",
                "mqtt.topics": f"{mqtt_topic}/#", "mqtt.qos": "1", "mqtt.client.id": f"ferry-prov-{name}-{run_id}",
                "mqtt.username": user_ref, "mqtt.password": pw_ref, "topic": topic, "tasks.max": "1"}

    def task_owner(w, name):
        status, s = w.rest("GET", f"/connectors/{name}/status")
        if status != 200 or s["connector"]["state"] != "RUNNING" or len(s.get("tasks", [])) != 1:
            return None
        t = s["tasks"][0]
        return t["worker_id"] if t["state"] == "RUNNING" else None

    # (a) create through a worker that does not get the task. The assignment is deterministic, so
    # if the task lands on the receiving worker, the connector is deleted and created again, under
    # another name, through a worker that then does not get it.
    receiver, name, owner = workers[0], None, None
    for attempt in range(3):
        name = f"prov-{run_id}-{attempt}"
        status, body = receiver.rest("POST", "/connectors", {"name": name, "config": config(name)})
        assert status == 201, f"create {name} through {receiver.url} -> {status}: {body}\n{receiver.tail_log()}"
        no_secret(f"POST answer {name}", body)
        assert body["config"]["mqtt.password"] == pw_ref, f"the POST answer lost the reference: {body['config']}"
        owner = wait_until(lambda: task_owner(receiver, name), 60, f"{name}'s task RUNNING", 0.2)
        receiver_id = [i for i, w in by_id.items() if w is receiver][0]
        if owner != receiver_id:
            break
        print(f"{name}: task on the receiving worker {owner}; again through another worker", flush=True)
        receiver.ok("DELETE", f"/connectors/{name}")
        receiver = next(w for i, w in by_id.items() if i != owner)
    else:
        raise AssertionError("the task kept landing on the worker that received the create")
    status, s = receiver.rest("GET", f"/connectors/{name}/status")
    print(json.dumps({"test": "placement", "created_through": receiver_id, "connector_on": s["connector"]["worker_id"],
                      "task_on": owner}), flush=True)

    def wait_for_file(n):
        def complete():
            try:
                with open(out_file) as f:
                    got = set(f.read().splitlines())
            except FileNotFoundError:
                return False
            return all(("seq-%06d" % i) in got for i in range(n))
        wait_until(complete, 60, f"seq-0..{n - 1} in {out_file}", 0.5)

    # The records go on to a file (its sink task keeps its state in the position topic).
    workers[2].ok("POST", "/connectors", {"name": f"out-{run_id}", "config": {
        "connector.class": "FileStreamSink", "topics": topic, "file": out_file}})
    workers[2].wait_running(f"out-{run_id}", 60)
    publish(f"{mqtt_topic}/a", [b"seq-%06d" % i for i in range(N)])

    def arrived(lo, hi):
        text = values_text(read_topic(topic))
        missing = [i for i in range(lo, hi) if ("seq-%06d" % i) not in text]
        return missing
    missing = arrived(0, N)
    deadline = time.time() + 60
    while missing and time.time() < deadline:
        time.sleep(1)
        missing = arrived(0, N)
    assert not missing, f"(a) {len(missing)} of {N} messages missing from {topic}, first {missing[:5]}"
    wait_for_file(N)
    print(f"(a) {N} messages through {name} (password {pw_ref}) into {topic}", flush=True)

    rest_paths = [f"/connectors/{name}", f"/connectors/{name}/config", f"/connectors/{name}/tasks",
                  f"/connectors/{name}/status", "/connectors?expand=info&expand=status", "/connectors/list",
                  "/allocated/connectors", "/allocated/tasks", "/cluster"]

    def check_rest(live, label, task_owner_id):
        for w in live:
            with_ref = {f"/connectors/{name}", f"/connectors/{name}/config", f"/connectors/{name}/tasks",
                        "/connectors?expand=info&expand=status", "/connectors/list"}
            if w is by_id[task_owner_id]:
                with_ref.add("/allocated/tasks")  # [{connector, task, state, config}] of this worker
            for path in rest_paths:
                status, body = w.rest("GET", path)
                assert status == 200, f"({label}) GET {path} on {w.url} -> {status}: {body}"
                text = no_secret(f"({label}) GET {path} on {w.url}", body)
                if path in with_ref:
                    assert json.dumps(pw_ref)[1:-1] in text, \
                        f"({label}) GET {path} on {w.url} lost the reference: {text[:800]}"
        print(f"({label}) {len(rest_paths)} REST reads on {len(live)} workers: references and [hidden] only",
              flush=True)

    check_rest(workers, "b", owner)

    log_topic = f"ferry-cluster-{cluster}"
    topics = [log_topic, f"{log_topic}-snapshots", f"{log_topic}-offsets"]

    def check_topics(label):
        counts = {}
        for t in topics:
            records = read_topic(t)
            counts[t] = len(records)
            hits = leaks_in(records)
            assert not hits, f"({label}) {t} holds the password in {len(hits)} places: {hits[:10]}"
            if t == log_topic:
                text = values_text(records)
                needle = json.dumps(pw_ref)[1:-1]
                assert text.count(needle) >= 2, \
                    f"({label}) the cluster log lacks the reference in the config and the task config " \
                    f"({text.count(needle)} occurrences)"
            if t == f"{log_topic}-snapshots" and label == "d":
                # written every 50 events: by now one holds the connector (its config and task config)
                assert json.dumps(pw_ref)[1:-1] in values_text(records), \
                    f"({label}) no snapshot holds the reference ({len(records)} snapshot records)"
        assert counts[log_topic] > 0, counts
        assert counts[f"{log_topic}-snapshots"] > 0, f"({label}) no snapshot was written: {counts}"
        assert counts[f"{log_topic}-offsets"] > 0, f"({label}) no position was written: {counts}"
        print(f"({label}) raw records without the password: {json.dumps(counts)}", flush=True)

    check_topics("c")

    # (d) kill -9 the worker that runs the task: it restarts on a survivor, which reads the file.
    victim = by_id[owner]
    victim.kill9()
    t_kill = time.time()
    survivors = [w for w in workers if w is not victim]

    def moved():
        o = task_owner(survivors[0], name)
        return o if o not in (None, owner) else None
    new_owner = wait_until(moved, 60, f"{name}'s task RUNNING on a survivor", 0.1)
    print(json.dumps({"test": "kill9", "killed": owner, "task_now_on": new_owner,
                      "moved_after_s": round(time.time() - t_kill, 2)}), flush=True)
    publish(f"{mqtt_topic}/b", [b"seq-%06d" % i for i in range(N, 2 * N)])
    missing = arrived(0, 2 * N)
    deadline = time.time() + 60
    while missing and time.time() < deadline:
        time.sleep(1)
        missing = arrived(0, 2 * N)
    assert not missing, f"(d) {len(missing)} of {2 * N} messages missing after the move, first {missing[:5]}"
    wait_for_file(2 * N)
    print(f"(d) {N} more messages through the task on {new_owner}, which resolved the secret itself", flush=True)
    check_rest(survivors, "d", new_owner)
    check_topics("d")

    for w in workers:
        if w is not victim:
            w.stop()
        with open(w.log_path, errors="replace") as f:
            no_secret(f"the log of {w.url}", f.read())


if __name__ == "__main__":
    run(main)
