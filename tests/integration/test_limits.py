"""Limits checked when a connector is created, not found later by a task that fails forever.

  (a) a backbone topic name the embedded log cannot hold (a sink's `topics`, its dead-letter
      topic, a source's `topic`) is refused by POST /connectors and shown by validate
  (b) tasks.max above the worker's tasks.max.limit is refused (2,000,000,000 used to be accepted
      and end in a swallowed bad_alloc)
  (c) the longest connector name (249 bytes, here in two-byte characters) works end to end: its
      sink group's offsets are stored, survive a restart, and the sink resumes from them; 250 bytes
      is refused
  (d) a record larger than backbone.embedded.max.record.bytes is refused at send with the key
      named; with errors.tolerance=all the source goes on past it, and nothing is written that a
      later start would read as damage
"""
import os
import time

from harness import Worker, run, tmpdir, wait_until


def lines(path):
    try:
        with open(path, "rb") as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return []


def main():
    d = tmpdir("limits")
    w = Worker(d, {"tasks.max.limit": "8", "backbone.embedded.max.record.bytes": "2048"})
    w.start()

    # (a) topic names
    for name, cfg, key in [
        ("bad-sink", {"connector.class": "FileStreamSink", "file": os.path.join(d, "x"), "topics": "ok,not ok"},
         "topics"),
        ("bad-dlq", {"connector.class": "FileStreamSink", "file": os.path.join(d, "x"), "topics": "ok",
                     "errors.tolerance": "all", "errors.deadletterqueue.topic.name": "../dlq"},
         "errors.deadletterqueue.topic.name"),
        ("bad-src", {"connector.class": "DatagenSource", "topic": "a" * 250}, "topic"),
    ]:
        status, body = w.rest("POST", "/connectors", {"name": name, "config": cfg})
        assert status == 400, (name, status, body)
        assert key in body["message"] and "embedded backbone" in body["message"], body
        status, report = w.rest("PUT", f"/connector-plugins/{cfg['connector.class']}/config/validate", cfg)
        assert status == 200, report
        errs = {c["value"]["name"]: c["value"]["errors"] for c in report["configs"]}
        assert errs.get(key), f"validate shows no error on {key}: {report}"
    assert w.rest("GET", "/connectors")[1] == [], "a refused connector was created"

    # (b) tasks.max
    for n in ("9", "2000000000"):
        status, body = w.rest("POST", "/connectors", {"name": "many", "config": {
            "connector.class": "DatagenSource", "topic": "t", "tasks.max": n}})
        assert status == 400 and "tasks.max.limit" in body["message"], (n, status, body)
    w.ok("POST", "/connectors", {"name": "eight", "config": {
        "connector.class": "DatagenSource", "topic": "eight", "tasks.max": "8", "max.records": "10"}})
    w.wait_running("eight")
    w.ok("DELETE", "/connectors/eight")

    # (c) the longest name
    src_file = os.path.join(d, "in.txt")
    with open(src_file, "w") as f:
        f.write("".join(f"line-{i}\n" for i in range(100)))
    w.ok("POST", "/connectors", {"name": "src", "config": {
        "connector.class": "FileStreamSource", "file": src_file, "topic": "lines"}})
    longest = "é" * 124 + "n"  # 249 bytes
    assert len(longest.encode()) == 249
    out = os.path.join(d, "out.txt")
    w.ok("POST", "/connectors", {"name": longest, "config": {
        "connector.class": "FileStreamSink", "file": out, "topics": "lines"}})
    wait_until(lambda: len(lines(out)) >= 100, 30, "100 lines through the long-named sink")
    from urllib.parse import quote
    path = "/connectors/" + quote(longest, safe="")
    wait_until(lambda: any(o["offset"].get("kafka_offset", 0) > 0
                           for o in (w.rest("GET", path + "/offsets")[1] or {}).get("offsets", [])),
               30, "the long-named sink's committed offsets")
    too_long = "é" * 125  # 250 bytes
    status, body = w.rest("POST", "/connectors", {"name": too_long, "config": {
        "connector.class": "FileStreamSink", "file": out, "topics": "lines"}})
    assert status == 400, (status, body)
    assert w.stop() == 0
    with open(src_file, "a") as f:
        f.write("".join(f"line-{i}\n" for i in range(100, 120)))
    w.start()
    wait_until(lambda: len(lines(out)) >= 120, 30, "the new lines after a restart")
    time.sleep(0.5)
    got = lines(out)
    assert len(got) == 120, f"the long-named sink did not resume from its offsets: {len(got)} lines"

    # (d) a record over the embedded log's limit
    big = os.path.join(d, "big.txt")
    with open(big, "w") as f:
        f.write("small-1\n" + "x" * 3000 + "\nsmall-2\n")
    w.ok("POST", "/connectors", {"name": "big", "config": {
        "connector.class": "FileStreamSource", "file": big, "topic": "big"}})

    def failed():
        s = w.rest("GET", "/connectors/big/status")[1]
        return [t for t in s.get("tasks", []) if t["state"] == "FAILED"]
    t = wait_until(failed, 30, "the source refusing the record")[0]
    assert "backbone.embedded.max.record.bytes" in t.get("trace", ""), t
    w.ok("DELETE", "/connectors/big")
    w.ok("POST", "/connectors", {"name": "big2", "config": {
        "connector.class": "FileStreamSource", "file": big, "topic": "big2", "errors.tolerance": "all"}})
    big_out = os.path.join(d, "big-out.txt")
    w.ok("POST", "/connectors", {"name": "big2-sink", "config": {
        "connector.class": "FileStreamSink", "file": big_out, "topics": "big2"}})
    wait_until(lambda: lines(big_out) == [b"small-1", b"small-2"], 30, "the records around the big one")
    assert w.stop() == 0
    w.start()
    log = open(w.log_path, errors="replace").read()
    assert "damaged" not in log and "torn-tail" not in log, "the refused record left damage behind"
    assert w.stop() == 0


if __name__ == "__main__":
    run(main)
