"""CloudEvents through the HTTP connectors, against the real target server (tests/http/http_target.py,
its own process, which checks every event: specversion 1.0, id, source, type):

  (a) FileStreamSource of sequence-numbered JSON lines -> CloudEvent transform (id evt-${value:seq},
      constant source and type) -> backbone -> HttpSink http.batch.format=cloudevents: the target
      gets application/cloudevents-batch+json requests holding every sequence number once or more,
      each a valid event whose id matches its data;
  (b) HttpSource (webhook) receiving a CloudEvents batch, a structured event and binary-mode
      requests (ce-* headers, one percent-encoded) -> backbone -> HttpSink
      cloudevents-structured and, from the same topic, HttpSink cloudevents-binary: at the target
      every event keeps its id, source, type, subject, extension and data; an event's partitionkey
      extension (structured and binary mode) is its record key in the topic, events without one
      have no key;
  (c) bad CloudEvents at the webhook - a batch with an event without id, a wrong specversion, a
      malformed batch, a batch that is not an array, a binary-mode request without ce-type or
      ce-specversion - answer 400 naming the problem (and the event's index), and none of their
      events reaches the topic or the target.
"""
import json
import os

from http_env import Target, port_open, post
from harness import Worker, free_port, read_lines, run, tmpdir, wait_until

N = 3000
SOURCE = "/ferry/tests/seq"
TYPE = "io.ferry.test.seq"


def events(target, path):
    out = []
    for line in target.lines(path):
        out.append(json.loads(line))
    return out


def header(record, name):
    """A header's value in a record of GET /topics/<t>/records (a list of {key, value})."""
    for h in record.get("headers") or []:
        if h.get("key") == name:
            return h.get("value")
    return None


def main():
    d = tmpdir("http-cloudevents")
    target = Target(free_port(), os.path.join(d, "received"))
    w = Worker(d, {"task.restart.backoff.initial.ms": "200", "task.restart.backoff.max.ms": "1000"})
    try:
        target.start()
        w.start()
        # (a) file -> CloudEvent transform -> HttpSink cloudevents batches
        src = os.path.join(d, "seq.jsonl")
        with open(src, "w") as f:
            for i in range(N):
                f.write(json.dumps({"seq": i, "note": f"line {i}"}) + "\n")
        w.ok("POST", "/connectors", {"name": "file-ce", "config": {
            "connector.class": "FileStreamSource", "file": src, "topic": "ce-seq",
            "transforms": "ce", "transforms.ce.type": "CloudEvent", "transforms.ce.id": "evt-${value:seq}",
            "transforms.ce.source": SOURCE, "transforms.ce.event.type": TYPE,
            "transforms.ce.datacontenttype": "application/json"}})
        w.ok("POST", "/connectors", {"name": "ce-batch", "config": {
            "connector.class": "HttpSink", "topics": "ce-seq", "http.url": f"{target.url}/ceseq",
            "http.batch.format": "cloudevents", "http.batch.max.records": "100",
            "http.retry.backoff.max.ms": "1000"}})

        def seqs():
            return {e["data"]["seq"] for e in events(target, "ceseq")}
        wait_until(lambda: seqs() >= set(range(N)), 120, f"all {N} events at the target", 0.2)
        got = events(target, "ceseq")
        for e in got:
            assert e["specversion"] == "1.0" and e["id"] == f"evt-{e['data']['seq']}", e
            assert e["source"] == SOURCE and e["type"] == TYPE and e["datacontenttype"] == "application/json", e
            assert e["data"]["note"] == f"line {e['data']['seq']}", e
        cts = target.stats()["content_types"]
        batches = cts.get("application/cloudevents-batch+json", 0)
        assert batches > 0 and batches < N, cts
        print(f"(a) {N} JSON lines -> CloudEvent -> HttpSink cloudevents: every seq arrived as a valid event "
              f"({len(got) - N} duplicates) in {batches} batch requests", flush=True)

        # (b) webhook -> backbone -> HttpSink cloudevents-structured and cloudevents-binary
        port = free_port()
        w.ok("POST", "/connectors", {"name": "hook", "config": {
            "connector.class": "HttpSource", "http.listen": f"127.0.0.1:{port}", "http.path": "/",
            "topic": "ce-hook"}})
        w.ok("POST", "/connectors", {"name": "ce-structured", "config": {
            "connector.class": "HttpSink", "topics": "ce-hook", "http.url": f"{target.url}/structured",
            "http.batch.format": "cloudevents-structured"}})
        w.ok("POST", "/connectors", {"name": "ce-binary", "config": {
            "connector.class": "HttpSink", "topics": "ce-hook", "http.url": f"{target.url}/binary",
            "http.batch.format": "cloudevents-binary"}})
        w.wait_running("hook")
        wait_until(lambda: port_open(port), 30, "the webhook port")
        url = f"http://127.0.0.1:{port}/"
        batch = [
            {"specversion": "1.0", "id": "b-1", "source": "/orders", "type": "order.created", "subject": "o-1",
             "tenant": "acme", "partitionkey": "order-1", "datacontenttype": "application/json",
             "data": {"order": 1, "items": [1, 2]}},
            {"specversion": "1.0", "id": "b-2", "source": "/orders", "type": "order.note",
             "datacontenttype": "text/plain", "data": "a plain note"},
            {"specversion": "1.0", "id": "b-3", "source": "/orders", "type": "order.ping", "seq": 3},
        ]
        status, text = post(url, json.dumps(batch).encode(), {"Content-Type": "application/cloudevents-batch+json"})
        assert status == 200 and '"accepted":3' in text, (status, text)
        one = {"specversion": "1.0", "id": "s-1", "source": "/single", "type": "single.event",
               "time": "2024-03-05T10:20:30Z", "data": {"single": True}}
        status, text = post(url, json.dumps(one).encode(), {"Content-Type": "application/cloudevents+json"})
        assert status == 200, (status, text)
        status, text = post(url, json.dumps({"bin": 1}).encode(), {
            "Content-Type": "application/json", "ce-specversion": "1.0", "ce-id": "bin-1",
            "ce-source": "/binary%20source", "ce-type": "binary.event", "ce-tenant": "acme",
            "ce-partitionkey": "bin%20key"})
        assert status == 200, (status, text)
        status, text = post(url, b"plain text body", {
            "Content-Type": "text/plain", "ce-specversion": "1.0", "ce-id": "bin-2", "ce-source": "/b",
            "ce-type": "binary.text"})
        assert status == 200, (status, text)
        sent = {e["id"]: e for e in batch + [one]}
        sent["bin-1"] = {"specversion": "1.0", "id": "bin-1", "source": "/binary source", "type": "binary.event",
                         "tenant": "acme", "partitionkey": "bin key", "datacontenttype": "application/json",
                         "data": {"bin": 1}}
        sent["bin-2"] = {"specversion": "1.0", "id": "bin-2", "source": "/b", "type": "binary.text",
                         "datacontenttype": "text/plain", "data": "plain text body"}

        # (c) bad events: 400 naming the problem, no record
        bad = [
            ("batch event without id", [{"specversion": "1.0", "id": "bad-0", "source": "/s", "type": "t"},
                                        {"specversion": "1.0", "source": "/s", "type": "t"}],
             "application/cloudevents-batch+json", {}, ["event 1", "'id'"]),
            ("wrong specversion", {"specversion": "0.3", "id": "bad-1", "source": "/s", "type": "t"},
             "application/cloudevents+json", {}, ["specversion", "1.0"]),
            ("malformed batch", '[{"specversion":"1.0","id":"bad-2",', "application/cloudevents-batch+json", {},
             ["malformed JSON"]),
            ("batch not an array", {"specversion": "1.0", "id": "bad-3", "source": "/s", "type": "t"},
             "application/cloudevents-batch+json", {}, ["JSON array"]),
            ("binary without ce-type", {"x": 1}, "application/json",
             {"ce-specversion": "1.0", "ce-id": "bad-4", "ce-source": "/s"}, ["'type'"]),
            ("binary without ce-specversion", {"x": 1}, "application/json",
             {"ce-id": "bad-5", "ce-source": "/s", "ce-type": "t"}, ["ce-specversion"]),
        ]
        for what, body, ct, headers, words in bad:
            raw = body.encode() if isinstance(body, str) else json.dumps(body).encode()
            status, text = post(url, raw, {"Content-Type": ct, **headers})
            assert status == 400 and all(wd in text for wd in words), f"(c) {what}: {status} {text[:300]}"
        # A good event after the bad ones: once it is at the target, anything of theirs would be too.
        last = {"specversion": "1.0", "id": "last", "source": "/s", "type": "after.bad"}
        status, _ = post(url, json.dumps(last).encode(), {"Content-Type": "application/cloudevents+json"})
        assert status == 200
        sent["last"] = last

        for path in ("structured", "binary"):
            def by_id():
                return {e["id"]: e for e in events(target, path)}
            wait_until(lambda: set(by_id()) >= set(sent), 60, f"every webhook event at /{path}", 0.2)
            got = by_id()
            assert set(got) == set(sent), f"({path}) unexpected events: {sorted(set(got) - set(sent))}"
            for eid, want in sent.items():
                have = got[eid]
                for k, v in want.items():
                    # Records carry attributes as ce_* headers, which hold text (Kafka binding):
                    # an integer extension arrives as its text.
                    if k == "seq":
                        v = str(v)
                    assert have.get(k) == v, f"({path}) {eid}: {k} is {have.get(k)!r}, sent {v!r}; event {have}"
                extra = set(have) - set(want)
                assert extra <= {"datacontenttype"}, f"({path}) {eid}: attributes added: {extra}"
        cts = target.stats()["content_types"]
        assert cts.get("application/cloudevents+json", 0) >= len(sent), cts
        print(f"(b) webhook batch, structured and binary-mode events -> HttpSink cloudevents-structured and "
              f"cloudevents-binary: {len(sent)} events, id/source/type/subject/extensions/data intact", flush=True)
        print(f"(c) {len(bad)} bad requests (missing id in event 1, specversion 0.3, malformed, not an array, "
              f"binary without ce-type / ce-specversion): 400 naming the problem, no records", flush=True)
        # The topic holds exactly the good events, too.
        recs = w.ok("GET", "/topics/ce-hook/records?limit=100").get("records", [])
        ids = [header(r, "ce_id") for r in recs]
        assert sorted(ids) == sorted(sent), f"the topic holds {ids}, not the {len(sent)} good events"
        # The partitionkey extension is the record key (Kafka protocol binding; no http.key.* set).
        keys = {header(r, "ce_id"): r.get("key") for r in recs}
        want_keys = {eid: e.get("partitionkey") for eid, e in sent.items()}
        assert keys == want_keys, f"record keys {keys}, expected the events' partitionkeys {want_keys}"
        print(f"(b) partitionkey -> record key: {json.dumps({k: v for k, v in keys.items() if v})}, "
              f"the other events without a key", flush=True)
    finally:
        target.stop()
    assert w.stop() == 0


if __name__ == "__main__":
    run(main)
