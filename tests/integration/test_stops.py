"""Every task can be stopped: a connector wedged in any way is restarted, deleted and shut down
within task.shutdown.graceful.timeout.ms, while another connector keeps moving records.

    test_stops.py WEDGE      WEDGE: fifo | devzero | sparse | start | poll | stop | put | flush

fifo, devzero, sparse: FileStreamSource on a FIFO, on /dev/zero, on a sparse 50 GB file without a
newline (these failed at once, or never: the task blocked in open() or read for ever). start,
poll, stop: TestBlockingSource blocked there; put, flush: TestBlockingSink blocked there (the
blocking test plugin, loaded through plugin.path). For each, with the timeout at 2000 ms:

  1. the wedged connector x is restarted (POST .../restart?includeTasks=true): a wedged task is
     abandoned (error log naming it and its call, ferry_tasks_abandoned_total), its new instance
     starts; meanwhile another connector is created, paused, resumed and deleted, each applied
     within 1.5 s (less than the timeout: the control loop is not held by the wedged stop);
  2. SIGTERM: the worker exits 0 within the timeout and a margin; restarted, x runs again;
  3. DELETE x: applied within the timeout (the same probe), x is gone;
  4. SIGTERM again (an abandoned thread may still run): exit 0 in time; restarted, x stays gone
     and does not run;
  throughout, a FileStreamSource -> FileStreamSink flow moves numbered lines, and at the end the
  far end holds every number with none missing.
"""
import os
import re
import signal
import sys
import threading
import time

from harness import Worker, run, tmpdir, wait_until

TIMEOUT_MS = 2000
MARGIN_S = 2.5  # process start/exit, REST, the control loop's 200 ms tick
PROBE_LIMIT_S = 1.5  # < the timeout: another connector's changes never wait for a wedged stop
PLUGIN = os.environ.get("FERRY_BLOCKING_PLUGIN", "build/release/test-plugins/blocking/blocking_plugin.so")

WEDGES = {
    # name: (connector config maker, block.ms or None, expect abandoned on a stop)
    "fifo": None, "devzero": None, "sparse": None,
    "start": -1, "poll": -1, "stop": 4000, "put": -1, "flush": 4000,
}


class Flow:
    """flow-src (FileStreamSource) -> topic flow -> flow-sink (FileStreamSink): numbered lines."""

    def __init__(self, d):
        self.src = os.path.join(d, "flow-in.txt")
        self.out = os.path.join(d, "flow-out.txt")
        open(self.src, "w").close()
        self.written = 0
        self.stop_flag = threading.Event()
        self.thread = threading.Thread(target=self._write, daemon=True)

    def create(self, w):
        w.ok("POST", "/connectors", {"name": "flow-src", "config": {
            "connector.class": "FileStreamSource", "file": self.src, "topic": "flow"}})
        w.ok("POST", "/connectors", {"name": "flow-sink", "config": {
            "connector.class": "FileStreamSink", "topics": "flow", "file": self.out}})

    def _write(self):
        while not self.stop_flag.is_set():
            with open(self.src, "a") as f:
                for _ in range(10):
                    f.write(f"seq-{self.written}\n")
                    self.written += 1
            time.sleep(0.05)

    def start(self):
        self.thread.start()

    def finish(self):
        self.stop_flag.set()
        self.thread.join()

    def delivered(self):
        try:
            with open(self.out) as f:
                return [int(l[4:]) for l in f.read().splitlines() if l.startswith("seq-")]
        except OSError:
            return []

    def highest(self):
        seen = self.delivered()
        return max(seen) if seen else -1

    def assert_moves(self, what, timeout=10):
        before = self.highest()
        wait_until(lambda: self.highest() > before + 20, timeout, f"the flow to move on ({what}; was at {before})")


def metric(w, name):
    _, text = w.rest("GET", "/metrics")
    m = re.search(rf"^{name}(?:{{[^}}]*}})? ([0-9.e+]+)$", text, re.M)
    return float(m.group(1)) if m else None


def marker_count(path, stage):
    try:
        with open(path) as f:
            return sum(1 for l in f if l.strip() == stage)
    except OSError:
        return 0


def x_config(wedge, d, marker):
    if wedge == "fifo":
        path = os.path.join(d, "pipe")
        if not os.path.exists(path):
            os.mkfifo(path)
        return {"connector.class": "FileStreamSource", "file": path, "topic": "x"}
    if wedge == "devzero":
        return {"connector.class": "FileStreamSource", "file": "/dev/zero", "topic": "x"}
    if wedge == "sparse":
        path = os.path.join(d, "sparse.bin")
        with open(path, "w") as f:
            f.write("first\n")
        os.truncate(path, 50 * 1024 ** 3)
        return {"connector.class": "FileStreamSource", "file": path, "topic": "x"}
    common = {"block.in": wedge, "block.ms": str(WEDGES[wedge]), "block.marker": marker}
    if wedge in ("put", "flush"):
        return {"connector.class": "TestBlockingSink", "topics": "flow", **common}
    return {"connector.class": "TestBlockingSource", "topic": "x", **common}


def task_state(w, name):
    status, s = w.rest("GET", f"/connectors/{name}/status")
    if status != 200 or not s.get("tasks"):
        return None, ""
    t = s["tasks"][0]
    return t["state"], t.get("trace", "")


def rss_mb(w):
    with open(f"/proc/{w.proc.pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0


class Case:
    def __init__(self, wedge):
        self.wedge = wedge
        self.d = tmpdir(f"stops-{wedge}")
        self.marker = os.path.join(self.d, "marker")
        self.stage = wedge
        self.file_wedge = WEDGES[wedge] is None
        self.blocks_on_stop = wedge in ("stop", "flush")  # blocks only when stopped (flush: at the stop's commit too)
        self.w = Worker(self.d, {
            "task.shutdown.graceful.timeout.ms": str(TIMEOUT_MS),
            "plugin.path": os.path.dirname(os.path.abspath(PLUGIN)),
            "offset.flush.interval.ms": "300",
            "task.restart.backoff.initial.ms": "300",
            # /dev/zero lies outside the test's folder: allowed here on purpose, so the source's own
            # refusal of a device is what the devzero wedge exercises.
            **({"file.allowed.dirs": f"{self.d},/dev"} if wedge == "devzero" else {}),
        })
        self.flow = Flow(self.d)
        self.probes = 0

    # -- what "engaged" means for each wedge
    def wait_engaged(self, before_marks=0):
        w = self.w
        if self.wedge in ("fifo", "devzero"):
            state, trace = wait_until(lambda: (lambda st: st if st[0] == "FAILED" else None)(task_state(w, "x")), 10,
                                      "x FAILED")
            assert "not a regular file" in trace and ("FIFO" in trace or "character device" in trace), trace
        elif self.wedge == "sparse":
            state, trace = wait_until(lambda: (lambda st: st if st[0] == "FAILED" else None)(task_state(w, "x")), 10,
                                      "x FAILED")
            assert "max.line.bytes=1048576" in trace and "byte 6 of" in trace, trace
        elif self.wedge in ("start", "poll", "put"):
            wait_until(lambda: marker_count(self.marker, self.stage) > before_marks, 15, f"x blocked in {self.stage}")
        else:  # stop, flush: running normally until stopped
            wait_until(lambda: task_state(w, "x")[0] == "RUNNING", 15, "x RUNNING")
            if self.wedge == "flush":  # flush runs at every commit: it blocks soon by itself
                wait_until(lambda: marker_count(self.marker, "flush") > before_marks, 15, "x blocked in flush")
        if self.wedge in ("devzero", "sparse"):
            time.sleep(0.5)
            assert rss_mb(w) < 400, f"worker RSS {rss_mb(w):.0f} MB: the wedged file is being buffered"

    def probe(self, what):
        """Another connector is created, paused, resumed and deleted meanwhile, each applied well
        within the stop timeout: the control loop does not wait for the wedged task."""
        w = self.w
        self.probes += 1
        name = f"probe-{self.probes}"
        limit = PROBE_LIMIT_S
        t0 = time.time()
        w.ok("POST", "/connectors", {"name": name, "config": {
            "connector.class": "TestBlockingSource", "topic": "probe"}})
        w.wait_running(name, timeout=limit + 10)
        took = time.time() - t0
        assert took <= limit, f"{what}: a new connector took {took:.1f}s to run (limit {limit}s)"
        w.ok("PUT", f"/connectors/{name}/pause", expect=(202,))
        wait_until(lambda: w.ok("GET", f"/connectors/{name}/status")["connector"]["state"] == "PAUSED", limit,
                   f"{what}: {name} PAUSED")
        w.ok("PUT", f"/connectors/{name}/resume", expect=(202,))
        w.wait_running(name, timeout=limit)
        w.ok("DELETE", f"/connectors/{name}")
        wait_until(lambda: w.rest("GET", f"/connectors/{name}/status")[0] == 404, limit, f"{what}: {name} deleted")
        return took

    def sigterm(self, what):
        w = self.w
        t0 = time.time()
        w.proc.send_signal(signal.SIGTERM)
        try:
            rc = w.proc.wait(TIMEOUT_MS / 1000 + MARGIN_S + 5)
        except Exception:
            w.proc.kill()
            w.proc.wait()
            raise AssertionError(f"{what}: the worker did not exit after SIGTERM\n{w.tail_log()}")
        took = time.time() - t0
        assert rc == 0, f"{what}: exit code {rc} after SIGTERM\n{w.tail_log()}"
        assert took <= TIMEOUT_MS / 1000 + MARGIN_S, f"{what}: SIGTERM took {took:.1f}s"
        return took

    def log(self):
        with open(self.w.log_path, errors="replace") as f:
            return f.read()

    def main(self):
        w, flow = self.w, self.flow
        w.start()
        flow.create(w)
        flow.start()
        w.wait_running("flow-src")
        w.wait_running("flow-sink")
        flow.assert_moves("at start")

        w.ok("POST", "/connectors", {"name": "x", "config": x_config(self.wedge, self.d, self.marker)})
        self.wait_engaged()
        flow.assert_moves("x engaged")

        # 1. Restart x with its tasks.
        marks = marker_count(self.marker, self.stage)
        w.ok("POST", "/connectors/x/restart?includeTasks=true", expect=(202, 204))
        took = self.probe("restart")
        if self.file_wedge:
            self.wait_engaged()  # the new instance fails the same way, at once
            assert metric(w, "ferry_tasks_abandoned_total") == 0, "a file task that fails is never abandoned"
        else:
            wait_until(lambda: metric(w, "ferry_tasks_abandoned_total") == 1, TIMEOUT_MS / 1000 + MARGIN_S,
                       "the wedged task abandoned (ferry_tasks_abandoned_total 1)")
            blocked = {"start": "start()", "poll": "poll()", "stop": "stop()", "put": "put()", "flush": "preCommit()"}
            want = f"task x-0 did not stop within task.shutdown.graceful.timeout.ms={TIMEOUT_MS} (blocked in " \
                   f"{blocked[self.wedge]})"
            wait_until(lambda: want in self.log(), 5, f"the log line '{want}'")
            # The new instance starts normally (and, wedged the same way, blocks again).
            self.wait_engaged(before_marks=marks if self.wedge in ("start", "poll", "put", "flush") else 0)
        print(f"{self.wedge}: restart applied, another connector ran after {took:.2f}s", flush=True)
        flow.assert_moves("after restart")

        # 2. SIGTERM with x wedged (for stop/flush: blocking in the shutdown itself).
        took = self.sigterm("shutdown with x wedged")
        print(f"{self.wedge}: SIGTERM with x wedged: exit 0 after {took:.2f}s", flush=True)
        marks = marker_count(self.marker, self.stage)
        w.start()
        assert "x" in w.ok("GET", "/connectors")
        self.wait_engaged(before_marks=marks if self.wedge in ("start", "poll", "put") else 0)
        flow.assert_moves("after the first restart of the worker")

        # 3. DELETE x.
        w.ok("DELETE", "/connectors/x")
        took = self.probe("delete")
        assert w.rest("GET", "/connectors/x")[0] == 404
        if not self.file_wedge:
            wait_until(lambda: metric(w, "ferry_tasks_abandoned_total") == 1, TIMEOUT_MS / 1000 + MARGIN_S,
                       "the deleted wedged task abandoned")
        print(f"{self.wedge}: delete applied, another connector ran after {took:.2f}s", flush=True)
        flow.assert_moves("after delete")

        # 4. SIGTERM with an abandoned thread possibly still running; x stays deleted.
        took = self.sigterm("shutdown after delete")
        print(f"{self.wedge}: SIGTERM after delete: exit 0 after {took:.2f}s", flush=True)
        marks = marker_count(self.marker, self.stage)
        w.start()
        assert "x" not in w.ok("GET", "/connectors"), "the deleted connector came back"
        flow.assert_moves("after the second restart of the worker")
        time.sleep(1.0)
        assert w.rest("GET", "/connectors/x/status")[0] == 404
        assert marker_count(self.marker, self.stage) == marks, "the deleted connector ran again"

        # The flow's far end holds every number: nothing lost across wedges, stops and restarts.
        flow.finish()
        total = flow.written
        wait_until(lambda: set(flow.delivered()) >= set(range(total)), 30, f"all {total} flow lines delivered")
        got = flow.delivered()
        print(f"{self.wedge}: flow delivered {len(set(got))}/{total} numbered lines "
              f"({len(got) - len(set(got))} duplicates)", flush=True)
        assert w.stop() == 0


def main():
    wedge = sys.argv[1] if len(sys.argv) > 1 else "poll"
    if wedge not in WEDGES:
        raise AssertionError(f"unknown wedge {wedge}; one of {', '.join(WEDGES)}")
    if WEDGES[wedge] is not None and not os.path.exists(PLUGIN):
        raise AssertionError(f"blocking test plugin not built: {PLUGIN}")
    Case(wedge).main()


if __name__ == "__main__":
    run(main)
