"""The same Java connector described and validated by Kafka Connect 4.1.1 and by ferry's JVM host,
compared value by value: Kafka's FileStreamSourceConnector and FileStreamSinkConnector (the
connect-file 4.1.1 jar; in Kafka Connect from its class path, in ferry from plugin.path).

  (a) GET /connector-plugins/{class}/config: every key of the connector's own that Kafka Connect
      lists is in ferry's answer with the same type, default, required flag, importance and
      documentation (the framework keys each side adds are compared by tests/interop);
  (b) PUT /connector-plugins/{class}/config/validate with the same configs: the connector's own
      keys carry errors on both sides or on neither (messages may be worded differently);
  (c) the two connectors running, the same input in both runtimes: FileStreamSource -> a Kafka
      topic (JsonConverter with schemas, the envelope Kafka Connect writes) -> FileStreamSink, in
      Kafka Connect and in a ferry worker whose backbone is the same broker. The two topics hold
      the same 2,000 records byte for byte, in order; both output files equal the input.

Needs the Kafka jars and broker (scripts/services/kafka; started when not running, never stopped
here), the test plugins tests/jvm/CMakeLists.txt built (FERRY_JVM_TEST_PLUGINS) and kafka_tool
(FERRY_KAFKA_TOOL) to read the topics."""
import atexit
import os
import random
import subprocess
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
    w.stop()
    run_both(work, broker, kc)


def topic_values(bootstrap, topic, workdir):
    tool = os.environ.get("FERRY_KAFKA_TOOL", "")
    if not tool:
        raise AssertionError("FERRY_KAFKA_TOOL must name kafka_tool")
    out = os.path.join(workdir, f"{topic}.values")
    p = subprocess.run([tool, "consume", "--bootstrap", bootstrap, "--topic", topic, "--count", "0",
                        "--idle-ms", "3000", "--values-out", out, "--timeout-ms", "120000"],
                       capture_output=True, timeout=200)
    if p.returncode != 0:
        raise AssertionError(f"reading {topic}: {p.stderr.decode()[-500:]}")
    with open(out, "rb") as f:
        return f.read().splitlines()


def run_both(work, broker, kc):
    """(c): the same FileStream pipeline in Kafka Connect and in ferry, compared record by record."""
    rid = random.randrange(1 << 30)
    inp = os.path.join(work, "in.txt")
    lines = [f"line {i} \"quoted\" back\\slash tab\t caf\u00e9 \U0001F600 {'x' * (i % 50)}" for i in range(2000)]
    with open(inp, "w", encoding="utf-8") as f:
        f.writelines(l + "\n" for l in lines)
    json_conv = {"key.converter": "org.apache.kafka.connect.json.JsonConverter",
                 "value.converter": "org.apache.kafka.connect.json.JsonConverter"}
    outs, topics = {}, {}
    os.makedirs(os.path.join(work, "run"), exist_ok=True)
    w = harness.Worker(os.path.join(work, "run"), {"plugin.path": PLUGINS, "backbone": "kafka",
                                                    "backbone.kafka.bootstrap.servers": broker.bootstrap})
    w.start(timeout=90)
    for side, api in (("kc", kc), ("ferry", w)):
        topics[side] = f"jvm-vs-kc-{side}-{rid}"
        outs[side] = os.path.join(work, f"{side}-out.txt")
        broker.create_topic(topics[side], partitions=1)
        api.ok("POST", "/connectors", {"name": f"{side}-src", "config": dict(json_conv, **{
            "connector.class": CLASSES[0], "file": inp, "topic": topics[side]})})
        api.ok("POST", "/connectors", {"name": f"{side}-snk", "config": dict(json_conv, **{
            "connector.class": CLASSES[1], "file": outs[side], "topics": topics[side]})})
    want = [l.encode() for l in lines]
    for side in ("kc", "ferry"):
        harness.wait_until(lambda: harness.read_lines(outs[side]) == want, 120, f"{side}'s output file equal to the input")
    theirs = topic_values(broker.bootstrap, topics["kc"], work)
    ours = topic_values(broker.bootstrap, topics["ferry"], work)
    if len(theirs) != 2000 or ours != theirs:
        first = next((i for i, (a, b) in enumerate(zip(theirs, ours)) if a != b), min(len(theirs), len(ours)))
        raise AssertionError(f"topics differ: Kafka Connect wrote {len(theirs)}, ferry {len(ours)}; first difference "
                             f"at {first}: {theirs[first:first + 1]} vs {ours[first:first + 1]}")
    print(f"ok   (c) FileStream source -> Kafka -> FileStream sink in both runtimes: 2,000 records, the topics "
          f"equal byte for byte (e.g. {theirs[0][:80]!r}), both output files equal the input", flush=True)
    w.stop()


if __name__ == "__main__":
    harness.run(main)
