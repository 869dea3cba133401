"""The embedded log under disk damage, end to end on the real worker.

A datagen source writes N sequence-numbered records ("0-<i>", record i at offset i: one task, one
queue) into topic `seq` across many small segments; sink `a` copies them, with their offsets, to
a.txt. The worker stops; the data folder is saved. Then, for each kind of damage, the saved folder
is restored, damaged, and the worker started again:

  tail cut at every byte of the last record · a bit flip in the first/middle/last record of the
  first/middle/last segment · a zero-filled and a garbage-filled range · a deleted middle segment
  and a deleted last segment · a group offset raised beyond the end, and one lowered (an
  operator's edit without a checksum) · a bit flip in the group's offset file, in a value of
  configs.json and of positions.json (still valid JSON: the checksum tells, the previous copy is
  used) · status.json and its previous copy ruined (a cache: rebuilt) · topics.json and the
  checkpoint ruined with their previous copies (the topics are found from their folders; the
  checkpoint is ignored for that start)

and the far ends are checked:
  - a new sink that reads `seq` from the start gets every intact record at its own offset and only
    the records the damage covered are missing (computed here from the segment files' frames);
  - 20 new records written after the restart reach the new sink and the old sink `a` (which had
    committed everything before), at offsets above every old one (no offset handed out twice);
  - the damage is reported: in the worker log, on /metrics, and (when a sink read across it) in
    the sink task's status.

  test_corruption.py [--quick] [--keep-going]
    --quick       cuts the tail at 4 positions instead of at every byte
    --keep-going  runs every case and prints a summary of the failures (to compare builds)
"""
import json
import os
import re
import shutil
import struct
import sys
import time

from harness import Worker, run, tmpdir, wait_until

N = 1000
NEW = 20
QUICK = "--quick" in sys.argv
KEEP_GOING = "--keep-going" in sys.argv
WAIT = 20 if KEEP_GOING else 60


def frames(path):
    """(position, length, offset) of every intact-looking frame of a segment file, in order."""
    out = []
    with open(path, "rb") as f:
        data = f.read()
    pos = 0
    while pos + 16 <= len(data):
        length, _crc = struct.unpack_from("<II", data, pos)
        if length < 28 or pos + 8 + length > len(data):
            break
        (offset,) = struct.unpack_from("<q", data, pos + 8)
        out.append((pos, 8 + length, offset))
        pos += 8 + length
    return out


def segments(data):
    d = os.path.join(data, "backbone", "topics", "seq", "0")
    return sorted(os.path.join(d, f) for f in os.listdir(d) if f.endswith(".log"))


def lines(path):
    try:
        with open(path, "rb") as f:
            return [json.loads(l) for l in f.read().splitlines() if l.strip()]
    except FileNotFoundError:
        return []


def sink_config(name, out):
    return {"connector.class": "FileStreamSink", "topics": "seq", "file": out, "tasks.max": "1",
            "transforms": "wrap,off",
            "transforms.wrap.type": "HoistField$Value", "transforms.wrap.field": "v",
            "transforms.off.type": "InsertField$Value", "transforms.off.offset.field": "off"}


class Suite:
    def __init__(self):
        self.dir = tmpdir("corruption")
        self.w = Worker(self.dir, {"backbone.embedded.segment.bytes": "4096",
                                   "backbone.topic.default.queues": "1",
                                   "offset.flush.interval.ms": "200"})
        self.data = self.w.data
        self.a = os.path.join(self.dir, "a.txt")
        self.pristine = os.path.join(self.dir, "pristine")
        self.results = []
        self.failures = []

    def prepare(self):
        w = self.w
        w.start()
        w.ok("POST", "/connectors", {"name": "gen", "config": {
            "connector.class": "DatagenSource", "topic": "seq", "tasks.max": "1", "max.records": str(N),
            "format": "string", "rate": "5000"}})
        w.ok("POST", "/connectors", {"name": "a", "config": sink_config("a", self.a)})
        wait_until(lambda: len(lines(self.a)) >= N, 60, f"{N} records in a.txt", 0.1)
        time.sleep(1.0)  # sink a commits (offset.flush.interval.ms=200); stop commits again
        assert w.stop() == 0
        got = lines(self.a)
        assert [r["off"] for r in got] == list(range(N)), "a.txt is not offsets 0..N-1 in order"
        assert all(r["v"] == f"0-{r['off']}" for r in got), "record i is not at offset i"
        segs = segments(self.data)
        assert len(segs) >= 6, f"only {len(segs)} segments"
        shutil.copytree(self.data, os.path.join(self.pristine, "data"))
        shutil.copy(self.a, os.path.join(self.pristine, "a.txt"))
        print(f"prepared {N} records in {len(segs)} segments", flush=True)

    def restore(self):
        shutil.rmtree(self.data)
        shutil.copytree(os.path.join(self.pristine, "data"), self.data)
        shutil.copy(os.path.join(self.pristine, "a.txt"), self.a)
        for f in ("check.txt", "new.txt"):
            p = os.path.join(self.dir, f)
            if os.path.exists(p):
                os.remove(p)

    def case(self, name, damage, kinds, a_replays=0, log_needles=()):
        if not KEEP_GOING:
            return self.run_case(name, damage, kinds, a_replays, log_needles)
        try:
            self.run_case(name, damage, kinds, a_replays, log_needles)
        except AssertionError as e:
            self.failures.append(f"{name}: {str(e).splitlines()[0]}")
            print(f"FAILED {self.failures[-1]}", flush=True)
            if self.w.proc and self.w.proc.poll() is None:
                self.w.proc.kill()
                self.w.proc.wait()

    def run_case(self, name, damage, kinds, a_replays, log_needles):
        """damage() changes the restored folder and returns the set of offsets it destroys."""
        self.restore()
        lost = damage()
        log_from = os.path.getsize(self.w.log_path) if os.path.exists(self.w.log_path) else 0
        w = self.w
        w.start()
        new = os.path.join(self.dir, "new.txt")
        with open(new, "w") as f:
            f.write("".join(f"new-{i}\n" for i in range(NEW)))
        w.ok("POST", "/connectors", {"name": "newsrc", "config": {
            "connector.class": "FileStreamSource", "file": new, "topic": "seq"}})
        check = os.path.join(self.dir, "check.txt")
        w.ok("POST", "/connectors", {"name": "check", "config": sink_config("check", check)})
        expect_old = set(range(N)) - lost

        def complete():
            got = lines(check)
            return (len([r for r in got if r["v"].startswith("new-")]) >= NEW and
                    len([r for r in got if r["v"].startswith("0-")]) >= len(expect_old))
        try:
            wait_until(complete, WAIT, f"{name}: every intact and every new record in check.txt", 0.1)
            wait_until(lambda: len([r for r in lines(self.a) if r["v"].startswith("new-")]) >= NEW, WAIT,
                       f"{name}: the new records in a.txt", 0.1)
        finally:
            time.sleep(0.3)
            got = lines(check)
            a_got = lines(self.a)
            status = w.rest("GET", "/connectors/check/status")[1]
            metrics = w.rest("GET", "/metrics")[1]
            assert w.stop() == 0
        with open(self.w.log_path, "rb") as f:
            f.seek(log_from)
            log = f.read().decode(errors="replace")

        old = [r for r in got if r["off"] < N]
        fresh = [r for r in got if r["v"].startswith("new-")]
        offs = [r["off"] for r in got]
        assert len(offs) == len(set(offs)), f"{name}: an offset was read twice by the new sink"
        for r in old:
            assert r["v"] == f"0-{r['off']}", f"{name}: {r} is not at its own offset"
        for r in got:  # past the old end: the new records, or records a source sent again
            assert r["off"] < N or r["v"].startswith("new-") or (
                r["v"].startswith("0-") and int(r["v"][2:]) < N), f"{name}: unexpected {r}"
        missing = set(range(N)) - {r["off"] for r in old}
        assert missing == lost, (f"{name}: missing {sorted(missing)[:20]} ({len(missing)}), "
                                 f"the damage covered {sorted(lost)[:20]} ({len(lost)})")
        assert sorted(r["v"] for r in fresh) == sorted(f"new-{i}" for i in range(NEW)), f"{name}: new records {fresh}"
        assert all(r["off"] >= N for r in fresh), f"{name}: a new record reuses an old offset: {fresh}"
        a_new = [r for r in a_got if r["v"].startswith("new-")]
        assert sorted(r["v"] for r in a_new) == sorted(f"new-{i}" for i in range(NEW)), \
            f"{name}: sink a got {len(a_new)} of {NEW} new records"
        a_replayed = len([r for r in a_got if r["v"].startswith("0-")]) - N
        assert a_replayed >= a_replays, f"{name}: sink a re-read {a_replayed} records, expected {a_replays}"
        for kind in kinds:
            assert re.search(rf"seq-0 {kind}:", log), f"{name}: no '{kind}' report in the worker log:\n{log[-3000:]}"
            m = re.search(r'ferry_backbone_storage_issues\{kind="%s"\} (\d+)' % re.escape(kind), metrics)
            assert m and int(m.group(1)) >= 1, f"{name}: /metrics shows no {kind} issue"
        for needle in log_needles:
            assert needle in log, f"{name}: the worker log does not say '{needle}':\n{log[-3000:]}"
        if lost - {N - 1}:  # the check sink read across damage inside the log
            notes = [t.get("data_loss", "") for t in status["tasks"]]
            assert any(notes), f"{name}: the check sink's status says nothing of the lost records: {status}"
        self.results.append({"case": name, "lost": len(lost), "new_offsets_from": min(r["off"] for r in fresh),
                             "a_replayed": a_replayed})
        print(json.dumps(self.results[-1]), flush=True)

    # ----- damage

    def seg_frames(self, which):
        segs = segments(self.data)
        seg = segs[{"first": 0, "middle": len(segs) // 2, "last": len(segs) - 1}[which]]
        return seg, frames(seg)

    def flip(self, which_seg, which_rec):
        seg, fr = self.seg_frames(which_seg)
        i = {"first": 0, "middle": len(fr) // 2, "last": len(fr) - 1}[which_rec]
        pos, length, off = fr[i]
        with open(seg, "r+b") as f:
            f.seek(pos + length - 2)  # inside the value
            b = f.read(1)
            f.seek(pos + length - 2)
            f.write(bytes([b[0] ^ 0x04]))
        return {off}

    def fill(self, byte):
        seg, fr = self.seg_frames("middle")
        size = os.path.getsize(seg)
        start, end = size // 3, size // 3 + 256
        with open(seg, "r+b") as f:
            f.seek(start)
            f.write(bytes([byte]) * 256 if byte is not None else os.urandom(256))
        return {off for pos, length, off in fr if pos < end and pos + length > start}

    def cut_tail(self, at):
        seg, fr = self.seg_frames("last")
        pos, length, off = fr[-1]
        os.truncate(seg, pos + at)
        return {off}

    def delete(self, which):
        seg, fr = self.seg_frames(which)
        os.remove(seg)
        return {off for _, _, off in fr}

    def flip_in_value(self, path, pattern):
        """Changes one character inside the first match of `pattern` (a value): still valid JSON."""
        with open(path) as f:
            text = f.read()
        m = re.search(pattern, text)
        assert m, f"{pattern} not in {path}"
        i = m.end() - 2  # the last character inside the quoted value
        c = text[i]
        text = text[:i] + ("7" if c.isdigit() and c != "7" else "1" if c.isdigit() else "x" if c != "x" else "y") + \
            text[i + 1:]
        with open(path, "w") as f:
            f.write(text)
        json.loads(text)
        return set()

    def store(self, name):
        return os.path.join(self.data, "store", name)

    def ruin_both(self, path):
        for p in (path, path + ".prev"):
            with open(p, "w") as f:
                f.write("{ not json")
        return set()

    def set_group(self, offset):
        path = os.path.join(self.data, "backbone", "groups", "connect-a.json")
        with open(path) as f:
            doc = json.load(f)
        doc.pop("checksum", None)  # an operator's edit: no checksum to keep
        for o in doc["offsets"]:
            o["offset"] = offset
        with open(path, "w") as f:
            json.dump(doc, f)
        for extra in (path + ".prev",):
            if os.path.exists(extra):
                os.remove(extra)
        return set()


def main():
    s = Suite()
    s.prepare()
    seg, fr = s.seg_frames("last")
    last_len = fr[-1][1]
    cuts = [0, 1, last_len // 2, last_len - 1] if QUICK else list(range(last_len))
    for at in cuts:
        s.case(f"tail cut at byte {at} of the last record", lambda at=at: s.cut_tail(at), ["missing"])
    for which_seg in ("first", "middle", "last"):
        for which_rec in ("first", "middle", "last"):
            kind = "missing" if (which_seg, which_rec) == ("last", "last") else "damaged"
            s.case(f"bit flip in the {which_rec} record of the {which_seg} segment",
                   lambda a=which_seg, b=which_rec: s.flip(a, b), [kind])
    s.case("zero-filled range", lambda: s.fill(0), ["damaged"])
    s.case("garbage-filled range", lambda: s.fill(None), ["damaged"])
    s.case("deleted middle segment", lambda: s.delete("middle"), ["missing"])
    s.case("deleted last segment", lambda: s.delete("last"), ["missing"])
    s.case("group offset raised beyond the end", lambda: s.set_group(N + 50), ["group-ahead"])
    s.case("group offset lowered", lambda: s.set_group(N - 30), [], a_replays=30)
    group = os.path.join(s.data, "backbone", "groups", "connect-a.json")
    s.case("bit flip in the group offset file", lambda: s.flip_in_value(group, r'"offset":\s*\d+,?'), [],
           log_needles=["connect-a.json"])
    s.case("bit flip in a value of configs.json", lambda: s.flip_in_value(s.store("configs.json"), r'"topics":\s*"seq"'),
           [], log_needles=["configs.json"])
    s.case("bit flip in a value of positions.json",
           lambda: s.flip_in_value(s.store("positions.json"), r'"offset":\s*\{[^}]*?"\d+"'), [],
           log_needles=["positions.json"])
    s.case("status.json and its previous copy ruined", lambda: s.ruin_both(s.store("status.json")), [],
           log_needles=["status.json"])
    backbone = os.path.join(s.data, "backbone")
    s.case("topics.json and its previous copy ruined", lambda: s.ruin_both(os.path.join(backbone, "topics.json")),
           [], log_needles=["finding the topics from their folders"])
    s.case("checkpoint.json and its previous copy ruined",
           lambda: s.ruin_both(os.path.join(backbone, "checkpoint.json")), [],
           log_needles=["checkpoint.json"])
    print(json.dumps({"cases": len(s.results) + len(s.failures), "passed": len(s.results),
                      "failed": len(s.failures)}))
    assert not s.failures, "\n".join(s.failures)


if __name__ == "__main__":
    run(main)
