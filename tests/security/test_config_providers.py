"""Config providers against a real mosquitto (scripts/services/mosquitto start all; its password
listener wants user ferry / ferry-secret):

  (a) three MQTTSource connectors log in with mqtt.password given as a reference — one per provider:
      ${file:<tmp>/secrets/secrets.properties:mqtt.password}, ${directory:<tmp>/secrets:mqtt-password}
      and ${env:FERRY_TEST_MQTT_PASSWORD} (the worker enables them with Kafka's class names and
      short names) — and each moves 300 sequence-numbered messages to a FileStreamSink, none lost;
  (b) configs.json, every REST answer (config, tasks, status, expand=info, /connectors/list,
      /allocated/*, validate) and the worker log hold the reference and never the password;
  (c) wrong references are refused at create with a 400 that names the key and the reference and
      not the password: a missing key, a missing file, a path outside allowed.paths (and through a
      symlink out of the allowed folder), a variable outside allowlist.pattern, a provider the
      worker has not enabled;
  (d) a connector whose secret disappears after it was created (the key removed from the file)
      fails at its next restart with a trace naming the key and the reference, not the password.

Standard library only; uses mosquitto_pub."""
import json
import os
import random
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from harness import Worker, run, tmpdir, wait_until  # noqa: E402

HOST = os.environ.get("FERRY_MQTT_HOST", "127.0.0.1")
AUTH_PORT = int(os.environ.get("FERRY_MQTT_AUTH_PORT", "18831"))
USER = os.environ.get("FERRY_MQTT_USER", "ferry")
PASSWORD = os.environ.get("FERRY_MQTT_PASSWORD", "ferry-secret")
N = 300


def lines(path):
    try:
        with open(path, "rb") as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return []


def publish(topic, payloads):
    p = subprocess.run(["mosquitto_pub", "-h", HOST, "-p", str(AUTH_PORT), "-u", USER, "-P", PASSWORD, "-q", "1",
                        "-t", topic, "-l"], input=b"\n".join(payloads) + b"\n", capture_output=True, timeout=120)
    assert p.returncode == 0, f"mosquitto_pub failed: {p.stderr.decode()}"


def no_secret(where, payload):
    text = payload if isinstance(payload, str) else json.dumps(payload)
    assert PASSWORD not in text, f"{where} shows the password: {text[:1500]}"
    return text


def main():
    try:
        socket.create_connection((HOST, AUTH_PORT), timeout=3).close()
    except OSError as e:
        raise AssertionError(f"mosquitto {HOST}:{AUTH_PORT} unreachable ({e}); scripts/services/mosquitto start all")
    run_id = random.randrange(1 << 30)
    d = tmpdir("providers")
    secrets = os.path.join(d, "secrets")
    os.makedirs(secrets, mode=0o700)
    props_file = os.path.join(secrets, "secrets.properties")
    with open(props_file, "w") as f:
        f.write(f"# the broker's login\nmqtt.user = {USER}\nmqtt.password = {PASSWORD}\nother.password = {PASSWORD}\n")
    with open(os.path.join(secrets, "mqtt-password"), "w") as f:
        f.write(PASSWORD)  # the directory provider returns the content verbatim: no newline here
    outside = os.path.join(d, "outside.properties")
    with open(outside, "w") as f:
        f.write(f"mqtt.password={PASSWORD}\n")
    os.symlink(outside, os.path.join(secrets, "escape.properties"))

    w = Worker(d, extra={
        "config.providers": "file,directory,env",
        "config.providers.file.class": "org.apache.kafka.common.config.provider.FileConfigProvider",
        "config.providers.file.param.allowed.paths": secrets,
        "config.providers.directory.class": "DirectoryConfigProvider",
        "config.providers.directory.param.allowed.paths": secrets,
        "config.providers.env.class": "env",
        "config.providers.env.param.allowlist.pattern": "FERRY_TEST_.*",
    }, env={"FERRY_TEST_MQTT_PASSWORD": PASSWORD, "OTHER_SECRET": PASSWORD})
    w.start()
    uri = f"tcp://{HOST}:{AUTH_PORT}"

    def source(name, password_ref, topic_in):
        return {"connector.class": "MQTTSource", "mqtt.server.uri": uri, "mqtt.topics": topic_in,
                "mqtt.qos": "1", "mqtt.client.id": f"ferry-prov-{name}-{run_id}", "mqtt.clean.start": "true",
                "mqtt.username": "${file:%s:mqtt.user}" % props_file, "mqtt.password": password_ref,
                "topic": f"{name}-{run_id}"}

    refs = {
        "file": "${file:%s:mqtt.password}" % props_file,
        "directory": "${directory:%s:mqtt-password}" % secrets,
        "env": "${env:FERRY_TEST_MQTT_PASSWORD}",
    }
    # (a) one source per provider, each into its own file.
    for name, ref in refs.items():
        status, body = w.rest("POST", "/connectors", {"name": f"src-{name}", "config": source(
            name, ref, f"ferry/{run_id}/{name}/#")})
        assert status == 201, f"create src-{name} -> {status}: {body}"
        no_secret(f"POST answer src-{name}", body)
        assert body["config"]["mqtt.password"] == ref, body["config"]
        w.ok("POST", "/connectors", {"name": f"out-{name}", "config": {
            "connector.class": "FileStreamSink", "topics": f"{name}-{run_id}", "file": os.path.join(d, f"{name}.txt")}})
    for name in refs:
        w.wait_running(f"src-{name}", 60)
    for name in refs:
        publish(f"ferry/{run_id}/{name}/x", [b"%s-%d" % (name.encode(), i) for i in range(N)])
    for name in refs:
        path = os.path.join(d, f"{name}.txt")
        wait_until(lambda: len(lines(path)) >= N, 120, f"{N} lines through src-{name}", 0.2)
        got = set(lines(path))
        missing = [i for i in range(N) if b"%s-%d" % (name.encode(), i) not in got]
        assert not missing, f"(a) src-{name}: {len(missing)} of {N} missing, first {missing[:5]}"
    print(f"(a) {N} messages through each of the file, directory and env references", flush=True)

    # (b) nothing but the reference anywhere.
    for path in ["/connectors?expand=info&expand=status", "/connectors/list", "/allocated/connectors",
                 "/allocated/tasks"] + [f"/connectors/src-{n}{s}" for n in refs for s in ("", "/config", "/tasks",
                                                                                          "/status")]:
        status, body = w.rest("GET", path)
        assert status == 200, f"GET {path} -> {status}"
        text = no_secret(f"GET {path}", body)
        if path.endswith("/config") or path.endswith("/tasks"):
            assert "${" in text, f"GET {path} lost the reference: {text[:500]}"
    status, body = w.rest("PUT", "/connector-plugins/MQTTSource/config/validate", source("v", refs["file"], "a/#"))
    assert status == 200 and body.get("error_count") == 0, f"validate with a reference -> {status}: {body}"
    no_secret("validate echo", body)
    with open(os.path.join(w.data, "store", "configs.json")) as f:
        stored = f.read()
    no_secret("configs.json", stored)
    for ref in refs.values():
        assert json.dumps(ref)[1:-1] in stored, f"configs.json lacks the reference {ref}"
    print("(b) configs.json, REST answers and the validate echo hold only references", flush=True)

    # (c) wrong references: refused, naming key and reference, not the password.
    wrong = {
        "missing key": "${file:%s:nope}" % props_file,
        "missing file": "${file:%s/none.properties:mqtt.password}" % secrets,
        "outside allowed.paths": "${file:%s:mqtt.password}" % outside,
        "symlink out": "${file:%s/escape.properties:mqtt.password}" % secrets,
        "dot-dot out": "${file:%s/../outside.properties:mqtt.password}" % secrets,
        "env not allowed": "${env:OTHER_SECRET}",
        "directory traversal": "${directory:%s:../outside.properties}" % secrets,
    }
    for what, ref in wrong.items():
        status, body = w.rest("POST", "/connectors", {"name": f"bad-{abs(hash(what))}", "config": source(
            "bad", ref, "z/#")})
        text = no_secret(f"(c) {what}", body)
        assert status == 400, f"(c) {what}: {ref} -> {status}: {text}"
        assert "mqtt.password" in text and ref in body["message"], f"(c) {what}: message names neither key nor reference: {text}"
    print(f"(c) {len(wrong)} wrong references refused with the key and the reference named", flush=True)

    # (d) a secret that disappears: the connector fails at its next start, clearly.
    w.ok("POST", "/connectors", {"name": "later", "config": source(
        "later", "${file:%s:other.password}" % props_file, f"ferry/{run_id}/later/#")})
    w.wait_running("later", 60)
    with open(props_file, "w") as f:
        f.write(f"mqtt.user = {USER}\nmqtt.password = {PASSWORD}\n")
    w.ok("POST", "/connectors/later/restart?includeTasks=true")

    def failed():
        status, s = w.rest("GET", "/connectors/later/status")
        traces = [s["connector"].get("trace", "")] + [t.get("trace", "") for t in s.get("tasks", [])]
        bad = [t for t in traces if "other.password" in t and "mqtt.password" in t]
        return (s["connector"]["state"] == "FAILED" or any(t["state"] == "FAILED" for t in s.get("tasks", []))) \
            and bad and s
    s = wait_until(failed, 30, "connector 'later' FAILED naming the key and the reference")
    no_secret("(d) status", s)
    print("(d) a vanished secret fails the connector with the key and reference named", flush=True)

    assert w.stop() == 0
    with open(w.log_path, errors="replace") as f:
        no_secret("the worker log", f.read())


if __name__ == "__main__":
    run(main)
