"""bench/run --scenarios jvm-host: the same Java connectors (Kafka's FileStreamSource and
FileStreamSink 4.1.1, unmodified jars) run by ferry's JVM host and by Apache Kafka Connect 4.1.1
standalone, side by side in one run on the same Kafka broker (ferry on its kafka backbone), over
the same pre-generated file of `records` lines: file -> topic (StringConverter) -> file.

Contenders, in this order:
  ferry-java    ferry with the Java connectors (worker and JVM host CPU and RSS summed)
  ferry-native  ferry with its native FileStream connectors (the same path without the JVM)
  kafka-connect Kafka Connect standalone (its JVM; the broker's CPU reported apart, as for ferry)

Reported per contender: records/s, CPU seconds per million records (process(es) only, and with
the broker), peak RSS in MB, seconds from start to REST ready; for ferry-java the CPU split into
the worker's and the JVM host's. The crossing is not isolated: ferry's native FileStream
connectors do not do the same work as Kafka's (the native sink syncs its file and saves its state
at every commit, Kafka's only flushes), so ferry-native is the same path without the JVM, not the
same work; the worker's share of ferry-java (its side of the crossing, the backbone, converters)
next to ferry-native's worker CPU bounds it. Kafka Connect's object carries the ratios against
ferry-java. Every run checks the output file holds every line."""
import os
import shutil
import subprocess
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
from harness import Worker, tmpdir  # noqa: E402
import kafka_connect as kc  # noqa: E402

PEER = "kafka-connect"
JAVA_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
JAVA_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"


def connect_file_jar(build_dir):
    """The folder holding connect-file 4.1.1 (built for the tests, else fetched with mvn)."""
    built = os.path.join(build_dir, "tests", "jvm", "plugins", "connect-file")
    if os.path.isdir(built):
        return built
    d = os.path.join(tmpdir("bench-jvm-plugins"), "connect-file")
    p = subprocess.run(["mvn", "-q", "-B", "dependency:copy", "-Dartifact=org.apache.kafka:connect-file:4.1.1",
                        f"-DoutputDirectory={d}"], capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        raise kc.PeerError(f"fetching connect-file 4.1.1: {p.stderr[-800:]}")
    return d


def children_cpu_s(pid):
    """CPU seconds of a process's children that still run (the JVM host)."""
    kids = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    return sum(kc.proc_cpu_s(int(k)) for k in kids)


def tree_hwm(pid):
    kids = subprocess.run(["pgrep", "-P", str(pid)], capture_output=True, text=True).stdout.split()
    return kc.proc_status(pid, "VmHWM") + sum(kc.proc_status(int(k), "VmHWM") for k in kids)


def figures(name, records, elapsed, cpu, bcpu, hwm, ready_s):
    return {"scenario": "jvm-host", "contender": name, "records": records,
            "msgs_per_s": round(records / elapsed), "cpu_s_per_million": round(cpu / records * 1e6, 3),
            "cpu_s_per_million_with_broker": round((cpu + bcpu) / records * 1e6, 3),
            "peak_rss_mb": round(hwm / 1e6, 1), "rest_ready_s": round(ready_s, 2)}


def ferry_run(broker, src, records, line_bytes, plugins, wait_file_size, count_lines):
    """ferry on the kafka backbone; `plugins` set: the Java connectors from it, else the natives."""
    d = tmpdir("bench-jvm-host")
    out = os.path.join(d, "sink.txt")
    topic = "jvm-host-" + uuid.uuid4().hex[:8]
    props = {"backbone": "kafka", "backbone.kafka.bootstrap.servers": broker.bootstrap,
             "backbone.topic.default.queues": "1", "file.allowed.dirs": f"{d},{os.path.dirname(src)}"}
    if plugins:
        props["plugin.path"] = plugins
    w = Worker(d, props)
    try:
        ready = w.start(timeout=120)
        pid, bpid = w.proc.pid, broker.pid()
        cpu0, jcpu0, bcpu0 = kc.proc_cpu_s(pid), children_cpu_s(pid), kc.proc_cpu_s(bpid)
        t0 = time.time()
        conv = {"key.converter": "StringConverter", "value.converter": "StringConverter"}
        # The Java classes by their full names (ferry's native ones keep the short names).
        source, sink = (JAVA_SOURCE, JAVA_SINK) if plugins else ("FileStreamSource", "FileStreamSink")
        names = ("src-" + topic, "sink-" + topic)
        w.ok("POST", "/connectors", {"name": names[0], "config": dict(conv, **{
            "connector.class": source, "file": src, "topic": topic})})
        w.ok("POST", "/connectors", {"name": names[1], "config": dict(conv, **{
            "connector.class": sink, "topics": topic, "file": out})})
        if plugins:
            for name in names:
                v = w.ok("GET", f"/connectors/{name}/status")["connector"].get("version")
                if v != "4.1.1":
                    raise AssertionError(f"ferry-java: {name} runs version {v}, not Kafka's connect-file 4.1.1")
        wait_file_size(out, records * line_bytes, 300, "ferry: all lines in the sink file")
        elapsed = time.time() - t0
        cpu, jcpu = kc.proc_cpu_s(pid) - cpu0, children_cpu_s(pid) - jcpu0
        bcpu, hwm = kc.proc_cpu_s(bpid) - bcpu0, tree_hwm(pid)
        w.stop()
        if count_lines(out) != records:
            raise AssertionError(f"ferry: sink file has {count_lines(out)} lines, expected {records}")
        r = figures("ferry-java" if plugins else "ferry-native", records, elapsed, cpu + jcpu, bcpu, hwm, ready)
        r["worker_cpu_s_per_million"] = round(cpu / records * 1e6, 3)
        if plugins:
            r["jvm_host_cpu_s_per_million"] = round(jcpu / records * 1e6, 3)
        return r
    finally:
        w.stop()
        shutil.rmtree(d, ignore_errors=True)


def connect_run(broker, src, records, line_bytes, wait_file_size, count_lines):
    topic = "jvm-host-kc-" + uuid.uuid4().hex[:8]
    broker.create_topic(topic, 1)
    d = tmpdir("bench-jvm-host-connect")
    out = os.path.join(d, "sink.txt")
    w = kc.ConnectStandalone(d, broker.bootstrap)
    try:
        ready = w.start()
        bpid = broker.pid()
        cpu0, bcpu0 = kc.proc_cpu_s(w.pid), kc.proc_cpu_s(bpid)
        t0 = time.time()
        w.ok("POST", "/connectors", {"name": "src-" + topic, "config": {
            "connector.class": "FileStreamSource", "tasks.max": "1", "file": src, "topic": topic}})
        w.ok("POST", "/connectors", {"name": "sink-" + topic, "config": {
            "connector.class": "FileStreamSink", "tasks.max": "1", "topics": topic, "file": out}})
        try:
            wait_file_size(out, records * line_bytes, 300, "Connect: all lines in the sink file")
        except AssertionError as e:
            raise kc.PeerError(f"{e}\n{w.tail_log()}")
        elapsed = time.time() - t0
        cpu, bcpu, hwm = kc.proc_cpu_s(w.pid) - cpu0, kc.proc_cpu_s(bpid) - bcpu0, kc.proc_status(w.pid, "VmHWM")
        w.stop()
        if count_lines(out) != records:
            raise kc.PeerError(f"Connect: sink file has {count_lines(out)} lines, expected {records}")
        r = figures(PEER, records, elapsed, cpu, bcpu, hwm, ready)
        r["peer"] = PEER
        return r
    finally:
        w.stop()
        shutil.rmtree(d, ignore_errors=True)


def settle():
    """Each contender starts on a quiet machine: the previous run's dirty pages written back, 2 s
    of rest. (It did not explain the slow second runs; the shared consumer group did.)"""
    os.sync()
    time.sleep(2)


def scenario(broker, records, line_bytes, build_dir, write_lines, wait_file_size, count_lines, peer_guard, ratio):
    broker.start()
    plugins = connect_file_jar(build_dir)
    src_dir = tmpdir("bench-jvm-host-src")
    src = os.path.join(src_dir, "lines.txt")
    try:
        write_lines(src, records, line_bytes)
        # Connector names are new in every run: with the same sink name the second run's consumer
        # joined the first run's consumer group (connect-<name>) and waited ~9 s for its
        # rebalance, which read as a 4x slower run whichever contender it was.
        settle()
        java = ferry_run(broker, src, records, line_bytes, plugins, wait_file_size, count_lines)
        settle()
        native = ferry_run(broker, src, records, line_bytes, None, wait_file_size, count_lines)
        settle()
        yield java
        yield native
        c = peer_guard("jvm-host", lambda: connect_run(broker, src, records, line_bytes, wait_file_size, count_lines))
        if "error" not in c:
            c["ratio_vs_ferry_java"] = {
                "msgs_per_s": ratio(java["msgs_per_s"], c["msgs_per_s"]),
                "cpu_s_per_million": ratio(c["cpu_s_per_million"], java["cpu_s_per_million"]),
                "peak_rss_mb": ratio(c["peak_rss_mb"], java["peak_rss_mb"]),
                "rest_ready_s": ratio(c["rest_ready_s"], java["rest_ready_s"]),
            }
        yield c
    finally:
        shutil.rmtree(src_dir, ignore_errors=True)
