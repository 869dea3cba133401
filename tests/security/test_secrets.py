"""Secrets stay secret: connectors with a secret in a declared password key (MQTT's mqtt.password,
in a source, and in a direct connector's and a pipeline's sink side) and in every secret-looking
undeclared pass-through key (KafkaSink's producer.override.*) never show it:

  - in any REST answer: POST/PUT/PATCH answers, GET /connectors/{n}, /config, /tasks, /status,
    ?expand=info and ?expand=status, /connectors/list, /allocated/connectors, /allocated/tasks,
    the validate echo, POST and GET /pipelines/{n}, error answers of refused configs;
  - in `ferry ctl get | list | status` (text and JSON);
  - in the worker's log file;
and a value that is only a provider reference stays visible, as do keys that are not secret.
A masked config read back and PUT again keeps the stored secret (not the text "[hidden]").
File modes: the data folder is 0700 and configs.json 0600, also when an older worker left them
0755 / 0644 (the worker tightens them at start).

Standard library only; needs no service (the brokers the connectors name are closed ports)."""
import json
import os
import random
import stat
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from harness import FERRY_BIN, Worker, free_port, run, tmpdir, wait_until  # noqa: E402

RUN = "%08x" % random.randrange(1 << 32)


def secret(tag):
    return f"S3cr3t-{tag}-{RUN}"


# Undeclared pass-through keys of KafkaSink (producer.override.* is its librdkafka prefix): each
# must be hidden by the name rule.
PASSTHROUGH = {
    "producer.override.sasl.password": secret("sasl"),
    "producer.override.ssl.key.password": secret("sslkey"),
    "producer.override.ssl.keystore.password": secret("keystore"),
    "producer.override.sasl.jaas.config":
        f'org.apache.kafka.common.security.plain.PlainLoginModule required username="u" password="{secret("jaas")}";',
    "producer.override.ssl.key.pem": f"-----BEGIN PRIVATE KEY-----{secret('pem')}-----END PRIVATE KEY-----",
    "producer.override.ssl.keystore.key": secret("keystorekey"),
    "producer.override.sasl.oauthbearer.client.secret": secret("oauth"),
    "producer.override.basic.auth.user.info": "user:" + secret("basic"),
    "producer.override.api.token": secret("token"),
    "producer.override.aws.credentials": secret("creds"),
    "producer.override.my.private.key": secret("private"),
    # A credential inside a URI hides under any key name.
    "producer.override.schema.registry.url": f"https://reg:{secret('uri')}@registry.example:8081",
}
MQTT_PASSWORD = secret("mqtt")
SINK_PASSWORD = secret("sinkmqtt")
PIPE_PASSWORD = secret("pipe")
REFUSED = secret("refused")
ALL_SECRETS = [MQTT_PASSWORD, SINK_PASSWORD, PIPE_PASSWORD, REFUSED] + [secret(t) for t in (
    "sasl", "sslkey", "keystore", "jaas", "pem", "keystorekey", "oauth", "basic", "token", "creds", "private", "uri")]
REFERENCE = "${vault:secret/data/ferry:password}"  # a provider this worker does not have: left as is


def leaks(text):
    return [s for s in ALL_SECRETS if s in text]


def check(where, payload):
    text = payload if isinstance(payload, str) else json.dumps(payload)
    found = leaks(text)
    assert not found, f"{where} shows secret(s) {found}: {text[:1500]}"
    return text


def ctl(url, *args):
    p = subprocess.run([FERRY_BIN, "ctl", "--url", url, *args], capture_output=True, text=True, timeout=30)
    return p.returncode, p.stdout + p.stderr


def mode(path):
    return stat.S_IMODE(os.stat(path).st_mode)


def main():
    d = tmpdir("secrets")
    data = os.path.join(d, "data")
    # What an older worker (or a loose umask) left behind: a world-readable data folder and store.
    os.makedirs(os.path.join(data, "store"))
    os.chmod(data, 0o755)
    os.chmod(os.path.join(data, "store"), 0o755)
    loose = os.path.join(data, "store", "configs.json")
    w = Worker(d)
    w.start()
    w.stop()
    if os.path.exists(loose):
        os.chmod(loose, 0o644)
    os.chmod(data, 0o755)
    w.start()
    closed = free_port()
    checked = []

    def get(path):
        status, body = w.rest("GET", path)
        assert status == 200, f"GET {path} -> {status}: {body}"
        checked.append(path)
        return check(f"GET {path}", body)

    # 1. MQTTSource: mqtt.password is declared as a password.
    mqtt = {"connector.class": "MQTTSource", "mqtt.server.uri": f"tcp://127.0.0.1:{closed}",
            "mqtt.topics": "x/#", "topic": "t-mqtt", "mqtt.username": "ferry-user", "mqtt.password": MQTT_PASSWORD}
    status, body = w.rest("POST", "/connectors", {"name": "mqtt", "config": mqtt})
    assert status == 201, f"create mqtt -> {status}: {body}"
    check("POST /connectors answer", body)
    assert body["config"]["mqtt.password"] == "[hidden]", body
    assert body["config"]["mqtt.username"] == "ferry-user", "a key that is not secret must stay visible"

    # 2. KafkaSink with secret-looking pass-through keys, a visible reference and a visible user.
    kafka = {"connector.class": "KafkaSink", "topics": "t-kafka",
             "kafka.bootstrap.servers": f"127.0.0.1:{closed}",
             "producer.override.sasl.username": "alice", "producer.override.sasl.kerberos.service.name": "kafka",
             **PASSTHROUGH}
    status, body = w.rest("POST", "/connectors", {"name": "kafka", "config": kafka})
    assert status == 201, f"create kafka -> {status}: {body}"
    check("POST /connectors answer (kafka)", body)
    for k in PASSTHROUGH:
        want = "https://reg:[hidden]@registry.example:8081" if k.endswith(".url") else "[hidden]"
        assert body["config"][k] == want, f"{k}: {body['config'][k]}"
    assert body["config"]["producer.override.sasl.username"] == "alice"

    # 3. A direct connector whose sink side carries the password (sink.mqtt.password).
    direct = {"connector.class": "DatagenSource", "topic": "unused", "format": "string", "max.records": "1",
              "sink.connector.class": "MQTTSink", "sink.mqtt.server.uri": f"tcp://127.0.0.1:{closed}",
              "sink.mqtt.topic": "out", "sink.mqtt.password": SINK_PASSWORD}
    status, body = w.rest("PUT", "/connectors/direct/config", direct)
    assert status == 201, f"PUT direct -> {status}: {body}"
    check("PUT /connectors/direct/config answer", body)

    # 4. A pipeline whose sink has a password.
    pipe = {"name": "pipe", "source": {"connector.class": "DatagenSource", "topic": "unused", "format": "string",
                                       "max.records": "1"},
            "sink": {"connector.class": "MQTTSink", "mqtt.server.uri": f"tcp://127.0.0.1:{closed}",
                     "mqtt.topic": "out", "mqtt.password": PIPE_PASSWORD}}
    status, body = w.rest("POST", "/pipelines", pipe)
    assert status == 201, f"POST /pipelines -> {status}: {body}"
    check("POST /pipelines answer", body)

    # 5. A reference stays visible.
    status, body = w.rest("PATCH", "/connectors/kafka/config", {"producer.override.ssl.truststore.password": REFERENCE})
    assert status == 200, f"PATCH kafka -> {status}: {body}"
    check("PATCH answer", body)
    assert body["config"]["producer.override.ssl.truststore.password"] == REFERENCE, body["config"]

    # Let tasks start and fail (closed ports): their traces must not carry secrets either.
    time.sleep(3)
    for name in ("mqtt", "kafka", "direct", "pipe"):
        for path in (f"/connectors/{name}", f"/connectors/{name}/config", f"/connectors/{name}/tasks",
                     f"/connectors/{name}/status"):
            get(path)
    cfg = json.loads(get("/connectors/kafka/config"))
    assert cfg["producer.override.sasl.password"] == "[hidden]"
    assert cfg["producer.override.ssl.truststore.password"] == REFERENCE
    tasks = json.loads(get("/connectors/mqtt/tasks"))
    assert tasks and tasks[0]["config"]["mqtt.password"] == "[hidden]", tasks
    for path in ("/connectors?expand=info", "/connectors?expand=status", "/connectors?expand=info&expand=status",
                 "/connectors/list", "/allocated/connectors", "/allocated/tasks", "/pipelines/pipe", "/pipelines"):
        get(path)

    # The validate echo (Kafka Connect shows [hidden] there too).
    for cls, cfg in (("MQTTSource", mqtt), ("KafkaSink", kafka), ("DatagenSource", direct)):
        status, body = w.rest("PUT", f"/connector-plugins/{cls}/config/validate", cfg)
        assert status == 200, f"validate {cls} -> {status}: {body}"
        check(f"validate echo {cls}", body)
    status, body = w.rest("PUT", "/connector-plugins/MQTTSource/config/validate", mqtt)
    values = {c["definition"]["name"]: c["value"]["value"] if isinstance(c.get("value"), dict) else c.get("value")
              for c in body["configs"]}
    assert values.get("mqtt.password") == "[hidden]", values

    # A refused config (unknown key, bad value) echoes nothing secret in its 400 either.
    # mqtt.qos repeats the password: its "Invalid value ..." message must not echo it.
    bad = dict(mqtt, **{"mqtt.password": REFUSED, "mqtt.qos": REFUSED, "producer.override.sasl.password": REFUSED})
    status, body = w.rest("POST", "/connectors", {"name": "bad", "config": bad})
    assert status == 400, f"a bad config was accepted: {status} {body}"
    check("refused create answer", body)
    # The echo shows each key's own value (mqtt.qos is not secret), but its errors must not.
    status, body = w.rest("PUT", "/connector-plugins/MQTTSource/config/validate", bad)
    assert status == 200 and body["error_count"] > 0, f"validate of a bad config -> {status}: {body}"
    for c in body["configs"]:
        v = c["value"]
        check(f"validate errors of {v['name']}", v.get("errors", []))
        if v["name"] != "mqtt.qos":
            check(f"validate echo of {v['name']}", v)

    # GET, then PUT the masked config back: the stored secret is kept, not replaced by "[hidden]".
    status, shown = w.rest("GET", "/connectors/mqtt/config")
    shown["mqtt.topics"] = "y/#"
    status, body = w.rest("PUT", "/connectors/mqtt/config", shown)
    assert status == 200, f"PUT masked config back -> {status}: {body}"
    status, body = w.rest("PATCH", "/connectors/kafka/config", {"producer.override.sasl.password": "[hidden]"})
    assert status == 200, f"PATCH [hidden] -> {status}: {body}"

    # ferry ctl reads REST: its outputs are masked too.
    for args in (("get", "mqtt"), ("get", "kafka"), ("get", "direct"), ("get", "kafka", "-o", "json"), ("list",),
                 ("list", "-o", "json"), ("status", "mqtt"), ("status", "kafka", "-o", "json")):
        rc, out = ctl(w.url, *args)
        assert rc == 0, f"ferry ctl {' '.join(args)} exited {rc}: {out}"
        check(f"ferry ctl {' '.join(args)}", out)
    rc, out = ctl(w.url, "get", "mqtt")
    assert "[hidden]" in out, out

    # The stored config (0600, the worker's own) keeps the real secrets.
    store = os.path.join(data, "store", "configs.json")
    with open(store) as f:
        stored = f.read()
    for s in (MQTT_PASSWORD, secret("sasl"), SINK_PASSWORD, PIPE_PASSWORD):
        assert s in stored, f"the stored config lost secret {s} (a masked value was written back?)"
    assert '"[hidden]"' not in stored, "a masked value was stored"

    # File modes.
    assert mode(data) == 0o700, f"data.dir is {oct(mode(data))}, expected 0700"
    assert mode(store) == 0o600, f"configs.json is {oct(mode(store))}, expected 0600"
    lock = os.path.join(data, ".lock")
    assert mode(lock) & 0o077 == 0, f".lock is {oct(mode(lock))}, expected 0600"
    for f in os.listdir(os.path.join(data, "store")):
        p = os.path.join(data, "store", f)
        assert mode(p) & 0o077 == 0, f"store file {f} is {oct(mode(p))}: readable by others"

    assert w.stop() == 0
    with open(w.log_path, errors="replace") as f:
        log = f.read()
    found = leaks(log)
    assert not found, f"the worker log shows secret(s) {found}"
    print(f"checked {len(checked)} GETs, validate, pipelines, ctl, log; data.dir 0700, configs.json 0600")


if __name__ == "__main__":
    run(main)
