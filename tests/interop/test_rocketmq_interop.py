#!/usr/bin/env python3
"""Interop between ferry's RocketMQ producer and the official Java client (tests/interop).

Scenarios (against a running cluster: scripts/services/rocketmq start, or scripts/test rocketmq):
  (a) ferry produces N deterministic messages (sync, explicit queue seq % 4) -> the Java
      DefaultLitePullConsumer reads them: every seq exactly once, body bytes, tags, keys and the
      `seq` property identical; per queue, offsets strictly increasing (no gaps) and seq order
      preserved.
  (b) the (queue, offset) the Java consumer saw for each of ferry's messages equals the
      (queue, offset) ferry's producer reported for it.
  (c) the Java producer sends the same N messages to another topic -> the Java consumer reads them
      with the same checks, and each message's body / tags / keys / user properties equal those of
      ferry's message with the same seq (property key sets are compared too; client-specific keys
      are reported).
  (d) ferry sends the same N messages in batches (SEND_BATCH_MESSAGE, 32 per queue and batch)
      -> the Java consumer: checks of (a) and (b), and the messages equal (a)'s as in (c).
  (e) the Java producer sends them in the same batches -> the Java consumer: checks of (c), the
      messages equal (d)'s. Message ids: every message of ferry's batches reaches consumers
      with the id ferry's producer reported for it (no id on the batch wrapper, as the 4.9.x
      Java client does); the 5.3.3 Java client puts an id on the wrapper too, which 4.9.x/5.3.x
      brokers append to each message's properties (last one wins), so its batch messages share
      one id — how the Java client's batch ids behave is reported, not required.
  (f) ferry's consumer reads (c)'s and (e)'s messages; (g) committed offsets handed over between
      the two clients in one group.

Property keys: each comparison requires the same key set on both sides, except the differences
listed in KNOWN_ONLY_FIRST / KNOWN_ONLY_SECOND (each with its reason and the broker versions it
applies to); values are compared except for VOLATILE_PROPS.

Environment (set by CTest): FERRY_INTEROP_TOOL, FERRY_INTEROP_JAR (built against
rocketmq-client FERRY_INTEROP_JAVA_CLIENT_VERSION, default 5.3.3; its lib/ must hold that
client), FERRY_INTEROP_JAVA, FERRY_INTEROP_WORK, FERRY_ROCKETMQ_NAMESRV (default
127.0.0.1:19876), FERRY_ROCKETMQ_CLUSTER (where topics are created, default ferry-a),
FERRY_ROCKETMQ_VERSION (the broker's version, default 5.3.3), FERRY_INTEROP_COUNT (default 5000).
Fails (exit 1), never skips, when the NameServer is unreachable.
"""
import json
import os
import random
import socket
import subprocess
import sys
import time

NAMESRV = os.environ.get("FERRY_ROCKETMQ_NAMESRV") or "127.0.0.1:19876"
COUNT = int(os.environ.get("FERRY_INTEROP_COUNT", "5000"))
QUEUES = 4
CLUSTER = os.environ.get("FERRY_ROCKETMQ_CLUSTER") or "ferry-a"
TOOL = os.environ.get("FERRY_INTEROP_TOOL", "")
JAR = os.environ.get("FERRY_INTEROP_JAR", "")
JAVA = os.environ.get("FERRY_INTEROP_JAVA") or "java"
WORK = os.environ.get("FERRY_INTEROP_WORK") or os.path.join(os.getcwd(), "work")
BROKER_VERSION = os.environ.get("FERRY_ROCKETMQ_VERSION") or "5.3.3"
JAVA_CLIENT_VERSION = os.environ.get("FERRY_INTEROP_JAVA_CLIENT_VERSION") or "5.3.3"
BROKER_LINE = tuple(int(x) for x in BROKER_VERSION.split(".")[:2])

# Properties every message must carry with the same value on both sides.
USER_PROPS = ("seq",)
# Properties a client or the broker adds per message or per delivery; their values differ by
# nature (ids, offsets, times), so only their presence is compared.
VOLATILE_PROPS = {"UNIQ_KEY", "MIN_OFFSET", "MAX_OFFSET", "CONSUME_START_TIME", "TRACE_ON",
                  "CLUSTER", "MSG_REGION", "WAIT"}

# Keys a comparison may see on one side only: {comparison kind: {key: reason}}, for the first
# and the second side of compare_sides. Any other key present on one side only fails the test.
# Kinds: "ferry_vs_java" (ferry's single sends first, the Java client's second; no difference
# on any version), "consumers" (ferry's consumer first, the Java consumer second, the same
# stored messages),
# "single_vs_batch" (one producer's single sends first, its batches second),
# "ferry_vs_java_batch" (ferry's batches first, the Java client's second, same Java consumer).
CONSUMER_ADDS = "the Java consumer sets MIN_OFFSET/MAX_OFFSET on every message from the pull " \
                "response; ferry's consumer does not (every version)"
KNOWN_ONLY_FIRST = {"ferry_vs_java": {}, "consumers": {}, "single_vs_batch": {},
                    "ferry_vs_java_batch": {}}
KNOWN_ONLY_SECOND = {"ferry_vs_java": {},
                     "consumers": {"MIN_OFFSET": CONSUMER_ADDS, "MAX_OFFSET": CONSUMER_ADDS},
                     "single_vs_batch": {}, "ferry_vs_java_batch": {}}
if BROKER_LINE < (5, 0):
    # 4.9.x SendMessageProcessor removes WAIT from a single message before storing it, but the
    # batch path appends the wrapper's properties (WAIT=true, from either client) to each
    # batched message.
    KNOWN_ONLY_SECOND["single_vs_batch"]["WAIT"] = \
        "4.9.x stores single messages without WAIT, batched ones with the wrapper's WAIT"
if BROKER_LINE >= (5, 5):
    # 5.5.x stores a batch's messages with only the properties each carries inside the batch
    # body: the broker adds no CLUSTER/MSG_REGION/TRACE_ON and no longer appends the wrapper's
    # properties, unlike single sends and unlike 4.9.x/5.3.x brokers. (WAIT travels inside the
    # batch body from both clients.)
    for k in ("CLUSTER", "MSG_REGION", "TRACE_ON"):
        KNOWN_ONLY_FIRST["single_vs_batch"][k] = \
            "5.5.x adds broker properties to single messages only"

failures = []


def check(cond, msg):
    if not cond:
        failures.append(msg)
    return cond


def log(msg):
    print(msg, flush=True)


def expected_body(seed, seq):
    """Same formula as Payload.body (Java) and interopBody (C++)."""
    n = 8 + (seq * 131 + seed) % 97
    return bytes(0 if i % 5 == 0 else (seq * 31 + i * 17 + seed * 7) % 256 for i in range(n))


def namesrv_reachable():
    host, port = NAMESRV.split(";")[0].split(",")[0].rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=5):
            return True
    except OSError as e:
        log(f"FAIL: RocketMQ NameServer {NAMESRV} unreachable ({e}); start it with "
            "scripts/services/rocketmq start (scripts/test rocketmq does)")
        return False


last_stderr = ""


def run(cmd, what, timeout=300):
    global last_stderr
    t0 = time.monotonic()
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout)
    dt = time.monotonic() - t0
    last_stderr = p.stderr.decode("utf-8", "replace")
    rows = []
    for line in p.stdout.decode("utf-8", "replace").splitlines():
        if line.startswith("{"):
            rows.append(json.loads(line))
    log(f"{what}: exit {p.returncode}, {len(rows)} lines, {dt:.1f}s")
    if p.returncode != 0:
        log(p.stderr.decode("utf-8", "replace")[-3000:])
    return p.returncode, rows, dt


def java(*args):
    return [JAVA, "-Xms64m", "-Xmx256m", "-XX:TieredStopAtLevel=1",
            f"-Drocketmq.client.logRoot={WORK}/java-logs", f"-Duser.home={WORK}",
            "-cp", f"{JAR}:{os.path.join(os.path.dirname(JAR), 'lib', '*')}",
            "ferry.interop.Main", *args]


def create_topic(topic):
    rc, _, _ = run([TOOL, "create-topic", "--namesrv", NAMESRV, "--topic", topic,
                    "--queues", str(QUEUES), "--cluster", CLUSTER], f"create-topic {topic}")
    return check(rc == 0, f"create-topic {topic} failed (exit {rc})")


def check_produced(name, rows):
    """The producer's report: one row per seq, queue seq % QUEUES, offsets 0.. per queue."""
    ok = check(len(rows) == COUNT, f"{name}: producer reported {len(rows)} of {COUNT} sends")
    by_seq = {r["seq"]: r for r in rows}
    ok &= check(sorted(by_seq) == list(range(len(rows))), f"{name}: producer seqs not 0..n-1")
    next_off = {}
    for r in rows:
        q = r["queue"]
        if not check(q == r["seq"] % QUEUES, f"{name}: seq {r['seq']} went to queue {q}"):
            return by_seq
        exp = next_off.get(q, 0)
        if not check(r["offset"] == exp,
                     f"{name}: seq {r['seq']} queue {q} offset {r['offset']}, expected {exp}"):
            return by_seq
        next_off[q] = exp + 1
    return by_seq


def check_consumed(name, seed, rows):
    """Every seq exactly once with the expected content; per queue, increasing offsets and seqs."""
    seen = {}
    bad = 0
    for r in rows:
        seq_s = (r.get("props") or {}).get("seq")
        if not check(seq_s is not None and seq_s.isdigit(),
                     f"{name}: message at {r['queue']}/{r['offset']} has no seq property"):
            bad += 1
            continue
        seq = int(seq_s)
        if seq in seen:
            check(False, f"{name}: seq {seq} delivered twice ({seen[seq]['queue']}/"
                  f"{seen[seq]['offset']} and {r['queue']}/{r['offset']})")
            bad += 1
            continue
        seen[seq] = r
        body = bytes.fromhex(r["body_hex"])
        exp = expected_body(seed, seq)
        if not check(body == exp, f"{name}: seq {seq} body differs: got {body.hex()[:48]}.. "
                     f"expected {exp.hex()[:48]}.."):
            bad += 1
        if not check(r["tags"] == f"T{seq % 3}", f"{name}: seq {seq} tags {r['tags']!r}"):
            bad += 1
        if not check(r["keys"] == f"k{seq}", f"{name}: seq {seq} keys {r['keys']!r}"):
            bad += 1
        if not check(r["queue"] == seq % QUEUES, f"{name}: seq {seq} in queue {r['queue']}"):
            bad += 1
        if bad > 20:
            check(False, f"{name}: too many differences, stopping")
            break
    missing = [s for s in range(COUNT) if s not in seen]
    check(not missing, f"{name}: {len(missing)} seqs never consumed, first {missing[:10]}")
    extra = [s for s in seen if s >= COUNT]
    check(not extra, f"{name}: unexpected seqs {sorted(extra)[:10]}")
    per_queue = {}
    for r in rows:  # delivery order within a queue
        per_queue.setdefault(r["queue"], []).append(r)
    for q, lst in sorted(per_queue.items()):
        offs = [r["offset"] for r in lst]
        seqs = [int(r["props"].get("seq", -1)) for r in lst]
        check(offs == sorted(set(offs)), f"{name}: queue {q} offsets not strictly increasing")
        check(offs == list(range(offs[0], offs[0] + len(offs))) if offs else True,
              f"{name}: queue {q} offsets have gaps")
        check(seqs == sorted(seqs), f"{name}: queue {q} seq order not preserved")
        log(f"{name}: queue {q}: {len(lst)} messages, offsets {offs[0]}..{offs[-1]}")
    return seen


def check_offsets_match(name, produced, consumed, batch=0):
    """(queue, offset) reported by the producer == (queue, offset) seen by the consumer."""
    diff = [s for s, p in produced.items()
            if s in consumed and (p["queue"], p["offset"]) !=
            (consumed[s]["queue"], consumed[s]["offset"])]
    check(not diff, f"{name}: {len(diff)} seqs at another (queue, offset) than the producer "
          f"reported, e.g. " + ", ".join(
              f"seq {s}: produced {produced[s]['queue']}/{produced[s]['offset']} consumed "
              f"{consumed[s]['queue']}/{consumed[s]['offset']}" for s in diff[:5]))
    # The consumer's msgId for a message is its UNIQ_KEY, which the producer reported as msg_id.
    ids = [s for s, p in produced.items()
           if s in consumed and p.get("msg_id") != consumed[s].get("msg_id")]
    if not batch:
        check(not ids, f"{name}: {len(ids)} msg ids differ from the producer's, e.g. seq "
              f"{ids[:1]}")
        return None
    # Batches: summarise how ids behave, for comparing the two clients.
    per_batch = {}
    for r in consumed.values():
        per_batch.setdefault((r["queue"], r["offset"] // batch), set()).add(r["msg_id"])
    shared = all(len(v) == 1 for v in per_batch.values())
    distinct = len({r["msg_id"] for r in consumed.values()})
    behaviour = {"ids_match_producer": not ids, "one_id_per_batch": shared}
    log(f"{name}: {distinct} distinct consumer msg ids for {len(consumed)} messages in "
        f"{len(per_batch)} batches; {behaviour}")
    return behaviour


def compare_sides(name, ferry_msgs, java_msgs, kind):
    """Same seq on two sides: identical body/tags/keys/user props and property values (but
    VOLATILE_PROPS); the same property keys apart from the KNOWN_ONLY_* entries of `kind`."""
    only_ferry, only_java, differ = set(), set(), {}
    if 0 in ferry_msgs and 0 in java_msgs:
        log(f"{name}: seq 0 properties, first: {ferry_msgs[0]['props']}")
        log(f"{name}: seq 0 properties, second: {java_msgs[0]['props']}")
    for seq, f in ferry_msgs.items():
        j = java_msgs.get(seq)
        if j is None:
            continue
        for fld in ("body_hex", "tags", "keys"):
            check(f[fld] == j[fld], f"{name}: seq {seq} {fld} differs: ferry {f[fld]!r} "
                  f"java {j[fld]!r}")
        fp, jp = f["props"], j["props"]
        only_ferry |= set(fp) - set(jp)
        only_java |= set(jp) - set(fp)
        for k in set(fp) & set(jp):
            if k not in VOLATILE_PROPS and fp[k] != jp[k]:
                differ.setdefault(k, (seq, fp[k], jp[k]))
        for k in USER_PROPS:
            check(fp.get(k) == jp.get(k), f"{name}: seq {seq} property {k} differs")
    log(f"{name}: property keys only on the first: {sorted(only_ferry)}")
    log(f"{name}: property keys only on the second: {sorted(only_java)}")
    log(f"{name}: same key, different value (non-volatile): {differ}")
    # The property set a consumer sees must not depend on which client produced (or read) the
    # message, apart from the known differences of this kind of comparison.
    known_first = KNOWN_ONLY_FIRST[kind]
    known_second = KNOWN_ONLY_SECOND[kind]
    for k in sorted((only_ferry & set(known_first)) | (only_java & set(known_second))):
        log(f"{name}: {k} on one side only, known: {known_first.get(k) or known_second.get(k)}")
    check(not (only_ferry - set(known_first)),
          f"{name}: properties only on the first: {sorted(only_ferry - set(known_first))}")
    check(not (only_java - set(known_second)),
          f"{name}: properties only on the second: {sorted(only_java - set(known_second))}")
    check(not differ, f"{name}: property values differ: {differ}")


def main():
    for what, path in (("FERRY_INTEROP_TOOL", TOOL), ("FERRY_INTEROP_JAR", JAR)):
        if not path or not os.path.exists(path):
            log(f"FAIL: {what}={path!r} does not exist (build the tests/interop targets)")
            return 1
    client_jar = os.path.join(os.path.dirname(JAR), "lib",
                              f"rocketmq-client-{JAVA_CLIENT_VERSION}.jar")
    if not os.path.exists(client_jar):
        log(f"FAIL: {client_jar} missing: {JAR} is not built against the Java client "
            f"{JAVA_CLIENT_VERSION}")
        return 1
    if not namesrv_reachable():
        return 1
    os.makedirs(WORK, exist_ok=True)
    run_id = f"{int(time.time())}-{random.randrange(10**6)}"
    seed = random.randrange(1, 10**6)
    log(f"namesrv {NAMESRV} (cluster {CLUSTER}, broker {BROKER_VERSION}), Java client "
        f"{JAVA_CLIENT_VERSION}, {COUNT} messages, seed {seed}, run {run_id}")

    # (a) + (b): ferry -> Java.
    topic_a = f"ferry-interop-a-{run_id}"
    if not create_topic(topic_a):
        return report()
    rc, prod_rows, dt = run([TOOL, "produce", "--namesrv", NAMESRV, "--topic", topic_a,
                             "--count", str(COUNT), "--seed", str(seed)], "ferry produce")
    check(rc == 0, f"ferry produce exited {rc}")
    log(f"ferry produce: {COUNT / dt:.0f} msg/s (sync, one at a time, incl. process start)")
    ferry_produced = check_produced("ferry produce", prod_rows)
    rc, cons_rows, _ = run(java("consume", "--namesrv", NAMESRV, "--topic", topic_a,
                                "--group", f"ferry-interop-g-{run_id}-a", "--count", str(COUNT),
                                "--timeout-ms", "120000", "--linger-ms", "3000"),
                           "java consume (ferry's messages)")
    check(rc == 0, f"java consume of ferry's messages exited {rc}")
    ferry_msgs = check_consumed("(a) ferry->java", seed, cons_rows)
    check_offsets_match("(b) ferry offsets", ferry_produced, ferry_msgs)

    # (c): Java -> Java, compared with ferry's messages.
    topic_c = f"ferry-interop-c-{run_id}"
    if not create_topic(topic_c):
        return report()
    rc, jprod_rows, dt = run(java("produce", "--namesrv", NAMESRV, "--topic", topic_c,
                                  "--count", str(COUNT), "--seed", str(seed)), "java produce")
    check(rc == 0, f"java produce exited {rc}")
    log(f"java produce: {COUNT / dt:.0f} msg/s (sync, one at a time, incl. JVM start)")
    java_produced = check_produced("java produce", jprod_rows)
    rc, jcons_rows, _ = run(java("consume", "--namesrv", NAMESRV, "--topic", topic_c,
                                 "--group", f"ferry-interop-g-{run_id}-c", "--count", str(COUNT),
                                 "--timeout-ms", "120000", "--linger-ms", "3000"),
                            "java consume (Java's messages)")
    check(rc == 0, f"java consume of Java's messages exited {rc}")
    java_msgs = check_consumed("(c) java->java", seed, jcons_rows)
    check_offsets_match("(c) java offsets", java_produced, java_msgs)
    compare_sides("(c) java vs ferry", ferry_msgs, java_msgs, "ferry_vs_java")

    # (d): ferry batches -> Java.
    topic_d = f"ferry-interop-d-{run_id}"
    if not create_topic(topic_d):
        return report()
    rc, bprod_rows, dt = run([TOOL, "produce", "--namesrv", NAMESRV, "--topic", topic_d,
                              "--count", str(COUNT), "--seed", str(seed), "--batch", "32"],
                             "ferry produce --batch 32")
    check(rc == 0, f"ferry batch produce exited {rc}")
    log(f"ferry batch produce: {COUNT / dt:.0f} msg/s (sync batches of 32, incl. process start)")
    batch_produced = check_produced("ferry batch produce", bprod_rows)
    rc, bcons_rows, _ = run(java("consume", "--namesrv", NAMESRV, "--topic", topic_d,
                                 "--group", f"ferry-interop-g-{run_id}-d", "--count", str(COUNT),
                                 "--timeout-ms", "120000", "--linger-ms", "3000"),
                            "java consume (ferry's batches)")
    check(rc == 0, f"java consume of ferry's batches exited {rc}")
    batch_msgs = check_consumed("(d) ferry batch->java", seed, bcons_rows)
    ferry_ids = check_offsets_match("(d) ferry batch offsets", batch_produced, batch_msgs, 32)
    compare_sides("(d) ferry single vs ferry batch", ferry_msgs, batch_msgs, "single_vs_batch")

    # (e): Java batches -> Java, compared with ferry's batches.
    topic_e = f"ferry-interop-e-{run_id}"
    if not create_topic(topic_e):
        return report()
    rc, jbprod_rows, dt = run(java("produce", "--namesrv", NAMESRV, "--topic", topic_e,
                                   "--count", str(COUNT), "--seed", str(seed), "--batch", "32"),
                              "java produce --batch 32")
    check(rc == 0, f"java batch produce exited {rc}")
    log(f"java batch produce: {COUNT / dt:.0f} msg/s (sync batches of 32, incl. JVM start)")
    jbatch_produced = check_produced("java batch produce", jbprod_rows)
    rc, jbcons_rows, _ = run(java("consume", "--namesrv", NAMESRV, "--topic", topic_e,
                                  "--group", f"ferry-interop-g-{run_id}-e", "--count", str(COUNT),
                                  "--timeout-ms", "120000", "--linger-ms", "3000"),
                             "java consume (Java's batches)")
    check(rc == 0, f"java consume of Java's batches exited {rc}")
    jbatch_msgs = check_consumed("(e) java batch->java", seed, jbcons_rows)
    java_ids = check_offsets_match("(e) java batch offsets", jbatch_produced, jbatch_msgs, 32)
    compare_sides("(e) ferry batch vs java batch", batch_msgs, jbatch_msgs, "ferry_vs_java_batch")
    check(ferry_ids == {"ids_match_producer": True, "one_id_per_batch": False},
          f"(d) ferry's batch messages do not keep their own ids: {ferry_ids} (java: {java_ids})")
    log(f"(e) batch ids of the Java client {JAVA_CLIENT_VERSION} on broker {BROKER_VERSION} "
        f"(reported, not required): {java_ids}")

    # (f): Java -> ferry: ferry's consumer reads the Java producer's messages of (c).
    rc, fcons_rows, dt = run([TOOL, "consume", "--namesrv", NAMESRV, "--topic", topic_c,
                              "--group", f"ferry-interop-g-{run_id}-f", "--count", str(COUNT),
                              "--idle-ms", "3000", "--timeout-ms", "120000"],
                             "ferry consume (Java's messages)")
    check(rc == 0, f"ferry consume of Java's messages exited {rc}")
    fjava_msgs = check_consumed("(f) java->ferry", seed, fcons_rows)
    check_offsets_match("(f) java offsets seen by ferry", java_produced, fjava_msgs)
    compare_sides("(f) ferry consumer vs java consumer", fjava_msgs, java_msgs, "consumers")
    # ... and Java's batches (e), which the broker stores as one batch each.
    rc, fbcons_rows, _ = run([TOOL, "consume", "--namesrv", NAMESRV, "--topic", topic_e,
                              "--group", f"ferry-interop-g-{run_id}-fb", "--count", str(COUNT),
                              "--idle-ms", "3000", "--timeout-ms", "120000"],
                             "ferry consume (Java's batches)")
    check(rc == 0, f"ferry consume of Java's batches exited {rc}")
    fjb_msgs = check_consumed("(f) java batch->ferry", seed, fbcons_rows)
    compare_sides("(f) ferry vs java consumer of Java batches", fjb_msgs, jbatch_msgs, "consumers")

    # (g): committed group offsets seen by the other client.
    check_handover(run_id, seed, "ferry", "java")
    check_handover(run_id, seed, "java", "ferry")
    return report()


def consume_cmd(side, topic, group, count):
    if side == "ferry":
        return [TOOL, "consume", "--namesrv", NAMESRV, "--topic", topic, "--group", group,
                "--count", str(count), "--idle-ms", "3000", "--timeout-ms", "120000"]
    return java("consume", "--namesrv", NAMESRV, "--topic", topic, "--group", group,
                "--count", str(count), "--timeout-ms", "120000", "--linger-ms", "3000")


def check_handover(run_id, seed, first, second):
    """`first` consumes the first half of a topic in group G and commits; after the second half
    is produced, `second` (same group G) must get exactly the second half: it resumed at the
    offsets `first` committed, per queue, without a gap or an overlap."""
    name = f"(g) {first}->{second} offsets"
    topic = f"ferry-interop-g-{first}-{run_id}"
    group = f"ferry-interop-gg-{first}-{run_id}"
    if not create_topic(topic):
        return
    half = COUNT // 2
    rc, _, _ = run([TOOL, "produce", "--namesrv", NAMESRV, "--topic", topic, "--count", str(half),
                    "--seed", str(seed), "--batch", "16"], f"{name}: produce first half")
    check(rc == 0, f"{name}: produce exited {rc}")
    rc, rows1, _ = run(consume_cmd(first, topic, group, half), f"{name}: {first} consumes")
    check(rc == 0, f"{name}: {first} consume exited {rc}")
    seqs1 = sorted(int(r["props"]["seq"]) for r in rows1)
    check(seqs1 == list(range(half)), f"{name}: {first} read {len(seqs1)} messages, not seqs 0..{half - 1}")
    if first == "java":
        # The Java client persists commits one-way; the tool also writes them synchronously.
        synced = [l for l in last_stderr.splitlines() if l.startswith("committed ")]
        log(f"{name}: java wrote {len(synced)} queue offsets synchronously")
        check(len(synced) == QUEUES, f"{name}: java wrote {len(synced)} offsets, not {QUEUES}")
    rc, _, _ = run([TOOL, "produce", "--namesrv", NAMESRV, "--topic", topic, "--count",
                    str(COUNT - half), "--seed", str(seed), "--batch", "16", "--first-seq", str(half)],
                   f"{name}: produce second half")
    check(rc == 0, f"{name}: produce exited {rc}")
    rc, rows2, _ = run(consume_cmd(second, topic, group, COUNT - half), f"{name}: {second} consumes")
    check(rc == 0, f"{name}: {second} consume exited {rc}")
    seqs2 = sorted(int(r["props"]["seq"]) for r in rows2)
    overlap = [s for s in seqs2 if s < half]
    check(not overlap, f"{name}: {second} re-read {len(overlap)} messages {first} had committed, "
          f"first {overlap[:5]}")
    check(seqs2 == list(range(half, COUNT)) or overlap,
          f"{name}: {second} read {len(seqs2)} messages, not exactly seqs {half}..{COUNT - 1}")
    for r in rows2:
        exp = expected_body(seed, int(r["props"]["seq"]))
        if not check(bytes.fromhex(r["body_hex"]) == exp, f"{name}: body of seq {r['props']['seq']} differs"):
            break
    log(f"{name}: {first} committed {len(seqs1)}, {second} resumed with {len(seqs2)} "
        f"(overlap {len(overlap)})")


def report():
    if failures:
        log(f"FAILED: {len(failures)} check(s)")
        for f in failures[:50]:
            log(f"  - {f}")
        return 1
    log("PASSED")
    return 0


if __name__ == "__main__":
    sys.exit(main())
