"""Java connectors running in the JVM host (jvm/README.md, "Running"), with a real worker on the
embedded backbone, a real JVM, Kafka's connect-file 4.1.1 jar and the test plugins
(tests/jvm/plugins): every delivery claim judged by what the far end holds.

  (a) Kafka's FileStreamSource -> FileStreamSink, both Java: the output file holds the input's
      1,000 lines in order; the source's position is a Long read back by the task (a restart of
      the connector resumes after it: 500 more lines appended arrive once, nothing repeated);
  (b) typed records: SeqSource (a Struct value with a name and version, an int64 key, a header;
      offsets {"seq": Long}) -> ErrantSink (Java), which reports every third record to its
      ErrantRecordReporter: with errors.tolerance=all the file holds the other two thirds with key
      and header intact (in order within each queue), and the dead-letter topic exactly the
      reported ones;
  (c) kill -9 of the worker mid-stream (SeqSource 3 tasks x 6,000 at 1,500/s -> ErrantSink
      reporting none): after a restart every seq of every stream is in the file (0 lost),
      duplicates counted;
  (d) kill -9 of the JVM host mid-stream, same pipeline: the tasks fail with the JVM's end in their
      trace, are restarted on a new host, and 0 are lost;
  (e) bad tasks: start() throws -> FAILED with the Java message; poll() that hangs and ignores
      interrupts -> DELETE returns within the stop timeout; a task that leaks threads -> named in
      the log after its stop; a task that runs the JVM out of heap -> FAILED naming
      OutOfMemoryError; in each case another Java connector beside it keeps delivering.

Environment: FERRY_BIN, FERRY_JVM_TEST_PLUGINS (the plugin folder tests/jvm/CMakeLists.txt built)."""
import collections
import json
import os
import re
import signal
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, HERE)
from harness import Worker, read_lines, run, tmpdir, wait_until  # noqa: E402
from test_jvm_plugins import FILE_SINK, FILE_SOURCE, PLUGINS, java_children  # noqa: E402

SEQ_SOURCE = "io.ferry.testplugins.SeqSourceConnector"
ERRANT_SINK = "io.ferry.testplugins.ErrantSinkConnector"
BAD_SOURCE = "io.ferry.testplugins.BadSourceConnector"

# A torn line runs into the next record ("...headerk9-src-0 3 key=3 ..."): stream names are matched
# by their pipelines' names, and the header must repeat the stream.
RECORD = re.compile(r"((?:k9|h9|good)-src-\d+) (\d+) key=(\d+) header=((?:k9|h9|good)-src-\d+)")


def status(w, name):
    code, body = w.rest("GET", f"/connectors/{name}/status")
    return body if code == 200 else None


def seqs_in(path):
    """stream -> list of seqs, from ErrantSink's lines '<stream> <seq> key=<seq> header=<stream>'. A
    line the kill -9 tore (written in part) is not a record; its record is delivered again."""
    out = collections.defaultdict(list)
    for line in read_lines(path):
        for stream, seq, key, header in RECORD.findall(line.decode(errors="replace")):
            if key != seq or header != stream:
                raise AssertionError(f"record {stream} {seq} arrived with key {key}, header {header}")
            out[stream].append(int(seq))
    return out


def check_complete(path, streams, count, what):
    got = seqs_in(path)
    dups = 0
    for s in streams:
        have = got.get(s, [])
        missing = set(range(count)) - set(have)
        if missing:
            raise AssertionError(f"{what}: stream {s} lost {len(missing)} records (e.g. {sorted(missing)[:5]})")
        dups += len(have) - len(set(have))
    extra = set(got) - set(streams)
    if extra:
        raise AssertionError(f"{what}: unexpected streams {extra}")
    return dups


def seq_pipeline(w, name, out, count, rate, tasks=3):
    w.ok("POST", "/connectors", {"name": f"{name}-src", "config": {
        "connector.class": SEQ_SOURCE, "topic": f"{name}-t", "count": str(count), "rate": str(rate),
        "tasks.max": str(tasks), "key.converter": "JsonConverter", "value.converter": "JsonConverter"}})
    w.ok("POST", "/connectors", {"name": f"{name}-snk", "config": {
        "connector.class": ERRANT_SINK, "topics": f"{name}-t", "file": out, "errant.every": "0",
        "key.converter": "JsonConverter", "value.converter": "JsonConverter"}})
    return [f"{name}-src-{i}" for i in range(tasks)]


def main():
    if not PLUGINS or not os.path.isdir(os.path.join(PLUGINS, "connect-file")):
        raise AssertionError(f"no test plugins at {PLUGINS!r}: the JVM host and its tests were not built "
                             "(a JDK 17+ and mvn are needed: scripts/deps)")
    d = tmpdir("jvm-run")
    props = {"plugin.path": PLUGINS, "jvm.heap.max": "256m", "task.restart.backoff.initial.ms": "200",
             "task.restart.backoff.max.ms": "2000"}
    w = Worker(d, props)
    w.start(timeout=90)

    # (a) Kafka's own FileStream connectors, both Java.
    inp, out = os.path.join(d, "in.txt"), os.path.join(d, "out.txt")
    with open(inp, "w") as f:
        f.writelines(f"line-{i}\n" for i in range(1000))
    w.ok("POST", "/connectors", {"name": "fsrc", "config": {
        "connector.class": FILE_SOURCE, "file": inp, "topic": "lines", "value.converter": "StringConverter"}})
    w.ok("POST", "/connectors", {"name": "fsnk", "config": {
        "connector.class": FILE_SINK, "file": out, "topics": "lines", "value.converter": "StringConverter"}})
    want = [f"line-{i}".encode() for i in range(1000)]
    wait_until(lambda: read_lines(out) == want, 60, "1,000 lines through the Java FileStream connectors")

    def position():
        code, body = w.rest("GET", "/connectors/fsrc/offsets")
        offs = body.get("offsets", []) if code == 200 else []
        return offs[0]["offset"] if offs else None
    wait_until(lambda: position() and int(position()["position"]) == os.path.getsize(inp), 30,
               "the source's committed position at the end of the file")
    w.ok("POST", "/connectors/fsrc/restart?includeTasks=true")
    with open(inp, "a") as f:
        f.writelines(f"line-{i}\n" for i in range(1000, 1500))
    want = [f"line-{i}".encode() for i in range(1500)]
    wait_until(lambda: len(read_lines(out)) >= 1500, 60, "500 more lines after the restart")
    time.sleep(1.5)
    if read_lines(out) != want:
        got = read_lines(out)
        raise AssertionError(f"after a restart the file holds {len(got)} lines, not the 1,500 in order "
                             f"(the restarted task did not resume from its Long position)")
    print("(a) FileStream Java source -> Java sink: 1,500 lines in order, resumed after a restart")

    # (b) typed records and the ErrantRecordReporter.
    typed = os.path.join(d, "typed.txt")
    w.ok("POST", "/connectors", {"name": "tsrc", "config": {
        "connector.class": SEQ_SOURCE, "topic": "typed", "count": "300", "tasks.max": "1",
        "key.converter": "JsonConverter", "value.converter": "JsonConverter"}})
    w.ok("POST", "/connectors", {"name": "tsnk", "config": {
        "connector.class": ERRANT_SINK, "topics": "typed", "file": typed, "errant.every": "3",
        "errors.tolerance": "all", "errors.deadletterqueue.topic.name": "typed-dlq",
        "key.converter": "JsonConverter", "value.converter": "JsonConverter"}})
    wait_until(lambda: len(read_lines(typed)) >= 200, 60, "200 typed records in the sink's file")
    lines = sorted((l.decode() for l in read_lines(typed)), key=lambda l: int(l.split()[1]))
    expect = [f"tsrc-0 {s} key={s} header=tsrc-0" for s in range(300) if s % 3]
    if lines != expect:
        raise AssertionError(f"typed records: {lines[:3]} ... ({len(lines)}), expected {expect[:3]} ... ({len(expect)})")

    def dlq():
        code, body = w.rest("GET", "/topics/typed-dlq/records?limit=100")
        return body.get("records", []) if code == 200 else []
    wait_until(lambda: len(dlq()) == 100, 30, "100 reported records in the dead-letter topic")
    dead = sorted(json.loads(r["value"])["seq"] for r in dlq())
    why = {h["key"]: h["value"] for h in dlq()[0]["headers"]}.get("__connect.errors.exception.message", "")
    if "refused on purpose" not in why:
        raise AssertionError(f"the dead-letter record does not carry the Java error: {why!r}")
    if dead != list(range(0, 300, 3)):
        raise AssertionError(f"dead-letter topic holds seqs {dead[:5]}..., expected 0, 3, 6, ...")
    print("(b) typed records: 200 written with key and header, the 100 reported ones in the dead-letter topic")

    # (c) kill -9 of the worker mid-stream.
    killed = os.path.join(d, "killed.txt")
    streams = seq_pipeline(w, "k9", killed, 6000, 1500)
    wait_until(lambda: sum(len(v) for v in seqs_in(killed).values()) >= 4000, 60, "4,000 records before the kill")
    w.kill9()
    before = sum(len(v) for v in seqs_in(killed).values())
    w.start(timeout=90)
    wait_until(lambda: all(len(set(seqs_in(killed).get(s, []))) == 6000 for s in streams), 120,
               "every seq of every stream after the worker's kill -9")
    dups = check_complete(killed, streams, 6000, "worker kill -9")
    print(f"(c) worker kill -9 at {before} of 18,000: 0 lost, {dups} duplicates")

    # (d) kill -9 of the JVM host mid-stream.
    hk = os.path.join(d, "hostkill.txt")
    streams = seq_pipeline(w, "h9", hk, 6000, 1500)
    wait_until(lambda: sum(len(v) for v in seqs_in(hk).values()) >= 4000, 60, "4,000 records before the host's kill")
    hosts = java_children(w.proc.pid)
    if len(hosts) != 1:
        raise AssertionError(f"expected one JVM host under the worker, found {hosts}")
    os.kill(hosts[0], signal.SIGKILL)
    def failed_with_jvm_end():
        s = status(w, "h9-src")
        return s and any(t["state"] == "FAILED" and "JVM host" in t.get("trace", "") for t in s["tasks"])
    saw_failure = False
    t0 = time.time()
    while time.time() - t0 < 10 and not saw_failure:
        saw_failure = bool(failed_with_jvm_end())
        time.sleep(0.05)
    wait_until(lambda: all(len(set(seqs_in(hk).get(s, []))) == 6000 for s in streams), 120,
               "every seq of every stream after the JVM host's kill -9")
    dups = check_complete(hk, streams, 6000, "JVM host kill -9")
    new_hosts = java_children(w.proc.pid)
    if not new_hosts or new_hosts == hosts:
        raise AssertionError(f"no new JVM host after the kill: {new_hosts}")
    if "was killed by signal" not in open(w.log_path).read():
        raise AssertionError("the worker's log does not say how the JVM host ended")
    print(f"(d) JVM host kill -9: 0 lost, {dups} duplicates; tasks FAILED with the host's end seen: {saw_failure}; "
          f"restarted on host {new_hosts}")

    # (e) bad tasks, each beside a healthy Java pipeline.
    good = os.path.join(d, "good.txt")
    streams = seq_pipeline(w, "good", good, 4000, 200, tasks=1)

    w.ok("POST", "/connectors", {"name": "bad-start", "config": {"connector.class": BAD_SOURCE, "mode": "start-throws", "topic": "x"}})
    def failed_task(name, needle):
        s = status(w, name)
        return s and s["tasks"] and s["tasks"][0]["state"] == "FAILED" and needle in s["tasks"][0].get("trace", "")
    wait_until(lambda: failed_task("bad-start", "start() fails on purpose"), 30, "bad-start FAILED with the Java message")
    w.ok("DELETE", "/connectors/bad-start")

    w.ok("POST", "/connectors", {"name": "bad-hang", "config": {"connector.class": BAD_SOURCE, "mode": "hang-poll", "topic": "x"}})
    w.wait_running("bad-hang")
    time.sleep(1)
    t0 = time.time()
    code, _ = w.rest("DELETE", "/connectors/bad-hang", timeout=30)
    took = time.time() - t0
    if code not in (200, 204) or took > 12:
        raise AssertionError(f"deleting a connector whose poll() hangs took {took:.1f} s (answer {code})")
    wait_until(lambda: "did not stop within" in open(w.log_path).read(), 15, "the abandoned poll thread logged")

    w.ok("POST", "/connectors", {"name": "bad-leak", "config": {"connector.class": BAD_SOURCE, "mode": "leak-threads", "topic": "x"}})
    w.wait_running("bad-leak")
    w.ok("DELETE", "/connectors/bad-leak")
    wait_until(lambda: "left 3 thread(s) running after stop(): [leaked-by-bad-task" in open(w.log_path).read(), 15,
               "the leaked threads named in the log")

    host_before = java_children(w.proc.pid)
    w.ok("POST", "/connectors", {"name": "bad-oom", "config": {"connector.class": BAD_SOURCE, "mode": "oom", "topic": "x"}})
    wait_until(lambda: failed_task("bad-oom", "OutOfMemoryError"), 60, "bad-oom FAILED naming OutOfMemoryError")
    w.ok("DELETE", "/connectors/bad-oom")
    wait_until(lambda: java_children(w.proc.pid) and java_children(w.proc.pid) != host_before, 30, "a new JVM host")

    wait_until(lambda: len(set(seqs_in(good).get(streams[0], []))) == 4000, 120,
               "the healthy Java pipeline's 4,000 records beside the bad tasks")
    dups = check_complete(good, streams, 4000, "beside bad tasks")
    code, _ = w.rest("GET", "/health")
    if code != 200:
        raise AssertionError("the worker is not healthy after the bad tasks")
    print(f"(e) start() throws, poll() hangs ({took:.1f} s to delete), threads leak, heap runs out: each "
          f"reported; the healthy pipeline beside them 0 lost, {dups} duplicates (the OOM restarted the host)")
    w.stop()


if __name__ == "__main__":
    run(main)
