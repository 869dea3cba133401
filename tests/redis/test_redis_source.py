"""RedisSource delivery, against a Redis server of the test's own (appendonly, fsync always):

  (a) streams: a writer XADDs N sequence-numbered entries while RedisSource (consumer group) ->
      backbone -> FileStreamSink runs; the worker is killed with kill -9 mid-stream and Redis too
      (both restarted). The file holds every sequence number (0 lost, duplicates counted) and the
      group ends with nothing pending (every entry acknowledged once safe).
  (b) lists: the same with LPUSH and the reliable-queue mode: every element arrives, the list and
      the task's processing list end empty.
  (c) XAUTOCLAIM: entries a consumer that is gone read and never acknowledged are taken over
      after redis.stream.claim.min.idle.ms and delivered.
  (d) pub/sub: SUBSCRIBE and PSUBSCRIBE (a keyspace notification pattern): messages published
      while the task is connected arrive, with redis.channel / redis.pattern headers.
  (e) a backlog: 300,000 entries and elements waiting before the connectors start, so the tasks
      read full batches and keep a read ahead on the wire (with the acknowledgements of the batch
      before); Redis is killed with kill -9 mid-drain and restarted: 0 lost, nothing pending, the
      processing list empty.
  (f) the processing list's tail is not what the task acknowledges (another client pushed an
      element there): acknowledged elements are still removed one by one, the stranger is left.
"""
import json
import os
import threading
import time

from redis_env import OwnRedis, seqs_of, wait_for
from resp_client import RedisError
from harness import Worker, run, tmpdir, wait_until

N = int(os.environ.get("FERRY_REDIS_SOURCE_COUNT", "20000"))


def lines(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [l for l in f.read().splitlines() if l.strip()]


class Writer(threading.Thread):
    """Writes entries 0..n-1 in batches of 100, retrying a batch while Redis is down."""

    def __init__(self, redis, command):
        super().__init__(daemon=True)
        self.redis, self.command, self.done, self.error = redis, command, 0, None

    def run(self):
        r = None
        while self.done < N:
            try:
                if r is None:
                    r = self.redis.client()
                batch = range(self.done, min(N, self.done + 100))
                answers = r.pipeline([self.command(i) for i in batch])
                if any(isinstance(a, RedisError) for a in answers):  # LOADING after a restart
                    raise ConnectionError(f"Redis refused a batch: {answers[0]}")
                self.done = batch[-1] + 1
                time.sleep(15.0 / (N / 100))  # about 15 s in all, so the kills land mid-stream
            except (OSError, ConnectionError):
                r = None
                time.sleep(0.2)


def check_all(path, what):
    got, dups = seqs_of(lines(path))
    missing = set(range(N)) - got
    assert not missing, f"{what}: {len(missing)} lost, e.g. {sorted(missing)[:10]}"
    return dups


def main():
    work = tmpdir("redis-source")
    redis = OwnRedis(work)
    redis.start()
    r = redis.client()
    run_id = os.urandom(3).hex()
    stream, lst = f"{run_id}:events", f"{run_id}:jobs"
    out_s, out_l = os.path.join(work, "stream.txt"), os.path.join(work, "list.txt")
    w = Worker(work)
    w.start()
    hosts = f"127.0.0.1:{redis.port}"
    w.ok("PUT", "/connectors/rs/config", {"connector.class": "RedisSource", "redis.hosts": hosts,
                                          "redis.streams": stream, "topic": "s"})
    w.ok("PUT", "/connectors/rl/config", {"connector.class": "RedisSource", "redis.hosts": hosts,
                                          "redis.lists": lst, "topic": "l"})
    w.ok("PUT", "/connectors/fs/config", {"connector.class": "FileStreamSink", "topics": "s", "file": out_s})
    w.ok("PUT", "/connectors/fl/config", {"connector.class": "FileStreamSink", "topics": "l", "file": out_l})
    for name in ("rs", "rl", "fs", "fl"):
        w.wait_running(name)

    ws = Writer(redis, lambda i: ["XADD", stream, "*", "value", json.dumps({"seq": i}), "origin", "test"])
    wl = Writer(redis, lambda i: ["LPUSH", lst, json.dumps({"seq": i})])
    ws.start()
    wl.start()
    wait_for(lambda: len(lines(out_s)) > N // 4 and len(lines(out_l)) > N // 4, 120, "a quarter through")
    w.kill9()
    print(f"worker killed with kill -9 at {len(lines(out_s))} / {len(lines(out_l))} lines", flush=True)
    time.sleep(1)
    w.start()
    wait_for(lambda: len(lines(out_s)) > N // 2 and len(lines(out_l)) > N // 2, 120, "half through")
    redis.kill9()
    print(f"redis killed with kill -9 at {len(lines(out_s))} / {len(lines(out_l))} lines", flush=True)
    time.sleep(3)
    redis.start()
    print("redis started again", flush=True)
    ws.join(180)
    wl.join(180)
    assert ws.done == N and wl.done == N, f"the writers did not finish: {ws.done} {wl.done}"

    def complete():
        try:
            return seqs_of(lines(out_s))[0] >= set(range(N)) and seqs_of(lines(out_l))[0] >= set(range(N))
        except ValueError:
            return False
    wait_for(complete, 180, "every entry and element in the files")
    dups_s = check_all(out_s, "stream")
    dups_l = check_all(out_l, "list")
    r = redis.client()

    def settled():
        pending = r.call("XPENDING", stream, f"ferry-rs")[0]
        procs = r.call("KEYS", f"{{{lst}}}:ferry-processing:*")
        held = sum(r.call("LLEN", p) for p in procs)
        return pending == 0 and held == 0 and r.call("LLEN", lst) == 0
    wait_for(settled, 60, "nothing pending in the group, the processing list empty")
    print(f"(a) stream: {N} entries through kill -9 of the worker and of Redis: 0 lost, {dups_s} duplicates, "
          f"0 pending at the end", flush=True)
    print(f"(b) list: {N} elements: 0 lost, {dups_l} duplicates; the list and the processing list empty", flush=True)

    # (c) a consumer that read and went away
    ghost_stream = f"{run_id}:ghost"
    r.call("XGROUP", "CREATE", ghost_stream, "shared", "0", "MKSTREAM")
    for i in range(50):
        r.call("XADD", ghost_stream, "*", "value", json.dumps({"seq": i}))
    taken = r.call("XREADGROUP", "GROUP", "shared", "ghost", "COUNT", "50", "STREAMS", ghost_stream, ">")
    assert len(taken[0][1]) == 50
    out_g = os.path.join(work, "ghost.txt")
    w.ok("PUT", "/connectors/rg/config", {"connector.class": "RedisSource", "redis.hosts": hosts,
                                          "redis.streams": ghost_stream, "redis.stream.group": "shared",
                                          "redis.stream.claim.min.idle.ms": "1500",
                                          "redis.stream.claim.interval.ms": "500", "topic": "g"})
    w.ok("PUT", "/connectors/fg/config", {"connector.class": "FileStreamSink", "topics": "g", "file": out_g})
    wait_for(lambda: len(set(lines(out_g))) == 50, 60, "the ghost's 50 entries taken over")
    wait_for(lambda: r.call("XPENDING", ghost_stream, "shared")[0] == 0, 30, "the taken-over entries acknowledged")
    print("(c) 50 entries left pending by a consumer that went away: taken over (XAUTOCLAIM) and acknowledged",
          flush=True)

    # (d) pub/sub and keyspace notifications
    r.call("CONFIG", "SET", "notify-keyspace-events", "K$")
    out_p = os.path.join(work, "pubsub.txt")
    w.ok("PUT", "/connectors/rp/config", {"connector.class": "RedisSource", "redis.hosts": hosts,
                                          "redis.channels": f"{run_id}:news",
                                          "redis.patterns": f"__keyspace@0__:{run_id}:kv:*", "topic": "p"})
    w.ok("PUT", "/connectors/fp/config", {"connector.class": "FileStreamSink", "topics": "p", "file": out_p})
    w.wait_running("rp")
    w.wait_running("fp")

    def subscribed():
        return r.call("PUBSUB", "NUMSUB", f"{run_id}:news")[1] == 1
    wait_for(subscribed, 30, "the task subscribed")
    for i in range(100):
        r.call("PUBLISH", f"{run_id}:news", json.dumps({"seq": i}))
    r.call("SET", f"{run_id}:kv:one", "1")
    # 100 more published by a RedisSink (PUBLISH) from a file.
    pub_in = os.path.join(work, "pub.txt")
    with open(pub_in, "w") as f:
        for i in range(100, 200):
            f.write(json.dumps({"seq": i}) + "\n")
    w.ok("PUT", "/connectors/pubfile/config", {"connector.class": "FileStreamSource", "file": pub_in, "topic": "tonews"})
    w.ok("PUT", "/connectors/publish/config", {"connector.class": "RedisSink", "redis.hosts": hosts, "topics": "tonews",
                                               "redis.command": "PUBLISH", "redis.key": f"{run_id}:news"})
    wait_for(lambda: len(lines(out_p)) == 201, 30, "200 messages and one keyspace notification")
    got = lines(out_p)
    news = [l for l in got if l.startswith("{")]
    assert seqs_of(news)[0] == set(range(200)), got[:5]
    assert "set" in got, got[-3:]
    print("(d) pub/sub: 100 messages published by a client and 100 by a RedisSink (PUBLISH) while subscribed "
          "arrived; a keyspace notification (set) too", flush=True)

    # (e) a backlog drained with reads ahead, through a Redis kill -9
    m = 300_000
    bs, bl = f"{run_id}:backlog", f"{run_id}:backjobs"
    for base in range(0, m, 5000):
        r.pipeline([["XADD", bs, "*", "value", json.dumps({"seq": i})] for i in range(base, base + 5000)])
        r.pipeline([["LPUSH", bl, json.dumps({"seq": i})] for i in range(base, base + 5000)])
    out_bs, out_bl = os.path.join(work, "backlog.txt"), os.path.join(work, "backjobs.txt")
    w.ok("PUT", "/connectors/bfs/config", {"connector.class": "FileStreamSink", "topics": "bs", "file": out_bs})
    w.ok("PUT", "/connectors/bfl/config", {"connector.class": "FileStreamSink", "topics": "bl", "file": out_bl})
    w.ok("PUT", "/connectors/brs/config", {"connector.class": "RedisSource", "redis.hosts": hosts,
                                           "redis.streams": bs, "topic": "bs"})
    w.ok("PUT", "/connectors/brl/config", {"connector.class": "RedisSource", "redis.hosts": hosts,
                                           "redis.lists": bl, "topic": "bl"})
    # Killed while the tasks are still reading (not when the sinks' files are): the group's
    # entries-read and what is left of the list say how far they are.
    def reading():
        groups = r.call("XINFO", "GROUPS", bs)
        read = dict(zip(groups[0][::2], groups[0][1::2])).get(b"entries-read") if groups else 0
        left = r.call("LLEN", bl)
        return (read or 0) > m // 5 and left < m - m // 5, (read, left)
    wait_until(lambda: reading()[0], 120, "(e) a fifth of the backlog read", interval=0.005)
    at = reading()[1]
    redis.kill9()
    time.sleep(1)
    redis.start()
    r = redis.client()

    def drained():
        try:
            return seqs_of(lines(out_bs))[0] >= set(range(m)) and seqs_of(lines(out_bl))[0] >= set(range(m))
        except ValueError:
            return False
    wait_for(drained, 180, "(e) the whole backlog in the files")
    got_s, dup_s = seqs_of(lines(out_bs))
    got_l, dup_l = seqs_of(lines(out_bl))
    assert got_s == set(range(m)) and got_l == set(range(m)), "(e) lost records"

    def settled_e():
        procs = r.call("KEYS", f"{{{bl}}}:ferry-processing:*")
        return r.call("XPENDING", bs, "ferry-brs")[0] == 0 and sum(r.call("LLEN", p) for p in procs) == 0 and \
            r.call("LLEN", bl) == 0
    wait_for(settled_e, 60, "(e) nothing pending, the processing list empty")
    print(f"(e) a backlog of {m} entries and {m} elements, Redis killed with kill -9 at {at[0]} entries read / "
          f"{at[1]} elements left: "
          f"0 lost; duplicates {dup_s} / {dup_l}; nothing pending, the processing list empty", flush=True)

    # (f) a stranger at the processing list's tail
    fl = f"{run_id}:strange"
    out_f = os.path.join(work, "strange.txt")
    w.ok("PUT", "/connectors/ffl/config", {"connector.class": "FileStreamSink", "topics": "fl", "file": out_f})
    w.ok("PUT", "/connectors/frl/config", {"connector.class": "RedisSource", "redis.hosts": hosts,
                                           "redis.lists": fl, "topic": "fl"})
    r.pipeline([["LPUSH", fl, json.dumps({"seq": i})] for i in range(1000)])
    wait_for(lambda: len(lines(out_f)) >= 1000, 60, "(f) the first 1000 elements")
    procs = [f"{{{fl}}}:ferry-processing:frl-0"]  # the task's processing list (gone while empty)
    wait_for(lambda: r.call("LLEN", procs[0]) == 0, 30, "(f) the first 1000 acknowledged")
    r.call("RPUSH", procs[0], "stranger")
    r.pipeline([["LPUSH", fl, json.dumps({"seq": i})] for i in range(1000, 3000)])
    wait_for(lambda: seqs_of(lines(out_f))[0] >= set(range(3000)), 60, "(f) all 3000 elements")
    wait_for(lambda: r.call("LLEN", procs[0]) == 1, 30, "(f) the acknowledged elements removed")
    left = r.call("LRANGE", procs[0], "0", "-1")
    assert left == [b"stranger"], f"(f) the processing list holds {left[:5]}"
    print("(f) a stranger at the processing list's tail: 2000 acknowledged elements removed one by one, "
          "the stranger left", flush=True)
    w.stop()
    redis.stop()


if __name__ == "__main__":
    run(main)
