"""errors.retry.timeout in every task shape: a task whose connector keeps failing with a retriable
error retries - each retry logged at warn and counted in ferry_task_retries_total - and FAILS once
errors.retry.timeout has passed, with a trace naming the key (src/runtime/README.md, "Errors").
The failing connectors are the blocking test plugin's (tests/plugins/blocking, `fail.in`).

    test_task_retry.py [embedded|kafka]

embedded (a standalone worker on the embedded backbone):
  (a) direct: TestBlockingSource -> TestBlockingSink, the source's poll fails (Unavailable),
      errors.retry.timeout=3000: FAILED 3-10 s after its first retry (log time stamps), each retry
      logged at warn and counted, the trace naming errors.retry.timeout;
  (b) direct: the sink's put fails, errors.retry.timeout=3000: the same;
  (c) source (the plain runner, through the backbone): the same as (a);
  (d) errors.retry.timeout=0 (the default): a failing poll is retried without a deadline (as
      Kafka Connect retries poll for ever): still RUNNING after 5 s, retries counted.
kafka (a standalone worker on Kafka 127.0.0.1:19092 with exactly.once.source.support=enabled):
  (e) an exactly-once source whose poll fails, errors.retry.timeout=3000: the same.

Environment: FERRY_BIN, FERRY_BLOCKING_PLUGIN, FERRY_KAFKA_BOOTSTRAP."""
import json
import os
import random
import sys
import time

from harness import Worker, require_reachable, run, tmpdir, wait_until

KIND = sys.argv[1] if len(sys.argv) > 1 else "embedded"
PLUGIN = os.environ.get("FERRY_BLOCKING_PLUGIN", "build/release/test-plugins/blocking/blocking_plugin.so")
BOOTSTRAP = os.environ.get("FERRY_KAFKA_BOOTSTRAP", "127.0.0.1:19092")
RETRY_TIMEOUT_MS = 3000
FAIL_WITHIN_S = 10


def metric(w, name, connector):
    status, text = w.rest("GET", "/metrics")
    assert status == 200, status
    total = None
    for line in text.splitlines():
        if line.startswith(name + "{") and f'connector="{connector}"' in line:
            total = (total or 0) + float(line.rsplit(" ", 1)[1])
    return total


def task0(w, name):
    status, st = w.rest("GET", f"/connectors/{name}/status")
    return st["tasks"][0] if status == 200 and st.get("tasks") else {}


def log_text(w):
    with open(w.log_path, errors="replace") as f:
        return f.read()


def stamp(line):
    """Seconds of a log line's time stamp (2026-12-05T01:19:43.612 ...)."""
    t = line.split()[0].split("T")[1]
    h, m, sec = t.split(":")
    return int(h) * 3600 + int(m) * 60 + float(sec)


def expect_failed(w, name, call, config):
    """Creates `name` and waits until its task is FAILED; checks trace, log and timing: the task
    fails errors.retry.timeout after its first retry (within a margin), every retry logged at warn."""
    w.ok("POST", "/connectors", {"name": name, "config": {
        "errors.retry.timeout": str(RETRY_TIMEOUT_MS), "errors.retry.delay.max.ms": "400", **config}})
    t0 = time.time()
    def failed():
        t = task0(w, name)
        return t if t.get("state") == "FAILED" else None
    try:
        # An exactly-once task first initialises its transactional producer (seconds on Kafka).
        t = wait_until(failed, FAIL_WITHIN_S + 15, f"{name} FAILED after errors.retry.timeout", 0.1)
    except AssertionError as e:
        raise AssertionError(f"{e}; status now {task0(w, name)}, retries counted "
                             f"{metric(w, 'ferry_task_retries_total', name)}")
    trace = t.get("trace", "")
    assert "errors.retry.timeout" in trace and call in trace, f"{name}: trace does not name the key: {trace!r}"
    lines = log_text(w).splitlines()
    retries = [l for l in lines if f"{name}-0: {call} failed, retry" in l]
    assert retries and all(" warning " in l for l in retries), f"{name}: retries not logged at warn: {retries[:2]}"
    end = [l for l in lines if f"task {name}-0 failed:" in l]
    assert end, f"{name}: no failure logged"
    took = stamp(end[0]) - stamp(retries[0])
    assert RETRY_TIMEOUT_MS / 1000 - 0.2 <= took <= FAIL_WITHIN_S, \
        f"{name} FAILED {took:.2f} s after its first retry (errors.retry.timeout={RETRY_TIMEOUT_MS} ms)"
    counted = metric(w, "ferry_task_retries_total", name)
    assert counted is not None and counted >= len(retries), f"{name}: {counted} retries counted, {len(retries)} logged"
    print(json.dumps({"test": name, "call": call, "failed_after_first_retry_s": round(took, 2),
                      "failed_after_create_s": round(time.time() - t0, 2), "retries_logged": len(retries),
                      "retries_counted": counted, "trace": trace[:160]}), flush=True)
    w.ok("DELETE", f"/connectors/{name}", expect=(204,))


def main():
    d = tmpdir("task-retry")
    extra = {"plugin.path": os.path.dirname(os.path.abspath(PLUGIN)),
             # The automatic restart must not hide a FAILED state while the test looks at it.
             "task.restart.backoff.initial.ms": "60000", "task.restart.backoff.max.ms": "60000"}
    if KIND == "kafka":
        require_reachable(*BOOTSTRAP.rsplit(":", 1), "Kafka", "scripts/services/kafka start")
        run_id = random.randrange(1 << 30)
        extra.update({"backbone": "kafka", "backbone.kafka.bootstrap.servers": BOOTSTRAP,
                      "exactly.once.source.support": "enabled",
                      "offset.storage.topic": f"ferry-retry-offsets-{run_id}"})
    w = Worker(d, extra)
    w.start(timeout=60)
    src = {"connector.class": "TestBlockingSource", "topic": "retry-t", "poll.wait.ms": "20"}
    if KIND == "kafka":
        expect_failed(w, "eos-poll", "poll", {**src, "fail.in": "poll", "exactly.once.support": "required"})
    else:
        direct = {**src, "sink.connector.class": "TestBlockingSink"}
        expect_failed(w, "direct-poll", "poll", {**direct, "fail.in": "poll"})
        expect_failed(w, "direct-put", "put", {**direct, "sink.fail.in": "put"})
        expect_failed(w, "source-poll", "poll", {**src, "fail.in": "poll"})
        # (d) the default 0: no deadline for poll
        w.ok("POST", "/connectors", {"name": "forever", "config": {
            **direct, "fail.in": "poll", "errors.retry.delay.max.ms": "400"}})
        wait_until(lambda: (metric(w, "ferry_task_retries_total", "forever") or 0) >= 3, 10, "retries counted")
        time.sleep(5)
        t = task0(w, "forever")
        assert t.get("state") == "RUNNING", f"errors.retry.timeout=0 must retry poll without a deadline: {t}"
        print(json.dumps({"test": "default_timeout_0", "state": t["state"],
                          "retries": metric(w, "ferry_task_retries_total", "forever")}), flush=True)
    assert w.stop() == 0


if __name__ == "__main__":
    run(main)
