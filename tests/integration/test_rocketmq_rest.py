"""RocketMQ Connect's REST dialect on a real standalone worker: off by default (its GET-verb writes
are 404 or 405 and change nothing), and with rest.rocketmq.compat.enabled=true its GET-verb
operations, bulk operations, POST /connectors/{name} updating an existing connector and the
/plugin routes work.
"""
import os

from harness import Worker, run, tmpdir, wait_until


def state(w, name):
    return w.ok("GET", f"/connectors/{name}/status")["connector"]["state"]


def main():
    d = tmpdir("rmq-rest")
    src_file = os.path.join(d, "in.txt")
    with open(src_file, "w") as f:
        f.write("a\nb\n")
    config = {"connector.class": "FileStreamSource", "file": src_file, "topic": "lines"}

    # --- off (the default)
    os.makedirs(os.path.join(d, "off"))
    w = Worker(os.path.join(d, "off"), extra={"file.allowed.dirs": d})  # in.txt sits beside the workers
    w.start()
    w.ok("POST", "/connectors", {"name": "src", "config": config}, expect=(201,))
    w.wait_running("src")
    for path in ("/connectors/src/pause", "/connectors/src/stop", "/connectors/src/restart"):
        status, _ = w.rest("GET", path)
        assert status == 405, f"GET {path} without the dialect: {status}"  # Kafka's path, other method
    for path in ("/connectors/pause/all", "/connectors/stop/all", "/connectors/resume/all",
                 "/plugin/list/connectors", "/plugin/config?plugin=FileStreamSource"):
        status, _ = w.rest("GET", path)
        assert status == 404, f"GET {path} without the dialect: {status}"
    status, _ = w.rest("POST", "/connectors/other", config)
    assert status == 405, status
    assert state(w, "src") == "RUNNING", "nothing changed"
    assert w.ok("GET", "/connectors") == ["src"]
    w.stop()

    # --- on
    os.makedirs(os.path.join(d, "on"))
    w = Worker(os.path.join(d, "on"), extra={"rest.rocketmq.compat.enabled": "true", "file.allowed.dirs": d})
    w.start()
    created = w.ok("POST", "/connectors/src", config, expect=(201,))
    assert created["name"] == "src", created
    w.wait_running("src")
    updated = w.ok("POST", "/connectors/src", {**config, "topic": "lines2"}, expect=(200,))
    assert updated["config"]["topic"] == "lines2", updated
    w.wait_running("src")

    paused = w.ok("GET", "/connectors/src/pause")
    assert paused["status"] == 200 and "paused" in paused["body"], paused
    wait_until(lambda: state(w, "src") == "PAUSED", 20, "PAUSED")
    w.ok("GET", "/connectors/src/resume")
    w.wait_running("src")
    w.ok("GET", "/connectors/src/restart")
    w.wait_running("src")
    w.ok("GET", "/connectors/src/tasks/0/restart")
    w.wait_running("src")
    w.ok("GET", "/connectors/src/stop")
    wait_until(lambda: state(w, "src") == "STOPPED", 20, "STOPPED")
    assert w.ok("GET", "/connectors") == ["src"], "stop keeps the connector"
    status, _ = w.rest("GET", "/connectors/nope/pause")
    assert status == 404, status

    w.ok("POST", "/connectors/second", {**config, "topic": "other"}, expect=(201,))
    w.wait_running("second")
    w.ok("GET", "/connectors/resume/all")
    w.wait_running("src")
    out = w.ok("GET", "/connectors/pause/all")
    assert "2 connectors" in out["body"], out
    wait_until(lambda: state(w, "src") == "PAUSED" and state(w, "second") == "PAUSED", 20, "all PAUSED")
    w.ok("GET", "/connectors/stop/all")
    wait_until(lambda: state(w, "src") == "STOPPED" and state(w, "second") == "STOPPED", 20, "all STOPPED")

    plugins = w.ok("GET", "/plugin/list/connectors")["body"]
    assert {p["type"] for p in plugins} == {"source", "sink"}, plugins
    keys = w.ok("GET", "/plugin/config?plugin=FileStreamSinkConnector")["body"]
    assert any(k["name"] == "file" for k in keys), keys
    val = w.ok("POST", "/plugin/config/validate", {"connector.class": "FileStreamSource"})["body"]
    assert val["error_count"] >= 1, val
    status, _ = w.rest("GET", "/plugin/reload")
    assert status == 501, status
    w.stop()


if __name__ == "__main__":
    run(main)
