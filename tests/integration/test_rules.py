"""Rules on a real worker (embedded backbone, no external service):
(1) a backbone pipeline whose filter rule runs on the source side and whose sinks route by their
    own rules: 300 sequence-numbered JSON lines; the pipeline's topic holds exactly the records the
    filter passes (original bytes), sink 1 gets exactly the rows its rule selects, sink 2 every
    filtered record; nothing lost, nothing extra.
(2) a Rule in a plain connector's chain with errors.tolerance=all: a record whose cast fails at
    run time goes to the dead-letter topic as it was, every other one arrives transformed.
(3) a bad rule is refused at validate time and by POST /pipelines, naming line and column.
(4) POST /rules/test on the running worker."""
import json
import os

from harness import Worker, run, tmpdir, wait_until


def lines(path):
    return open(path).read().splitlines() if os.path.exists(path) else []


def main():
    d = tmpdir("rules")
    w = Worker(d)
    w.start()

    # (1) filter + per-sink rules.
    src = os.path.join(d, "in.jsonl")
    n = 300
    with open(src, "w") as f:
        for seq in range(n):
            f.write(json.dumps({"dev": "a" if seq % 2 == 0 else "b", "temp": seq % 60, "seq": seq},
                               separators=(",", ":")) + "\n")
    all_out, a_out, topic_out = (os.path.join(d, x) for x in ("all.jsonl", "a.jsonl", "topic.jsonl"))
    w.ok("POST", "/pipelines", {
        "name": "alarms", "mode": "backbone",
        "source": {"connector.class": "FileStreamSource", "file": src},
        "filter": 'SELECT * FROM "#" WHERE payload.temp > 30',
        "sinks": [{"connector.class": "FileStreamSink", "file": all_out},
                  {"connector.class": "FileStreamSink", "file": a_out,
                   "rule": "SELECT payload.seq AS seq, payload.temp * 10 AS t FROM \"pipeline-alarms\" "
                           "WHERE payload.dev = 'a'"}]})
    # A plain connector on the pipeline's topic sees what the backbone holds.
    w.ok("POST", "/connectors", {"name": "topic-reader", "config": {
        "connector.class": "FileStreamSink", "topics": "pipeline-alarms", "file": topic_out}})

    hot = [s for s in range(n) if s % 60 > 30]
    want_all = [json.dumps({"dev": "a" if s % 2 == 0 else "b", "temp": s % 60, "seq": s}, separators=(",", ":"))
                for s in hot]
    want_a = [json.dumps({"seq": s, "t": (s % 60) * 10}, separators=(",", ":")) for s in hot if s % 2 == 0]
    wait_until(lambda: len(lines(all_out)) >= len(want_all) and len(lines(a_out)) >= len(want_a) and
               len(lines(topic_out)) >= len(want_all), 60, "the pipeline's sinks")
    assert lines(all_out) == want_all, lines(all_out)[:5]
    assert lines(a_out) == want_a, lines(a_out)[:5]
    assert lines(topic_out) == want_all, "the backbone holds more than the filter passes"
    p = w.ok("GET", "/pipelines/alarms")
    assert p["filter"] == 'SELECT * FROM "#" WHERE payload.temp > 30', p
    assert p["sinks"][1]["rule"].startswith("SELECT payload.seq"), p
    assert "rule" not in p["sinks"][0], p

    # (2) run-time errors follow errors.tolerance and the dead-letter topic.
    src2 = os.path.join(d, "in2.jsonl")
    with open(src2, "w") as f:
        f.write('{"v":"1"}\n{"v":"abc"}\n{"v":"3"}\n')
    out2, dlq = os.path.join(d, "out2.jsonl"), os.path.join(d, "dlq.txt")
    w.ok("POST", "/connectors", {"name": "src2", "config": {
        "connector.class": "FileStreamSource", "file": src2, "topic": "ev"}})
    w.ok("POST", "/connectors", {"name": "ruled", "config": {
        "connector.class": "FileStreamSink", "topics": "ev", "file": out2,
        "errors.tolerance": "all", "errors.deadletterqueue.topic.name": "ev-dlq",
        "transforms": "r", "transforms.r.type": "Rule",
        "transforms.r.sql": 'SELECT int(payload.v) + 1 AS v FROM "ev"'}})
    w.ok("POST", "/connectors", {"name": "dlq-reader", "config": {
        "connector.class": "FileStreamSink", "topics": "ev-dlq", "file": dlq}})
    wait_until(lambda: len(lines(out2)) == 2 and lines(dlq) == ['{"v":"abc"}'], 30, "2 rows and 1 dead letter")
    assert lines(out2) == ['{"v":2}', '{"v":4}'], lines(out2)

    # (3) a bad rule is refused before anything runs.
    status, report = w.rest("PUT", "/connector-plugins/FileStreamSink/config/validate", {
        "connector.class": "FileStreamSink", "topics": "ev", "file": out2,
        "transforms": "r", "transforms.r.type": "Rule", "transforms.r.sql": "SELECT payload.x FROM \"ev\" WHERE"})
    assert status == 200 and report["error_count"] >= 1, report
    errs = [e for c in report["configs"] for e in c["value"]["errors"] if c["value"]["name"] == "transforms.r.sql"]
    assert errs and "line 1, column" in errs[0], report
    status, body = w.rest("POST", "/pipelines", {
        "name": "bad", "source": {"connector.class": "FileStreamSource", "file": src, "topic": "x"},
        "filter": "SELECT * FROM \"#\" WHERE payload.temp >", "sink": {"connector.class": "FileStreamSink",
                                                                     "file": os.path.join(d, "bad.txt")}})
    assert status == 400 and "filter" in body["message"] and "line 1, column" in body["message"], body
    assert w.rest("GET", "/pipelines/bad")[0] == 404

    # (4) POST /rules/test.
    t = w.ok("POST", "/rules/test", {
        "rule": 'SELECT payload.temp AS t, topic FROM "sensors/+/data" WHERE payload.temp > 30',
        "records": [{"mqtt_topic": "sensors/d1/data", "value": {"temp": 31.5}},
                    {"mqtt_topic": "sensors/d1/data", "value": {"temp": 3}}]})
    assert t["records"][0]["output"]["value"] == {"t": 31.5, "topic": "sensors/d1/data"}, t
    assert t["records"][1]["result"] == "dropped", t
    assert w.stop() == 0


if __name__ == "__main__":
    run(main)
