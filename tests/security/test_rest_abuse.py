"""REST abuse that used to crash a worker, grow it without bound or make it talk too much.

(1) POST /rules/test whose record value is nested 200,000 deep, sent as a string (re-parsed
    inside the worker: a SIGSEGV before) and as JSON: 400, the worker alive.
(2) POST /pipelines and POST /connectors with bodies nested 200,000 deep: 400, alive.
(3) A line nested 200,000 deep through running connectors (a Rule in a sink's chain, JsonConverter
    on a sink) with errors.tolerance=all: that record fails alone, the lines around it arrive.
(4) 10,000 PUT /admin/loggers/x<i>: at most 256 new names (the rest 400), RSS stable, existing
    loggers and root still settable, bad names refused.
(5) Error answers: a store write that fails names the file relative to data.dir; a malformed
    body is not echoed. No error answer in this test holds the data directory's absolute path.
"""
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from harness import Worker, run, tmpdir, wait_until  # noqa: E402

DEPTH = 200000
ERRORS = []  # every error answer of the test, as text


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError("no VmRSS")


def lines(path):
    return open(path).read().splitlines() if os.path.exists(path) else []


def main():
    # Sections to run (default all): rules pipelines records loggers errors.
    only = set(sys.argv[1:]) or {"rules", "pipelines", "records", "loggers", "errors"}
    d = tmpdir("abuse")
    w = Worker(d)
    w.start()
    private = {os.path.abspath(w.data), os.path.realpath(w.data)}

    def call(method, path, body=None, raw=None, timeout=30):
        try:
            status, payload = w.rest(method, path, body, timeout=timeout, raw=raw)
        except OSError as e:  # the worker died or dropped the connection
            raise AssertionError(f"{method} {path}: no answer ({e!r}); worker exit code "
                                 f"{w.proc.poll()}") from None
        if status >= 400:
            ERRORS.append(payload if isinstance(payload, str) else json.dumps(payload))
        return status, payload

    def alive(what):
        assert w.proc.poll() is None, f"the worker died after {what} (exit {w.proc.returncode})"
        status, _ = w.rest("GET", "/health", timeout=5)
        assert status == 200, f"/health answered {status} after {what}"

    deep_array = "[" * DEPTH + "]" * DEPTH
    deep_object = '{"a":' * DEPTH + "1" + "}" * DEPTH

    # (1) /rules/test: the deep value as a string (re-parsed inside), then as JSON.
    for deep in (deep_array, deep_object) if "rules" in only else ():
        status, answer = call("POST", "/rules/test", {
            "rule": 'SELECT payload AS p FROM "#"', "records": [{"topic": "t", "value": deep}]})
        assert status == 400, (status, str(answer)[:300])
        assert len(json.dumps(answer)) < 2000, "the answer echoes the body"
        alive("a deep /rules/test value sent as a string")
        raw = '{"rule": "SELECT * FROM \\"#\\"", "records": [{"topic": "t", "value": ' + deep + "}]}"
        status, answer = call("POST", "/rules/test", raw=raw)
        assert status == 400, (status, str(answer)[:300])
        alive("a deep /rules/test value sent as JSON")
    # A shallow trial still works.
    status, answer = call("POST", "/rules/test", {
        "rule": 'SELECT payload.a AS a FROM "#"', "records": [{"topic": "t", "value": '{"a": [[1]]}'}]})
    assert status == 200 and answer["records"][0]["output"]["value"] == {"a": [[1]]}, answer
    if "pipelines" in only:
        pipelines(call, alive, deep_array, deep_object)
    if "records" in only:
        records(w, d, alive, deep_array)
    rss_early = rss_late = refused = None
    if "loggers" in only:
        refused, rss_early, rss_late = loggers(w, call, alive)
    if "errors" in only:
        errors(w, d, call, alive)

    for text in ERRORS:
        for p in private:
            assert p not in text, f"an error answer holds the data directory's path {p}: {text[:300]}"
        assert len(text) < 4096, f"an error answer of {len(text)} bytes: {text[:200]}"
    print(f"{len(ERRORS)} error answers checked; {refused} logger names refused; "
          f"RSS {rss_early} -> {rss_late} KiB")


def pipelines(call, alive, deep_array, deep_object):
    """(2) Deep pipeline and connector bodies."""
    for path, raw in (("/pipelines", '{"name": "p", "source": ' + deep_object + "}"),
                      ("/pipelines", deep_array),
                      ("/connectors", '{"name": "c", "config": ' + deep_object + "}"),
                      ("/connectors/c/config", deep_array)):
        method = "PUT" if path.endswith("/config") else "POST"
        status, answer = call(method, path, raw=raw)
        assert status == 400, (path, status, str(answer)[:300])
        alive(f"a deep {path} body")


def records(w, d, alive, deep_array):
    """(3) A deep line through running connectors, errors.tolerance=all."""
    src = os.path.join(d, "in.jsonl")
    with open(src, "w") as f:
        f.write('{"a": 1}\n' + deep_array + '\n{"a": 2}\n')
    w.ok("POST", "/connectors", {"name": "src", "config": {
        "connector.class": "FileStreamSource", "file": src, "topic": "ev"}})
    ruled, converted = os.path.join(d, "ruled.jsonl"), os.path.join(d, "converted.jsonl")
    w.ok("POST", "/connectors", {"name": "ruled", "config": {
        "connector.class": "FileStreamSink", "topics": "ev", "file": ruled,
        "errors.tolerance": "all", "transforms": "r", "transforms.r.type": "Rule",
        "transforms.r.sql": 'SELECT payload AS p FROM "ev"'}})
    w.ok("POST", "/connectors", {"name": "converted", "config": {
        "connector.class": "FileStreamSink", "topics": "ev", "file": converted,
        "errors.tolerance": "all", "value.converter": "JsonConverter",
        "value.converter.schemas.enable": "false"}})
    wait_until(lambda: w.proc.poll() is not None or (len(lines(ruled)) >= 2 and len(lines(converted)) >= 2),
               60, "the lines around the deep one")
    alive("a deep record value through running connectors")
    assert lines(ruled) == ['{"p":{"a":1}}', '{"p":{"a":2}}'], lines(ruled)[:3]
    # JsonConverter refuses the deep line (nested deeper than the record bound) for that record only.
    assert lines(converted) == ['{"a": 1}', '{"a": 2}'], [x[:80] for x in lines(converted)]
    for name in ("ruled", "converted"):
        w.wait_running(name, timeout=10)


def loggers(w, call, alive):
    """(4) The logger flood."""
    status, _ = call("PUT", "/admin/loggers/worker", {"level": "DEBUG"})
    assert status == 200
    before_names = len(w.ok("GET", "/admin/loggers"))
    refused = 0
    rss_early = None
    for i in range(10000):
        status, answer = call("PUT", f"/admin/loggers/x{i}", {"level": "INFO"})
        assert status in (200, 400), (i, status, answer)
        if status == 400:
            refused += 1
            assert "too many new logger names" in answer["message"], answer
        if i == 999:
            rss_early = rss_kib(w.proc.pid)
    rss_late = rss_kib(w.proc.pid)
    names = w.ok("GET", "/admin/loggers")
    assert len(names) - before_names <= 256, f"{len(names) - before_names} logger names were created"
    assert refused >= 10000 - 256, refused
    assert rss_late - rss_early < 4096, f"RSS grew by {rss_late - rss_early} KiB over 9,000 refused loggers"
    for name in ("worker", "root", "x0"):
        status, answer = call("PUT", f"/admin/loggers/{name}", {"level": "WARN"})
        assert status == 200, (name, status, answer)
    for bad in ("a%20b", "y" * 300, "%2Fetc%2Fpasswd"):
        status, answer = call("PUT", f"/admin/loggers/{bad}", {"level": "INFO"})
        assert status in (400, 404), (bad, status, answer)  # 404: the router takes no "/" in a name
        if status == 400:
            assert "logger name" in answer["message"] or "too many" in answer["message"], answer
    alive("10,000 logger names")
    return refused, rss_early, rss_late


def errors(w, d, call, alive):
    """(5) Error answers. A store write that fails (its temporary file is a folder)."""
    src = os.path.join(d, "in.jsonl")
    os.makedirs(os.path.join(w.data, "store", "configs.json.tmp", "x"))
    status, answer = call("POST", "/connectors", {"name": "blocked", "config": {
        "connector.class": "FileStreamSource", "file": src, "topic": "b"}})
    assert status >= 500, (status, answer)
    assert "configs.json" in answer["message"], answer
    os.rmdir(os.path.join(w.data, "store", "configs.json.tmp", "x"))
    os.rmdir(os.path.join(w.data, "store", "configs.json.tmp"))
    # A malformed body with a secret in it: the answer may quote a few characters, not the value.
    secret = "hunter2-" + "s3cr3t" * 10
    status, answer = call("POST", "/connectors",
                          raw='{"name": "leak", "config": {"connector.class": "FileStreamSink", '
                              '"password": "' + secret)
    assert status == 400, (status, answer)
    assert "hunter2-s3cr3t" not in answer["message"], answer
    status, answer = call("PUT", "/admin/loggers/worker", raw='{"level": ' + secret + "}")
    assert status == 400 and "hunter2-s3cr3t" not in answer["message"], answer
    alive("the error answers")


if __name__ == "__main__":
    run(main)
