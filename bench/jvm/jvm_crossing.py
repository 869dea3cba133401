"""bench/run --scenarios jvm-crossing: the JVM host's crossing on its own, per record.

One direct task (no backbone) moves `records` records from a source into BlackholeSink (native,
discards), on a standalone worker:

  ferry-java    SeqSource, the Java test source (tests/jvm/plugins: a typed Struct value, an int64
                key, a header; batches of 1,000), polled in the JVM host and carried across the
                channel into the worker
  ferry-native  DatagenSource, ferry's native source (JSON values of 100 B), the same task without
                the JVM

Reported: records/s; CPU µs per record of the worker and of the JVM host; the host's poll thread
(SeqSource's own poll() and the queue it fills, read by the host's ThreadMXBean and logged when the
task stops); and the crossing:
  host side   = JVM host CPU - poll thread CPU (encoding batches, the channel's writes, the GC and
                JIT work they cause)
  worker side = ferry-java worker CPU - ferry-native worker CPU (decoding batches and schemas; the
                native run's figure holds DatagenSource's own generation, so this is a lower bound)
There is no peer for this figure: Kafka Connect runs its connectors in its own JVM, with no
crossing (bench/jvm/jvm_host.py compares the two runtimes on the same Java connectors)."""
import os
import re
import sys
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
from harness import Worker, tmpdir  # noqa: E402
import kafka_connect as kc  # noqa: E402
from jvm_host import children_cpu_s  # noqa: E402

SEQ_SOURCE = "io.ferry.testplugins.SeqSourceConnector"
POLL_LINE = re.compile(r"poll thread ended: cpu_ns=(\d+) records=(\d+)")


def run_one(name, source, records, plugins):
    d = tmpdir("bench-jvm-crossing")
    props = {"offset.flush.interval.ms": "200"}
    if plugins:
        props["plugin.path"] = plugins
    w = Worker(d, props)
    w.start(timeout=120)
    pipe = f"x{uuid.uuid4().hex[:8]}"
    try:
        if plugins:  # start the JVM host before the clock: its start is not the crossing
            w.ok("GET", f"/connector-plugins/{SEQ_SOURCE}/config")
        cpu0, host0 = kc.proc_cpu_s(w.proc.pid), children_cpu_s(w.proc.pid)
        t0 = time.time()
        w.ok("POST", "/pipelines", {"name": pipe, "source": source, "sink": {"connector.class": "BlackholeSink"}})

        def done():
            code, body = w.rest("GET", f"/connectors/{pipe}/offsets")
            offs = body.get("offsets", []) if code == 200 else []
            if not offs:
                return False
            o = offs[0]["offset"]
            seq = o.get("seq")
            return seq is not None and int(seq) >= records - 1
        deadline = time.time() + 600
        while not done():
            if time.time() > deadline:
                raise RuntimeError(f"{name}: {records} records not through in 600 s")
            time.sleep(0.05)
        elapsed = time.time() - t0
        cpu, host = kc.proc_cpu_s(w.proc.pid) - cpu0, children_cpu_s(w.proc.pid) - host0
        poll_ns, polled = 0, 0
        if plugins:
            w.ok("DELETE", f"/connectors/{pipe}")
            deadline = time.time() + 30
            while time.time() < deadline:
                m = POLL_LINE.findall(open(w.log_path, errors="replace").read())
                if m:
                    poll_ns, polled = int(m[-1][0]), int(m[-1][1])
                    break
                time.sleep(0.1)
        return {"records": records, "elapsed": elapsed, "worker_cpu_s": cpu, "host_cpu_s": host,
                "poll_cpu_s": poll_ns / 1e9, "polled": polled}
    finally:
        w.stop()


def scenario(records, plugins):
    if not plugins or not os.path.isdir(plugins):
        yield {"scenario": "jvm-crossing", "error": f"no test plugins at {plugins!r} (build the tests: the JVM host needs a JDK and mvn)"}
        return
    java = run_one("ferry-java", {"connector.class": SEQ_SOURCE, "topic": "t", "count": str(records), "batch": "1000",
                                  "tasks.max": "1"}, records, plugins)
    native = run_one("ferry-native", {"connector.class": "DatagenSource", "topic": "t", "max.records": str(records),
                                      "format": "json", "tasks.max": "1"}, records, None)
    us = lambda s: round(s / records * 1e6, 3)  # noqa: E731
    yield {"scenario": "jvm-crossing", "contender": "ferry-native", "records": records,
           "msgs_per_s": round(records / native["elapsed"]), "worker_cpu_us_per_record": us(native["worker_cpu_s"])}
    host_side = java["host_cpu_s"] - java["poll_cpu_s"]
    worker_side = java["worker_cpu_s"] - native["worker_cpu_s"]
    yield {"scenario": "jvm-crossing", "contender": "ferry-java", "records": records,
           "msgs_per_s": round(records / java["elapsed"]), "worker_cpu_us_per_record": us(java["worker_cpu_s"]),
           "jvm_host_cpu_us_per_record": us(java["host_cpu_s"]), "poll_thread_cpu_us_per_record": us(java["poll_cpu_s"]),
           "poll_thread_records": java["polled"],
           "crossing_host_side_us_per_record": us(host_side), "crossing_worker_side_us_per_record": us(worker_side),
           "crossing_us_per_record": us(host_side + worker_side)}
