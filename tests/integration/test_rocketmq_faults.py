"""Faults around the rocketmq backbone on a real RocketMQ (cluster A of scripts/services/rocketmq,
NameServer in $FERRY_ROCKETMQ_NAMESRV, default 127.0.0.1:19876; fails when it is unreachable).

1. Broker restart mid-stream: datagen (30,000 sequence-numbered records at 5,000/s) -> topic ->
   FileStreamSink through a standalone worker with backbone=rocketmq. After a third arrived the
   broker JVM is kill -9ed and started again with its own command line, environment and working
   directory (read from /proc; the pid file is updated so `scripts/services/rocketmq stop` still
   finds it). The tasks must report the outage (worker log or task status), keep retrying and
   resume by themselves; at the end every sequence number arrived (0 lost), duplicates counted.
2. `ferry standalone` with backbone=rocketmq and an unreachable NameServer exits non-zero with a
   message naming the NameServer.
Result lines are printed as JSON."""
import json
import os
import random
import re
import signal
import socket
import subprocess
import threading
import time

from rocketmq_remoting import remoting
from harness import FERRY_BIN, Worker, run, tmpdir, wait_until

NAMESRV = os.environ.get("FERRY_ROCKETMQ_NAMESRV", "127.0.0.1:19876")
TOTAL = int(os.environ.get("FERRY_RMQ_RECORDS", "30000"))
RATE = 5000
# Cluster A's run directory, as scripts/services/rocketmq lays it out.
RUN_DIR = os.environ.get("FERRY_ROCKETMQ_RUN_DIR", os.path.join(os.environ.get(
    "ROCKETMQ_HOME_DIR", os.path.expanduser(
        "~/.cache/ferry-peers/rocketmq-" + os.environ.get("ROCKETMQ_VERSION", "5.3.3"))), "run-a"))
BROKER_ADDR = os.environ.get("FERRY_ROCKETMQ_BROKER", "127.0.0.1:20911")


def count_lines(path):
    try:
        with open(path, "rb") as f:
            return f.read().count(b"\n")
    except FileNotFoundError:
        return 0




def broker_serving(addr=BROKER_ADDR):
    """The broker answers GET_BROKER_RUNTIME_INFO (28) with SUCCESS."""
    try:
        return remoting(addr, 28).get("code") == 0
    except (OSError, ValueError):
        return False


def broker_routed(namesrv=NAMESRV):
    """The NameServer routes ferry-smoke (made by scripts/services/rocketmq start): a broker
    started again has registered (until then tools that list the clusters see none)."""
    try:
        return remoting(namesrv, 105, {"topic": "ferry-smoke"}).get("code") == 0
    except (OSError, ValueError):
        return False


def stored_messages(topic, queues=16):
    """Messages the broker holds for `topic`: the sum of GET_MAX_OFFSET (30) over queue ids
    0..queues-1 (ids the topic does not have answer 0)."""
    total = 0
    for q in range(queues):
        r = remoting(BROKER_ADDR, 30, {"topic": topic, "queueId": str(q)})
        if r.get("code") == 0:
            total += int(r.get("extFields", {}).get("offset", 0))
    return total


def pid_alive(pid):
    try:
        os.kill(pid, 0)
        return True
    except OSError:
        return False


def kill_broker(run_dir=RUN_DIR):
    """kill -9 the broker JVM of a cluster (A by default); returns relaunch(), which starts it
    again on its data the way the script did (command line, environment and folder read from
    /proc; the pid file updated so `scripts/services/rocketmq stop` still finds it) and returns
    the new process."""
    pid_file = os.path.join(run_dir, "broker.pid")
    with open(pid_file) as f:
        pid = int(f.read().strip())
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        argv = [a.decode() for a in f.read().split(b"\0") if a]
    with open(f"/proc/{pid}/environ", "rb") as f:
        env = dict(e.decode(errors="replace").split("=", 1)
                   for e in f.read().split(b"\0") if b"=" in e)
    cwd = os.readlink(f"/proc/{pid}/cwd")
    assert any("BrokerStartup" in a for a in argv), f"pid {pid} is not a broker: {argv}"
    os.kill(pid, signal.SIGKILL)
    wait_until(lambda: not pid_alive(pid), 30, f"broker pid {pid} gone", 0.1)

    def relaunch():
        with open(os.path.join(run_dir, "broker.out"), "ab") as out, open(os.devnull, "rb") as nul:
            p = subprocess.Popen(argv, env=env, cwd=cwd, stdin=nul, stdout=out,
                                 stderr=subprocess.STDOUT, start_new_session=True)
        with open(pid_file, "w") as f:
            f.write(f"{p.pid}\n")
        return p
    return relaunch


def restart_broker(run_dir=RUN_DIR, addr=BROKER_ADDR, namesrv=NAMESRV):
    """kill -9 the broker JVM of a cluster (A by default) and start it again the way the script
    did. Returns (seconds down until it serves again and is registered, new pid)."""
    t0 = time.time()
    p = kill_broker(run_dir)()
    wait_until(lambda: p.poll() is None and broker_serving(addr) and broker_routed(namesrv), 120,
               "restarted broker serving and registered", 0.5)
    return time.time() - t0, p.pid


def test_broker_restart():
    d = tmpdir("rmq-faults")
    out = os.path.join(d, "out.txt")
    run_id = random.randrange(1 << 30)
    topic = f"ferry-fault-{run_id}"
    gen, sink = f"fgen-{run_id}", f"fsink-{run_id}"
    w = Worker(d, {"backbone": "rocketmq", "backbone.rocketmq.namesrv": NAMESRV})
    w.start()
    w.ok("POST", "/connectors", {"name": gen, "config": {
        "connector.class": "DatagenSource", "topic": topic, "max.records": str(TOTAL),
        "rate": str(RATE), "format": "string"}})
    w.ok("POST", "/connectors", {"name": sink, "config": {
        "connector.class": "FileStreamSink", "topics": topic, "file": out}})
    t0 = time.time()
    wait_until(lambda: count_lines(out) >= TOTAL // 3, 120, f"{TOTAL // 3} lines", 0.1)
    log_before = os.path.getsize(w.log_path)
    at_kill = count_lines(out)

    # Task states are sampled by a thread all along the outage and the recovery.
    states = set()
    stop_sampling = threading.Event()

    def sample_states():
        while not stop_sampling.is_set():
            for name in (gen, sink):
                try:
                    status, s = w.rest("GET", f"/connectors/{name}/status", timeout=2)
                except OSError:
                    continue
                if status == 200:
                    for t in s.get("tasks", []):
                        states.add((name, t["state"], (t.get("trace") or "")[:160]))
            stop_sampling.wait(0.2)
    sampler = threading.Thread(target=sample_states, daemon=True)
    sampler.start()
    try:
        down_s, new_pid = restart_broker()
        during = count_lines(out)
        wait_until(lambda: count_lines(out) >= TOTAL, 300, f"{TOTAL} lines", 0.5)
    finally:
        stop_sampling.set()
        sampler.join(10)

    def counts():
        c = {}
        with open(out, "rb") as f:
            for line in f:
                t, s = line.strip().split(b"-")
                c[int(s)] = c.get(int(s), 0) + 1
        return c
    c = wait_until(lambda: (lambda c: c if len(c) >= TOTAL else None)(counts()), 120,
                   "every sequence number", 1.0)
    lost = [i for i in range(TOTAL) if i not in c]
    dup_seqs = {str(k): v for k, v in sorted(c.items()) if v > 1}
    dups = sum(v - 1 for v in c.values())
    with open(w.log_path, "rb") as f:
        f.seek(log_before)
        outage_log = f.read().decode(errors="replace")
    err_lines = [l for l in outage_log.splitlines()
                 if re.search(r"\b(warn|warning|error)\b", l, re.I) and
                 re.search(r"rocketmq|20911|RocketMQ|broker|resending", l)]
    src_lines = [l for l in err_lines if gen in l]
    sink_lines = [l for l in err_lines if sink in l]
    # Where duplicates come from: sends that failed ambiguously (timeout / reset) but were stored
    # show as extra messages in the topic; the rest is the sink replaying from the group's offset
    # the broker had not yet persisted (it flushes consumerOffset.json every 5 s).
    stored = stored_messages(topic)
    total_lines = count_lines(out)
    st_src = w.ok("GET", f"/connectors/{gen}/status")
    st_sink = w.ok("GET", f"/connectors/{sink}/status")
    print(json.dumps({"test": "broker_restart", "records": TOTAL, "rate": RATE,
                      "lines_at_kill": at_kill, "lines_after_restart": during,
                      "broker_down_s": round(down_s, 1), "broker_pid": new_pid,
                      "lost": len(lost), "duplicates": dups, "duplicate_seqs_count": len(dup_seqs),
                      "broker_stored": stored, "source_duplicates": stored - TOTAL,
                      "sink_replayed": total_lines - stored,
                      "outage_log_lines": len(err_lines), "source_log_lines": len(src_lines),
                      "sink_log_lines": len(sink_lines),
                      "non_running_states": sorted({f"{n}:{s}" for n, s, _ in states
                                                    if s != "RUNNING"}),
                      "seconds": round(time.time() - t0, 1)}))
    # Duplicated sequence numbers as [first, last, copies] runs (consecutive, same count).
    runs = []
    for k, v in ((int(k), v) for k, v in dup_seqs.items()):
        if runs and runs[-1][1] == k - 1 and runs[-1][2] == v:
            runs[-1][1] = k
        else:
            runs.append([k, k, v])
    print(json.dumps({"test": "broker_restart_duplicates", "runs": runs[:500],
                      "truncated": len(runs) > 500}))
    for l in err_lines[:5]:
        print("outage log:", l[:300])
    assert not lost, f"{len(lost)} lost, first {lost[:10]}"
    sink_not_running = any(n == sink and s != "RUNNING" for n, s, _ in states)
    src_not_running = any(n == gen and s != "RUNNING" for n, s, _ in states)
    assert src_lines or src_not_running, \
        f"the source task showed no error while the broker was down:\n{outage_log[-3000:]}"
    assert sink_lines or sink_not_running, \
        f"the sink task showed no error while the broker was down:\n{outage_log[-3000:]}"
    assert st_sink["tasks"][0]["state"] == "RUNNING", st_sink
    assert all(t["state"] in ("RUNNING",) for t in st_src["tasks"]), st_src
    assert w.stop() == 0


def test_unreachable_namesrv():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        dead = f"127.0.0.1:{s.getsockname()[1]}"
    d = tmpdir("rmq-nonamesrv")
    w = Worker(d, {"backbone": "rocketmq", "backbone.rocketmq.namesrv": dead})
    t0 = time.time()
    with open(w.log_path, "ab") as log:
        p = subprocess.Popen([FERRY_BIN, "standalone", w.props], stdout=log,
                             stderr=subprocess.STDOUT, cwd=d)
    try:
        rc = p.wait(60)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        raise AssertionError(f"ferry standalone with namesrv {dead} still running after 60s:\n"
                             f"{w.tail_log()}")
    text = w.tail_log(40)
    print(json.dumps({"test": "unreachable_namesrv", "exit_code": rc,
                      "seconds": round(time.time() - t0, 1),
                      "message": text.strip().splitlines()[-1][:300] if text.strip() else ""}))
    assert rc != 0, f"exit code 0 with an unreachable NameServer:\n{text}"
    assert dead in text, f"the message does not name the NameServer {dead}:\n{text}"


def main():
    host, port = NAMESRV.rsplit(":", 1)
    try:
        socket.create_connection((host, int(port)), timeout=3).close()
    except OSError as e:
        raise AssertionError(f"RocketMQ NameServer {NAMESRV} unreachable ({e}); start it with "
                             "scripts/services/rocketmq start")
    test_unreachable_namesrv()
    test_broker_restart()


if __name__ == "__main__":
    run(main)
