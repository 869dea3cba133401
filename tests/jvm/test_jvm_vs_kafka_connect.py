"""The same Java connector described and validated by Kafka Connect 4.1.1 and by ferry's JVM host,
compared value by value: Kafka's FileStreamSourceConnector and FileStreamSinkConnector (the
connect-file 4.1.1 jar; in Kafka Connect from its class path, in ferry from plugin.path).

  (a) GET /connector-plugins/{class}/config: every key of the connector's own that Kafka Connect
      lists is in ferry's answer with the same type, default, required flag, importance and
      documentation (the framework keys each side adds are compared by tests/interop);
  (b) PUT /connector-plugins/{class}/config/validate with the same configs: the connector's own
      keys carry errors on both sides or on neither (messages may be worded differently).

Needs the Kafka jars and broker (scripts/services/kafka; started when not running, never stopped
here) and the test plugins tests/jvm/CMakeLists.txt built (FERRY_JVM_TEST_PLUGINS)."""
import atexit
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
import harness  # noqa: E402
import kafka_connect  # noqa: E402

PLUGINS = os.environ.get("FERRY_JVM_TEST_PLUGINS", "")
CLASSES = ["org.apache.kafka.connect.file.FileStreamSourceConnector", "org.apache.kafka.connect.file.FileStreamSinkConnector"]
FIELDS = ("type", "default_value", "required", "importance", "documentation")
CONFIGS = [
    {"name": "c1"},
    {"name": "c2", "topic": "t", "topics": "t", "batch.size": "many"},
    {"name": "c3", "topic": "t", "topics": "t", "file": "/tmp/x", "batch.size": "10"},
]


def keys_of(answer):
    return {k["name"]: k for k in answer}


def own_keys(answer):
    """The connector's own keys in Kafka Connect's answer: those outside its framework groups
    (Common, Transforms, Predicates, Error Handling, Topic Creation, Exactly Once Support, ...),
    which connect-file's ConfigDef does not set."""
    return {k["name"]: k for k in answer if not k.get("group")}


def errors_of(answer):
    return {c["value"]["name"]: bool(c["value"]["errors"]) for c in answer["configs"]}


def main():
    if not PLUGINS or not os.path.isdir(os.path.join(PLUGINS, "connect-file")):
        raise AssertionError(f"no test plugins at {PLUGINS!r}: the JVM host and its tests were not built")
    work = harness.tmpdir("jvm-vs-kc")
    broker = kafka_connect.Broker()
    broker.start()  # idempotent; never stopped here
    kc = kafka_connect.ConnectStandalone(os.path.join(work, "kc"), broker.bootstrap)
    atexit.register(kc.stop)
    kc.start()
    # Only connect-file in ferry's plugin.path: its classes are the Java ones, not the natives'.
    os.makedirs(os.path.join(work, "ferry"))
    w = harness.Worker(os.path.join(work, "ferry"), {"plugin.path": PLUGINS})
    w.start(timeout=90)
    for cls in CLASSES:
        theirs = own_keys(kc.ok("GET", f"/connector-plugins/{cls}/config"))
        ours = keys_of(w.ok("GET", f"/connector-plugins/{cls}/config"))
        if not theirs:
            raise AssertionError(f"Kafka Connect lists no keys for {cls}")
        for name, k in theirs.items():
            o = ours.get(name)
            if o is None:
                raise AssertionError(f"{cls}: key {name} missing in ferry's answer; ferry has {sorted(ours)}")
            for f in FIELDS:
                if k.get(f) != o.get(f):
                    raise AssertionError(f"{cls}.{name}.{f}: Kafka Connect {k.get(f)!r}, ferry {o.get(f)!r}")
        print(f"ok   (a) {cls}: its {len(theirs)} keys described alike ({', '.join(sorted(theirs))})", flush=True)
        for config in CONFIGS:
            body = dict(config, **{"connector.class": cls})
            theirs_e = errors_of(kc.ok("PUT", f"/connector-plugins/{cls}/config/validate", body))
            ours_e = errors_of(w.ok("PUT", f"/connector-plugins/{cls}/config/validate", body))
            for name in theirs:
                if theirs_e.get(name, False) != ours_e.get(name, False):
                    raise AssertionError(f"{cls} validate {config}: key {name} has errors on "
                                         f"{'Kafka Connect' if theirs_e.get(name) else 'ferry'} only")
        print(f"ok   (b) {cls}: {len(CONFIGS)} configs validated alike on the connector's keys", flush=True)


if __name__ == "__main__":
    harness.run(main)
