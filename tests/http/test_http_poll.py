"""HttpSource in polling mode against tests/http/http_target.py's /items API (3,000 items, 300 of
them becoming available per second, pages of 10, the next cursor in the JSON answer and in the
X-Next-Cursor header):

  (a) cursor from a JSON path, records from a JSON path: the worker is killed (-9) after a third
      of the items; after the restart the source resumes from its committed cursor (no request with
      a cursor below it... the first cursor asked after the restart is > 0) and every item arrives;
  (b) cursor from the answer header: every item arrives.
"""
import json
import os

from http_env import Target
from harness import Worker, free_port, read_lines, run, tmpdir, wait_until

ITEMS = 3000


def seqs(path):
    out = []
    for line in read_lines(path):
        try:
            out.append(json.loads(line)["seq"])
        except (ValueError, KeyError, TypeError):
            pass
    return out


def main():
    d = tmpdir("http-poll")
    target = Target(free_port(), os.path.join(d, "target"), ["--items", str(ITEMS), "--items-rate", "300"])
    w = Worker(d, {"task.restart.backoff.initial.ms": "200", "task.restart.backoff.max.ms": "1000"})
    try:
        target.start()
        w.start()
        out = os.path.join(d, "polled.txt")
        w.ok("POST", "/connectors", {"name": "poll", "config": {
            "connector.class": "HttpSource", "http.mode": "poll", "http.url": f"{target.url}/items",
            "http.poll.interval.ms": "200", "http.cursor.json.path": "$.next", "http.cursor.param": "cursor",
            "http.records.json.path": "$.items", "http.key.json.path": "$.seq", "topic": "polled"}})
        w.ok("POST", "/connectors", {"name": "polled-out", "config": {
            "connector.class": "FileStreamSink", "topics": "polled", "file": out}})
        wait_until(lambda: len(seqs(out)) >= ITEMS // 3, 60, "a third of the items", 0.05)
        w.kill9()
        asked_before = len(target.stats()["cursors"])
        w.start()
        wait_until(lambda: set(seqs(out)) >= set(range(ITEMS)), 120, f"all {ITEMS} items", 0.2)
        cursors = target.stats()["cursors"]
        after = cursors[asked_before:]
        assert after and after[0] > 0, f"(a) the restarted source asked from cursor {after[:3]}"
        got = seqs(out)
        print(f"(a) {ITEMS} items through a worker kill -9; resumed at cursor {after[0]}: 0 lost, "
              f"{len(got) - len(set(got))} duplicates", flush=True)

        out2 = os.path.join(d, "polled2.txt")
        w.ok("POST", "/connectors", {"name": "poll-header", "config": {
            "connector.class": "HttpSource", "http.mode": "poll", "http.url": f"{target.url}/items",
            "http.poll.interval.ms": "200", "http.cursor.header": "X-Next-Cursor",
            "http.records.json.path": "items", "topic": "polled2"}})
        w.ok("POST", "/connectors", {"name": "polled2-out", "config": {
            "connector.class": "FileStreamSink", "topics": "polled2", "file": out2}})
        wait_until(lambda: set(seqs(out2)) >= set(range(ITEMS)), 120, f"all {ITEMS} items (header cursor)", 0.2)
        print(f"(b) {ITEMS} items with the cursor from a header", flush=True)
        assert w.stop() == 0
    finally:
        target.stop()


if __name__ == "__main__":
    run(main)
