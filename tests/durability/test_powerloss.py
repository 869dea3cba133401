"""Power loss under a real worker: what was acknowledged survives, in the default configuration.

One worker runs three flows of sequence-numbered records at once:
  file    FileStreamSource (lines "f-<i>-xxx..." of LINE_BYTES, appended by the test to a file
          outside the tree while the worker runs) -> embedded backbone topic `flines` ->
          FileStreamSink fout.txt
  gen     DatagenSource (2 tasks, format string, "<task>-<seq>") -> topic `gseq` (each task's
          records on one queue) -> FileStreamSink gout.txt
  direct  DatagenSource with sink.connector.class=FileStreamSink (one direct task, no backbone)
          -> dout.txt
Everything the worker writes (data.dir and the three sink files) lies below the power-loss
layer's root (tests/durability/README.md); the source input file is the outside world (durable).
The layer is attached from the worker's very first start: folders, stores, topics and connectors
are all made under it. Each run goes through CYCLES cycles of: records flowing for a random time
(seeded), the committed state read over REST, kill -9, powerloss.crash() (the tree becomes what a
power loss at that moment leaves; what it changed is printed), restart under the layer again.
Then the worker runs until every record arrived, stops (SIGTERM), goes through one more power loss
(nothing may change after a clean stop) and starts once more.

What is proven, for the worker configuration of the run (`default`: the default configuration,
whose embedded log acknowledges a write after fdatasync), "acknowledged" meaning *committed*:
  1. source positions: a position the REST API showed as committed before the kill is still
     committed after the power loss (positions.json never goes back), and every record before it
     is in the durable backbone log (for `direct`: in its sink file) - file source: every line
     that ends at or before the committed byte position; datagen: every seq below the committed
     `seq`;
  2. sink group offsets: every record of a queue below the group offset the REST API showed
     before the kill (read from the log as it was at the kill) is in the sink file after the
     power loss (a group offset that went back is printed, not failed: REST shows a group's
     offset while its file is being written, and going back only re-delivers);
  3. connectors: the five connectors, each created by a POST that returned 201, exist after every
     restart and every connector and task is RUNNING again (the worker comes back every time);
  4. end to end: after CYCLES power losses every sequence number of every flow reached its sink
     file (0 lost) and no sink file holds a torn or foreign line;
  5. duplicates are counted and bounded: each one is a copy of a record that was past an
     acknowledgement at a kill, so their number is at most the sum over the kills of (records in
     the log at the kill past each source's position after the crash + records in each queue
     past its group offset after the crash + lines of the direct sink file past its position).
  What it does not prove: a kill lands only at the moments the seed picks, so a window of a few
  microseconds is hit by chance or not at all; a file system that breaks the POSIX contract
  (README, "What it does not model") can lose more; one worker, embedded backbone only.

  test_powerloss.py RUN...
    default     default worker config, names="strict", unsynced="drop"
    random      default worker config, names="strict", unsynced="random" (seed SEED*1000 + cycle)
    journaled   default worker config, names="journaled", unsynced="random"
    interval    backbone.embedded.fsync=interval, strict, drop; the same checks (per the design,
                sources that resume from positions lose nothing there either)
    control-log-never, control-sink-nosync
                configurations that do lose acknowledged records (the log never fsyncs; the file
                sinks never fsync): the run passes only when check 1, resp. 2, reports the loss

Environment: FERRY_BIN, FERRY_POWERLOSS_LIB (CTest sets both); sizes and rates:
FERRY_POWERLOSS_RECORDS (records per flow, default 60000), FERRY_POWERLOSS_RATE (records/s per
flow, default 5000), FERRY_POWERLOSS_LINE_BYTES (default 400), FERRY_POWERLOSS_CYCLES (default
6), FERRY_POWERLOSS_SEED (default 1); FERRY_POWERLOSS_WORKER="k=v,..." adds worker properties
(a probe by hand).
"""
import bisect
import json
import os
import random
import re
import shutil
import struct
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, os.path.join(HERE, "powerloss"))
import powerloss  # noqa: E402
from harness import Worker, run, tmpdir, wait_until  # noqa: E402

RECORDS = int(os.environ.get("FERRY_POWERLOSS_RECORDS", "60000"))  # per flow
RATE = int(os.environ.get("FERRY_POWERLOSS_RATE", "5000"))          # records/s per flow
# Bytes per line of the file flow: 400 at 5000/s passes FileStreamSink's 1 MiB write threshold
# between two flushes, so that sink file also holds unsynced writes at a kill.
LINE_BYTES = int(os.environ.get("FERRY_POWERLOSS_LINE_BYTES", "400"))
CYCLES = int(os.environ.get("FERRY_POWERLOSS_CYCLES", "6"))
SEED = int(os.environ.get("FERRY_POWERLOSS_SEED", "1"))
# Extra worker properties for a probe by hand ("k=v,k=v"), applied after the run's own.
EXTRA_WORKER = dict(kv.split("=", 1) for kv in os.environ.get("FERRY_POWERLOSS_WORKER", "").split(",") if kv)
FLUSH_MS = 500               # offset.flush.interval.ms: commits inside every cycle
KILL_AFTER = (0.05, 1.5)     # seconds of flowing records before each kill (seeded choice)
GEN_TASKS = 2
RUNS = {
    "default": {"worker": {}, "names": "strict", "unsynced": "drop"},
    "random": {"worker": {}, "names": "strict", "unsynced": "random"},
    "journaled": {"worker": {}, "names": "journaled", "unsynced": "random"},
    "interval": {"worker": {"backbone.embedded.fsync": "interval"}, "names": "strict", "unsynced": "drop"},
    # Controls: configurations that do lose acknowledged records; the run passes when the checks
    # above report the loss (so a layer that stopped working, or checks that stopped looking, fail).
    "control-log-never": {"worker": {"backbone.embedded.fsync": "never"}, "names": "strict",
                          "unsynced": "drop", "control": "source positions"},
    "control-sink-nosync": {"worker": {}, "sink": {"fsync": "false"}, "names": "strict",
                            "unsynced": "drop", "control": "sink group offsets"},
}

FLOW_OF = {"fsrc": "file", "gen": "gen", "direct": "direct", "fsink": "file", "gsink": "gen"}
LINE = {"file": re.compile(rb"^f-(\d+)-x*$"), "gen": re.compile(rb"^([0-9])-(\d+)$"),
        "direct": re.compile(rb"^0-(\d+)$")}


# ----- the embedded log's segment files (src/backbone/README.md: u32 payload length | u32 CRC32C
# | payload; payload i64 offset | i64 timestamp | key | value | u32 header count | headers)

def _crc32c_table():
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ 0x82F63B78 if c & 1 else c >> 1
        table.append(c)
    return table


_CRC_TABLE = _crc32c_table()


def crc32c(data):
    c = 0xFFFFFFFF
    t = _CRC_TABLE
    for b in data:
        c = t[(c ^ b) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


MIN_FRAME = 8 + 8 + 8 + 4 + 4 + 4   # header, offset, timestamp, key/value lengths, header count
MAX_PAYLOAD = 256 << 20
GAP_SLACK = 1 << 20                 # offsets failed writes may leave unused (segment_codec.h)
_parsed = {}  # path -> (bytes, records, their end positions): what a file held when last read


def _common_prefix(a, b):
    lo, hi = 0, min(len(a), len(b))
    while lo < hi:  # the longest equal prefix, by slice comparisons (memcmp, not a Python loop)
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo


def _frame_at(data, pos, after, most=None):
    """(size, offset, value) of an intact frame at pos whose offset follows `after` (by at most
    `most`), else None."""
    if pos + MIN_FRAME > len(data):
        return None
    length, crc = struct.unpack_from("<II", data, pos)
    if length < MIN_FRAME - 8 or length > MAX_PAYLOAD or pos + 8 + length > len(data):
        return None
    (offset,) = struct.unpack_from("<q", data, pos + 8)
    if offset <= after or (most is not None and offset - after > most):
        return None
    payload = data[pos + 8:pos + 8 + length]
    if crc32c(payload) != crc:
        return None
    (klen,) = struct.unpack_from("<i", payload, 16)
    at = 20 + max(klen, 0)
    (vlen,) = struct.unpack_from("<i", payload, at)
    return 8 + length, offset, (payload[at + 4:at + 4 + vlen] if vlen >= 0 else None)


def read_segment(path, base):
    """[(offset, value bytes)] of the intact records of a segment file, read the way the log reads
    it at open (segment_codec.cc, recoverSegment): damaged bytes are stepped over to the next
    intact frame whose offset follows the last one plausibly; bytes after the last intact frame are
    a torn tail and ignored."""
    with open(path, "rb") as f:
        data = f.read()
    # The records of the part this file shares with its last reading are known already (the log
    # only appends; a power loss cuts or zeroes a tail): parse only from the first difference.
    before, out, ends = _parsed.get(path, (b"", [], []))
    keep = bisect.bisect_right(ends, _common_prefix(data, before))
    out, ends = out[:keep], ends[:keep]
    pos = ends[-1] if ends else 0
    last = out[-1][0] if out else base - 1
    while pos < len(data):
        frame = _frame_at(data, pos, last)
        if frame is None:  # damage: find the next intact frame, as findNextFrame does
            q = pos + 1
            while q + MIN_FRAME <= len(data):
                frame = _frame_at(data, q, last, (q - pos) // MIN_FRAME + 1 + GAP_SLACK)
                if frame:
                    break
                q += 1
            if frame is None:
                break
            pos = q
        size, offset, value = frame
        out.append((offset, value))
        last = offset
        pos += size
        ends.append(pos)
    _parsed[path] = (data, out, ends)
    return out


def read_topic(data_dir, topic):
    """{queue: {offset: value}} of a backbone topic as the files below data_dir hold it now."""
    out = {}
    tdir = os.path.join(data_dir, "backbone", "topics", topic)
    if not os.path.isdir(tdir):
        return out
    for q in os.listdir(tdir):
        recs = {}
        qdir = os.path.join(tdir, q)
        for name in sorted(os.listdir(qdir)):
            if name.endswith(".log"):
                recs.update(read_segment(os.path.join(qdir, name), int(name[:-4])))
        out[int(q)] = recs
    return out


# ----- committed state as the files hold it (what the restarted worker will load)

def read_json_state(path):
    """A checked state file (src/core/checked_file.h): the current copy, else the .prev copy."""
    for p in (path, path + ".prev"):
        try:
            with open(p, "rb") as f:
                return json.loads(f.read())
        except (FileNotFoundError, ValueError):
            continue
    return None


def durable_positions(data_dir):
    """{connector: {partition json: offset map}} from data_dir/store/positions.json."""
    doc = read_json_state(os.path.join(data_dir, "store", "positions.json")) or {}
    out = {}
    for name, plist in doc.get("connectors", {}).items():
        out[name] = {json.dumps(p["partition"], sort_keys=True): p["offset"] for p in plist}
    return out


def durable_group(data_dir, sink):
    """{(topic, queue): offset} from the sink's group file of the embedded log."""
    doc = read_json_state(os.path.join(data_dir, "backbone", "groups", f"connect-{sink}.json")) or {}
    return {(o["topic"], o["queue"]): o["offset"] for o in doc.get("offsets", [])}


def read_lines(path):
    try:
        with open(path, "rb") as f:
            return f.read().split(b"\n")
    except FileNotFoundError:
        return [b""]


def seqs_of(flow, lines):
    """The sequence keys of a sink file's complete lines: file 'f-i-xxx' -> i, gen 't-n' -> (t, n),
    direct '0-n' -> n. Returns (keys, torn lines: any other line, or a last line without '\\n')."""
    keys, torn = [], []
    body, tail = lines[:-1], lines[-1]
    for line in body:
        m = LINE[flow].match(line)
        if not m:
            torn.append(line)
        elif flow == "gen":
            keys.append((int(m.group(1)), int(m.group(2))))
        else:
            keys.append(int(m.group(1)))
    if tail:
        torn.append(tail)  # no newline at the end
    return keys, torn


def value_key(flow, value):
    m = LINE[flow].match(value or b"")
    if not m:
        return None
    return (int(m.group(1)), int(m.group(2))) if flow == "gen" else int(m.group(1))


class Run:
    """One run: a temporary folder with the tree under the layer (state/), the shadow, the input
    file and the worker's log; the worker and the cycles. Owned by the main thread; the feeder
    thread only appends to the input file, gated by `up` (set while the worker runs) and stopped
    by `stop_feed`. A failed check raises AssertionError; cleanup() then keeps the folder."""

    def __init__(self, name):
        self.name = name
        self.cfg = RUNS[name]
        self.rng = random.Random(f"{SEED}-{name}")  # kill moments: fixed per seed and run
        self.lib = os.environ.get("FERRY_POWERLOSS_LIB")
        assert self.lib and os.path.exists(self.lib), "set FERRY_POWERLOSS_LIB to libferry_powerloss.so"
        self.d = tmpdir(f"powerloss-{name}")
        self.root = os.path.join(self.d, "state")   # what the power loss hits
        self.shadow = os.path.join(self.d, "shadow")
        self.data = os.path.join(self.root, "data")
        os.makedirs(self.root)
        self.src = os.path.join(self.d, "in.txt")   # the outside world
        open(self.src, "w").close()
        self.out = {f: os.path.join(self.root, f"{f[0]}out.txt") for f in ("file", "gen", "direct")}
        # byte position after line i of the input: which lines a file position covers
        self.line_end = []
        end = 0
        for i in range(RECORDS):
            end += len(self.input_line(i))
            self.line_end.append(end)
        props = {"data.dir": self.data, "offset.flush.interval.ms": str(FLUSH_MS)}
        props.update(self.cfg["worker"])
        props.update(EXTRA_WORKER)
        self.w = Worker(self.d, props)
        self.env = powerloss.layer_env(self.root, self.shadow, self.lib)
        self.stop_feed = threading.Event()
        self.up = threading.Event()  # the worker runs (the feeder writes only then)
        self.feeder = threading.Thread(target=self.feed)
        self.dup_bound = 0
        self.log_at = 0
        self.control = self.cfg.get("control")  # the check that must see a loss in a control run
        self.control_found = False
        self.sink_extra = self.cfg.get("sink", {})

    @staticmethod
    def input_line(i):
        """Line i of the file flow's input: "f-<i>-xxx...", LINE_BYTES bytes with its newline."""
        head = f"f-{i}-"
        return head + "x" * max(0, LINE_BYTES - len(head) - 1) + "\n"

    def feed(self):
        """The outside system: appends RECORDS lines to the source file at RATE lines/s of the
        worker's uptime (it pauses while the worker is down, so that like the datagen flows the
        file flow is still running at the later kills instead of being read as one backlog)."""
        chunk = max(1, RATE // 50)
        with open(self.src, "a") as f:
            for start in range(0, RECORDS, chunk):
                while not self.up.wait(0.1):
                    if self.stop_feed.is_set():
                        return
                if self.stop_feed.is_set():
                    return
                f.write("".join(self.input_line(i) for i in range(start, min(start + chunk, RECORDS))))
                f.flush()
                time.sleep(chunk / RATE)

    def create_connectors(self):
        w = self.w
        w.ok("POST", "/connectors", {"name": "fsrc", "config": {
            "connector.class": "FileStreamSource", "file": self.src, "topic": "flines", "tasks.max": "1"}})
        w.ok("POST", "/connectors", {"name": "fsink", "config": {
            "connector.class": "FileStreamSink", "topics": "flines", "file": self.out["file"], **self.sink_extra}})
        per_task = RECORDS // GEN_TASKS
        w.ok("POST", "/connectors", {"name": "gen", "config": {
            "connector.class": "DatagenSource", "topic": "gseq", "tasks.max": str(GEN_TASKS),
            "format": "string", "max.records": str(per_task), "rate": str(RATE / GEN_TASKS)}})
        w.ok("POST", "/connectors", {"name": "gsink", "config": {
            "connector.class": "FileStreamSink", "topics": "gseq", "file": self.out["gen"], **self.sink_extra}})
        w.ok("POST", "/connectors", {"name": "direct", "config": {
            "connector.class": "DatagenSource", "topic": "direct-unused", "tasks.max": "1",
            "format": "string", "max.records": str(RECORDS), "rate": str(RATE),
            "sink.connector.class": "FileStreamSink", "sink.file": self.out["direct"],
            **{"sink." + k: v for k, v in self.sink_extra.items()}}})

    def expected(self, flow):
        if flow == "gen":
            return {(t, n) for t in range(GEN_TASKS) for n in range(RECORDS // GEN_TASKS)}
        return set(range(RECORDS))

    def acked(self):
        """The committed state the REST API shows now: positions of the sources, group offsets of
        the sinks."""
        out = {}
        for c in ("fsrc", "gen", "direct", "fsink", "gsink"):
            st, body = self.w.rest("GET", f"/connectors/{c}/offsets", timeout=5)
            out[c] = body.get("offsets", []) if st == 200 and isinstance(body, dict) else []
        return out

    def new_log_lines(self):
        with open(self.w.log_path, "rb") as f:
            f.seek(self.log_at)
            text = f.read()
            self.log_at = f.tell()
        return [l.decode(errors="replace") for l in text.splitlines()
                if re.match(rb"\S+ (warn|warning|error|critical)\s", l)]

    def all_running(self):
        for c in ("fsrc", "fsink", "gen", "gsink", "direct"):
            self.w.wait_running(c, timeout=30)

    # ----- one cycle

    def cycle(self, k):
        pause = self.rng.uniform(*KILL_AFTER)
        time.sleep(pause)
        acked = self.acked()
        self.w.kill9()
        self.up.clear()
        t_check = time.time()
        at_kill = {f: seqs_of(f, read_lines(p))[0] for f, p in self.out.items()}
        live_logs = {t: read_topic(self.data, t) for t in ("flines", "gseq")}
        unsynced = self.cfg["unsynced"]
        report = powerloss.crash(self.root, self.shadow, names=self.cfg["names"], unsynced=unsynced,
                                 seed=SEED * 1000 + k)
        summary = {
            "run": self.name, "cycle": k, "kill_after_s": round(pause, 2),
            "sink_lines_at_kill": {f: len(v) for f, v in at_kill.items()},
            "crash": {"gone": report["gone"][:12], "gone_count": len(report["gone"]),
                      "changed": report["changed"][:12], "changed_count": len(report["changed"]),
                      "restored": report["restored"][:12], "live_files": report["live_files"],
                      "unsynced_names": report["unsynced_names"][:12],
                      "random_pages": report["random_pages"]}}
        problems = self.check_acked(acked, at_kill, live_logs, summary)
        print(json.dumps(summary), flush=True)
        for f, keys in at_kill.items():
            assert len(set(keys)) < len(self.expected(f)), (
                f"the kill of cycle {k} came after flow {f} had finished: raise FERRY_POWERLOSS_RECORDS "
                f"or lower FERRY_POWERLOSS_RATE so that kills hit records in flight")
        if self.control:
            found = [text for kind, text in problems if kind == self.control]
            for text in found:
                print(f"  control: the checks saw the expected loss: {text}")
            if found:
                self.control_found = True
                return False
        else:
            assert not problems, (f"run {self.name} cycle {k}: acknowledged state lost:\n  " +
                                  "\n  ".join(text for _, text in problems))
        summary_restart = time.time()
        self.w.start(env=self.env)
        self.all_running()
        print(f"  cycle {k}: checks {summary_restart - t_check:.1f}s, back with every connector and task "
              f"RUNNING {time.time() - summary_restart:.2f}s after the restart", flush=True)
        self.up.set()
        for line in self.new_log_lines()[:15]:
            print(f"  worker log after cycle {k}: {line}")
        return True

    def source_partition(self, conn, part):
        """For a source partition: covered(offset map) -> how many of its records an offset covers,
        key(i) -> its i-th record as a sink file key, index(sink key) -> i (None: another partition)."""
        if conn == "fsrc":  # a byte position: the lines that end at or before it
            return (lambda o: bisect.bisect_right(self.line_end, int(o["position"])),
                    lambda i: i, lambda x: x)
        if conn == "gen":
            t = int(part["datagen.task"])
            return (lambda o: int(o["seq"]), lambda i: (t, i), lambda x: x[1] if x[0] == t else None)
        return lambda o: int(o["seq"]), lambda i: i, lambda x: x

    def check_acked(self, acked, at_kill, live_logs, summary):
        """Checks the tree after crash() against what was acknowledged before the kill; returns
        [(kind, text)] of what was lost and adds what it checked to summary."""
        problems = []
        pos = durable_positions(self.data)
        durable_logs = {t: read_topic(self.data, t) for t in ("flines", "gseq")}
        in_log = {"flines": set(), "gseq": set()}
        for t, flow in (("flines", "file"), ("gseq", "gen")):
            for recs in durable_logs[t].values():
                in_log[t].update(value_key(flow, v) for v in recs.values())
        after = {f: set(seqs_of(f, read_lines(p))[0]) for f, p in self.out.items()}
        bound = 0
        checked = {}

        # 1. source positions: not gone back, and every record before them durable downstream
        for conn, topic in (("fsrc", "flines"), ("gen", "gseq"), ("direct", None)):
            for p in acked[conn]:
                part, off = p["partition"], p["offset"]
                if "ferry.sink.task" in part:
                    continue  # a sink task's own state (FileStreamSink's written length), not a position
                covered, key, index = self.source_partition(conn, part)
                now = pos.get(conn, {}).get(json.dumps(part, sort_keys=True))
                n_acked, n_now = covered(off), covered(now) if now else 0
                if n_now < n_acked:
                    problems.append(("source positions", f"{conn} {part}: committed position {off} before "
                                     f"the kill, {now} after the power loss"))
                have = in_log[topic] if topic else after["direct"]
                missing = [key(i) for i in range(n_acked) if key(i) not in have]
                checked[f"{conn} {part.get('datagen.task', 'file')}"] = n_acked
                if missing:
                    where = f"backbone topic {topic}" if topic else self.out["direct"]
                    problems.append(("source positions", f"{conn} {part}: {len(missing)} of the {n_acked} records "
                                     f"before its committed position {off} are not in {where} after the power "
                                     f"loss, first {missing[:5]}"))
                # duplicates this kill can cause on the source side: records it had sent past the
                # position it resumes from
                live = ([value_key(FLOW_OF[conn], v) for recs in live_logs[topic].values() for v in recs.values()]
                        if topic else at_kill["direct"])
                bound += sum(1 for x in live if x is not None and (i := index(x)) is not None and i >= n_now)
        # 2. sink group offsets: every record below them is in the sink file after the power loss
        regressions = []
        for sink, flow, topic in (("fsink", "file", "flines"), ("gsink", "gen", "gseq")):
            group = durable_group(self.data, sink)
            for p in acked[sink]:
                q, g = int(p["partition"]["kafka_partition"]), int(p["offset"]["kafka_offset"])
                if group.get((topic, q), -1) < g:
                    regressions.append(f"{sink} {topic}-{q}: {g} -> {group.get((topic, q))}")
                below = [value_key(flow, v) for o, v in live_logs[topic].get(q, {}).items() if o < g]
                missing = [x for x in below if x not in after[flow]]
                checked[f"{sink} {topic}-{q}"] = len(below)
                if missing:
                    problems.append(("sink group offsets", f"{sink} {topic}-{q}: {len(missing)} of the "
                                     f"{len(below)} records below its committed offset {g} are not in "
                                     f"{self.out[flow]} after the power loss, first {missing[:5]}"))
            # duplicates this kill can cause on the sink side: records past the durable group offset
            for q, recs in live_logs[topic].items():
                start = group.get((topic, q), 0)
                bound += sum(1 for o in recs if o >= start)
        self.dup_bound += bound
        summary["acked_records_checked"] = checked
        summary["group_offsets_gone_back"] = regressions
        summary["duplicate_bound_this_kill"] = bound
        return problems

    # ----- the whole run

    def main(self):
        worker = {**self.cfg["worker"], **EXTRA_WORKER} or "defaults"
        print(f"run {self.name}: {RECORDS} records per flow at {RATE}/s, {CYCLES} power losses, seed {SEED}, "
              f"worker {worker}, names={self.cfg['names']} "
              f"unsynced={self.cfg['unsynced']}, files in {self.d}", flush=True)
        powerloss.init(self.root, self.shadow)   # an empty tree: the worker's very first start
        t0 = time.time()
        self.w.start(env=self.env)
        assert powerloss.attached(self.shadow), "the worker did not load the power-loss layer"
        self.up.set()
        self.feeder.start()
        self.create_connectors()
        for k in range(1, CYCLES + 1):
            if not self.cycle(k):
                break
        if self.control:
            assert self.control_found, (f"control run {self.name}: no cycle showed the loss this configuration "
                                        f"causes; the checks of {self.control} (or the layer) do not work")
            return
        self.feeder.join()

        def complete():
            return all(self.expected(f) <= set(seqs_of(f, read_lines(p))[0]) for f, p in self.out.items())
        try:
            wait_until(complete, 120, "every record in every sink file", 0.5)
        except AssertionError:
            self.final_report(time.time() - t0)
            raise
        self.final_report(time.time() - t0, assert_all=True)
        # A power loss right after a clean stop: the stop made everything durable.
        rc = self.w.stop()
        assert rc == 0, f"the worker exited with {rc} on SIGTERM:\n{self.w.tail_log(20)}"
        before = {f: open(p, "rb").read() for f, p in self.out.items()}
        report = powerloss.crash(self.root, self.shadow, names=self.cfg["names"], unsynced=self.cfg["unsynced"],
                                 seed=SEED * 1000)
        print(json.dumps({"run": self.name, "power_loss_after_clean_stop": {
            k: report[k] for k in ("gone", "changed", "restored", "unsynced_names")}}), flush=True)
        for f, p in self.out.items():
            assert open(p, "rb").read() == before[f], f"{p} changed in a power loss after a clean stop"
        self.w.start(env=self.env)
        self.all_running()
        self.w.stop()

    def final_report(self, seconds, assert_all=False):
        result = {"run": self.name, "records_per_flow": RECORDS, "power_losses": CYCLES,
                  "seconds": round(seconds, 1), "flows": {}}
        failures = []
        total_dups = 0
        for f, p in self.out.items():
            keys, torn = seqs_of(f, read_lines(p))
            counts = {}
            for x in keys:
                counts[x] = counts.get(x, 0) + 1
            lost = sorted(self.expected(f) - counts.keys())
            dups = sum(c - 1 for c in counts.values())
            total_dups += dups
            result["flows"][f] = {"lost": len(lost), "lost_first": lost[:5], "duplicates": dups,
                                  "torn_lines": len(torn), "torn_first": [t[:40].decode(errors="replace") for t in torn[:3]]}
            if lost:
                failures.append(f"flow {f}: {len(lost)} records lost, first {lost[:5]}")
            if torn:
                failures.append(f"flow {f}: {len(torn)} torn or foreign lines in {p}, first {torn[:3]}")
        result["duplicates"] = total_dups
        result["duplicate_bound"] = self.dup_bound
        if total_dups > self.dup_bound:
            failures.append(f"{total_dups} duplicates exceed the bound {self.dup_bound} (records past an "
                            f"acknowledgement at the kills)")
        for c in ("fsrc", "fsink", "gen", "gsink", "direct"):
            st, body = self.w.rest("GET", f"/connectors/{c}/status")
            bad = [t for t in (body.get("tasks", []) if st == 200 else []) if t.get("state") != "RUNNING"]
            if st != 200 or bad:
                failures.append(f"{c}: status {st} {bad or body}")
        print(json.dumps(result), flush=True)
        if failures:
            print("worker log:\n" + self.w.tail_log(40), flush=True)
        if assert_all:
            assert not failures, f"run {self.name}: " + "; ".join(failures)

    def cleanup(self, ok):
        self.stop_feed.set()
        if self.feeder.is_alive():
            self.feeder.join()
        if ok:
            shutil.rmtree(self.d, ignore_errors=True)
        else:
            print(f"files kept in {self.d}", flush=True)


def main():
    names = sys.argv[1:] or ["default"]
    for name in names:
        assert name in RUNS, f"unknown run {name!r}; runs: {', '.join(RUNS)}"
    for name in names:
        r = Run(name)
        ok = False
        try:
            r.main()
            ok = True
        finally:
            r.cleanup(ok)


if __name__ == "__main__":
    run(main)
