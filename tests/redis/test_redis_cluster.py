"""The Redis connectors on a Redis Cluster (scripts/services/redis: three masters 17001-17003):

  20,000 sequence-numbered lines -> FileStreamSource -> backbone -> RedisSink XADD into three
  streams (keys in three different slots, by ${value:shard}) and SET of one key per record (spread
  over every master); RedisSource reads the three streams back -> FileStreamSink. While records
  flow, the slot of the busiest stream is migrated to another master (CLUSTER SETSLOT IMPORTING /
  MIGRATING, MIGRATE, SETSLOT NODE): the clients meet ASK and MOVED and follow them. At the end:
  every record in the streams and every SET key across the masters (0 lost), every record read
  back (0 lost, duplicates counted), nothing pending in the group.
"""
import json
import os
import threading
import time

from redis_env import CLUSTER, require_services, seqs_of, wait_for, write_lines
from resp_client import Redis
from harness import Worker, run, tmpdir

N = int(os.environ.get("FERRY_REDIS_CLUSTER_COUNT", "20000"))


def masters():
    return {p: Redis(port=p) for p in CLUSTER}


def node_of(nodes, slot):
    for port, r in nodes.items():
        for rng in r.call("CLUSTER", "SLOTS"):
            if rng[0] <= slot <= rng[1]:
                return rng[2][1]
    raise AssertionError(f"no node serves slot {slot}")


def migrate_slot(nodes, slot, src_port, dst_port):
    src, dst = nodes[src_port], nodes[dst_port]
    src_id, dst_id = src.call("CLUSTER", "MYID").decode(), dst.call("CLUSTER", "MYID").decode()
    dst.call("CLUSTER", "SETSLOT", slot, "IMPORTING", src_id)
    src.call("CLUSTER", "SETSLOT", slot, "MIGRATING", dst_id)
    moved = 0
    while True:
        keys = src.call("CLUSTER", "GETKEYSINSLOT", slot, 100)
        if not keys:
            break
        src.call("MIGRATE", "127.0.0.1", dst_port, "", 0, 10000, "KEYS", *keys)
        moved += len(keys)
        time.sleep(0.2)  # leave the slot half-moved a while: clients meet ASK
    for r in nodes.values():
        r.call("CLUSTER", "SETSLOT", slot, "NODE", dst_id)
    return moved


def main():
    require_services()
    work = tmpdir("redis-cluster")
    run_id = os.urandom(3).hex()
    nodes = masters()
    hosts = ",".join(f"127.0.0.1:{p}" for p in CLUSTER)
    streams = [f"{run_id}:s{i}" for i in range(3)]
    slots = {s: nodes[CLUSTER[0]].call("CLUSTER", "KEYSLOT", s) for s in streams}
    src = os.path.join(work, "in.txt")
    open(src, "w").close()
    out = os.path.join(work, "out.txt")
    w = Worker(work)
    w.start()
    common = {"redis.hosts": hosts, "redis.client.mode": "cluster"}
    w.ok("PUT", "/connectors/lines/config", {"connector.class": "FileStreamSource", "file": src, "topic": "seq"})
    w.ok("PUT", "/connectors/xadd/config", dict(common, **{
        "connector.class": "RedisSink", "topics": "seq", "redis.command": "XADD",
        "redis.key": f"{run_id}:s${{value:shard}}", "errors.retry.timeout": "-1"}))
    w.ok("PUT", "/connectors/set/config", dict(common, **{
        "connector.class": "RedisSink", "topics": "seq", "redis.command": "SET",
        "redis.key": f"{run_id}:k:${{value:seq}}", "errors.retry.timeout": "-1"}))
    w.ok("PUT", "/connectors/read/config", dict(common, **{
        "connector.class": "RedisSource", "redis.streams": ",".join(streams), "topic": "back",
        "errors.retry.timeout": "-1"}))
    w.ok("PUT", "/connectors/file/config", {"connector.class": "FileStreamSink", "topics": "back", "file": out})
    for name in ("lines", "xadd", "set", "read", "file"):
        w.wait_running(name)

    line = lambda i: json.dumps({"seq": i, "shard": i % 3})  # noqa: E731

    def feed():
        for start in range(0, N, 500):
            write_lines(src, start, min(N, start + 500), line)
            time.sleep(0.05)
    feeder = threading.Thread(target=feed, daemon=True)
    feeder.start()
    busiest = streams[0]
    slot = slots[busiest]
    wait_for(lambda: nodes[node_of(nodes, slot)].call("XLEN", busiest) > N // 12, 60, "records in the cluster")
    src_port = node_of(nodes, slot)
    dst_port = next(p for p in CLUSTER if p != src_port)
    moved = migrate_slot(nodes, slot, src_port, dst_port)
    assert node_of(nodes, slot) == dst_port
    print(f"slot {slot} of {busiest} migrated {src_port} -> {dst_port} while records flowed ({moved} keys moved)",
          flush=True)
    feeder.join(120)

    def in_streams():
        seen = set()
        for s in streams:
            owner = nodes[node_of(nodes, slots[s])]
            for e in owner.call("XRANGE", s, "-", "+"):
                fields = dict(zip(e[1][0::2], e[1][1::2]))
                seen.add(json.loads(fields[b"value"])["seq"])
        return seen

    wait_for(lambda: len(in_streams()) == N, 180, "every record in the three streams")

    def set_keys():
        total = 0
        for r in nodes.values():
            cursor = b"0"
            while True:
                cursor, keys = r.call("SCAN", cursor, "MATCH", f"{run_id}:k:*", "COUNT", 1000)
                total += len(keys)
                if cursor == b"0":
                    break
        return total
    wait_for(lambda: set_keys() == N, 120, "every SET key")

    def read_back():
        with open(out) as f:
            return seqs_of([l for l in f.read().splitlines() if l.strip()])
    wait_for(lambda: os.path.exists(out) and read_back()[0] >= set(range(N)), 180, "every record read back")
    got, dups = read_back()
    pending = sum(nodes[node_of(nodes, slots[s])].call("XPENDING", s, "ferry-read")[0] for s in streams)
    wait_for(lambda: sum(nodes[node_of(nodes, slots[s])].call("XPENDING", s, "ferry-read")[0] for s in streams) == 0,
             60, "nothing pending in the group")
    print(f"{N} records: XADD into three streams and SET over three masters across a slot migration, 0 lost; "
          f"read back through the cluster 0 lost, {dups} duplicates, then 0 pending (was {pending})", flush=True)
    log = open(w.log_path).read()
    moved_lines = [l for l in log.splitlines() if f"moved to 127.0.0.1:{dst_port} (MOVED)" in l]
    assert moved_lines, "no client met MOVED for the migrated slot"
    print(f"clients followed MOVED to {dst_port} ({len(moved_lines)} times)", flush=True)
    for name in ("xadd", "set", "read"):
        st = w.ok("GET", f"/connectors/{name}/status")
        assert st["tasks"][0]["state"] == "RUNNING", st
    w.stop()


if __name__ == "__main__":
    run(main)
