"""Apache Kafka Connect as a benchmark peer: a standalone Connect worker JVM (and the single-node
KRaft broker of scripts/services/kafka it needs), measured the way bench/run measures ferry.

Standard library only. The jars come from `scripts/services/kafka fetch` (Maven Central via mvn);
nothing here downloads anything itself. Threading: none; every call blocks its caller.

  broker = Broker(); broker.start()          # scripts/services/kafka start (idempotent)
  w = ConnectStandalone(workdir, broker.bootstrap); ready_s = w.start()
  w.ok("POST", "/connectors", {...}); ...; w.stop(); broker.stop()

A standalone Connect worker looks up the Kafka cluster id through an admin client before it opens
its REST port, so even an idle worker with no connectors needs a reachable broker.
"""
import json
import os
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
KAFKA_SCRIPT = os.path.join(ROOT, "scripts", "services", "kafka")
CLK = os.sysconf("SC_CLK_TCK")
# bin/connect-standalone.sh's default heap ($CONNECT_HEAP overrides it, e.g. "-Xmx512M") and the
# flags bin/kafka-run-class.sh gives every JVM.
CONNECT_HEAP = os.environ.get("CONNECT_HEAP", "-Xms256M -Xmx2G").split()
JVM_OPTS = ["-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
            "-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
            "-XX:MaxInlineLevel=15", "-Djava.awt.headless=true"]
STRING_CONVERTER = "org.apache.kafka.connect.storage.StringConverter"


class PeerError(Exception):
    """The peer could not be set up or did not do its work; the message says why."""


def proc_cpu_s(pid):
    """user+system CPU seconds of a process so far (its own threads, not waited-for children)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK


def proc_status(pid, key):
    """A /proc/<pid>/status size field (VmRSS, VmHWM) in bytes; 0 if absent."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1]) * 1024
    return 0


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def kafka_script(*args, timeout=600):
    """Runs scripts/services/kafka; returns (exit code, stdout, stderr)."""
    try:
        p = subprocess.run([KAFKA_SCRIPT, *args], capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return 124, "", f"scripts/services/kafka {' '.join(args)} timed out after {timeout}s"
    return p.returncode, p.stdout.strip(), p.stderr.strip()


def libs_classpath():
    """The Kafka jars' classpath ('<dir>/libs/*'), fetching them with mvn on first use."""
    rc, out, err = kafka_script("classpath")
    if rc != 0 or not out:
        raise PeerError(f"fetching the Kafka jars failed: {err[-500:]}")
    return out.splitlines()[-1]


def log4j_config():
    rc, out, err = kafka_script("log4j")
    if rc != 0 or not out:
        raise PeerError(f"writing the log4j2 config failed: {err[-500:]}")
    return out.splitlines()[-1]


class Broker:
    """The single-node KRaft broker of scripts/services/kafka. stop() only stops a broker this
    object started, so a broker someone left running stays up."""

    def __init__(self):
        self.port = int(os.environ.get("KAFKA_PORT", "19092"))
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.started_here = False

    def running(self):
        return kafka_script("status")[0] == 0

    def start(self):
        if self.running():
            return
        rc, _, err = kafka_script("start")
        if rc != 0:
            raise PeerError(f"broker start failed: {err[-800:]}")
        self.started_here = True

    def pid(self):
        rc, out, _ = kafka_script("pid")
        return int(out) if rc == 0 and out.strip().isdigit() else None

    def stop(self):
        if self.started_here:
            kafka_script("stop")
            self.started_here = False

    def create_topic(self, topic, partitions=1):
        """Creates a topic with kafka-tools' TopicCommand (one JVM start, a few seconds)."""
        cmd = ["java", *JVM_OPTS, f"-Dlog4j2.configurationFile={log4j_config()}", "-cp",
               libs_classpath(), "org.apache.kafka.tools.TopicCommand", "--bootstrap-server",
               self.bootstrap, "--create", "--if-not-exists", "--topic", topic, "--partitions",
               str(partitions), "--replication-factor", "1"]
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if p.returncode != 0:
            raise PeerError(f"creating topic {topic} failed: {(p.stderr or p.stdout)[-800:]}")


class ConnectStandalone:
    """One standalone Kafka Connect worker JVM (ConnectStandalone) with its own folder, offsets
    file and REST port. Connectors are created over REST, as bench/run does for ferry."""

    MAIN = "org.apache.kafka.connect.cli.ConnectStandalone"

    def __init__(self, workdir, bootstrap, extra=None):
        self.workdir = workdir
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.props = os.path.join(workdir, "connect-standalone.properties")
        self.log_path = os.path.join(workdir, "connect.log")
        props = {
            "bootstrap.servers": bootstrap,
            "key.converter": STRING_CONVERTER,
            "value.converter": STRING_CONVERTER,
            "offset.flush.interval.ms": "1000",
            "listeners": f"http://127.0.0.1:{self.port}",
        }
        if self.MAIN.endswith("ConnectStandalone"):
            props["offset.storage.file.filename"] = os.path.join(workdir, "connect.offsets")
        props.update(extra or {})
        os.makedirs(workdir, exist_ok=True)
        with open(self.props, "w") as f:
            for k, v in props.items():
                f.write(f"{k}={v}\n")
        self.proc = None

    @property
    def pid(self):
        return self.proc.pid

    def start(self, timeout=120):
        """Starts the JVM; returns the seconds until GET / answers 200."""
        cmd = ["java", *CONNECT_HEAP, *JVM_OPTS, f"-Dlog4j2.configurationFile={log4j_config()}",
               "-cp", libs_classpath(), self.MAIN, self.props]
        log = open(self.log_path, "ab")
        t0 = time.time()
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir)
        log.close()
        deadline = t0 + timeout
        while time.time() < deadline:
            if self.proc.poll() is not None:
                raise PeerError(f"Connect exited with {self.proc.returncode}:\n{self.tail_log()}")
            try:
                if self.rest("GET", "/", timeout=1)[0] == 200:
                    return time.time() - t0
            except OSError:
                pass
            time.sleep(0.05)
        self.stop()
        raise PeerError(f"Connect REST not ready within {timeout}s:\n{self.tail_log()}")

    def stop(self, timeout=60):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        return self.proc.returncode if self.proc else None

    def tail_log(self, n=30):
        try:
            with open(self.log_path, "rb") as f:
                return b"\n".join(f.read().splitlines()[-n:]).decode(errors="replace")
        except OSError:
            return ""

    def rest(self, method, path, body=None, timeout=10):
        data = json.dumps(body).encode() if body is not None else None
        headers = {"Content-Type": "application/json"} if data else {}
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                text = r.read().decode()
                return r.status, (json.loads(text) if text.strip() else None)
        except urllib.error.HTTPError as e:
            return e.code, e.read().decode(errors="replace")

    def ok(self, method, path, body=None):
        status, payload = self.rest(method, path, body, timeout=60)
        if status not in (200, 201, 202, 204):
            raise PeerError(f"Connect {method} {path} -> {status}: {payload}\n{self.tail_log()}")
        return payload


class ConnectDistributed(ConnectStandalone):
    """One distributed-mode Kafka Connect worker JVM (ConnectDistributed), a group of one: configs,
    offsets and status in Kafka topics of a fresh group (replication factor 1 on the single-node
    broker), as a Connect cluster keeps them."""

    MAIN = "org.apache.kafka.connect.cli.ConnectDistributed"

    def __init__(self, workdir, bootstrap, extra=None):
        gid = "ferry-bench-" + os.urandom(4).hex()
        dist = {"group.id": gid, "config.storage.topic": gid + "-configs",
                "offset.storage.topic": gid + "-offsets", "status.storage.topic": gid + "-status",
                "config.storage.replication.factor": "1", "offset.storage.replication.factor": "1",
                "status.storage.replication.factor": "1"}
        dist.update(extra or {})
        super().__init__(workdir, bootstrap, dist)
        self.props_note = "distributed"

    def wait_connector_running(self, name, timeout=120):
        """A distributed worker answers POST before the connector's tasks run; wait for them."""
        deadline = time.time() + timeout
        while time.time() < deadline:
            status, body = self.rest("GET", f"/connectors/{name}/status")
            if status == 200 and body.get("tasks") and all(t["state"] == "RUNNING" for t in body["tasks"]):
                return
            time.sleep(0.1)
        raise PeerError(f"connector {name} not RUNNING within {timeout}s:\n{self.tail_log()}")
