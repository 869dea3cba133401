"""The kafka-replicate scenario of bench/run: Kafka cluster A -> cluster B replication by ferry's
KafkaReplicator, by Apache Kafka's MirrorMaker 2 and by a minimal relay written directly on
librdkafka (bench/kafka/kafka_relay: the limit), in the same run, on the same two brokers
(scripts/services/kafka start all; started here if not running, stopped at the end only then).

Per record size (100 B and 1 KB values), each contender copies its own freshly produced topic of N
records (4 partitions, kafka_tool produce) so none reads another's warm cache:
  - ferry: a fresh standalone worker (release build, embedded backbone, temp data dir) gets a
    KafkaReplicator (tasks.max 1, at-least-once, prefix policy); the clock runs from the connector
    POST until B's copy holds N records (summed high watermarks, polled every 0.2 s);
  - MirrorMaker 2: `org.apache.kafka.connect.mirror.MirrorMaker` (dedicated mode, the jars of
    scripts/services/kafka, the heap flags of connect-mirror-maker.sh: -Xms256M -Xmx2G), A->B for
    that topic only, tasks.max 1, internal topics with replication factor 1; the clock runs from
    the JVM's launch (MM2 has no other start signal) until B's copy holds N;
  - relay: kafka_relay, the clock from its launch until B's copy holds N (polled as for ferry; its
    own launch-to-last-acknowledgement figure is reported as relay_seconds).
The target topic (4 partitions) is created on B before every contender's clock starts: the relay
cannot create topics, so no contender's time includes creating one.
Reported per contender: seconds, msgs_per_s, seconds_to_first (start to the first record on B),
msgs_per_s_after_first (the rate once records flow: start-up excluded), cpu_s_per_million
(user+system of the process over the run), peak_rss_mb (VmHWM). Ratios: ferry/mm2 and ferry/relay
for rates, mm2/ferry for CPU and RSS.

Standard library only.
"""
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SERVICE = os.path.join(ROOT, "scripts", "services", "kafka")
os.environ.setdefault("FERRY_BIN", os.path.join(ROOT, "build", "release", "apps", "ferry", "ferry"))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from harness import Worker, wait_until  # noqa: E402

A = "127.0.0.1:" + os.environ.get("KAFKA_PORT", "19092")
B = "127.0.0.1:" + os.environ.get("KAFKA_B_PORT", "29092")
SCENARIO = "kafka-replicate"
CLK = os.sysconf("SC_CLK_TCK")
# FERRY_KREPL_CONTENDERS=ferry,relay leaves MirrorMaker 2 out (its JVM start costs ~14 s a run) while
# tuning; the published figures run all three.
CONTENDERS = set(os.environ.get("FERRY_KREPL_CONTENDERS", "ferry,mirrormaker2,relay").split(","))


def log(msg):
    print(f"bench: {SCENARIO}: {msg}", file=sys.stderr, flush=True)


def binary(name, sub):
    return os.environ.get(f"FERRY_{name.upper()}", os.path.join(ROOT, "build", "release", sub, name))


def cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK


def hwm(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def tool(*args, timeout=600):
    p = subprocess.run([binary("kafka_tool", "tests/kafka"), *args], capture_output=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"kafka_tool {' '.join(args)}: {p.stderr.decode()[-500:]}")
    return p.stdout.decode()


def end_of(bootstrap, topic):
    p = subprocess.run([binary("kafka_tool", "tests/kafka"), "ends", "--bootstrap", bootstrap, "--topic", topic],
                       capture_output=True, timeout=60)
    if p.returncode != 0:
        return 0
    return json.loads(p.stdout.decode().strip().splitlines()[-1])["end"]


def running(cluster):
    return subprocess.run([SERVICE, "status", cluster], capture_output=True).returncode == 0


# Topics this run made (cluster, name), deleted at its end: a 1 KB x 500,000 run leaves ~1 GB per
# contender on each cluster otherwise, and runs add up to a full disk.
CREATED = []


def preload(n, payload):
    topic = f"krb-{uuid.uuid4().hex[:8]}"
    CREATED.extend([(A, topic), (B, f"A.{topic}")])
    tool("produce", "--bootstrap", A, "--topic", topic, "--count", str(n), "--partitions", "4",
         "--payload", str(payload))
    return topic


def watch_end(target, n, t0, timeout=900):
    """Polls B until `target` holds n records; returns (seconds, seconds_to_first). Every
    contender is timed this way, so the polling's overshoot is the same for all."""
    first = None
    deadline = time.time() + timeout
    while time.time() < deadline:
        e = end_of(B, target)
        if e > 0 and first is None:
            first = time.time() - t0
        if e >= n:
            return time.time() - t0, first
        time.sleep(0.2)
    raise RuntimeError(f"{target} did not reach {n} records on B within {timeout} s")


def watch(pid, target, n, t0, timeout=900):
    """watch_end, then the process's CPU and peak RSS: (seconds, seconds_to_first, cpu, hwm)."""
    seconds, first = watch_end(target, n, t0, timeout)
    return seconds, first, cpu_s(pid), hwm(pid)


def create_target(topic):
    """The target topic on B (4 partitions, as the source), made before a contender's clock starts."""
    tool("produce", "--bootstrap", B, "--topic", f"A.{topic}", "--count", "0", "--partitions", "4")


def figures(n, seconds, first, cpu, rss):
    return {"seconds": round(seconds, 2), "msgs_per_s": round(n / seconds),
            "seconds_to_first": round(first, 2),
            "msgs_per_s_after_first": round(n / max(seconds - first, 1e-3)),
            "cpu_s_per_million": round(cpu * 1e6 / n, 2), "peak_rss_mb": round(rss / 2**20, 1)}


def run_ferry(n, payload):
    topic = preload(n, payload)
    d = tempfile.mkdtemp(prefix="ferry-bench-krepl-")
    # FERRY_KREPL_LOG=<file>: the worker logs at info and its log is kept there (tuning runs).
    keep = os.environ.get("FERRY_KREPL_LOG")
    w = Worker(d, {"log.level": "info" if keep else "warn", "offset.flush.interval.ms": "1000"})
    w.start()
    create_target(topic)
    try:
        t0 = time.time()
        w.ok("POST", "/connectors", {"name": f"repl-{uuid.uuid4().hex[:8]}", "config": {
            "connector.class": "KafkaReplicator", "tasks.max": "1", "source.bootstrap.servers": A,
            "target.bootstrap.servers": B, "source.alias": "A", "target.alias": "B", "topics": topic}})
        return figures(n, *watch(w.proc.pid, f"A.{topic}", n, t0))
    finally:
        w.stop()
        if keep:
            shutil.copyfile(w.log_path, keep)
        shutil.rmtree(d, ignore_errors=True)


def run_mm2(n, payload):
    topic = preload(n, payload)
    create_target(topic)
    d = tempfile.mkdtemp(prefix="ferry-bench-mm2-")
    props = os.path.join(d, "mm2.properties")
    with open(props, "w") as f:
        f.write(f"""clusters = A, B
A.bootstrap.servers = {A}
B.bootstrap.servers = {B}
A->B.enabled = true
A->B.topics = {topic}
B->A.enabled = false
tasks.max = 1
replication.factor = 1
checkpoints.topic.replication.factor = 1
heartbeats.topic.replication.factor = 1
offset-syncs.topic.replication.factor = 1
offset.storage.replication.factor = 1
status.storage.replication.factor = 1
config.storage.replication.factor = 1
sync.topic.acls.enabled = false
""")
    classpath = subprocess.run([SERVICE, "classpath"], capture_output=True, text=True, check=True).stdout.strip()
    log4j = subprocess.run([SERVICE, "log4j"], capture_output=True, text=True, check=True).stdout.strip()
    jvm = ["java", "-Xms256M", "-Xmx2G", "-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
           "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent", "-XX:MaxInlineLevel=15",
           "-Djava.awt.headless=true", f"-Dlog4j2.configurationFile={log4j}", "-cp", classpath,
           "org.apache.kafka.connect.mirror.MirrorMaker", props, "--clusters", "B"]
    with open(os.path.join(d, "mm2.log"), "wb") as out:
        t0 = time.time()
        p = subprocess.Popen(jvm, stdout=out, stderr=subprocess.STDOUT, cwd=d)
    try:
        return figures(n, *watch(p.pid, f"A.{topic}", n, t0))
    except Exception:
        with open(os.path.join(d, "mm2.log"), "rb") as f:
            log("MirrorMaker 2 log tail:\n" + f.read()[-3000:].decode(errors="replace"))
        raise
    finally:
        p.terminate()
        try:
            p.wait(30)
        except subprocess.TimeoutExpired:
            p.kill()
        shutil.rmtree(d, ignore_errors=True)


def run_relay(n, payload):
    topic = preload(n, payload)
    create_target(topic)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.time()
    p = subprocess.Popen([binary("kafka_relay", "bench/kafka"), "--source", A, "--target", B, "--topic", topic,
                          "--target-topic", f"A.{topic}", "--count", str(n)], stdout=subprocess.PIPE)
    # Timed as ferry is, by polling B (the relay's own figure, launch to last acknowledgement, is
    # reported as relay_seconds: it has no polling overshoot).
    seconds, first = watch_end(f"A.{topic}", n, t0)
    out = p.communicate()[0].decode()
    if p.returncode != 0:
        raise RuntimeError(f"kafka_relay failed: {out}")
    res = json.loads(out.strip().splitlines()[-1])
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"seconds": round(seconds, 2), "msgs_per_s": round(n / seconds), "seconds_to_first": round(first, 2),
            "msgs_per_s_after_first": round(n / max(seconds - first, 1e-3)),
            "relay_seconds": round(res["seconds"], 2), "cpu_s_per_million": round(cpu * 1e6 / n, 2),
            "peak_rss_mb": round(res["peak_rss_kb"] / 1024, 1)}


def warm_up():
    """A 10-record relay run before any contender, outside every clock: the first consumer group
    on a fresh cluster creates __consumer_offsets (50 partitions), and whoever ran first paid
    for it (ferry, 1.5 s to its first copy in one run on clusters the bench had just started)."""
    topic = preload(10, 10)
    tool("produce", "--bootstrap", B, "--topic", f"A.{topic}", "--count", "0", "--partitions", "4")
    p = subprocess.run([binary("kafka_relay", "bench/kafka"), "--source", A, "--target", B, "--topic", topic,
                        "--target-topic", f"A.{topic}", "--count", "10"], capture_output=True, timeout=120)
    if p.returncode != 0:
        raise RuntimeError(f"kafka_relay warm-up failed: {p.stdout.decode()[-500:]} {p.stderr.decode()[-500:]}")


def ratio(a, b, digits=2):
    return round(a / b, digits) if a and b else None


def median(xs):
    xs = sorted(x for x in xs if x is not None)
    return xs[len(xs) // 2] if xs else None


def delete_created():
    for cluster, topic in CREATED:
        try:
            tool("delete", "--bootstrap", cluster, "--topic", topic)
        except Exception as e:  # cleanup only: reported, never a result
            log(f"could not delete {topic}: {e}")
    CREATED.clear()


def scenario(n, sizes=(100, 1024), rounds=3):
    """Per size, `rounds` rounds of every contender, the order rotated each round (the machine's
    state drifts: runs of one command differ by up to +-20 %). Per contender the round with the
    median msgs/s is reported, with every round's msgs/s in msgs_per_s_rounds; each ratio is the
    median of the per-round ratios (every round's in *_rounds)."""
    started = []
    for c in ("A", "B"):
        if not running(c):
            log(f"starting Kafka cluster {c}")
            subprocess.run([SERVICE, "start", c], check=True)
            started.append(c)
    results = []
    order = [("ferry", run_ferry), ("mirrormaker2", run_mm2), ("relay", run_relay)]
    try:
        log("warm-up: a 10-record relay run (creates the clusters' group offsets topic)")
        warm_up()
        for payload in sizes:
            per_round = []
            for k in range(rounds):
                rr = {}
                for name, fn in order[k % len(order):] + order[:k % len(order)]:
                    if name not in CONTENDERS:
                        rr[name] = {"error": "not run (FERRY_KREPL_CONTENDERS)"}
                        continue
                    log(f"round {k + 1}/{rounds}: {name}, {payload} B x {n}")
                    try:
                        rr[name] = fn(n, payload)
                    except Exception as e:  # a peer failing is reported, not turned into numbers
                        rr[name] = {"error": str(e)[:500]}
                delete_created()  # ~1 GB per contender and size at 1 KB
                f, m, l = rr["ferry"], rr["mirrormaker2"], rr["relay"]
                rr["ratio"] = {
                    "ferry_vs_mm2_msgs_per_s": ratio(f.get("msgs_per_s"), m.get("msgs_per_s")),
                    "ferry_vs_mm2_msgs_per_s_after_first": ratio(f.get("msgs_per_s_after_first"),
                                                                 m.get("msgs_per_s_after_first")),
                    "mm2_vs_ferry_cpu_per_million": ratio(m.get("cpu_s_per_million"), f.get("cpu_s_per_million")),
                    "mm2_vs_ferry_peak_rss": ratio(m.get("peak_rss_mb"), f.get("peak_rss_mb")),
                    "ferry_vs_relay_msgs_per_s": ratio(f.get("msgs_per_s"), l.get("msgs_per_s")),
                    "ferry_vs_relay_cpu_per_million": ratio(f.get("cpu_s_per_million"), l.get("cpu_s_per_million")),
                }
                per_round.append(rr)
            r = {"scenario": SCENARIO, "payload_bytes": payload, "records": n, "rounds": rounds}
            for name, _ in order:
                ok = [rr[name] for rr in per_round if "msgs_per_s" in rr[name]]
                if not ok:
                    r[name] = per_round[0][name]
                    continue
                pick = sorted(ok, key=lambda x: x["msgs_per_s"])[len(ok) // 2]
                r[name] = dict(pick, msgs_per_s_rounds=[x["msgs_per_s"] for x in ok])
            r["ratio"] = {}
            for key in per_round[0]["ratio"]:
                values = [rr["ratio"][key] for rr in per_round]
                r["ratio"][key] = median(values)
                if any(v is not None for v in values):
                    r["ratio"][key + "_rounds"] = values
            results.append(r)
    finally:
        delete_created()
        for c in started:
            subprocess.run([SERVICE, "stop", c])
    return results


if __name__ == "__main__":
    sizes = tuple(int(x) for x in os.environ.get("FERRY_KREPL_SIZES", "100,1024").split(","))
    rounds = int(os.environ.get("FERRY_KREPL_ROUNDS", "3"))
    for r in scenario(int(sys.argv[1]) if len(sys.argv) > 1 else 500_000, sizes, rounds):
        print(json.dumps(r), flush=True)
