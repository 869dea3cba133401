"""The REST API of a real standalone worker: lifecycle, Kafka Connect shapes, and bad input.

Every bad request must get a 4xx with {"error_code", "message"} and leave nothing half-created.
"""
import os

from harness import Worker, run, tmpdir, wait_until


def expect_error(w, method, path, body=None, raw=None, code=400, contains=()):
    status, payload = w.rest(method, path, body, raw=raw)
    assert status == code, f"{method} {path}: expected {code}, got {status}: {payload}"
    assert isinstance(payload, dict) and payload.get("error_code") == code and payload.get("message"), \
        f"{method} {path}: error body must be {{error_code, message}}, got {payload}"
    for c in contains:
        assert c in payload["message"], f"{method} {path}: message lacks {c!r}: {payload['message']}"
    return payload["message"]


def main():
    d = tmpdir("rest")
    w = Worker(d)
    w.start()
    src_file = os.path.join(d, "in.txt")
    out_file = os.path.join(d, "out.txt")
    with open(src_file, "w") as f:
        f.write("alpha\nbeta\n")

    # --- root, health, plugins
    root = w.ok("GET", "/")
    assert "version" in root and "commit" in root, root
    assert w.rest("GET", "/health")[0] == 200
    plugins = w.ok("GET", "/connector-plugins")
    classes = {p["class"] for p in plugins}
    # Kafka Connect's class names where a plugin has one, ferry's own names otherwise.
    for c in ("org.apache.kafka.connect.file.FileStreamSourceConnector",
              "org.apache.kafka.connect.file.FileStreamSinkConnector", "DatagenSource"):
        assert c in classes, f"{c} not in {classes}"
    assert all(p["type"] in ("source", "sink") for p in plugins), plugins
    allp = w.ok("GET", "/connector-plugins?connectorsOnly=false")
    assert any(p["type"] == "transformation" for p in allp), allp
    cfgdef = w.ok("GET", "/connector-plugins/FileStreamSource/config")
    assert any(k["name"] == "file" for k in cfgdef), cfgdef
    assert all("order" in k and "order_in_group" not in k for k in cfgdef), cfgdef[0]
    # Simple names (Kafka Connect's aliases) resolve.
    assert w.ok("GET", "/connector-plugins/FileStreamSinkConnector/config")

    # --- bad input
    expect_error(w, "POST", "/connectors", raw="{not json", contains=())
    expect_error(w, "POST", "/connectors", raw='{"name": "x", "config": 5}')
    msg = expect_error(w, "POST", "/connectors", {"name": "x", "config": {"connector.class": "NoSuchThing"}})
    assert "FileStreamSource" in msg, f"unknown class message should list known classes: {msg}"
    msg = expect_error(w, "POST", "/connectors", {"name": "bad", "config": {
        "connector.class": "FileStreamSource", "tasks.max": "many", "flie": "/tmp/x"}})
    for needle in ("tasks.max", "topic"):
        assert needle in msg, f"every field's error at once; missing {needle}: {msg}"
    assert "flie" not in msg, f"an undeclared key is accepted (as Kafka Connect does): {msg}"
    assert w.ok("GET", "/connectors") == [], "nothing may be half-created after bad requests"
    val = w.ok("PUT", "/connector-plugins/FileStreamSource/config/validate",
               {"connector.class": "FileStreamSource", "tasks.max": "0"})
    assert val["error_count"] >= 2, val
    assert any(c["value"]["errors"] for c in val["configs"] if c["value"]["name"] == "topic"), val
    val = w.ok("PUT", "/connector-plugins/FileStreamSinkConnector/config/validate",
               {"connector.class": "FileStreamSinkConnector", "topics": "t", "file": out_file,
                "custom.key": "x", "producer.override.linger.ms": "5"})
    assert val["error_count"] == 0, val
    assert [x["name"] for x in val.get("warnings", [])] == ["custom.key"], val.get("warnings")

    # --- create, duplicate, read
    src = {"connector.class": "FileStreamSource", "file": src_file, "topic": "lines"}
    created = w.ok("POST", "/connectors", {"name": "src", "config": src}, expect=(201,))
    assert created["name"] == "src" and created["config"]["file"] == src_file, created
    expect_error(w, "POST", "/connectors", {"name": "src", "config": src}, code=409)
    w.ok("PUT", "/connectors/sink/config", {"connector.class": "FileStreamSink", "topics": "lines",
                                             "file": out_file}, expect=(201,))
    w.wait_running("src")
    w.wait_running("sink")
    wait_until(lambda: os.path.exists(out_file) and open(out_file).read() == "alpha\nbeta\n", 20, "sink output")
    info = w.ok("GET", "/connectors/src")
    assert info["type"] == "source" and info["tasks"] and info["tasks"][0]["connector"] == "src", info
    st = w.ok("GET", "/connectors/src/status")
    assert st["connector"]["state"] == "RUNNING" and st["tasks"][0]["worker_id"], st
    exp = w.ok("GET", "/connectors?expand=status")
    assert exp["src"]["status"]["connector"]["state"] == "RUNNING", exp
    assert w.ok("GET", "/connectors/src/tasks")[0]["id"] == {"connector": "src", "task": 0}
    assert w.ok("GET", "/connectors/src/tasks/0/status")["state"] == "RUNNING"
    expect_error(w, "GET", "/connectors/nope/status", code=404)

    # --- PATCH merges; null removes
    w.ok("PATCH", "/connectors/sink/config", {"errors.tolerance": "all"})
    assert w.ok("GET", "/connectors/sink/config")["errors.tolerance"] == "all"
    w.ok("PATCH", "/connectors/sink/config", {"errors.tolerance": None})
    assert "errors.tolerance" not in w.ok("GET", "/connectors/sink/config")

    # --- pause / resume / stop, offsets
    w.ok("PUT", "/connectors/src/pause", expect=(202,))
    wait_until(lambda: w.ok("GET", "/connectors/src/status")["connector"]["state"] == "PAUSED", 20, "PAUSED")
    w.ok("PUT", "/connectors/src/resume", expect=(202,))
    w.wait_running("src")
    offs = w.ok("GET", "/connectors/src/offsets")
    wait_until(lambda: w.ok("GET", "/connectors/src/offsets")["offsets"], 20, "source offsets committed")
    offs = w.ok("GET", "/connectors/src/offsets")["offsets"]
    assert offs[0]["partition"]["filename"] == src_file, offs
    assert isinstance(offs[0]["offset"]["position"], int), offs  # a number, as Kafka Connect
    expect_error(w, "DELETE", "/connectors/src/offsets", code=400)  # must be STOPPED first (Kafka: 400)
    w.ok("PUT", "/connectors/src/stop", expect=(204,))
    wait_until(lambda: w.ok("GET", "/connectors/src/status")["connector"]["state"] == "STOPPED", 20, "STOPPED")
    expect_error(w, "PATCH", "/connectors/src/offsets", {"offsets": []}, code=400)
    w.ok("PATCH", "/connectors/src/offsets", {"offsets": [{"partition": {"filename": src_file},
                                                           "offset": {"position": 6}}]})
    assert w.ok("GET", "/connectors/src/offsets")["offsets"][0]["offset"]["position"] == 6
    w.ok("DELETE", "/connectors/src/offsets")
    assert w.ok("GET", "/connectors/src/offsets")["offsets"] == []
    w.ok("PUT", "/connectors/src/resume", expect=(202,))
    w.wait_running("src")
    # The reset source re-reads the file from the start: the sink sees both lines again.
    wait_until(lambda: open(out_file).read().count("alpha") == 2, 20, "re-read after offset reset")

    # --- restart, delete
    restarting = w.ok("POST", "/connectors/src/restart?includeTasks=true&onlyFailed=false", expect=(202,))
    assert restarting["connector"]["state"] == "RESTARTING", restarting
    w.wait_running("src")
    w.ok("DELETE", "/connectors/src", expect=(204,))
    expect_error(w, "GET", "/connectors/src", code=404)
    assert w.ok("GET", "/connectors") == ["sink"]

    # --- loggers, metrics, RocketMQ Connect paths
    loggers = w.ok("GET", "/admin/loggers")
    assert "root" in loggers, loggers
    status, metrics = w.rest("GET", "/metrics")
    assert status == 200
    assert 'ferry_task_records_out_total{connector="sink",task="0"}' in metrics, metrics[:2000]
    status, lst = w.rest("GET", "/connectors/list")
    assert status == 200, lst
    # Unknown keys are accepted and kept (Kafka Connect's behaviour, the default).
    extra = {"connector.class": "FileStreamSinkConnector", "topics": "lines", "file": out_file + ".2",
             "custom.key": "x", "consumer.override.max.poll.records": "10"}
    assert w.ok("POST", "/connectors", {"name": "extra", "config": extra}, expect=(201,))["config"]["custom.key"] == "x"
    w.stop()

    # config.unknown.keys=refuse: the old strictness, opt-in.
    d2 = tmpdir("rest-strict")
    s = Worker(d2, extra={"config.unknown.keys": "refuse"})
    s.start()
    msg = expect_error(s, "POST", "/connectors", {"name": "extra", "config": extra})
    assert "custom.key" in msg and "consumer.override" not in msg, msg
    s.stop()


if __name__ == "__main__":
    run(main)
