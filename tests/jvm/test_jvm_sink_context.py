"""A Java sink task steering its consumer through SinkTaskContext (jvm/README.md, "Running"): a
real worker on the embedded backbone (topics of 4 queues), SeqSource (Java) into SteeringSink
(tests/jvm/plugins), which writes a line per record put with its partition, offset and time.

  (a) offset(): the first time a partition's record at offset 500 is put, the sink rewinds that
      partition to 400: records 400 to the last one of that batch (the rest of a batch is put, as
      in Kafka Connect) are put exactly twice, every other one exactly once, none lost;
  (b) pause()/resume(): the first time partition 0's record at offset 100 is put, the sink pauses
      it and resumes it 3 s later from a thread of its own: no record of partition 0 is put while
      it is paused (after the batch in hand), the other partitions go on meanwhile, and every
      record of every partition is put exactly once (what a poll returned for the paused
      partition is read again after the resume, not lost, not doubled);
  (c) a RetriableException from put(): the batch is put again after the runtime's back-off, every
      record exactly once.

Environment: FERRY_BIN, FERRY_JVM_TEST_PLUGINS."""
import collections
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, HERE)
from harness import Worker, read_lines, run, tmpdir, wait_until  # noqa: E402
from test_jvm_plugins import PLUGINS  # noqa: E402
from test_jvm_run import SEQ_SOURCE  # noqa: E402

STEERING_SINK = "io.ferry.testplugins.SteeringSinkConnector"


def parse(path):
    recs = collections.defaultdict(list)  # partition -> [(offset, millis)]
    moves = []
    for raw in read_lines(path):
        f = raw.decode().split()
        if f[0] == "rec":
            recs[int(f[1])].append((int(f[2]), int(f[3])))
        else:
            moves.append(f)
    return recs, moves


def each_once(recs, what):
    """Every offset of every partition, from 0 to the last one put, put exactly once."""
    for p, got in recs.items():
        count = collections.Counter(o for o, _ in got)
        missing = set(range(max(count) + 1)) - set(count)
        dups = {o: c for o, c in count.items() if c != 1}
        if missing or dups:
            raise AssertionError(f"{what} partition {p}: lost {sorted(missing)[:5]}, doubled {list(dups.items())[:5]}")


def main():
    if not PLUGINS or not os.path.isdir(os.path.join(PLUGINS, "test-plugins")):
        raise AssertionError(f"no test plugins at {PLUGINS!r}: the JVM host and its tests were not built")
    d = tmpdir("jvm-sink-context")
    w = Worker(d, {"plugin.path": PLUGINS, "jvm.heap.max": "256m", "offset.flush.interval.ms": "500"})
    w.start(timeout=90)
    conv = {"key.converter": "JsonConverter", "value.converter": "JsonConverter"}

    # (a) rewind.
    out = os.path.join(d, "rewind.txt")
    w.ok("POST", "/connectors", {"name": "rw-src", "config": dict(conv, **{
        "connector.class": SEQ_SOURCE, "topic": "rw", "count": "4000", "tasks.max": "1"})})
    w.ok("POST", "/connectors", {"name": "rw-snk", "config": dict(conv, **{
        "connector.class": STEERING_SINK, "topics": "rw", "file": out, "rewind.offset": "500", "rewind.by": "100"})})

    def delivered():
        recs, _ = parse(out)
        return sum(len({o for o, _ in v}) for v in recs.values())
    wait_until(lambda: delivered() >= 4000, 60, "4,000 records put")
    def again():
        return sum(int(m[3]) - int(m[2]) + 1 for m in parse(out)[1] if m[0] == "rewind")
    wait_until(lambda: sum(len(v) for v in parse(out)[0].values()) >= 4000 + again(), 30, "the rewound records put again")
    recs, moves = parse(out)
    rewinds = {int(m[1]): (int(m[2]), int(m[3])) for m in moves if m[0] == "rewind"}
    if not rewinds:
        raise AssertionError("(a) no partition reached offset 500: nothing rewound")
    for p, got in recs.items():
        count = collections.Counter(o for o, _ in got)
        end = max(count)
        missing = set(range(end + 1)) - set(count)
        if missing:
            raise AssertionError(f"(a) partition {p} lost offsets {sorted(missing)[:5]}")
        for o, c in count.items():
            want = 2 if p in rewinds and rewinds[p][0] <= o <= rewinds[p][1] else 1
            if c != want:
                raise AssertionError(f"(a) partition {p} offset {o} put {c} times, expected {want} "
                                     f"(rewound: {rewinds.get(p)})")
    print(f"(a) offset(): {len(rewinds)} partition(s) rewound to 400 at 500 (last put before it: "
          f"{sorted(r[1] for r in rewinds.values())}); those records put twice, the others once, none lost", flush=True)

    # (b) pause and resume partition 0.
    out = os.path.join(d, "pause.txt")
    w.ok("POST", "/connectors", {"name": "pz-src", "config": dict(conv, **{
        "connector.class": SEQ_SOURCE, "topic": "pz", "count": "8000", "rate": "1600", "tasks.max": "1"})})
    w.ok("POST", "/connectors", {"name": "pz-snk", "config": dict(conv, **{
        "connector.class": STEERING_SINK, "topics": "pz", "file": out, "pause.offset": "100",
        "pause.partition": "0", "pause.ms": "3000"})})
    wait_until(lambda: sum(len(v) for v in parse(out)[0].values()) >= 8000, 90, "8,000 records put")
    recs, moves = parse(out)
    pause = [int(m[2]) for m in moves if m[0] == "pause"]
    resume = [int(m[2]) for m in moves if m[0] == "resume"]
    if len(pause) != 1 or len(resume) != 1:
        raise AssertionError(f"(b) expected one pause and one resume of partition 0: {moves}")
    t_pause, t_resume = pause[0], resume[0]
    during = [(o, t) for o, t in recs[0] if t_pause + 1000 < t < t_resume]
    if during:
        raise AssertionError(f"(b) partition 0 records put while it was paused: {during[:5]}")
    others = [(p, o) for p in recs if p != 0 for o, t in recs[p] if t_pause + 1000 < t < t_resume]
    if not others:
        raise AssertionError("(b) no other partition's record was put while partition 0 was paused")
    after = [o for o, t in recs[0] if t >= t_resume]
    if not after:
        raise AssertionError("(b) nothing of partition 0 after its resume")
    each_once(recs, "(b)")
    print(f"(b) pause()/resume(): partition 0 held {t_resume - t_pause} ms (nothing put meanwhile, "
          f"{len(others)} records of the others were); every record once, none lost", flush=True)

    # (c) a RetriableException from put().
    out = os.path.join(d, "retriable.txt")
    w.ok("POST", "/connectors", {"name": "rt-src", "config": dict(conv, **{
        "connector.class": SEQ_SOURCE, "topic": "rt", "count": "2000", "tasks.max": "1"})})
    w.ok("POST", "/connectors", {"name": "rt-snk", "config": dict(conv, **{
        "connector.class": STEERING_SINK, "topics": "rt", "file": out, "retriable.offset": "200"})})
    wait_until(lambda: sum(len(v) for v in parse(out)[0].values()) >= 2000, 60, "2,000 records put")
    recs, moves = parse(out)
    refusals = [m for m in moves if m[0] == "retriable"]
    if not refusals:
        raise AssertionError("(c) no put() threw: no partition reached offset 200")
    each_once(recs, "(c)")
    code, st = w.rest("GET", "/connectors/rt-snk/status")
    if code != 200 or st["tasks"][0]["state"] != "RUNNING":
        raise AssertionError(f"(c) the sink after its RetriableException: {st}")
    print(f"(c) RetriableException from put() ({len(refusals)} time(s)): the batch put again, every record once, "
          "the task RUNNING", flush=True)
    assert w.stop() == 0


if __name__ == "__main__":
    run(main)
