"""The rocketmq-produce scenario of bench/run: ferry's native RocketMQ producer
(bench/rocketmq/rmq_produce_bench) against Apache RocketMQ's own benchmark producer
(org.apache.rocketmq.example.benchmark.Producer, Java client), same broker, same topic, same run.

Standard library only. Threading: none; every call blocks its caller.

Per message size: ferry, then Java, then ferry again (the second ferry run shows the drift of the
machine and broker across the Java run). Both are child processes measured the same way from the
outside: user+system CPU from /proc/<pid>/stat sampled every 50 ms and from wait4()'s rusage at
exit (the exact total, which /proc cannot give once the process is gone); peak RSS from VmHWM in
/proc/<pid>/status only (wait4's ru_maxrss also counts the forked Python before exec). The Java
object adds the CPU of a Java run that sends one message per thread (JVM and producer start-up and
shutdown) and the CPU per million without it. Throughput is each tool's own figure: the ferry
tool times its send window; the Java tool prints "Send TPS" over its last (up to) ten one-second
snapshots.

The Java jars (rocketmq-example and its dependencies, Java client included) are fetched with
`mvn dependency:copy-dependencies` into ~/.cache/ferry-peers/rocketmq-example-<version>/lib (a
generated pom there), never into the repository. rocketmq-example is published on Maven Central
for 4.1.0-4.7.0 and 5.5.0 only (no 5.3.3), so the default is 5.5.0 (client 5.5.0 against the 5.3.3
broker: same remoting protocol); $ROCKETMQ_EXAMPLE_VERSION overrides it.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import uuid

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
SERVICE = os.path.join(ROOT, "scripts", "services", "rocketmq")
# Cluster A of scripts/services/rocketmq; the script's own variables move it (ROCKETMQ_HOME_DIR,
# ROCKETMQ_A_NAMESRV_PORT, ROCKETMQ_A_BROKER_PORT), e.g. away from a cluster that tests share.
NAMESRV = "127.0.0.1:" + os.environ.get("ROCKETMQ_A_NAMESRV_PORT", "19876")
BROKER_PID = os.path.expanduser(os.path.join(
    os.environ.get("ROCKETMQ_HOME_DIR", "~/.cache/ferry-peers/rocketmq-" +
                   os.environ.get("ROCKETMQ_VERSION", "5.3.3")), "run-a", "broker.pid"))
EXAMPLE_VERSION = os.environ.get("ROCKETMQ_EXAMPLE_VERSION", "5.5.0")
EXAMPLE_HOME = os.path.expanduser(f"~/.cache/ferry-peers/rocketmq-example-{EXAMPLE_VERSION}")
PEER = "java-rocketmq-client"
SCENARIO = "rocketmq-produce"
CLK = os.sysconf("SC_CLK_TCK")
# distribution/benchmark/runclass.sh's JVM settings that still exist on Java 17 (its CMS flags do
# not; G1, the default, stands in). $RMQ_BENCH_JAVA_OPTS replaces them.
JAVA_OPTS = os.environ.get(
    "RMQ_BENCH_JAVA_OPTS",
    "-server -Xms1g -Xmx1g -Xmn256m -XX:-OmitStackTraceInFastThrow -XX:-UseLargePages "
    "-XX:+PerfDisableSharedMem").split()
RUN_TIMEOUT_S = 120


class PeerError(Exception):
    """The Java benchmark could not be obtained or did not finish; the message says why."""


def log(msg):
    print(f"bench: rocketmq-produce: {msg}", file=sys.stderr, flush=True)


def proc_cpu_s(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK


def proc_hwm(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    return 0


def measured(cmd, out_path, cwd=None, timeout=RUN_TIMEOUT_S):
    """Runs cmd with stdout to out_path; returns (exit code, wall s, cpu s, peak rss bytes)."""
    with open(out_path, "wb") as out, open(out_path + ".err", "wb") as err:
        t0 = time.time()
        p = subprocess.Popen(cmd, stdout=out, stderr=err, cwd=cwd)
    cpu, hwm = 0.0, 0
    try:
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid == p.pid:
                break
            try:
                cpu, hwm = proc_cpu_s(p.pid), max(hwm, proc_hwm(p.pid))
            except (OSError, ValueError, IndexError):
                pass
            if time.time() - t0 > timeout:
                p.kill()
                os.wait4(p.pid, 0)
                raise PeerError(f"{os.path.basename(cmd[0])} did not finish in {timeout}s")
            time.sleep(0.05)
    finally:
        if p.returncode is None:
            p.returncode = -9  # reaped above by wait4; keeps Popen from waiting again
    wall = time.time() - t0
    code = p.returncode = os.waitstatus_to_exitcode(status)
    cpu = max(cpu, ru.ru_utime + ru.ru_stime)
    return code, wall, cpu, hwm


def tail(path, n=1500):
    try:
        with open(path, "rb") as f:
            return f.read()[-n:].decode(errors="replace")
    except OSError:
        return ""


def broker_cpu():
    try:
        with open(BROKER_PID) as f:
            return proc_cpu_s(int(f.read().strip()))
    except (OSError, ValueError):
        return None


# ---------------------------------------------------------------- the Java benchmark producer

def fetch_java():
    """Returns the lib dir with rocketmq-example and its dependencies; raises PeerError."""
    lib = os.path.join(EXAMPLE_HOME, "lib")
    stamp = os.path.join(lib, ".complete")
    if os.path.exists(stamp):
        return lib
    for tool in ("mvn", "java"):
        if shutil.which(tool) is None:
            raise PeerError(f"{tool} not found (scripts/deps java)")
    os.makedirs(EXAMPLE_HOME, exist_ok=True)
    with open(os.path.join(EXAMPLE_HOME, "pom.xml"), "w") as f:
        f.write(f"""<?xml version="1.0" encoding="UTF-8"?>
<!-- Generated by ferry bench/rocketmq: fetches Apache RocketMQ's benchmark (rocketmq-example). -->
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>dev.ferry.peers</groupId>
  <artifactId>rocketmq-example-jars</artifactId>
  <version>1</version>
  <packaging>pom</packaging>
  <dependencies>
    <dependency>
      <groupId>org.apache.rocketmq</groupId>
      <artifactId>rocketmq-example</artifactId>
      <version>{EXAMPLE_VERSION}</version>
    </dependency>
  </dependencies>
</project>
""")
    shutil.rmtree(lib, ignore_errors=True)
    log(f"fetching org.apache.rocketmq:rocketmq-example:{EXAMPLE_VERSION} with mvn into {lib}")
    r = subprocess.run(["mvn", "-q", "-B", "dependency:copy-dependencies", "-DincludeScope=runtime",
                        "-DoutputDirectory=lib"], cwd=EXAMPLE_HOME, capture_output=True, text=True)
    jar = os.path.join(lib, f"rocketmq-example-{EXAMPLE_VERSION}.jar")
    if r.returncode != 0 or not os.path.exists(jar):
        raise PeerError(f"mvn could not fetch rocketmq-example:{EXAMPLE_VERSION}: "
                        f"{(r.stdout + r.stderr)[-800:]}")
    open(stamp, "w").close()
    return lib


def client_version(lib):
    for name in os.listdir(lib):
        m = re.fullmatch(r"rocketmq-client-(.+)\.jar", name)
        if m:
            return m.group(1)
    return None


COMPLETE = re.compile(r"\[Complete\] Send Total: (\d+) \| Send TPS: (\d+) \| "
                      r"Max RT\(ms\): (\d+) \| Average RT\(ms\):\s*([\d.]+) \| "
                      r"Send Failed: (\d+) \| Response Failed: (\d+)")


def java_once(lib, topic, size, messages, threads, work, startup_only=False):
    home = os.path.join(work, "java-home")
    os.makedirs(home, exist_ok=True)
    out = os.path.join(work, f"java-{size}.out")
    cmd = ["java", *JAVA_OPTS, f"-Duser.home={home}", f"-Drocketmq.client.logRoot={home}/logs",
           "-cp", os.path.join(lib, "*"), "org.apache.rocketmq.example.benchmark.Producer",
           "-n", NAMESRV, "-t", topic, "-s", str(size), "-w", str(threads), "-q", str(messages)]
    b0 = broker_cpu()
    code, wall, cpu, hwm = measured(cmd, out)
    b1 = broker_cpu()
    text = tail(out, 4000)
    m = COMPLETE.search(text) or (startup_only and re.search(r"\[Complete\] Send Total: \d+", text))
    if code != 0 or not m:
        raise PeerError(f"Java benchmark exit {code}, no [Complete] line: {text[-600:]} "
                        f"{tail(out + '.err', 600)}")
    return m, cpu, wall, hwm, b0, b1


def java_startup_cpu(lib, topic, threads, work):
    """CPU of a Java benchmark run that sends one message per thread: JVM start, producer start
    and shutdown, the fixed cost inside every measured Java run."""
    _, cpu, wall, _, _, _ = java_once(lib, topic, 128, threads, threads, work, True)
    return cpu, wall


def run_java(lib, topic, size, messages, threads, work, startup=None):
    m, cpu, wall, hwm, b0, b1 = java_once(lib, topic, size, messages, threads, work)
    total, tps, max_rt, avg_rt, failed, resp_failed = m.groups()
    ok = int(total) - int(failed)
    r = {"scenario": SCENARIO, "peer": PEER, "version": client_version(lib), "msg_bytes": size,
         "mode": "sync", "concurrency": threads, "messages": ok,
         "failed": int(failed) + int(resp_failed),
         "msgs_per_s": int(tps), "mb_per_s": round(int(tps) * size / 1e6, 3),
         "avg_ms": float(avg_rt), "max_ms": float(max_rt),
         "cpu_s_per_million": round(cpu / max(ok, 1) * 1e6, 2),
         "peak_rss_mb": round(hwm / 1e6, 1),
         "process_seconds": round(wall, 3), "msgs_per_s_process": round(ok / wall)}
    if startup is not None:
        r["startup_cpu_s"] = round(startup[0], 2)
        r["cpu_s_per_million_excl_startup"] = round((cpu - startup[0]) / max(ok, 1) * 1e6, 2)
    if b0 is not None and b1 is not None:
        r["broker_cpu_s_per_million"] = round((b1 - b0) / max(ok, 1) * 1e6, 2)
    return r


# ---------------------------------------------------------------- ferry

def run_ferry(binary, topic, size, messages, threads, work, run, extra=()):
    out = os.path.join(work, f"ferry-{size}-{run}.out")
    cmd = [binary, "--namesrv", NAMESRV, "--topic", topic, "--size", str(size),
           "--mode", "sync", "--threads", str(threads), *extra]
    if messages:
        cmd += ["--count", str(messages)]
    b0 = broker_cpu()
    code, wall, cpu, hwm = measured(cmd, out)
    b1 = broker_cpu()
    text = tail(out, 4000).strip()
    try:
        j = json.loads(text.splitlines()[-1])
    except (ValueError, IndexError):
        raise RuntimeError(f"ferry bench exit {code}: {text[-400:]} {tail(out + '.err', 600)}")
    ok = j["sent"]
    r = {"scenario": SCENARIO, "system": "ferry", "run": run, "msg_bytes": size, "mode": j["mode"],
         "concurrency": j["concurrency"], "messages": ok, "failed": j["failed"],
         "msgs_per_s": j["msgs_per_s"], "mb_per_s": j["mb_per_s"],
         "p50_ms": j["p50_ms"], "p99_ms": j["p99_ms"], "avg_ms": j["avg_ms"], "max_ms": j["max_ms"],
         "cpu_s_per_million": round(cpu / max(ok, 1) * 1e6, 2),
         "cpu_s_per_million_send_window": j["cpu_s_per_million"],
         "peak_rss_mb": round(max(hwm / 1e6, j["peak_rss_mb"]), 1),
         "process_seconds": round(wall, 3), "msgs_per_s_process": round(ok / wall)}
    if b0 is not None and b1 is not None:
        r["broker_cpu_s_per_million"] = round((b1 - b0) / max(ok, 1) * 1e6, 2)
    if code != 0 or j.get("first_error"):
        r["first_error"] = j.get("first_error", f"exit {code}")
    return r


def guarded_ferry(binary, topic, size, messages, threads, work, run):
    try:
        return run_ferry(binary, topic, size, messages, threads, work, run)
    except (RuntimeError, PeerError, OSError, KeyError) as e:
        return {"scenario": SCENARIO, "system": "ferry", "run": run, "msg_bytes": size,
                "error": str(e)[-1500:]}


def ratio(a, b, digits=2):
    return round(a / b, digits) if a and b else None


def with_ratio(java, ferry_runs):
    """ferry/java for throughput, java/ferry for CPU and RSS; ferry = mean of its two runs."""
    def mean(k):
        return sum(f[k] for f in ferry_runs) / len(ferry_runs)
    java["ratio"] = {
        "msgs_per_s": ratio(mean("msgs_per_s"), java["msgs_per_s"]),
        "msgs_per_s_process": ratio(mean("msgs_per_s_process"), java["msgs_per_s_process"]),
        "cpu_s_per_million": ratio(java["cpu_s_per_million"], mean("cpu_s_per_million")),
        "cpu_s_per_million_excl_startup": ratio(java.get("cpu_s_per_million_excl_startup"),
                                                mean("cpu_s_per_million_send_window")),
        "peak_rss_mb": ratio(java["peak_rss_mb"], mean("peak_rss_mb"), 1),
    }
    return java


def cluster_running():
    return subprocess.run([SERVICE, "status", "A"], capture_output=True).returncode == 0


def scenario(binary, messages=150_000, sizes=(128, 1024), threads=64, peers=True):
    """Yields the result objects (see the module docstring)."""
    if not os.access(binary, os.X_OK):
        yield {"scenario": SCENARIO, "system": "ferry",
               "error": f"{binary} not built (target rmq_produce_bench; $FERRY_RMQ_BENCH)"}
        return
    started = False
    work = tempfile.mkdtemp(prefix="ferry-rmq-bench-")
    try:
        if not cluster_running():
            log("starting the RocketMQ cluster (scripts/services/rocketmq start)")
            r = subprocess.run([SERVICE, "start"], stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, text=True)
            if r.returncode != 0:
                yield {"scenario": SCENARIO, "error": "cluster did not start: " + r.stderr[-800:]}
                return
            started = True
        lib, java_error = None, None
        if peers:
            try:
                lib = fetch_java()
            except PeerError as e:
                java_error = str(e)
        topic = "ferry-bench-" + uuid.uuid4().hex[:8]
        # Creates the topic (4 queues) and warms the broker up (its JIT, the commit log's first
        # pages) so the first measured run is not penalised; not reported.
        log(f"topic {topic} (4 queues), 5 s broker warm-up with the ferry tool")
        try:
            run_ferry(binary, topic, 128, 0, threads, work, 0,
                      ["--create-queues", "4", "--duration-s", "5"])
        except (RuntimeError, PeerError, OSError) as e:
            yield {"scenario": SCENARIO, "system": "ferry", "error": f"warm-up: {e}"[-1500:]}
            return
        startup = None
        for size in sizes:
            log(f"{size} B: ferry run 1")
            f1 = guarded_ferry(binary, topic, size, messages, threads, work, 1)
            java = None
            if peers:
                log(f"{size} B: Java benchmark Producer")
                if java_error:
                    java = {"scenario": SCENARIO, "peer": PEER, "error": java_error}
                else:
                    try:
                        if startup is None:
                            log("Java start-up cost: a run of one message per thread")
                            startup = java_startup_cpu(lib, topic, threads, work)
                        java = run_java(lib, topic, size, messages, threads, work, startup)
                    except (PeerError, OSError, subprocess.SubprocessError) as e:
                        java = {"scenario": SCENARIO, "peer": PEER, "msg_bytes": size,
                                "error": str(e)[-1500:]}
            log(f"{size} B: ferry run 2")
            f2 = guarded_ferry(binary, topic, size, messages, threads, work, 2)
            yield f1
            if java is not None:
                ferry_ok = [f for f in (f1, f2) if "error" not in f]
                if "error" not in java and ferry_ok and java["failed"] == 0 and \
                        all(f["failed"] == 0 for f in ferry_ok):
                    java = with_ratio(java, ferry_ok)
                elif "error" not in java:
                    java["ratio"] = None  # failed sends or no ferry run: nothing to compare
                yield java
            yield f2
    finally:
        if started:
            subprocess.run([SERVICE, "stop"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        shutil.rmtree(work, ignore_errors=True)


def default_binary():
    """$FERRY_RMQ_BENCH, else next to $FERRY_BIN's build dir, else build/release."""
    if os.environ.get("FERRY_RMQ_BENCH"):
        return os.environ["FERRY_RMQ_BENCH"]
    fb = os.environ.get("FERRY_BIN", "")
    if fb.endswith(os.path.join("apps", "ferry", "ferry")):
        cand = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(fb))),
                            "bench", "rocketmq", "rmq_produce_bench")
        if os.path.exists(cand):
            return cand
    return os.path.join(ROOT, "build", "release", "bench", "rocketmq", "rmq_produce_bench")
