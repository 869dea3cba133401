"""RedisSink delivery, against a Redis server of the test's own (appendonly, fsync always):

  30,000 sequence-numbered JSON lines -> FileStreamSource -> backbone -> three RedisSinks:
    XADD to a stream, SET <run>:set:<id> with a TTL, RPUSH to a list.
  The worker is killed with kill -9 after about a third, and Redis itself after about two thirds
  (both restarted). At the end each target holds every sequence number: 0 lost; duplicates counted
  (at-least-once: the batches in flight at a kill are written again). SET keys carry their TTL.
  Then XADD with MAXLEN ~ keeps the stream short and HSET with redis.ttl.ms sets the hash's TTL;
  tombstones: DEL for SET and HDEL for HSET (HSET with a field template), and a record Redis
  refuses (WRONGTYPE) goes to the dead-letter topic with Redis's message, the task keeps running.
  Last, Redis answers OOM (maxmemory 1, noeviction) for a while mid-stream: RPUSH and SET of one
  key wait and retry (a pipeline refused while another was in flight is sent again first), then
  the list holds every sequence number in order and the key the last value.
"""
import json
import os
import time

from redis_env import OwnRedis, seqs_of, wait_for, write_lines
from harness import Worker, run, tmpdir

N = int(os.environ.get("FERRY_REDIS_SINK_COUNT", "30000"))


def main():
    work = tmpdir("redis-sink")
    redis = OwnRedis(work)
    redis.start()
    r = redis.client()
    run_id = os.urandom(3).hex()
    src = os.path.join(work, "in.txt")
    open(src, "w").close()
    w = Worker(work)
    w.start()
    hosts = f"127.0.0.1:{redis.port}"
    w.ok("PUT", "/connectors/lines/config", {"connector.class": "FileStreamSource", "file": src, "topic": "seq"})
    base = {"connector.class": "RedisSink", "topics": "seq", "redis.hosts": hosts,
            "errors.retry.timeout": "-1", "errors.retry.delay.max.ms": "1000"}
    w.ok("PUT", "/connectors/xadd/config", dict(base, **{"redis.command": "XADD", "redis.key": f"{run_id}:stream"}))
    w.ok("PUT", "/connectors/set/config", dict(base, **{
        "redis.command": "SET", "redis.key": f"{run_id}:set:${{value:id}}", "redis.ttl.ms": "3600000"}))
    w.ok("PUT", "/connectors/rpush/config", dict(base, **{"redis.command": "RPUSH", "redis.key": f"{run_id}:list"}))
    for name in ("lines", "xadd", "set", "rpush"):
        w.wait_running(name)

    line = lambda i: json.dumps({"id": f"k{i}", "seq": i})  # noqa: E731
    third = N // 3
    write_lines(src, 0, third, line)
    wait_for(lambda: r.call("XLEN", f"{run_id}:stream") >= third // 2, 60, "first records in Redis")
    w.kill9()
    print(f"worker killed with kill -9 at XLEN={r.call('XLEN', f'{run_id}:stream')}", flush=True)
    write_lines(src, third, 2 * third, line)
    w.start()
    wait_for(lambda: r.call("XLEN", f"{run_id}:stream") >= third + third // 2, 90, "records after the restart")
    redis.kill9()
    print("redis killed with kill -9", flush=True)
    write_lines(src, 2 * third, N, line)
    time.sleep(2)
    redis.start()
    r = redis.client()
    print("redis started again", flush=True)

    def complete():
        entries = r.call("XRANGE", f"{run_id}:stream", "-", "+")
        got, _ = seqs_of(e[1][1] for e in entries)  # fields: value <line>
        return len(got) == N and r.call("LLEN", f"{run_id}:list") >= N and \
            len(r.call("KEYS", f"{run_id}:set:*")) == N
    wait_for(complete, 180, "every record in Redis")
    entries = r.call("XRANGE", f"{run_id}:stream", "-", "+")
    got, dups = seqs_of(e[1][1] for e in entries)
    assert got == set(range(N)), f"stream: {N - len(got)} lost"
    lst = r.call("LRANGE", f"{run_id}:list", "0", "-1")
    lgot, ldups = seqs_of(lst)
    assert lgot == set(range(N)), f"list: {N - len(lgot)} lost"
    keys = r.call("KEYS", f"{run_id}:set:*")
    assert len(keys) == N, f"SET: {len(keys)} keys of {N}"
    sample = f"{run_id}:set:k{N - 1}"
    assert json.loads(r.call("GET", sample))["seq"] == N - 1
    ttl = r.call("PTTL", sample)
    assert 0 < ttl <= 3600000, f"SET without its TTL: PTTL {ttl}"
    print(f"(a) {N} records through kill -9 of the worker and of Redis: 0 lost; duplicates: stream {dups}, "
          f"list {ldups}; {len(keys)} SET keys with TTL", flush=True)

    # (b) tombstones and a record Redis refuses.
    src2 = os.path.join(work, "in2.txt")
    open(src2, "w").close()
    w.ok("PUT", "/connectors/lines2/config", {
        "connector.class": "FileStreamSource", "file": src2, "topic": "kv",
        "transforms": "k,v", "transforms.k.type": "ValueToKey", "transforms.k.fields": "id",
        "transforms.v.type": "ExtractField$Value", "transforms.v.field": "v"})
    w.ok("PUT", "/connectors/hset/config", dict(base, **{
        "topics": "kv", "redis.command": "HSET", "redis.key": f"{run_id}:hash", "redis.hash.field": "${key}"}))
    w.ok("PUT", "/connectors/set2/config", dict(base, **{
        "topics": "kv", "redis.command": "SET", "redis.key": f"{run_id}:kv:${{key}}"}))
    w.ok("PUT", "/connectors/push2/config", dict(base, **{
        "topics": "kv", "redis.command": "LPUSH", "redis.key": f"{run_id}:kv2:${{key}}",
        "errors.tolerance": "all", "errors.deadletterqueue.topic.name": "dlq"}))
    w.ok("PUT", "/connectors/capped/config", dict(base, **{
        "topics": "kv", "redis.command": "XADD", "redis.key": f"{run_id}:capped", "redis.stream.maxlen": "10"}))
    w.ok("PUT", "/connectors/hashttl/config", dict(base, **{
        "topics": "kv", "redis.command": "HSET", "redis.key": f"{run_id}:hashttl", "redis.ttl.ms": "600000"}))
    w.ok("PUT", "/connectors/dlq/config", {"connector.class": "FileStreamSink", "topics": "dlq",
                                           "file": os.path.join(work, "dlq.txt")})
    for name in ("lines2", "hset", "set2", "push2", "capped", "hashttl", "dlq"):
        w.wait_running(name)
    r.call("SET", f"{run_id}:kv2:{{\"id\":\"wrong\"}}", "x")  # a string where LPUSH will push: WRONGTYPE
    write_lines(src2, 0, 1, lambda i: json.dumps({"id": "a", "v": "1"}))
    write_lines(src2, 0, 1, lambda i: json.dumps({"id": "b", "v": "2"}))
    write_lines(src2, 0, 1, lambda i: json.dumps({"id": "wrong", "v": "3"}))
    wait_for(lambda: r.call("HLEN", f"{run_id}:hash") == 3, 30, "three hash fields")
    keys = sorted(k.decode() for k in r.call("KEYS", f"{run_id}:kv:*"))
    wait_for(lambda: os.path.exists(os.path.join(work, "dlq.txt")) and os.path.getsize(os.path.join(work, "dlq.txt")) > 0,
             30, "the refused record in the dead-letter topic")
    # XADD with MAXLEN ~ 10 over 300 more records keeps the stream near 10 (~: whole nodes of 100);
    # HSET with a TTL sets PEXPIRE on the hash.
    write_lines(src2, 0, 300, lambda i: json.dumps({"id": f"m{i}", "v": str(i)}))
    wait_for(lambda: r.call("HLEN", f"{run_id}:hashttl") == 303, 30, "303 fields in the hash with a TTL")
    capped = r.call("XLEN", f"{run_id}:capped")
    assert capped < 303 and capped <= 110, f"MAXLEN ~ 10 kept {capped} entries"
    ttl = r.call("PTTL", f"{run_id}:hashttl")
    assert 0 < ttl <= 600000, f"HSET without its TTL: PTTL {ttl}"
    print(f"(c) XADD MAXLEN ~ 10: {capped} entries of 303 kept; HSET with redis.ttl.ms: PTTL {ttl}", flush=True)
    write_lines(src2, 0, 1, lambda i: json.dumps({"id": "a", "v": None}))
    wait_for(lambda: r.call("HLEN", f"{run_id}:hash") == 302, 30, "HDEL of a tombstone")
    wait_for(lambda: r.call("EXISTS", f"{run_id}:kv:{{\"id\":\"a\"}}") == 0, 30, "DEL of a tombstone")
    dlq = open(os.path.join(work, "dlq.txt")).read()
    assert dlq == "3\n", f"dead letters: {dlq!r}"
    dead = w.ok("GET", "/topics/dlq/records?limit=5")["records"]
    why = json.dumps(dead[-1])
    assert "WRONGTYPE" in why, f"the dead letter does not carry Redis's answer: {why}"
    st = w.ok("GET", "/connectors/push2/status")
    assert st["tasks"][0]["state"] == "RUNNING", st
    print(f"(b) tombstones: HDEL and DEL done; WRONGTYPE dead-lettered, task RUNNING; keys were {keys}", flush=True)

    # (d) Redis refuses writes with OOM for a while: nothing lost, order kept.
    src3 = os.path.join(work, "in3.txt")
    open(src3, "w").close()
    w.ok("PUT", "/connectors/lines3/config", {"connector.class": "FileStreamSource", "file": src3, "topic": "oom"})
    w.ok("PUT", "/connectors/oomlist/config", dict(base, **{
        "topics": "oom", "redis.command": "RPUSH", "redis.key": f"{run_id}:oomlist"}))
    w.ok("PUT", "/connectors/oomset/config", dict(base, **{
        "topics": "oom", "redis.command": "SET", "redis.key": f"{run_id}:oomlast"}))
    for name in ("lines3", "oomlist", "oomset"):
        w.wait_running(name)
    m = 20000
    write_lines(src3, 0, m // 2, line)
    wait_for(lambda: r.call("LLEN", f"{run_id}:oomlist") >= 1000, 30, "first records of (d)")
    r.call("CONFIG", "SET", "maxmemory", "1")  # noeviction: every write answers OOM
    write_lines(src3, m // 2, m, line)
    time.sleep(3)
    held = r.call("LLEN", f"{run_id}:oomlist")
    assert held < m, f"(d) Redis took every write although it answered OOM: LLEN {held}"
    r.call("CONFIG", "SET", "maxmemory", "0")
    wait_for(lambda: r.call("LLEN", f"{run_id}:oomlist") >= m and
             json.loads(r.call("GET", f"{run_id}:oomlast"))["seq"] == m - 1, 60, "(d) every record after the OOM")
    order = [json.loads(v)["seq"] for v in r.call("LRANGE", f"{run_id}:oomlist", "0", "-1")]
    firsts, seen = [], set()
    for q in order:
        if q not in seen:
            seen.add(q)
            firsts.append(q)
    assert firsts == list(range(m)), "(d) the list lost or reordered records: first difference at " + \
        str(next((i for i, q in enumerate(firsts) if q != i), len(firsts)))
    print(f"(d) OOM for 3 s at LLEN {held}: all {m} in order afterwards, {len(order) - m} duplicates; "
          f"the key holds the last value", flush=True)
    w.stop()
    redis.stop()


if __name__ == "__main__":
    run(main)
