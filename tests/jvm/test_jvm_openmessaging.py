"""OpenMessaging (RocketMQ Connect API) connectors running in the JVM host (jvm/README.md,
"OpenMessaging connectors"), with a real worker on the embedded backbone and the OpenMessaging test
plugins (tests/jvm/plugins/om): judged by what the far end holds.

  (a) listed: GET /connector-plugins names the OpenMessaging source and sink with their type;
      a config their validate(KeyValue) refuses is refused at creation with its message;
  (b) OM SeqSource (2 tasks x 3,000 typed records: a Struct with int64, string, Timestamp and
      Decimal fields, a string key, a `stream` extension; JsonConverter with schemas) -> the
      backbone -> OM FileSink: every record arrives once with every field intact (timestamp
      millis, decimal scale, the extension as a header and back, the topic in the sink's
      RecordPartition); the source's commit(record, metadata) is called for every record with
      the topic and the queue offset the backbone gave it;
  (c) the sink's ErrorRecordReporter: with errors.tolerance=all the reported records (seq % 5 == 1)
      are exactly the dead-letter topic's, the others in the file;
  (d) kill -9 of the JVM host mid-stream (2 tasks x 6,000 at 1,500/s): the tasks are restarted on
      a new host and resume from their committed positions (read through the OpenMessaging
      OffsetStorageReader: seq 0 is not delivered twice), 0 lost, duplicates counted.

Environment: FERRY_BIN, FERRY_JVM_TEST_PLUGINS (the plugin folder tests/jvm/CMakeLists.txt built)."""
import collections
import decimal
import json
import os
import re
import signal
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, HERE)
from harness import Worker, read_lines, run, tmpdir, wait_until  # noqa: E402
from test_jvm_plugins import PLUGINS, java_children  # noqa: E402

OM_SOURCE = "io.ferry.testplugins.om.SeqSourceConnector"
OM_SINK = "io.ferry.testplugins.om.FileSinkConnector"
# A torn line runs into the next one ("...at=17000k9-src-0:5 seq=5 ..."): a record starts at its
# stream's name.
LINE = re.compile(r"((?:ty|er|k9)-src-\d+):(\d+) seq=(\d+) name=om \"(\S+)\" at=(\d+) price=(\S+) "
                  r"stream=(\S+) topic=(\S+)$")
JSON = {"key.converter": "JsonConverter", "value.converter": "JsonConverter"}


def records(path, topic, torn_ok=False):
    """stream -> seqs from the sink's lines, each checked field by field. The last line may be in
    the middle of being written; with torn_ok, a line a kill -9 tore (its record is delivered
    again) is skipped too."""
    out = collections.defaultdict(list)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except FileNotFoundError:
        return out
    lines = data.split(b"\n")[:-1]  # the part after the last newline is still being written
    for raw in lines:
        line = raw.decode(errors="replace")
        m = LINE.search(line) if torn_ok else LINE.fullmatch(line)
        if not m:
            if torn_ok:
                continue
            raise AssertionError(f"unexpected sink line {line!r}")
        key_stream, key_seq, seq, name, at, price, stream, t = m.groups()
        seq = int(seq)
        want_price = decimal.Decimal(seq * 7 + 1).scaleb(-2)
        if (key_stream, int(key_seq), name, stream, t) != (stream, seq, stream, stream, topic) \
                or int(at) != 1_700_000_000_000 + seq or decimal.Decimal(price) != want_price \
                or len(price.split(".")[1]) != 2:
            raise AssertionError(f"record arrived altered: {line!r}")
        out[stream].append(seq)
    return out


def check_complete(got, streams, count, what, skip=lambda s: False):
    dups = 0
    for s in streams:
        have = got.get(s, [])
        want = {q for q in range(count) if not skip(q)}
        missing = want - set(have)
        if missing:
            raise AssertionError(f"{what}: stream {s} lost {len(missing)} records (e.g. {sorted(missing)[:5]})")
        if set(have) - want:
            raise AssertionError(f"{what}: stream {s} holds records it should not: {sorted(set(have) - want)[:5]}")
        dups += len(have) - len(set(have))
    if set(got) - set(streams):
        raise AssertionError(f"{what}: unexpected streams {set(got) - set(streams)}")
    return dups


def pipeline(w, name, out, count, rate, tasks=2, sink_extra=None, source_extra=None):
    w.ok("POST", "/connectors", {"name": f"{name}-src", "config": {
        "connector.class": OM_SOURCE, "connect.topicname": f"{name}-t", "count": str(count), "rate": str(rate),
        "tasks.max": str(tasks), **JSON, **(source_extra or {})}})
    w.ok("POST", "/connectors", {"name": f"{name}-snk", "config": {
        "connector.class": OM_SINK, "topics": f"{name}-t", "file": out, **JSON, **(sink_extra or {})}})
    return [f"{name}-src-{i}" for i in range(tasks)]


def main():
    if not PLUGINS or not os.path.isdir(os.path.join(PLUGINS, "om-plugins")):
        raise AssertionError(f"no OpenMessaging test plugins at {PLUGINS!r}: the JVM host and its tests were not "
                             "built (a JDK 17+ and mvn are needed: scripts/deps)")
    d = tmpdir("jvm-om")
    w = Worker(d, {"plugin.path": PLUGINS, "jvm.heap.max": "256m", "task.restart.backoff.initial.ms": "200",
                   "task.restart.backoff.max.ms": "2000"})
    w.start(timeout=90)

    # (a) listed and validated.
    code, plugins = w.rest("GET", "/connector-plugins")
    kinds = {p["class"]: p["type"] for p in plugins} if code == 200 else {}
    if kinds.get(OM_SOURCE) != "source" or kinds.get(OM_SINK) != "sink":
        raise AssertionError(f"OpenMessaging plugins not listed with their types: {kinds}")
    code, body = w.rest("POST", "/connectors", {"name": "nofile", "config": {
        "connector.class": OM_SINK, "topics": "x"}})
    if code != 400 or "the sink needs a file" not in json.dumps(body):
        raise AssertionError(f"a config the sink's validate() refuses was answered {code} {body}")
    print("(a) OpenMessaging source and sink listed; validate(KeyValue)'s refusal answered 400")

    # (b) typed records through the backbone, commit(record, metadata) for each.
    out, commits = os.path.join(d, "typed.txt"), os.path.join(d, "commits.txt")
    streams = pipeline(w, "ty", out, 3000, 0, source_extra={"commit.file": commits})
    wait_until(lambda: sum(len(v) for v in records(out, "ty-t").values()) >= 6000, 90,
               "6,000 OpenMessaging records in the sink's file")
    dups = check_complete(records(out, "ty-t"), streams, 3000, "(b)")
    if dups:
        raise AssertionError(f"(b) {dups} duplicates without any fault")

    def committed():
        got = collections.defaultdict(set)
        for raw in read_lines(commits):
            stream, seq, topic, queue, offset = raw.decode().split()
            if topic != "ty-t" or int(queue) < 0 or offset == "null" or int(offset) < 0:
                raise AssertionError(f"commit(record, metadata) without where the record was put: {raw!r}")
            got[stream].add(int(seq))
        return got
    wait_until(lambda: all(len(committed()[s]) == 3000 for s in streams), 30,
               "commit(record, metadata) for every record")
    print("(b) 2 x 3,000 typed OpenMessaging records through the backbone, every field intact; "
          "commit(record, metadata) for each with its topic and queue offset")

    # (c) the sink's ErrorRecordReporter -> errors.tolerance and the dead-letter topic.
    errant = os.path.join(d, "errant.txt")
    streams = pipeline(w, "er", errant, 500, 0, tasks=1, sink_extra={
        "report.every": "5", "errors.tolerance": "all", "errors.deadletterqueue.topic.name": "er-dlq"})

    def dlq():
        code, body = w.rest("GET", "/topics/er-dlq/records?limit=100")
        return body.get("records", []) if code == 200 else []
    wait_until(lambda: len(dlq()) == 100 and len(read_lines(errant)) == 400, 60,
               "400 records written and 100 in the dead-letter topic")
    check_complete(records(errant, "er-t"), streams, 500, "(c)", skip=lambda s: s % 5 == 1)
    def seq_of(r):
        v = json.loads(r["value"])
        return v["payload"]["seq"] if "schema" in v and "payload" in v else v["seq"]
    dead = sorted(seq_of(r) for r in dlq())
    if dead != list(range(1, 500, 5)):
        raise AssertionError(f"(c) the dead-letter topic holds seqs {dead[:5]}..., expected 1, 6, 11, ...")
    why = {h["key"]: h["value"] for h in dlq()[0]["headers"]}.get("__connect.errors.exception.message", "")
    if "refused" not in why:
        raise AssertionError(f"(c) the dead-letter record does not carry the sink's error: {why!r}")
    print("(c) ErrorRecordReporter: 100 reported records in the dead-letter topic with the sink's error, 400 written")

    # (d) kill -9 of the JVM host mid-stream.
    k9 = os.path.join(d, "k9.txt")
    streams = pipeline(w, "k9", k9, 6000, 1500)
    wait_until(lambda: sum(len(v) for v in records(k9, "k9-t", torn_ok=True).values()) >= 4000, 60, "4,000 records before the kill")
    hosts = java_children(w.proc.pid)
    if len(hosts) != 1:
        raise AssertionError(f"expected one JVM host under the worker, found {hosts}")
    os.kill(hosts[0], signal.SIGKILL)
    wait_until(lambda: all(set(range(6000)) <= set(records(k9, "k9-t", torn_ok=True).get(s, [])) for s in streams), 120,
               "every record after the host's kill")
    got = records(k9, "k9-t", torn_ok=True)
    dups = check_complete(got, streams, 6000, "(d)")
    for s in streams:
        if got[s].count(0) != 1:
            raise AssertionError(f"(d) {s} started again from seq 0: its committed position was not read back")
    print(json.dumps({"test": "om_host_kill9", "streams": len(streams), "per_stream": 6000, "lost": 0,
                      "duplicates": dups}))
    print(f"(d) JVM host kill -9: 0 lost, {dups} duplicates, the tasks resumed from their committed positions")
    assert w.stop() == 0


if __name__ == "__main__":
    run(main)
