"""GET /topics and GET /topics/{name}/records on a real backbone (ARG: embedded, kafka or rocketmq):
a look at what a topic holds, judged against what was written to it.

A standalone worker on the backbone; a DatagenSource (one task, 50 records/s, 100 records,
json values {"task", "seq", "ts"}) writes a new topic. Once its 100 records are acknowledged:

  (a) GET /topics lists the topic and none of the worker's own (offset.storage.topic, ferry-cluster-*);
  (b) GET /topics/{t}/records?limit=5 answers seq 95..99 in order, with queue and offset; limit=100
      all 100, each seq once;
  (c) the look consumed nothing: a FileStreamSink created afterwards writes all 100 to its file;
  (d) refused: the worker's offsets topic (403), a missing topic (404, and not created by the
      look), limit=0 and limit=101 (400).

Environment: FERRY_BIN, FERRY_KAFKA_BOOTSTRAP, FERRY_ROCKETMQ_NAMESRV."""
import json
import os
import sys
import uuid

from harness import Worker, run, tmpdir, wait_until

KIND = sys.argv[1] if len(sys.argv) > 1 else "embedded"
BOOTSTRAP = os.environ.get("FERRY_KAFKA_BOOTSTRAP", "127.0.0.1:19092")
NAMESRV = os.environ.get("FERRY_ROCKETMQ_NAMESRV", "127.0.0.1:19876")
RUN = uuid.uuid4().hex[:8]
N = 100


def seqs(answer):
    return [json.loads(r["value"])["seq"] for r in answer["records"]]


def main():
    props = {"backbone": KIND, "offset.storage.topic": f"ferry-offsets-{RUN}"}
    if KIND == "kafka":
        props["backbone.kafka.bootstrap.servers"] = BOOTSTRAP
    elif KIND == "rocketmq":
        props["backbone.rocketmq.namesrv"] = NAMESRV
    d = tmpdir(f"topic-records-{KIND}")
    w = Worker(d, props)
    w.start(timeout=60)
    topic = f"look-{RUN}"
    w.ok("POST", "/connectors", {"name": "gen", "config": {
        "connector.class": "DatagenSource", "topic": topic, "rate": "50", "max.records": str(N), "format": "json"}})

    def written():
        s = w.ok("GET", "/connectors/gen/status")
        return sum(t.get("metrics", {}).get("records_out", 0) for t in s["tasks"]) == N
    wait_until(written, 60, f"{N} records acknowledged by the {KIND} backbone", 0.2)

    # (a)
    names = [t["name"] for t in w.ok("GET", "/topics")["topics"]]
    if topic not in names:
        raise AssertionError(f"GET /topics lacks {topic}: {names}")
    own = [n for n in names if n == props["offset.storage.topic"] or n.startswith("ferry-cluster-")]
    if own:
        raise AssertionError(f"GET /topics shows the worker's own topics: {own}")

    # (b)
    def newest():
        a = w.ok("GET", f"/topics/{topic}/records?limit=5")
        return a if seqs(a) == list(range(N - 5, N)) else None
    a = wait_until(newest, 30, "the 5 newest records, oldest first", 0.5)
    r = a["records"][-1]
    if not isinstance(r.get("queue"), int) or not isinstance(r.get("offset"), int) or r.get("topic") != topic:
        raise AssertionError(f"a record without queue, offset or topic: {r}")
    every = w.ok("GET", f"/topics/{topic}/records?limit=100")
    if sorted(seqs(every)) != list(range(N)):
        raise AssertionError(f"limit=100 did not answer each of the {N} records once: {sorted(seqs(every))}")
    print(f"ok   ({KIND}) the topic listed without the worker's own; limit=5 -> seq {seqs(a)}; limit=100 -> all {N}",
          flush=True)

    # (c) Nothing was consumed: a sink reading afterwards gets everything.
    out = os.path.join(d, "out.jsonl")
    w.ok("POST", "/connectors", {"name": "out", "config": {"connector.class": "FileStreamSink", "topics": topic,
                                                           "file": out}})

    def in_file():
        if not os.path.exists(out):
            return False
        with open(out) as f:
            return sorted(json.loads(line)["seq"] for line in f if line.strip()) == list(range(N))
    wait_until(in_file, 60, f"all {N} records in the sink's file", 0.5)
    print(f"ok   ({KIND}) a sink created after the looks wrote all {N} records", flush=True)

    # (d)
    for path, code in ((f"/topics/{props['offset.storage.topic']}/records", 403), (f"/topics/missing-{RUN}/records", 404),
                       (f"/topics/{topic}/records?limit=0", 400), (f"/topics/{topic}/records?limit=101", 400)):
        status, body = w.rest("GET", path)
        if status != code:
            raise AssertionError(f"GET {path} -> {status} (expected {code}): {body}")
    if f"missing-{RUN}" in [t["name"] for t in w.ok("GET", "/topics")["topics"]]:
        raise AssertionError("looking at a missing topic created it")
    print(f"ok   ({KIND}) own topic 403, missing 404 (not created), bad limits 400", flush=True)


if __name__ == "__main__":
    run(main)
