"""Java connectors listed, described and validated through the JVM host (jvm/README.md), with a
real worker, a real JVM and real jars: Kafka's connect-file 4.1.1, test plugins that break as
users' jars do (tests/jvm/plugins: config() throws, version() throws, a base class missing), an
OpenMessaging (RocketMQ Connect API) connector, and a file that is not a jar.

  (a) GET /connector-plugins lists Kafka's FileStreamSourceConnector (source) and
      FileStreamSinkConnector (sink) at 4.1.1 beside the native plugins, and the test plugins that
      load; the one that cannot link and the non-jar are logged, not listed;
  (b) GET /connector-plugins/{class}/config answers from the Java ConfigDef (Kafka's own
      documentation, types, defaults; PASSWORD, LIST and a ValidString's values);
  (c) PUT .../config/validate answers from the connector's validate(): the ConfigDef's errors and a
      connector's own cross-field error; a connector whose config() throws is an error naming it;
      the OpenMessaging connector's validate(KeyValue) refusal is an error on connector.class;
  (d) an OpenMessaging connector whose taskClass() is null: the connector runs, its task is FAILED
      saying so (connectors that run: tests/jvm/test_jvm_run.py, test_jvm_openmessaging.py);
  (e) the JVM host killed with kill -9: the worker stays healthy, the next request starts it again;
  (f) the worker killed with kill -9: its JVM host is gone within 5 s (its channel closed);
  (g) a worker whose Java cannot start runs all the same, lists no Java class, and creating one
      says why.

Environment: FERRY_BIN, FERRY_JVM_TEST_PLUGINS (the plugin folder tests/jvm/CMakeLists.txt built)."""
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
from harness import Worker, run, tmpdir, wait_until  # noqa: E402

PLUGINS = os.environ.get("FERRY_JVM_TEST_PLUGINS", "")
FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"
CONFIG_THROWS = "io.ferry.testplugins.ConfigThrowsConnector"
VERSION_THROWS = "io.ferry.testplugins.VersionThrowsConnector"
MISSING_BASE = "io.ferry.testplugins.MissingBaseConnector"
OM_ECHO = "io.ferry.testplugins.om.EchoSourceConnector"


def java_children(pid):
    out = subprocess.run(["pgrep", "-P", str(pid), "java"], capture_output=True, text=True).stdout.split()
    return [int(p) for p in out]


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except FileNotFoundError:
        return False


def validate(w, cls, config):
    status, body = w.rest("PUT", f"/connector-plugins/{cls}/config/validate", dict(config, **{"connector.class": cls}))
    if status != 200:
        raise AssertionError(f"validate {cls} -> {status}: {body}")
    return {c["value"]["name"]: c["value"]["errors"] for c in body["configs"]}


def main():
    if not PLUGINS or not os.path.isdir(os.path.join(PLUGINS, "connect-file")):
        raise AssertionError(f"no test plugins at {PLUGINS!r}: the JVM host and its tests were not built "
                             "(a JDK 17+ and mvn are needed: scripts/deps)")
    d = tmpdir("jvm-plugins")
    w = Worker(d, {"plugin.path": PLUGINS, "jvm.heap.max": "256m"})
    w.start(timeout=90)

    # (a)
    listed = {p["class"]: p for p in w.ok("GET", "/connector-plugins")}
    for cls, kind, version in ((FILE_SOURCE, "source", "4.1.1"), (FILE_SINK, "sink", "4.1.1"),
                               (CONFIG_THROWS, "source", "0.0.1-test"), (VERSION_THROWS, "sink", "unknown"),
                               (OM_ECHO, "source", "unknown")):
        p = listed.get(cls)
        if not p or p.get("type") != kind or p.get("version") != version:
            raise AssertionError(f"{cls} listed as {p}, expected {kind} {version}; all: {sorted(listed)}")
    if MISSING_BASE in listed:
        raise AssertionError(f"{MISSING_BASE} cannot link but is listed")
    if "FileStreamSource" not in listed:
        raise AssertionError("the native FileStreamSource is gone from the list")
    log = open(w.log_path).read()
    for needle in ("not-a-jar.jar", MISSING_BASE):
        if needle not in log:
            raise AssertionError(f"the worker log does not name {needle}:\n{w.tail_log()}")
    print(f"ok   (a) {len(listed)} plugins listed, Java ones among them; the broken jar and class logged", flush=True)

    # (b)
    keys = {k["name"]: k for k in w.ok("GET", f"/connector-plugins/{FILE_SOURCE}/config")}
    topic, batch = keys.get("topic"), keys.get("batch.size")
    if not topic or topic.get("documentation") != "The topic to publish data to" or topic.get("required") is not True:
        raise AssertionError(f"topic as described: {topic}")
    if not batch or batch.get("type") != "INT" or batch.get("default_value") != "2000" or batch.get("required") is not False:
        raise AssertionError(f"batch.size as described: {batch}")
    keys = {k["name"]: k for k in w.ok("GET", f"/connector-plugins/{VERSION_THROWS}/config")}
    if keys.get("password", {}).get("type") != "PASSWORD" or keys.get("key.columns", {}).get("type") != "LIST":
        raise AssertionError(f"VersionThrowsConnector's keys: {keys}")
    print("ok   (b) the Java ConfigDefs described: Kafka's documentation, types, defaults", flush=True)

    # (c)
    errors = validate(w, FILE_SOURCE, {"name": "v1", "batch.size": "many"})
    if not errors.get("topic") or not errors.get("batch.size"):
        raise AssertionError(f"FileStreamSourceConnector validation: {errors}")
    errors = validate(w, VERSION_THROWS, {"name": "v2", "mode": "upsert", "topics": "t"})
    if errors.get("key.columns") != ["upsert needs key.columns"]:
        raise AssertionError(f"the connector's own cross-field error: {errors}")
    errors = validate(w, VERSION_THROWS, {"name": "v3", "mode": "sideways", "topics": "t"})
    if not errors.get("mode"):
        raise AssertionError(f"a ValidString refusal: {errors}")
    errors = validate(w, CONFIG_THROWS, {"name": "v4", "topic": "t"})
    if not any("config() is broken on purpose" in e for e in errors.get("connector.class", [])):
        raise AssertionError(f"a connector whose config() throws: {errors}")
    # An OpenMessaging connector: no ConfigDef; its validate(KeyValue) throws on a bad config.
    errors = validate(w, OM_ECHO, {"name": "v6"})
    if "echo needs a topic" not in " ".join(errors.get("connector.class", [])):
        raise AssertionError(f"the OpenMessaging connector's validate(): {errors}")
    errors = validate(w, OM_ECHO, {"name": "v7", "topic": "t"})
    if any(errors.values()):
        raise AssertionError(f"a good config for the OpenMessaging connector: {errors}")
    print("ok   (c) validation from the connectors' own validate(), Kafka Connect's and OpenMessaging's; "
          "a throwing config() named", flush=True)

    # (d)
    w.ok("POST", "/connectors", {"name": "om-echo", "config": {"connector.class": OM_ECHO, "topic": "t"}})

    def task_failed():
        s = w.ok("GET", "/connectors/om-echo/status")
        tasks = s.get("tasks", [])
        return s if s["connector"]["state"] == "RUNNING" and tasks and tasks[0]["state"] == "FAILED" else None
    s = wait_until(task_failed, 30, "the OpenMessaging connector RUNNING, its task FAILED", 0.2)
    if "names no task class" not in s["tasks"][0].get("trace", ""):
        raise AssertionError(f"the OpenMessaging task's trace: {s}")
    w.ok("DELETE", "/connectors/om-echo")
    print("ok   (d) an OpenMessaging connector without a task class: its task FAILED, saying so", flush=True)

    # (e)
    hosts = java_children(w.proc.pid)
    if len(hosts) != 1:
        raise AssertionError(f"the worker runs {len(hosts)} JVM host(s): {hosts}")
    os.kill(hosts[0], 9)
    wait_until(lambda: not alive(hosts[0]), 10, "the JVM host gone", 0.1)
    errors = wait_until(lambda: validate(w, VERSION_THROWS, {"name": "v5", "mode": "upsert", "topics": "t"})
                        .get("key.columns") == ["upsert needs key.columns"], 30, "validation after the host's death", 0.5)
    if w.rest("GET", "/health")[0] != 200:
        raise AssertionError(f"the worker is unhealthy after its JVM host died:\n{w.tail_log()}")
    again = java_children(w.proc.pid)
    if len(again) != 1 or again == hosts:
        raise AssertionError(f"no new JVM host: before {hosts}, now {again}")
    print(f"ok   (e) the JVM host killed (pid {hosts[0]}); the next request started pid {again[0]}", flush=True)

    # (f)
    w.kill9()
    t0 = time.time()
    wait_until(lambda: not alive(again[0]), 5, "the JVM host gone after the worker's kill -9", 0.05)
    print(f"ok   (f) the worker killed with kill -9; its JVM host exited {time.time() - t0:.2f} s later", flush=True)

    # (g)
    d2 = tmpdir("jvm-plugins-nojava")
    w2 = Worker(d2, {"plugin.path": PLUGINS, "jvm.java.home": "/nonexistent-java"})
    w2.start(timeout=60)
    listed = {p["class"] for p in w2.ok("GET", "/connector-plugins")}
    # (Kafka's FileStream names are there: ferry's native FileStream connectors answer to them.)
    if VERSION_THROWS in listed or CONFIG_THROWS in listed:
        raise AssertionError("Java classes listed although Java cannot start")
    status, body = w2.rest("POST", "/connectors", {"name": "x", "config": {"connector.class": VERSION_THROWS,
                                                                         "topics": "t"}})
    message = str(body)
    if status != 400 or "JVM host could not start" not in message or "/nonexistent-java" not in message:
        raise AssertionError(f"creating a Java connector without Java: {status} {body}")
    if java_children(w2.proc.pid):
        raise AssertionError("a JVM host runs although Java cannot start")
    w2.stop()
    print("ok   (g) a worker without a working Java runs, lists no Java class, and says why when one is asked for",
          flush=True)


if __name__ == "__main__":
    run(main)
