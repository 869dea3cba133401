"""HttpSink's readyForPut() bound (http.max.buffered.records) against a stalled real target
(tests/http/http_target.py in mode "stall": it holds every request, unanswered, until told
otherwise).

A DatagenSource writes N sequence-numbered records to a topic as fast as it can; an HttpSink
(http.max.buffered.records=1000, 4 lanes, NDJSON batches of at most 100; the worker's
task.poll.batch=500, the most one put() brings) reads it while the target is stalled:
  - once the whole topic is written, the records put to the sink (the worker's GET /metrics,
    ferry_task_records_out_total of the sink task) stay at most 1000 + 500 over several seconds,
    while the target holds the lanes' requests and has accepted nothing: the sink stops taking
    records instead of buffering the topic;
  - the target recovers: every one of the N records arrives, 0 lost (duplicates counted).
"""
import os
import time

from http_env import Target, seqs
from harness import Worker, free_port, run, tmpdir, wait_until

N = 50000
MAX_BUFFERED = 1000
POLL_BATCH = 500




def rss_mb(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) // 1024
    return -1


def main():
    d = tmpdir("http-bound")
    target = Target(free_port(), os.path.join(d, "received"))
    w = Worker(d, {"task.poll.batch": str(POLL_BATCH)})
    try:
        target.start()
        target.control(mode="stall")
        w.start()
        w.ok("POST", "/connectors", {"name": "bounded", "config": {
            "connector.class": "HttpSink", "topics": "bound", "http.url": f"{target.url}/bound",
            "http.batch.format": "ndjson", "http.batch.max.records": "100", "http.max.in.flight": "4",
            "http.max.buffered.records": str(MAX_BUFFERED), "http.timeout.ms": "120000"}})
        w.ok("POST", "/connectors", {"name": "gen", "config": {
            "connector.class": "DatagenSource", "topic": "bound", "format": "string", "key.mode": "seq",
            "max.records": str(N)}})
        wait_until(lambda: (w.metric("ferry_task_records_out_total", "gen") or 0) >= N, 60,
                   f"the source writing all {N} records", 0.2)
        wait_until(lambda: target.stats()["held"] >= 1, 30, "the sink's requests held by the stalled target", 0.1)
        samples = []
        t0 = time.time()
        while time.time() - t0 < 4:
            samples.append(w.metric("ferry_task_records_out_total", "bounded") or 0)
            time.sleep(0.25)
        put = max(samples)
        held = target.stats()["held"]
        taken = w.metric("ferry_task_records_in_total", "bounded")
        rss = rss_mb(w.proc.pid)
        assert target.lines("bound") == [], "the stalled target accepted records"
        assert put <= MAX_BUFFERED + POLL_BATCH, \
            f"{put:.0f} records put to the sink while the target answered none (bound {MAX_BUFFERED} + {POLL_BATCH})"
        assert put >= MAX_BUFFERED // 2, f"only {put:.0f} records reached the sink: the bound was not reached"
        print(f"stalled target ({held} requests held): {N} records in the topic, {put:.0f} put to the sink and "
              f"unanswered (bound {MAX_BUFFERED} + one put of at most {POLL_BATCH}; the sink task read "
              f"{taken:.0f}), worker RSS {rss} MB", flush=True)
        t1 = time.time()
        target.control(mode="ok")
        wait_until(lambda: set(seqs(target.lines("bound"))) >= set(range(N)), 90,
                   f"all {N} records once the target recovered", 0.2)
        got = seqs(target.lines("bound"))
        print(f"recovered: all {N} records arrived in {time.time() - t1:.1f}s, 0 lost, "
              f"{len(got) - len(set(got))} duplicates", flush=True)
        assert w.stop() == 0
    finally:
        target.stop()


if __name__ == "__main__":
    run(main)
