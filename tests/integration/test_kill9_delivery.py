"""At-least-once under kill -9: 1,000,000 sequence-numbered records from the datagen source reach a
file sink, with the worker killed (SIGKILL) twice in the middle and restarted each time.

  test_kill9_delivery.py backbone   datagen -> embedded backbone -> file sink (two connectors)
  test_kill9_delivery.py direct     datagen -> file sink in one direct task (no backbone hop)

Checks: every sequence number arrived (0 lost); duplicates are counted and stay within what the
commit interval allows (records produced in one interval, on each side, per kill).
"""
import json
import os
import sys
import time

from harness import Worker, run, tmpdir, wait_until

TOTAL = int(os.environ.get("FERRY_KILL9_RECORDS", "1000000"))
RATE = 100000            # records/s of the datagen task: bounds what one commit interval holds
FLUSH_MS = 1000          # offset.flush.interval.ms
KILL_AT = (0.3, 0.65)    # fractions of TOTAL written when the worker is killed


def count_lines(path):
    try:
        with open(path, "rb") as f:
            return f.read().count(b"\n")
    except FileNotFoundError:
        return 0


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "backbone"
    d = tmpdir(f"kill9-{mode}")
    out = os.path.join(d, "out.txt")
    w = Worker(d, {"offset.flush.interval.ms": str(FLUSH_MS)})
    w.start()
    gen = {
        "connector.class": "DatagenSource", "topic": "seq", "tasks.max": "1",
        "max.records": str(TOTAL), "rate": str(RATE), "format": "string",
    }
    if mode == "direct":
        gen.update({"sink.connector.class": "FileStreamSink", "sink.file": out})
        w.ok("POST", "/connectors", {"name": "gen", "config": gen})
    else:
        w.ok("POST", "/connectors", {"name": "gen", "config": gen})
        w.ok("POST", "/connectors", {"name": "sink", "config": {
            "connector.class": "FileStreamSink", "topics": "seq", "file": out, "tasks.max": "1"}})
    t0 = time.time()
    kills = 0
    for frac in KILL_AT:
        target = int(TOTAL * frac)
        wait_until(lambda: count_lines(out) >= target, 120, f"{target} lines in {out}", 0.2)
        w.kill9()
        kills += 1
        w.start()
    wait_until(lambda: count_lines(out) >= TOTAL, 300, f"{TOTAL} lines", 0.5)

    def complete():
        seen = set()
        with open(out, "rb") as f:
            for line in f:
                seen.add(line.strip())
        return len(seen) >= TOTAL and all(b"0-%d" % i in seen for i in range(TOTAL))
    wait_until(complete, 120, "every sequence number", 1.0)
    elapsed = time.time() - t0
    counts = {}
    torn = 0
    with open(out, "rb") as f:
        for line in f:
            line = line.strip()
            try:
                task, seq = line.split(b"-")
                n = int(seq)
            except ValueError:
                torn += 1
                continue
            counts[n] = counts.get(n, 0) + 1
    lost = [i for i in range(TOTAL) if i not in counts]
    dups = sum(c - 1 for c in counts.values())
    bound = kills * 2 * RATE * (FLUSH_MS / 1000.0) * 1.5
    print(json.dumps({"mode": mode, "records": TOTAL, "kills": kills, "lost": len(lost),
                      "duplicates": dups, "duplicate_bound": int(bound), "torn_lines": torn,
                      "seconds": round(elapsed, 1)}))
    w.stop()
    assert not lost, f"{len(lost)} sequence numbers lost, first {lost[:10]}"
    assert torn == 0, f"{torn} torn lines in the sink file"
    assert dups <= bound, f"{dups} duplicates exceed the commit-interval bound {bound}"


if __name__ == "__main__":
    run(main)
