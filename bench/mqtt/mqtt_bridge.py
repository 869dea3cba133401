"""The mqtt-bridge scenario of bench/run: ferry's MQTT <-> RocketMQ bridge against mosquitto's own
delivery rate, measured in the same run on the same mosquitto and RocketMQ (cluster A).

Clients on both MQTT ends are tests/mqtt/mqtt_tool (ferry's MqttClient; QoS 1, one connection,
500 publishes in flight; the subscriber has a persistent session created before the publisher
starts). Per run, fresh topics and a fresh standalone worker (release `ferry`, embedded backbone):

  1. mosquitto: N QoS 1 publishes as fast as the publisher goes, to one topic, one subscriber:
     messages/s from the publisher's start to the N-th arrival (mosquitto's MQTT -> MQTT limit
     with these clients);
  2. for each mode, direct (two direct connectors, no backbone hop) and backbone (two backbone
     pipelines): up = MQTTSource -> rule (first level -> RocketMQ topic, second -> tag) ->
     RocketMQSink; down = RocketMQSource -> rule (tag -> MQTT topic) -> MQTTSink. N publishes as
     fast as the publisher goes:
       up_msgs_per_s    until RocketMQ holds N (sum of the queues' max offsets, GET_MAX_OFFSET);
       loop_msgs_per_s  until the MQTT subscriber of the far end has N (two bridge hops);
       cpu_us_per_msg   the worker's user+system CPU over the loop window / N (both hops);
                        mosquitto's and the broker JVM's CPU over the same window beside it
                        (on 2 cores the three compete);
       blocked_steps    task-loop steps found blocked in a connector call (> 50 ms; each moves its
                        thread off the shared ones) over the loop window, from
                        ferry_worker_task_steps_blocked_total; latency_blocked_steps over the
                        latency window;
     then the latency at a fixed rate (--mqtt-rate, default 2,000/s, for --mqtt-latency-s
     seconds): each publish carries its send time; p50/p99/max from publish to arrival at the
     far MQTT subscriber (MQTT -> ferry -> RocketMQ -> ferry -> MQTT), and the same through
     mosquitto alone as the floor. `ferry_share`: from the connectors' ferry_task_record_latency_seconds
     histograms over the same latency window, the bucket bound (ms) holding each connector's
     p50 / p99 of the time a record spends inside the worker (read from its socket -> handed to the
     output), and their sum along the path.

Also the RocketMQ hop alone at the same rate (rmq_interop_tool latency: ferry's client sends each
message with its send time and pulls it back through the broker, no runtime): the "rocketmq"
line. Ratios: up and loop rates / mosquitto's rate, backbone / direct latency, and the direct
p99 / (2 x mosquitto alone's p99 + RocketMQ alone's p99): how far the direct bridge is from the
sum of the brokers' own tails.
$FERRY_BENCH_PERF=<file>: `perf record -g -p <worker>` (`$FERRY_BENCH_PERF_ARGS` replaces `-g`, e.g.
"--call-graph dwarf -F 499") over each throughput window into
<file>.direct and <file>.backbone. Standard library only.
"""
import json
import os
import signal
import subprocess
import sys
import time
import uuid

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
sys.path.insert(0, os.path.join(ROOT, "bench", "rocketmq"))
from harness import Worker, tmpdir, wait_until  # noqa: E402
import rocketmq_replicate as rrep  # noqa: E402

SCENARIO = "mqtt-bridge"
NS = "127.0.0.1:" + os.environ.get("ROCKETMQ_A_NAMESRV_PORT", "19876")
HOST = os.environ.get("FERRY_MQTT_HOST", "127.0.0.1")
PORT = int(os.environ.get("FERRY_MQTT_PORT", "18830"))


def log(msg):
    print(f"bench: {SCENARIO}: {msg}", file=sys.stderr, flush=True)


def pids(pattern, exact_name=False):
    p = subprocess.run(["pgrep", "-x" if exact_name else "-f", pattern], capture_output=True, text=True)
    return [int(x) for x in p.stdout.split()]


def cpu_of(pid_list):
    """{pid: CPU seconds} of the processes in pid_list that are alive."""
    out = {}
    for pid in pid_list:
        try:
            out[pid] = rrep.cpu_s(pid)
        except OSError:
            pass
    return out


def cpu_since(before):
    """CPU seconds used since cpu_of() gave `before`, by the processes alive at both readings: a
    process that exited meanwhile (an old mosquitto still saving its database after a restart)
    must not take its whole CPU time off the sum."""
    after = cpu_of(list(before))
    return sum(after[pid] - before[pid] for pid in after)


def thread_ticks(pid):
    """{tid: (name, user+system ticks)} of every thread of `pid`."""
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                raw = f.read()
        except OSError:
            continue
        name = raw[raw.index("(") + 1:raw.rindex(")")]
        fields = raw[raw.rindex(")") + 2:].split()
        out[int(tid)] = (name, int(fields[11]) + int(fields[12]))
    return out


def by_thread(before, after, n, total_s):
    """CPU µs per message of each thread over a window, in thread creation order; the executor's
    threads (task-1, task-2, ...) summed as `executor`, threads of one name numbered (#1, #2) in
    the order they were created; `exited` = the process's CPU (`total_s`) less the threads alive at
    the end: threads that ended during the window (the executor replaces a thread whose step
    blocks, e.g. a direct task's commit waiting for its sink's flush)."""
    tick_us = 1e6 / os.sysconf("SC_CLK_TCK")
    out, seen = {}, {}
    for tid in sorted(after):
        name, ticks = after[tid]
        used = (ticks - before.get(tid, (name, 0))[1]) * tick_us / n
        if name.startswith("task-") and name[5:].isdigit():
            key = "executor"
        else:
            seen[name] = seen.get(name, 0) + 1
            key = f"{name}#{seen[name]}"
        out[key] = out.get(key, 0.0) + used
    out["exited"] = max(0.0, total_s * 1e6 / n - sum(out.values()))
    return {k: round(v, 2) for k, v in out.items() if v >= 0.05}


def others():
    """mosquitto and the RocketMQ broker JVM(s): their CPU is reported next to ferry's, because on
    2 cores the three compete and the broker's share is the largest."""
    return {"mosquitto": pids("mosquitto", exact_name=True), "broker": pids("BrokerStartup")}


def tool(name):
    # $FERRY_BENCH_TOOLS: a build folder whose tests/mqtt/mqtt_tool and tests/interop/
    # rmq_interop_tool to use (the same clients for an old and a new ferry measured back to back);
    # otherwise the build folder of $FERRY_BIN.
    fb = os.environ.get("FERRY_BIN", os.path.join(ROOT, "build/release/apps/ferry/ferry"))
    build = os.environ.get("FERRY_BENCH_TOOLS") or os.path.dirname(
        os.path.dirname(os.path.dirname(os.path.abspath(fb))))
    sub = {"mqtt_tool": "tests/mqtt", "rmq_interop_tool": "tests/interop"}[name]
    path = os.path.join(build, sub, name)
    if not os.path.exists(path):
        raise RuntimeError(f"{path} missing: build the release preset with tests (scripts/build)")
    return path


def subscriber(filter_, count, summary=True, timeout_s=600):
    cid = "bench-sub-" + uuid.uuid4().hex[:10]
    base = [tool("mqtt_tool"), "consume", "--host", HOST, "--port", str(PORT), "--filter", filter_,
            "--client-id", cid]
    # Create the persistent session first so nothing published afterwards is missed.
    subprocess.run(base + ["--count", "0", "--idle-ms", "0", "--timeout-ms", "10000"],
                   capture_output=True, timeout=30, check=True)
    return subprocess.Popen(base + ["--count", str(count), "--idle-ms", "0",
                                    "--timeout-ms", str(timeout_s * 1000)] + (["--summary"] if summary else []),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)


def publisher(topic, count, rate=0, topics=1, stamp=False):
    args = [tool("mqtt_tool"), "publish", "--host", HOST, "--port", str(PORT), "--topic", topic, "--count",
            str(count), "--qos", "1", "--rate", str(rate), "--topics", str(topics)]
    return subprocess.Popen(args + (["--stamp"] if stamp else []), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)


def finish(p, what, timeout=900):
    out, err = p.communicate(timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"{what} exited {p.returncode}: {err.decode()[-800:]}")
    return json.loads(out.decode().strip().splitlines()[-1])


def mosquitto_run(n, rate=0, stamp=False):
    """Publisher -> mosquitto -> subscriber: (msgs/s from publisher start to the N-th arrival,
    the subscriber's summary)."""
    t = "bench/" + uuid.uuid4().hex[:8]
    sub = subscriber(t, n)
    mosq = others()["mosquitto"]
    c0 = cpu_of(mosq)
    t0 = time.time()
    pub = publisher(t, n, rate=rate, stamp=stamp)
    finish(pub, "publisher")
    s = finish(sub, "subscriber")
    s["mosquitto_cpu_us_per_msg"] = round(cpu_since(c0) * 1e6 / n, 2)
    return n / max(1e-9, s["last_us"] / 1e6 - t0), s


def rules(direction, run):
    if direction == "up":
        return {"alias": "bridge", "type": "MqttRocketMQBridge", "direction": "mqtt-to-rocketmq", "rules": "r",
                "rule.r.mqtt.filter": f"bin{run}/+", "rule.r.rocketmq.topic": "${level:1}",
                "rule.r.rocketmq.tag": "d${level:2}"}
    return {"alias": "bridge", "type": "MqttRocketMQBridge", "direction": "rocketmq-to-mqtt", "rules": "r",
            "rule.r.rocketmq.topic": f"bin{run}", "rule.r.mqtt.topic": f"bout{run}/${{tag}}"}


def setup_bridge(w, mode, run, linger_us=None):
    """Creates the up and down bridges for `run` in `mode`; returns the connector names.
    linger_us: mqtt.read.linger.us of both MQTT connectors (None: their default)."""
    uri = f"tcp://{HOST}:{PORT}"
    linger = {} if linger_us is None else {"mqtt.read.linger.us": str(linger_us)}
    subprocess.run([tool("rmq_interop_tool"), "create-topic", "--namesrv", NS, "--topic", f"bin{run}",
                    "--queues", "4"], capture_output=True, timeout=60, check=True)
    up_src = {"connector.class": "MQTTSource", "mqtt.server.uri": uri, "mqtt.topics": f"bin{run}/+",
              "mqtt.qos": "1", "mqtt.client.id": f"bench-up-{run}", **linger}
    dn_src = {"connector.class": "RocketMQSource", "rocketmq.namesrv": NS, "rocketmq.topics": f"bin{run}",
              "rocketmq.from": "first"}
    up_sink = {"connector.class": "RocketMQSink", "rocketmq.namesrv": NS}
    dn_sink = {"connector.class": "MQTTSink", "mqtt.server.uri": uri, "mqtt.qos": "1",
               "mqtt.client.id": f"bench-dn-{run}", **linger}
    names = []
    for d, src, sink in (("up", up_src, up_sink), ("dn", dn_src, dn_sink)):
        body = {"name": f"{d}{run}", "mode": mode, "source": src,
                "transforms": [rules("up" if d == "up" else "down", run)], "sink": sink}
        w.ok("POST", "/pipelines", body)
        names += [f"{d}{run}"] if mode == "direct" else [f"{d}{run}-source", f"{d}{run}-sink-1"]
    for n in names:
        w.wait_running(n, 60)
    return names


def latency_buckets(w):
    """ferry_task_record_latency_seconds buckets per connector (tasks summed): {name: {le: count}}."""
    status, text = w.rest("GET", "/metrics")
    if status != 200:
        raise RuntimeError(f"/metrics answered {status}")
    text = text if isinstance(text, str) else text.decode()
    out = {}
    for line in text.splitlines():
        if not line.startswith("ferry_task_record_latency_seconds_bucket{"):
            continue
        labels, value = line[line.index("{") + 1:].rsplit("} ", 1)
        kv = dict(p.split("=", 1) for p in labels.split(","))
        name, le = kv["connector"].strip('"'), kv["le"].strip('"')
        le = float("inf") if le == "+Inf" else float(le)
        out.setdefault(name, {})
        out[name][le] = out[name].get(le, 0) + float(value)
    return out


def blocked_steps(w):
    """ferry_worker_task_steps_blocked_total: task-loop steps found blocked in a connector call."""
    status, text = w.rest("GET", "/metrics")
    if status != 200:
        raise RuntimeError(f"/metrics answered {status}")
    text = text if isinstance(text, str) else text.decode()
    for line in text.splitlines():
        if line.startswith("ferry_worker_task_steps_blocked_total"):
            return float(line.rsplit(" ", 1)[1])
    return None  # a worker from before the counter existed


def steps_between(before, after):
    return None if before is None or after is None else int(after - before)


def share_quantile(before, after, q):
    """The upper bound (ms) of the bucket holding quantile q of what was observed between two
    latency_buckets() readings of one connector; None when nothing was."""
    les = sorted(after)
    delta = [after[le] - before.get(le, 0) for le in les]
    if not delta or delta[-1] <= 0:
        return None
    for le, c in zip(les, delta):
        if c >= q * delta[-1]:
            return le * 1000
    return float("inf")


def bridge_run(mode, n, rate_latency, latency_s, linger_us=None):
    d = tmpdir(f"bench-mqtt-{mode}")
    w = Worker(d)
    w.start()
    try:
        run = uuid.uuid4().hex[:8]
        setup_bridge(w, mode, run, linger_us)
        pid = w.proc.pid
        sub = subscriber(f"bout{run}/#", n)
        perf = None
        if os.environ.get("FERRY_BENCH_PERF"):
            # perf record -g of the worker over the throughput window, one file per mode.
            perf = subprocess.Popen(["perf", "record", *os.environ.get("FERRY_BENCH_PERF_ARGS", "-g").split(), "-o", f"{os.environ['FERRY_BENCH_PERF']}.{mode}",
                                     "-p", str(pid)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.5)
        blocked0 = blocked_steps(w)
        cpu0 = rrep.cpu_s(pid)
        threads0 = thread_ticks(pid)
        ext = others()
        ext0 = {k: cpu_of(v) for k, v in ext.items()}
        t0 = time.time()
        pub = publisher(f"bin{run}", n, topics=10)
        up_end = None
        while up_end is None:
            if rrep.topic_count(NS, f"bin{run}") >= n:
                up_end = time.time()
            else:
                time.sleep(0.02)
        finish(pub, "publisher")
        s = finish(sub, "far-end subscriber")
        cpu = rrep.cpu_s(pid) - cpu0
        per_thread = by_thread(threads0, thread_ticks(pid), n, cpu)
        if perf is not None:
            perf.send_signal(signal.SIGINT)
            perf.wait(timeout=120)
        out = {"up_msgs_per_s": round(n / (up_end - t0)),
               "loop_msgs_per_s": round(n / (s["last_us"] / 1e6 - t0)),
               "cpu_us_per_msg": round(cpu * 1e6 / n, 2), "cpu_us_per_msg_by_thread": per_thread,
               "blocked_steps": steps_between(blocked0, blocked_steps(w))}
        for k, v in ext.items():
            out[f"{k}_cpu_us_per_msg"] = round(cpu_since(ext0[k]) * 1e6 / n, 2)
        # Latency at a fixed rate on a second pair of bridges (fresh topics).
        run2 = uuid.uuid4().hex[:8]
        names2 = setup_bridge(w, mode, run2, linger_us)
        m = rate_latency * latency_s
        sub = subscriber(f"bout{run2}/#", m)
        hist0 = latency_buckets(w)
        blocked1 = blocked_steps(w)
        pub = publisher(f"bin{run2}", m, rate=rate_latency, topics=10, stamp=True)
        finish(pub, "latency publisher")
        s = finish(sub, "latency subscriber")
        hist1 = latency_buckets(w)
        out.update({"latency_rate": rate_latency, "latency_n": s["lat_n"], "p50_ms": s["lat_p50_us"] / 1000,
                    "p99_ms": s["lat_p99_us"] / 1000, "max_ms": s["lat_max_us"] / 1000,
                    "peak_rss_mb": round(rrep.hwm(pid) / 2**20, 1),
                    "latency_blocked_steps": steps_between(blocked1, blocked_steps(w))})
        # ferry's own share (ferry_task_record_latency_seconds: receive -> handed to the output),
        # per connector of the path as the upper bound of the bucket holding p50 / p99, and the
        # sum over the path's connectors. Backbone mode: the time records wait in the embedded log
        # between a source task and its sink task is in neither.
        share = {}
        for q, key in ((0.5, "p50"), (0.99, "p99")):
            per = {name: share_quantile(hist0.get(name, {}), hist1.get(name, {}), q) for name in names2}
            share[f"{key}_ms_le_by_connector"] = per
            share[f"{key}_ms_le_sum"] = (round(sum(per.values()), 3)
                                         if all(v is not None for v in per.values()) else None)
        out["ferry_share"] = share
        return out
    finally:
        w.stop()


def scenario(n=100_000, rate_latency=2000, latency_s=10, linger_us=None):
    for addr, what in (((HOST, PORT), "mosquitto (scripts/services/mosquitto start)"),):
        import socket
        try:
            socket.create_connection(addr, timeout=3).close()
        except OSError:
            raise RuntimeError(f"{what} is not running")
    log(f"mosquitto alone, {n} QoS 1 messages")
    mosq_rate, mosq_run = mosquitto_run(n)
    _, mosq_lat = mosquitto_run(rate_latency * latency_s, rate=rate_latency, stamp=True)
    mosq = {"scenario": SCENARIO, "system": "mosquitto", "messages": n, "msgs_per_s": round(mosq_rate),
            "mosquitto_cpu_us_per_msg": mosq_run["mosquitto_cpu_us_per_msg"],
            "latency_rate": rate_latency, "p50_ms": mosq_lat["lat_p50_us"] / 1000,
            "p99_ms": mosq_lat["lat_p99_us"] / 1000, "max_ms": mosq_lat["lat_max_us"] / 1000}
    results = [mosq]
    # The broker hop alone at the same rate (rmq_interop_tool latency: ferry's RocketMQ client,
    # send -> broker -> long-polling pull, no runtime): the floor the bridge's RocketMQ hop sits on.
    log(f"RocketMQ alone, {rate_latency}/s for {latency_s} s")
    p = subprocess.run([tool("rmq_interop_tool"), "latency", "--namesrv", NS, "--topic", "blat" + uuid.uuid4().hex[:8],
                        "--rate", str(rate_latency), "--seconds", str(latency_s)], capture_output=True, timeout=300)
    if p.returncode != 0:
        raise RuntimeError(f"rmq_interop_tool latency exited {p.returncode}: {p.stderr.decode()[-800:]}")
    rl = json.loads(p.stdout.decode().strip().splitlines()[-1])
    results.append({"scenario": SCENARIO, "system": "rocketmq", "latency_rate": rate_latency,
                    "latency_n": rl["n"], "p50_ms": round(rl["p50_ms"], 3), "p99_ms": round(rl["p99_ms"], 3),
                    "max_ms": round(rl["max_ms"], 3)})
    by_mode = {}
    for mode in ("direct", "backbone"):
        log(f"ferry bridge, {mode}, {n} QoS 1 messages")
        r = bridge_run(mode, n, rate_latency, latency_s, linger_us)
        by_mode[mode] = r
        results.append({"scenario": SCENARIO, "system": "ferry", "mode": mode, "messages": n,
                        "read_linger_us": "default" if linger_us is None else linger_us, **r,
                        "ratio": {"up_vs_mosquitto": round(r["up_msgs_per_s"] / mosq_rate, 3),
                                  "loop_vs_mosquitto": round(r["loop_msgs_per_s"] / mosq_rate, 3)}})
    results[-1]["ratio"]["p99_backbone_vs_direct"] = round(
        by_mode["backbone"]["p99_ms"] / max(1e-9, by_mode["direct"]["p99_ms"]), 3)
    results[-1]["ratio"]["p50_backbone_vs_direct"] = round(
        by_mode["backbone"]["p50_ms"] / max(1e-9, by_mode["direct"]["p50_ms"]), 3)
    # How much of the direct bridge's p99 the two brokers' own hops account for.
    floor = mosq["p99_ms"] * 2 + rl["p99_ms"]
    results[-2]["ratio"]["p99_direct_vs_brokers_alone"] = round(by_mode["direct"]["p99_ms"] / max(1e-9, floor), 3)
    return results


if __name__ == "__main__":
    for r in scenario(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000):
        print(json.dumps(r), flush=True)
