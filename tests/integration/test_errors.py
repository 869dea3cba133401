"""Error handling on a real worker: errors.tolerance=all skips a bad record and sends its original
bytes to the dead-letter topic; tolerance none fails the task with a trace; a failed task shows
FAILED with the trace and restarts by itself with backoff once its cause is gone; a worker whose
default converters are misconfigured does not start and says which one."""
import os
import re
import subprocess

from harness import FERRY_BIN, Worker, run, tmpdir, wait_until


def metric(w, name, connector):
    status, text = w.rest("GET", "/metrics")
    assert status == 200
    total = 0.0
    for line in text.splitlines():
        if line.startswith(name + "{") and f'connector="{connector}"' in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


def task_state(w, name):
    st = w.ok("GET", f"/connectors/{name}/status")
    return st["tasks"][0] if st["tasks"] else {}


def main():
    d = tmpdir("errors")
    w = Worker(d, {"task.restart.backoff.initial.ms": "200", "task.restart.backoff.max.ms": "1000"})
    w.start()
    src = os.path.join(d, "in.txt")
    with open(src, "w") as f:
        f.write('{"a": 1}\nnot json\n{"a": 3}\n')
    out, dlq, strict = (os.path.join(d, n) for n in ("out.jsonl", "dlq.txt", "strict.jsonl"))
    tag = {"transforms": "tag", "transforms.tag.type": "InsertField$Value",
           "transforms.tag.static.field": "via", "transforms.tag.static.value": "ferry"}
    w.ok("POST", "/connectors", {"name": "src", "config": {
        "connector.class": "FileStreamSource", "file": src, "topic": "ev"}})
    w.ok("POST", "/connectors", {"name": "tolerant", "config": {
        "connector.class": "FileStreamSink", "topics": "ev", "file": out,
        "errors.tolerance": "all", "errors.log.enable": "true",
        "errors.deadletterqueue.topic.name": "ev-dlq", **tag}})
    w.ok("POST", "/connectors", {"name": "dlq-reader", "config": {
        "connector.class": "FileStreamSink", "topics": "ev-dlq", "file": dlq}})
    w.ok("POST", "/connectors", {"name": "strict", "config": {
        "connector.class": "FileStreamSink", "topics": "ev", "file": strict, **tag}})

    # Tolerant: the two good records arrive transformed, the bad one goes to the DLQ as it was.
    wait_until(lambda: os.path.exists(out) and len(open(out).read().splitlines()) == 2, 30, "2 good records")
    lines = open(out).read().splitlines()
    assert lines == ['{"a":1,"via":"ferry"}', '{"a":3,"via":"ferry"}'], lines
    wait_until(lambda: os.path.exists(dlq) and open(dlq).read() == "not json\n", 30, "the bad record in the DLQ")
    wait_until(lambda: metric(w, "ferry_task_dead_letter_records_total", "tolerant") == 1, 20, "DLQ metric")
    assert metric(w, "ferry_task_errors_total", "tolerant") == 1

    # Strict: the task fails on the bad record; status carries the reason.
    def strict_failed():
        t = task_state(w, "strict")
        return t if t.get("state") == "FAILED" and t.get("trace") else None
    t = wait_until(strict_failed, 30, "strict FAILED with a trace")
    assert "TRANSFORMATION" in t["trace"] and "errors.tolerance=none" in t["trace"], t["trace"]
    w.ok("DELETE", "/connectors/strict", expect=(204,))

    # Automatic restart: a sink whose folder is missing fails at start, shows FAILED, and runs by
    # itself once the folder exists (no REST call in between).
    missing = os.path.join(d, "later")
    w.ok("POST", "/connectors", {"name": "late", "config": {
        "connector.class": "FileStreamSink", "topics": "ev", "file": os.path.join(missing, "out.txt")}})
    t = wait_until(lambda: (lambda s: s if s.get("state") == "FAILED" else None)(task_state(w, "late")), 30,
                   "late FAILED")
    assert t.get("trace"), t
    os.makedirs(missing)
    wait_until(lambda: task_state(w, "late").get("state") == "RUNNING", 30, "automatic restart to RUNNING")
    wait_until(lambda: os.path.exists(os.path.join(missing, "out.txt")) and
               len(open(os.path.join(missing, "out.txt")).read().splitlines()) == 3, 30, "late sink caught up")
    assert w.stop() == 0

    # A bad worker-level converter stops the worker at start, naming the key.
    for bad, words in (({"value.converter": "NoSuchConverter"}, ["value.converter", "NoSuchConverter"]),
                       ({"header.converter": "JsonConverter", "header.converter.schemas.enable": "maybe"},
                        ["header.converter", "schemas.enable"])):
        bw = Worker(tmpdir("errors-conv"), bad)
        p = subprocess.run([FERRY_BIN, "standalone", bw.props], cwd=bw.workdir, capture_output=True, text=True,
                           timeout=30)
        assert p.returncode != 0, (bad, p.returncode)
        assert all(x in p.stderr for x in words), (bad, p.stderr)


if __name__ == "__main__":
    run(main)
