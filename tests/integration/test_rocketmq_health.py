"""RocketMQ connection health (issue 23): RocketMQSource and RocketMQSink report their connection,
and resume quickly after a broker outage. Against a NameServer + broker of the test's own (5.3.3
jars of scripts/services/rocketmq in ~/.cache, started here on free ports; the shared service is
not touched), a standalone worker on the embedded backbone runs:

  src   RocketMQSource  RocketMQ topic HS  -> backbone topic hs-in
  out   FileStreamSink  hs-in -> out.txt   (what the source delivered)
  feed  FileStreamSource feed.txt -> hs-out (the test appends a numbered line every 50 ms, except
        from 10 s into the outage until the broker is back)
  snk   RocketMQSink    hs-out -> RocketMQ topic HSK

Source messages ("src-<n>") are sent by the test straight to the broker (SEND_MESSAGE_V2 to a
fixed queue), so sending does not wait for the broker's registration with the NameServer.

  (a) the broker is killed (kill -9; the NameServer stays): within 5 s both tasks' status shows
      state RUNNING with connection "reconnecting", the reason in `connection.error` and `trace`;
      /metrics ferry_task_connected is 0 for both;
  (b) 70 s later the broker is started again on its data. "Serving" = the first moment it answers
      GET_BROKER_RUNTIME_INFO (28) or accepts the test's first source message, whichever comes
      first (both polled every ~20 ms from the relaunch; the moment it accepts TCP is printed
      too). The first new source record must have arrived (the src task's
      ferry_task_records_out_total grew) within 2 s of "serving"; the lines fed to the sink until
      then are stored in HSK within 2 s of "serving" (bounded by the worker's 1 s
      offset.flush.interval.ms: a sink's failed flush is retried at the next commit);
  (c) both tasks show "connected" again and ferry_task_connected is 1;
  (d) every source message the broker accepted is in out.txt (0 lost), and every line appended to
      feed.txt (during the outage too) is in HSK at the end (0 lost); duplicates are counted.

Every check is collected and all failures are reported together at the end.
Environment: FERRY_BIN, FERRY_RMQ_TOOL (rmq_interop_tool), ROCKETMQ_HOME_DIR (default
~/.cache/ferry-peers/rocketmq-5.3.3), FERRY_HEALTH_OUTAGE_S (default 70)."""
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time

from rocketmq_remoting import remoting
from harness import Worker, free_port, run, tmpdir, wait_until

HOME = os.environ.get("ROCKETMQ_HOME_DIR", os.path.expanduser("~/.cache/ferry-peers/rocketmq-5.3.3"))
LIBS = os.path.join(HOME, "lib")
RMQ_TOOL = os.environ.get("FERRY_RMQ_TOOL", "")
OUTAGE_S = float(os.environ.get("FERRY_HEALTH_OUTAGE_S", "70"))
JVM_OPTS = ["-server", "-XX:+UseG1GC", "-XX:-OmitStackTraceInFastThrow", "-Djava.awt.headless=true",
            "--add-opens", "java.base/java.lang=ALL-UNNAMED", "--add-opens", "java.base/java.nio=ALL-UNNAMED",
            "--add-opens", "java.base/java.util=ALL-UNNAMED",
            "--add-opens", "java.base/jdk.internal.ref=ALL-UNNAMED",
            "--add-opens", "java.base/sun.nio.ch=ALL-UNNAMED"]
HEAP = {"namesrv": ["-Xms96m", "-Xmx96m", "-XX:MaxDirectMemorySize=64m"],
        "broker": ["-Xms256m", "-Xmx256m", "-XX:MaxDirectMemorySize=256m"]}
MAIN = {"namesrv": "org.apache.rocketmq.namesrv.NamesrvStartup",
        "broker": "org.apache.rocketmq.broker.BrokerStartup"}

failures = []


def check(ok, what):
    print(("ok   " if ok else "FAIL ") + what, flush=True)
    if not ok:
        failures.append(what)


def free_broker_port():
    """A port p with p-2 (the broker's fast channel), p and p+1 (HA) all free."""
    for _ in range(200):
        p = free_port()
        if p < 1026 or p > 65530:
            continue
        ok = True
        for q in (p - 2, p + 1):
            with socket.socket() as s:
                try:
                    s.bind(("127.0.0.1", q))
                except OSError:
                    ok = False
        if ok:
            return p
    raise RuntimeError("no free broker port")


class Cluster:
    """A NameServer and a broker of this test's own."""

    def __init__(self, root):
        self.root = root
        self.ns_port = free_port()
        self.br_port = free_broker_port()
        self.namesrv = f"127.0.0.1:{self.ns_port}"
        self.broker = f"127.0.0.1:{self.br_port}"
        self.procs = {}
        os.makedirs(os.path.join(root, "store"), exist_ok=True)
        with open(os.path.join(root, "namesrv.conf"), "w") as f:
            f.write(f"listenPort={self.ns_port}\nbindAddress=127.0.0.1\n"
                    f"kvConfigPath={root}/namesrv/kvConfig.json\n"
                    f"configStorePath={root}/namesrv/namesrv.properties\n")
        with open(os.path.join(root, "broker.conf"), "w") as f:
            f.write("\n".join([
                "brokerClusterName=health", "brokerName=health", "brokerId=0",
                "brokerRole=ASYNC_MASTER", "flushDiskType=ASYNC_FLUSH",
                f"namesrvAddr={self.namesrv}", "brokerIP1=127.0.0.1", f"listenPort={self.br_port}",
                "bindAddress=127.0.0.1", f"storePathRootDir={root}/store",
                f"storePathCommitLog={root}/store/commitlog", "mappedFileSizeCommitLog=67108864",
                "mappedFileSizeConsumeQueue=200000", "messageIndexEnable=false", "maxHashSlotNum=1000",
                "maxIndexNum=4000", "timerWheelEnable=false", "autoCreateTopicEnable=true",
                "autoCreateSubscriptionGroup=true", "diskMaxUsedSpaceRatio=95",
                "diskSpaceWarningLevelRatio=99", "diskSpaceCleanForciblyRatio=98", ""]))

    def launch(self, role):
        env = dict(os.environ, ROCKETMQ_HOME=self.root)
        preload = os.path.join(HOME, "loopback-bind.so")
        if os.path.exists(preload):
            env["LD_PRELOAD"] = preload
        out = open(os.path.join(self.root, role + ".out"), "ab")
        p = subprocess.Popen(["java", *HEAP[role], *JVM_OPTS, f"-Duser.home={self.root}",
                              f"-Drocketmq.home.dir={self.root}",
                              f"-Drmq.logback.configurationFile={LIBS}/rmq.{role}.logback.xml",
                              "-cp", LIBS + "/*", MAIN[role], "-c", os.path.join(self.root, role + ".conf")],
                             env=env, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                             start_new_session=True)
        self.procs[role] = p
        return p

    def kill(self, role):
        p = self.procs.pop(role, None)
        if p and p.poll() is None:
            os.kill(p.pid, signal.SIGKILL)
            p.wait(30)

    def stop(self):
        for role in ("broker", "namesrv"):
            self.kill(role)




def serving(addr):
    try:
        return remoting(addr, 28, timeout=1).get("code") == 0
    except (OSError, ValueError):
        return False


def routed(namesrv, topic):
    try:
        return remoting(namesrv, 105, {"topic": topic}, timeout=1).get("code") == 0
    except (OSError, ValueError):
        return False


def send(broker, topic, queue, body):
    """SEND_MESSAGE_V2 (310) of one message to `queue`; True when the broker stored it."""
    ext = {"a": "ferry_health_test", "b": topic, "c": "TBW102", "d": "4", "e": str(queue), "f": "0",
           "g": str(int(time.time() * 1000)), "h": "0", "i": "", "j": "0", "k": "false", "m": "false"}
    try:
        return remoting(broker, 310, ext, body.encode(), timeout=2).get("code") == 0
    except (OSError, ValueError):
        return False


def stored(broker, topic, queues=2):
    """Messages the broker holds for `topic`: the sum of GET_MAX_OFFSET (30) over its queues."""
    total = 0
    for q in range(queues):
        try:
            r = remoting(broker, 30, {"topic": topic, "queueId": str(q)}, timeout=1)
        except (OSError, ValueError):
            return -1
        if r.get("code") == 0:
            total += int(r.get("extFields", {}).get("offset", 0))
    return total


def task0(w, name):
    status, st = w.rest("GET", f"/connectors/{name}/status")
    return st["tasks"][0] if status == 200 and st.get("tasks") else {}


def conn_state(w, name):
    return task0(w, name).get("connection", {}).get("state")


def metric(w, name, connector):
    status, text = w.rest("GET", "/metrics")
    if status != 200:
        return None
    for line in text.splitlines():
        if line.startswith(name + "{") and f'connector="{connector}"' in line:
            return float(line.rsplit(" ", 1)[1])
    return None


def seqs_in(path, prefix):
    try:
        with open(path, "rb") as f:
            data = f.read().decode(errors="replace")
    except FileNotFoundError:
        return []
    return [int(m) for m in re.findall(prefix + r"-(\d+)", data)]


def main():
    assert RMQ_TOOL and os.path.exists(RMQ_TOOL), "FERRY_RMQ_TOOL (rmq_interop_tool) is needed"
    assert os.path.isdir(LIBS), f"no RocketMQ jars in {LIBS}: run scripts/services/rocketmq fetch"
    t_begin = time.time()
    work = tmpdir("rocketmq-health")
    rmq = Cluster(os.path.join(work, "rmq"))
    w = None
    try:
        rmq.launch("namesrv")
        wait_until(lambda: routed(rmq.namesrv, "none") or _answers(rmq.namesrv), 60, "NameServer up", 0.2)
        rmq.launch("broker")
        wait_until(lambda: serving(rmq.broker) and routed(rmq.namesrv, "TBW102"), 120,
                   "broker serving and registered", 0.2)
        for topic in ("HS", "HSK"):
            p = subprocess.run([RMQ_TOOL, "create-topic", "--namesrv", rmq.namesrv, "--topic", topic,
                                "--queues", "2"], capture_output=True, text=True, timeout=60)
            assert p.returncode == 0, p.stderr
        print(f"own RocketMQ: NameServer {rmq.namesrv}, broker {rmq.broker} "
              f"({time.time() - t_begin:.0f} s)", flush=True)

        out_file = os.path.join(work, "out.txt")
        feed_file = os.path.join(work, "feed.txt")
        open(feed_file, "w").close()
        # The sink's kept sends go out at its next flush, which the runtime retries at the next
        # commit: offset.flush.interval.ms (1 s here, the harness's) bounds the sink's return.
        w = Worker(work)
        w.start()
        common = {"errors.retry.delay.max.ms": "60000"}
        w.ok("POST", "/connectors", {"name": "src", "config": {
            **common, "connector.class": "RocketMQSource", "rocketmq.namesrv": rmq.namesrv,
            "rocketmq.topics": "HS", "topic": "hs-in", "rocketmq.from": "first"}})
        w.ok("POST", "/connectors", {"name": "out", "config": {
            "connector.class": "FileStreamSink", "topics": "hs-in", "file": out_file, "fsync": "false"}})
        w.ok("POST", "/connectors", {"name": "feed", "config": {
            "connector.class": "FileStreamSource", "file": feed_file, "topic": "hs-out",
            "poll.interval.ms": "50"}})
        w.ok("POST", "/connectors", {"name": "snk", "config": {
            **common, "connector.class": "RocketMQSink", "rocketmq.namesrv": rmq.namesrv,
            "topics": "hs-out", "rocketmq.topic": "HSK"}})
        for n in ("src", "out", "feed", "snk"):
            w.wait_running(n, 60)

        # The sink's feed: a numbered line every 50 ms until told to stop.
        stop_feed = threading.Event()
        feed_paused = threading.Event()
        fed = [0]

        def feed():
            with open(feed_file, "a") as f:
                while not stop_feed.is_set():
                    if feed_paused.is_set():
                        time.sleep(0.05)
                        continue
                    f.write(f"snk-{fed[0]}\n")
                    f.flush()
                    fed[0] += 1
                    time.sleep(0.05)
        feeder = threading.Thread(target=feed, daemon=True)
        feeder.start()

        sent = []  # source seqs the broker accepted

        def send_src(seq):
            if send(rmq.broker, "HS", seq % 2, f"src-{seq}"):
                sent.append(seq)
                return True
            return False
        for seq in range(50):
            assert send_src(seq), f"source message {seq} refused before the outage"
        wait_until(lambda: len(set(seqs_in(out_file, "src"))) >= 50, 60, "the first 50 source records")
        wait_until(lambda: conn_state(w, "src") == "connected" and conn_state(w, "snk") == "connected",
                   30, "both tasks connected")
        check(metric(w, "ferry_task_connected", "src") == 1 and metric(w, "ferry_task_connected", "snk") == 1,
              "before the outage: ferry_task_connected is 1 for src and snk")

        # (a) the broker killed
        t_kill = time.time()
        rmq.kill("broker")
        shown = {}
        deadline = t_kill + 15
        while time.time() < deadline and len(shown) < 2:
            for n in ("src", "snk"):
                if n not in shown and conn_state(w, n) == "reconnecting":
                    shown[n] = (time.time() - t_kill, task0(w, n))
            time.sleep(0.1)
        for n in ("src", "snk"):
            if n not in shown:
                check(False, f"(a) {n}: connection 'reconnecting' within 5 s of the kill "
                             f"(status after 15 s: {task0(w, n)})")
                continue
            secs, t = shown[n]
            c = t.get("connection", {})
            check(secs < 5, f"(a) {n}: connection 'reconnecting' {secs:.1f} s after the kill (< 5 s)")
            check(t.get("state") == "RUNNING", f"(a) {n}: state {t.get('state')} (RUNNING)")
            check(bool(c.get("error")) and c.get("error") in t.get("trace", ""),
                  f"(a) {n}: reason {c.get('error')!r} in connection.error and trace")
            check(rmq.broker in c.get("error", "") or "connect" in c.get("error", ""),
                  f"(a) {n}: the reason names the broker or the connection ({c.get('error')!r})")
        for n in ("src", "snk"):
            m = metric(w, "ferry_task_connected", n)
            check(m == 0, f"(a) {n}: ferry_task_connected {m} during the outage (0)")

        # The feed pauses 10 s into the outage until the broker is back: the sink then has nothing
        # new to put, and its kept sends go out only when the runtime flushes again.
        time.sleep(max(0.0, t_kill + 10 - time.time()))
        feed_paused.set()

        # (b) back after OUTAGE_S
        time.sleep(max(0.0, t_kill + OUTAGE_S - time.time()))
        src_out_before = metric(w, "ferry_task_records_out_total", "src") or 0
        next_seq = 50
        t_launch = time.time()
        rmq.launch("broker")
        t_serving = None
        t_tcp = None  # the first TCP connection the relaunched broker accepted (for the record)
        fed_at_back = 0
        t_accepted = None
        first_new = None
        t_first = None
        t_sink = None
        end = t_launch + 120
        while time.time() < end:
            now = time.time()
            if t_tcp is None and _accepts(rmq.broker):
                t_tcp = time.time()
            if t_serving is None and serving(rmq.broker):
                t_serving = time.time()
                fed_at_back = fed[0]
            if t_accepted is None:
                if send_src(next_seq):
                    t_accepted = time.time()
                    fed_at_back = fed_at_back or fed[0]
                    first_new = next_seq
                next_seq += 1
            # Arrived = polled by the source and written to the backbone (its records_out grew;
            # nothing else reaches HS meanwhile); out.txt is written at the sink's flushes.
            if t_first is None and first_new is not None and (metric(w, "ferry_task_records_out_total", "src") or 0) > src_out_before:
                t_first = time.time()
            if t_sink is None and fed_at_back and stored(rmq.broker, "HSK") >= fed_at_back:
                t_sink = time.time()
            if t_first is not None and (t_sink is not None or time.time() > t_first + 45):
                break
            time.sleep(max(0.0, 0.02 - (time.time() - now)))
        check(first_new is not None and t_first is not None, "(b) the broker took a message again")
        if first_new is not None and t_first is not None:
            # Back = the first sign of a serving broker: its GET_BROKER_RUNTIME_INFO answer or the
            # acceptance of our first message, whichever came first.
            t_back = min(t for t in (t_serving, t_accepted) if t is not None)
            if not fed_at_back:
                fed_at_back = fed[0]
            print(f"(b) broker relaunched; accepting TCP after "
                  f"{'?' if t_tcp is None else f'{t_tcp - t_launch:.2f}'} s, "
                  f"serving after {t_back - t_launch:.2f} s (runtime info answered "
                  f"{'never' if t_serving is None else f'{t_serving - t_launch:.2f} s'}, first source message "
                  f"accepted {t_accepted - t_launch:.2f} s after the relaunch)", flush=True)
            check(t_first - t_back < 2.0,
                  f"(b) the first new source record arrived {t_first - t_back:.2f} s after the broker "
                  f"served again ({t_first - t_accepted:.2f} s after it was accepted) (< 2 s)")
            # The sink's backlog (lines fed until the broker was back) stored in HSK soon after
            # (measured in the same loop): without the reported return the kept sends wait for
            # the runtime's next flush retry.
            backlog = fed_at_back
            check(t_sink is not None and t_sink - t_back < 2,
                  f"(b) snk: the {backlog} lines fed before the broker came back stored in HSK "
                  + (f"{t_sink - t_back:.2f} s after it served again (< 2 s)" if t_sink else "not within 45 s of the first record"))
        feed_paused.clear()
        for seq in range(next_seq, next_seq + 50):
            send_src(seq)

        # (c) connected again
        try:
            wait_until(lambda: conn_state(w, "src") == "connected" and conn_state(w, "snk") == "connected",
                       20, "both connected")
        except Exception:
            pass
        for n in ("src", "snk"):
            check(conn_state(w, n) == "connected" and metric(w, "ferry_task_connected", n) == 1,
                  f"(c) {n}: connected again, ferry_task_connected 1 ({task0(w, n).get('connection')})")

        # (d) nothing lost
        time.sleep(3)
        stop_feed.set()
        feeder.join()
        total_fed = fed[0]
        try:
            wait_until(lambda: set(sent) <= set(seqs_in(out_file, "src")), 30, "every source message")
        except Exception:
            pass
        got = seqs_in(out_file, "src")
        lost = sorted(set(sent) - set(got))
        check(not lost, f"(d) source: {len(sent)} accepted, {len(set(got))} delivered, {len(lost)} lost "
                        f"{lost[:10]}, {len(got) - len(set(got))} duplicates")

        def sink_seqs():
            p = subprocess.run([RMQ_TOOL, "consume", "--namesrv", rmq.namesrv, "--topic", "HSK", "--group",
                                f"health-check-{int(time.time() * 1000)}", "--from", "first", "--idle-ms", "3000",
                                "--timeout-ms", "60000", "--commit", "false"],
                               capture_output=True, text=True, timeout=90)
            seqs = []
            for line in p.stdout.splitlines():
                body = bytes.fromhex(json.loads(line).get("body_hex", "")).decode(errors="replace")
                seqs += [int(x) for x in re.findall(r"snk-(\d+)", body)]
            return seqs
        deadline = time.time() + 60
        while True:
            seqs = sink_seqs()
            missing = sorted(set(range(total_fed)) - set(seqs))
            if not missing or time.time() > deadline:
                break
            time.sleep(2)
        outage_lines = int(10 / 0.05)
        check(not missing, f"(d) sink: {total_fed} lines fed (about {outage_lines} during the outage), "
                           f"{len(set(seqs))} in HSK, {len(missing)} lost {missing[:10]}, "
                           f"{len(seqs) - len(set(seqs))} duplicates")
        print(f"total {time.time() - t_begin:.0f} s", flush=True)
    finally:
        if w:
            if failures:
                print(w.tail_log(40))
            w.stop()
        rmq.stop()
    assert not failures, f"{len(failures)} checks failed:\n  " + "\n  ".join(failures)
    shutil.rmtree(work, ignore_errors=True)


def _accepts(addr):
    host, port = addr.rsplit(":", 1)
    try:
        with socket.create_connection((host, int(port)), timeout=0.5):
            return True
    except OSError:
        return False


def _answers(addr):
    try:
        remoting(addr, 105, {"topic": "TBW102"}, timeout=1)
        return True
    except (OSError, ValueError):
        return False


if __name__ == "__main__":
    run(main)
