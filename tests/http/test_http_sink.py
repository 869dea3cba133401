"""HttpSink against a real HTTP server (tests/http/http_target.py, its own process):

  (a) DatagenSource -> HttpSink (direct task, NDJSON batches, 4 lanes by key): 20,000
      sequence-numbered records while the server is killed (-9) and restarted, and then the worker
      is killed (-9) and restarted: the server holds every sequence number (0 lost; duplicates
      counted and printed); while the server is down the task is RUNNING with its connection
      reconnecting (the reason naming the server), connected again once it is back;
  (b) 503 with Retry-After: 2 (seconds) and 429 with Retry-After as an HTTP date: retried, not
      before the server said, nothing lost;
  (c) 400 for some records: with errors.tolerance=all they go to the dead letter topic (read back
      through a FileStreamSink) and the others arrive; with tolerance none the task FAILED, its
      trace naming the status and the server's answer;
  (d) a slow server (answers after 1.5 s, http.timeout.ms=500), one that resets connections and
      one that answers garbage: every record arrives, the task stays RUNNING, the worker log names
      each failure.
"""
import email.utils
import os
import time

from http_env import Target, seqs
from harness import Worker, free_port, read_lines, run, tmpdir, wait_until

N = 20000


def gen(w, name, path, target, n, rate, extra=None):
    cfg = {"connector.class": "DatagenSource", "topic": "unused", "format": "string", "key.mode": "seq",
           "max.records": str(n), "rate": str(rate), "sink.connector.class": "HttpSink",
           "sink.http.url": f"{target.url}/{path}", "sink.http.batch.format": "ndjson",
           "sink.http.retry.backoff.max.ms": "1000"}
    cfg.update({f"sink.{k}": v for k, v in (extra or {}).items()})
    w.ok("POST", "/connectors", {"name": name, "config": cfg})


def all_arrived(target, path, n):
    return set(seqs(target.lines(path))) >= set(range(n))


def task_state(w, name):
    status, s = w.rest("GET", f"/connectors/{name}/status")
    tasks = s.get("tasks", []) if status == 200 else []
    return tasks[0] if tasks else {}


def main():
    d = tmpdir("http-sink")
    target = Target(free_port(), os.path.join(d, "received"))
    w = Worker(d, {"task.restart.backoff.initial.ms": "200", "task.restart.backoff.max.ms": "1000"})
    try:
        target.start()
        w.start()
        # (a) server kill -9 and worker kill -9 mid-stream
        gen(w, "seq", "seq", target, N, 2500, {"http.max.in.flight": "4"})
        wait_until(lambda: len(target.lines("seq")) >= N // 4, 60, "a quarter of the records", 0.05)
        target.kill9()
        # The sink's connection says what is wrong while the server is gone, and when it is back.
        down = wait_until(lambda: (lambda c: c if c.get("state") == "reconnecting" else None)(
            task_state(w, "seq").get("connection", {})), 10, "(a) the sink reconnecting while the server is down", 0.05)
        assert f"127.0.0.1:{target.port}" in down.get("error", "") and task_state(w, "seq")["state"] == "RUNNING", down
        time.sleep(1)
        target.start()
        wait_until(lambda: task_state(w, "seq").get("connection", {}).get("state") == "connected", 30,
                   "(a) the sink connected again", 0.05)
        wait_until(lambda: len(target.lines("seq")) >= N // 2, 60, "half of the records", 0.05)
        w.kill9()
        w.start()
        wait_until(lambda: all_arrived(target, "seq", N), 120, f"all {N} sequence numbers at the server", 0.2)
        got = seqs(target.lines("seq"))
        print(f"(a) {N} records through a server kill -9 and a worker kill -9: 0 lost, "
              f"{len(got) - len(set(got))} duplicates; while the server was down the task was RUNNING, "
              f"reconnecting ({down['error'][:80]!r})", flush=True)

        # (b) 503 + Retry-After seconds, then 429 + Retry-After date
        target.control(mode="status", status=503, retry_after="2", count=2)
        t0 = time.time()
        gen(w, "r503", "r503", target, 300, 0, {"http.max.in.flight": "1"})
        wait_until(lambda: all_arrived(target, "r503", 300), 60, "300 records after two 503s", 0.05)
        took = time.time() - t0
        assert took >= 3.5, f"(b) two 503s with Retry-After: 2 were retried after {took:.1f}s"
        date = email.utils.formatdate(time.time() + 3, usegmt=True)
        target.control(mode="status", status=429, retry_after=date, count=1)
        t0 = time.time()
        gen(w, "r429", "r429", target, 300, 0)
        wait_until(lambda: all_arrived(target, "r429", 300), 60, "300 records after a 429", 0.05)
        took429 = time.time() - t0
        assert took429 >= 1.5, f"(b) a 429 with Retry-After {date} was retried after {took429:.1f}s"
        answers = target.stats()["answers"]
        assert answers.get("503") == 2 and answers.get("429") == 1, answers
        print(f"(b) 503 x2 (Retry-After 2 s) retried after {took:.1f}s, 429 (Retry-After date) after "
              f"{took429:.1f}s, nothing lost", flush=True)

        # (c) 400 -> dead letter queue / failure
        src = os.path.join(d, "lines.txt")
        with open(src, "w") as f:
            for i in range(100):
                f.write(f"ok-{i}\n" if i % 10 else f"bad-{i}\n")
        dlq = os.path.join(d, "dlq.txt")
        target.control(bad_marker="bad-")
        w.ok("POST", "/connectors", {"name": "lines", "config": {
            "connector.class": "FileStreamSource", "file": src, "topic": "lines"}})
        w.ok("POST", "/connectors", {"name": "tolerant", "config": {
            "connector.class": "HttpSink", "topics": "lines", "http.url": f"{target.url}/tolerant/${{topic}}",
            "http.batch.format": "one", "http.content.type": "text/plain", "errors.tolerance": "all",
            "errors.deadletterqueue.topic.name": "lines-dlq"}})
        w.ok("POST", "/connectors", {"name": "dlq-reader", "config": {
            "connector.class": "FileStreamSink", "topics": "lines-dlq", "file": dlq}})
        good = {f"ok-{i}" for i in range(100) if i % 10}
        bad = {f"bad-{i}" for i in range(0, 100, 10)}
        wait_until(lambda: set(target.lines("tolerant")) == good, 60, "the 90 good lines", 0.1)
        wait_until(lambda: {l.decode() for l in read_lines(dlq)} == bad, 60, "the 10 bad lines in the DLQ", 0.1)
        w.ok("POST", "/connectors", {"name": "strict", "config": {
            "connector.class": "HttpSink", "topics": "lines", "http.url": f"{target.url}/strict",
            "http.batch.format": "one", "http.content.type": "text/plain"}})

        def strict_failed():
            t = task_state(w, "strict")
            return t if t.get("state") == "FAILED" and "HTTP 400" in t.get("trace", "") else None
        t = wait_until(strict_failed, 60, "strict FAILED naming the 400")
        assert "bad marker" in t["trace"], t["trace"][:500]
        w.ok("DELETE", "/connectors/strict", expect=(204,))
        target.control(bad_marker="")
        print("(c) 400 answers: 10 records in the dead letter topic, 90 delivered; without tolerance "
              f"FAILED: {t['trace'].splitlines()[0][:160]}", flush=True)

        # (d) slow, resetting and garbage-answering servers
        for mode, extra, words in (("slow", {"http.timeout.ms": "500"}, ("timed out", "timeout")),
                                   ("reset", {}, ("reset", "recv failure", "empty reply")),
                                   ("garbage", {}, ("unsupported http", "weird server reply", "http/0.9",
                                                    "nul byte", "invalid"))):
            target.control(mode=mode, count=3, delay_ms=1500)
            gen(w, f"bad-{mode}", mode, target, 300, 0, extra)
            wait_until(lambda: all_arrived(target, mode, 300), 90, f"300 records past a {mode} server", 0.1)
            assert task_state(w, f"bad-{mode}").get("state") == "RUNNING", task_state(w, f"bad-{mode}")
            log = open(w.log_path, errors="replace").read().lower()
            failures = [l for l in log.splitlines() if f"/{mode}" in l and "retrying" in l]
            assert failures, f"(d) no retry logged for the {mode} server"
            assert any(any(word in l for word in words) for l in failures), \
                f"(d) the {mode} failure is not named: {failures[:3]}"
            print(f"(d) {mode}: 300 records, 0 lost; logged: {failures[0][-160:]}", flush=True)
        assert w.stop() == 0
    finally:
        target.stop()


if __name__ == "__main__":
    run(main)
