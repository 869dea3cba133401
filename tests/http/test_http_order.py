"""HttpSink keeps the order of each key through concurrency and retries, against the real target
(tests/http/http_target.py, its own process) answering a random quarter of the requests 503 with
Retry-After: 0 and holding a random fifth of them back for 30 ms.

A FileStreamSource reads N JSON lines {"k": "k07", "seq": i} (20 keys, i counting per key, the keys
interleaved at random) into a topic, ValueToKey making {"k": ...} the record key; an HttpSink with
http.max.in.flight=4 sends them as NDJSON batches of at most 25. The target writes the items of
the requests it accepted (2xx) only, in the order it accepted them. Checks:
  - every record accepted exactly once (a 503'd request writes nothing; its retry is the only copy);
  - per key, the accepted sequence numbers are 0, 1, 2, ... in that order;
  - the target did answer 503s and did handle several requests at once.
Control, in the same run: the same lines without a record key (ValueToKey left out) through another
HttpSink spread round robin over the lanes, which promise no order; the checker finds their
per-"k" order broken, which shows the setup and the checker see reordering when it happens (the
checker is also fed a swapped sequence first).
"""
import json
import os
import random

from http_env import Target
from harness import Worker, free_port, run, tmpdir, wait_until

KEYS = 20
N = 8000


def order_violations(lines):
    """(violations, accepted, duplicates): per key, each accepted seq must be the previous + 1."""
    last = {}
    seen = set()
    violations = []
    dups = 0
    for line in lines:
        doc = json.loads(line)
        k, s = doc["k"], doc["seq"]
        if (k, s) in seen:
            dups += 1
        seen.add((k, s))
        if s != last.get(k, -1) + 1:
            violations.append(f"{k}: {s} after {last.get(k)}")
        last[k] = s
    return violations, len(seen), dups


def main():
    # The checker itself: a swapped pair and a duplicate are seen.
    good = [json.dumps({"k": "a", "seq": i}) for i in range(3)]
    assert order_violations(good) == ([], 3, 0)
    assert order_violations([good[0], good[2], good[1]])[0], "the checker missed a swapped pair"
    assert order_violations([good[0], good[1], good[1], good[2]])[2] == 1

    d = tmpdir("http-order")
    rng = random.Random(7)
    counters = [0] * KEYS
    src = os.path.join(d, "ordered.jsonl")
    with open(src, "w") as f:
        for _ in range(N):
            k = rng.randrange(KEYS)
            f.write(json.dumps({"k": f"k{k:02d}", "seq": counters[k]}) + "\n")
            counters[k] += 1
    target = Target(free_port(), os.path.join(d, "received"))
    w = Worker(d, {"task.restart.backoff.initial.ms": "200", "task.restart.backoff.max.ms": "1000"})
    try:
        target.start()
        target.control(random_status_ratio=0.25, status=503, retry_after="0", random_delay_ratio=0.2,
                       random_delay_ms=30, seed=11)
        w.start()
        for name, keyed in (("keyed", True), ("unkeyed", False)):
            cfg = {"connector.class": "FileStreamSource", "file": src, "topic": name}
            if keyed:
                cfg.update({"transforms": "key", "transforms.key.type": "ValueToKey", "transforms.key.fields": "k"})
            w.ok("POST", "/connectors", {"name": f"src-{name}", "config": cfg})
            w.ok("POST", "/connectors", {"name": f"sink-{name}", "config": {
                "connector.class": "HttpSink", "topics": name, "http.url": f"{target.url}/{name}",
                "http.batch.format": "ndjson", "http.batch.max.records": "25", "http.max.in.flight": "4",
                "http.retry.backoff.ms": "10", "http.retry.backoff.max.ms": "100"}})
        for name in ("keyed", "unkeyed"):
            wait_until(lambda: len(target.lines(name)) >= N, 120, f"({name}) {N} accepted records", 0.2)
        recs = w.ok("GET", "/topics/keyed/records?limit=1").get("records", [])
        assert recs and "k" in json.dumps(recs[0].get("key")), f"the keyed topic's records have no key: {recs}"
        stats = target.stats()
        violations, accepted, dups = order_violations(target.lines("keyed"))
        assert accepted == N and dups == 0, f"accepted {accepted} distinct of {N}, {dups} duplicates"
        assert not violations, f"per-key order broken {len(violations)} times: {violations[:10]}"
        n503 = stats["answers"].get("503", 0)
        assert n503 > 0 and stats["max_concurrent"]["keyed"] >= 2, stats
        reqs = stats["requests_by_path"]
        retried = [l for l in open(w.log_path, errors="replace").read().splitlines()
                   if "sink-keyed:" in l and "failed attempt" in l]
        assert retried, "sink-keyed logged no request accepted after a 503"
        print(f"keyed: {N} records of {KEYS} keys, 4 in flight: every one accepted once, each key's sequence "
              f"in order; the target answered {n503} requests 503 (both sinks), handled up to "
              f"{stats['max_concurrent']['keyed']} of /keyed at once, {reqs.get('keyed')} requests for /keyed, "
              f"{len(retried)} of them accepted after 503s", flush=True)
        c_violations, c_accepted, c_dups = order_violations(target.lines("unkeyed"))
        assert c_accepted == N, f"(control) accepted {c_accepted} of {N}"
        assert c_violations, "(control) records without keys kept their per-k order: the setup cannot tell reordering"
        print(f"control (no record keys, round robin over the lanes): {len(c_violations)} per-k sequence breaks, "
              f"e.g. {c_violations[0]}", flush=True)
        assert w.stop() == 0
    finally:
        target.stop()


if __name__ == "__main__":
    run(main)
