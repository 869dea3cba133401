"""Test harness for integration tests: starts the real `ferry` binary and talks to its REST API.

Standard library only. The binary comes from $FERRY_BIN (CTest sets it). $FERRY_TEST_BIN, when set,
wins over it: CTest's own FERRY_BIN overrides one set in the shell, so this is how a test is run
against another build, e.g. an older commit's binary to show the test fails on it:
    FERRY_TEST_BIN=/path/to/old/ferry ctest --test-dir build/release -R <test>
The folders a test makes with tmpdir() are removed when it passes (FERRY_KEEP_TMP=1 keeps them) and
kept when it fails.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

FERRY_BIN = (os.environ.get("FERRY_TEST_BIN") or
             os.environ.get("FERRY_BIN", "build/release/apps/ferry/ferry"))


_handed_out = set()  # ports free_port() gave this process: never given twice


def free_port():
    """A port nothing listens on now and that this process was not given before (the kernel may
    hand the same ephemeral port to two binds in a row while nobody listens on it yet)."""
    while True:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        if port not in _handed_out:
            _handed_out.add(port)
            return port


def listens_on(pid, port):
    """Whether process `pid` itself holds a listening TCP socket on `port` (in its own network
    namespace): /proc/<pid>/net/tcp{,6} names the socket's inode, /proc/<pid>/fd links to it."""
    inodes = set()
    for name in ("tcp", "tcp6"):
        try:
            with open(f"/proc/{pid}/net/{name}") as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            cols = row.split()
            if len(cols) > 9 and cols[3] == "0A" and int(cols[1].rsplit(":", 1)[1], 16) == port:
                inodes.add(cols[9])
    if not inodes:
        return False
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return False
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:[") and target[8:-1] in inodes:
            return True
    return False


def thread_names(pid):
    """The names of the threads of process `pid` (/proc/<pid>/task/*/comm)."""
    names = set()
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/comm") as f:
                names.add(f.read().strip())
        except OSError:
            pass  # the thread ended meanwhile
    return names


def wait_until(cond, timeout, what, interval=0.05):
    """Polls cond() until it returns a truthy value; fails the test after `timeout` seconds."""
    deadline = time.time() + timeout
    last = None
    while time.time() < deadline:
        last = cond()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what} (last: {last!r})")


def require_reachable(host, port, what, hint):
    """Fails the test at once, saying how to start it, when nothing listens on host:port."""
    try:
        socket.create_connection((host, int(port)), timeout=3).close()
    except OSError as e:
        raise AssertionError(f"{what} {host}:{port} unreachable ({e}); {hint}")


def read_lines(path):
    """The lines of a file as bytes, without line ends; [] while it does not exist."""
    try:
        with open(path, "rb") as f:
            return f.read().splitlines()
    except FileNotFoundError:
        return []


def thread_stacks(pid):
    """Every thread's stack of a live process (gdb, when installed), for a hang's report."""
    if not shutil.which("gdb"):
        return "(gdb not installed: no stacks)"
    try:
        out = subprocess.run(["gdb", "-p", str(pid), "-batch", "-nx", "-ex", "set pagination off",
                              "-ex", "thread apply all bt 30"], capture_output=True, text=True, timeout=60)
        return "\n".join(l for l in out.stdout.splitlines() if l.startswith(("#", "Thread")))
    except (OSError, subprocess.TimeoutExpired) as e:
        return f"(gdb failed: {e})"


class Worker:
    """One standalone ferry worker process with its own data folder and REST port."""

    def __init__(self, workdir, extra=None, connector_files=(), mode="standalone", prefix=(), env=None):
        self.workdir = workdir
        self.port = free_port()
        self.data = os.path.join(workdir, "data")
        self.props = os.path.join(workdir, "worker.properties")
        self.log_path = os.path.join(workdir, "worker.log")
        props = {
            "rest.host": "127.0.0.1",
            "rest.port": str(self.port),
            "data.dir": self.data,
            "offset.flush.interval.ms": "1000",
            # File connectors may use files anywhere in the test's folder (data.dir inside it stays
            # off limits to them). FERRY_NO_FILE_ALLOWED_DIRS=1 leaves the key out, to run a test
            # against a binary that predates it.
            "file.allowed.dirs": None if os.environ.get("FERRY_NO_FILE_ALLOWED_DIRS") == "1" else workdir,
        }
        props.update(extra or {})
        props = {k: v for k, v in props.items() if v is not None}  # None: leave the key out
        with open(self.props, "w") as f:
            for k, v in props.items():
                f.write(f"{k}={v}\n")
        self.connector_files = list(connector_files)
        self.mode = mode
        self.prefix = list(prefix)  # e.g. ["ip", "netns", "exec", NAME]: it execs, the pid stays ferry's
        self.env = env  # extra environment variables for the process (e.g. LD_PRELOAD), or None
        self.proc = None
        self.url = f"http://127.0.0.1:{self.port}"

    def start(self, timeout=30, env=None):
        """Starts the worker. `env` (a dict) replaces the constructor's extra variables for this start;
        an empty dict starts it with the plain environment."""
        extra = self.env if env is None else env
        log = open(self.log_path, "ab")
        self.proc = subprocess.Popen([*self.prefix, FERRY_BIN, self.mode, self.props, *self.connector_files],
                                     stdout=log, stderr=subprocess.STDOUT, cwd=self.workdir,
                                     env={**os.environ, **extra} if extra else None)
        if self not in _started:
            _started.append(self)
        log.close()
        t0 = time.time()
        def listening():  # this process's own REST is up (not another process on the same port)
            return listens_on(self.proc.pid, self.port)

        def ready():
            if self.proc.poll() is not None:
                raise AssertionError(f"ferry exited with {self.proc.returncode}:\n{self.tail_log()}")
            if not listening():
                return False
            try:
                status, _ = self.rest("GET", "/health", timeout=1)
                return status == 200
            except OSError:
                return False
        wait_until(ready, timeout, "REST ready")
        return time.time() - t0

    def tail_log(self, n=60):
        try:
            with open(self.log_path, "rb") as f:
                return b"\n".join(f.read().splitlines()[-n:]).decode(errors="replace")
        except OSError:
            return ""

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self, timeout=30):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                stacks = thread_stacks(self.proc.pid)
                self.proc.kill()
                self.proc.wait(10)
                raise AssertionError("ferry did not stop within %ss of SIGTERM; its threads were:\n%s\n--- log:\n%s"
                                     % (timeout, stacks, self.tail_log()))
        return self.proc.returncode if self.proc else None

    def rest(self, method, path, body=None, timeout=10, raw=None):
        data = None
        headers = {}
        if raw is not None:
            data = raw if isinstance(raw, bytes) else raw.encode()
            headers["Content-Type"] = "application/json"
        elif body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        req = urllib.request.Request(self.url + path, data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                text = r.read().decode()
                if "json" not in (r.headers.get("Content-Type") or ""):
                    return r.status, text  # /metrics and other text answers
                return r.status, (json.loads(text) if text.strip() else None)
        except urllib.error.HTTPError as e:
            text = e.read().decode()
            try:
                return e.code, json.loads(text)
            except ValueError:
                return e.code, text

    def ok(self, method, path, body=None, expect=(200, 201, 202, 204)):
        status, payload = self.rest(method, path, body)
        if status not in expect:
            raise AssertionError(f"{method} {path} -> {status}: {payload}\n{self.tail_log()}")
        return payload

    def metric(self, name, connector):
        """The sum of /metrics series `name` of `connector`'s tasks; None when it has none."""
        status, text = self.rest("GET", "/metrics")
        assert status == 200, (status, text)
        total = None
        for line in text.splitlines():
            if line.startswith(name + "{") and f'connector="{connector}"' in line.split("}", 1)[0]:
                total = (total or 0) + float(line.rsplit(" ", 1)[1])
        return total

    def wait_running(self, name, timeout=30):
        def running():
            status, s = self.rest("GET", f"/connectors/{name}/status")
            if status != 200:
                return False
            tasks = s.get("tasks", [])
            return s["connector"]["state"] == "RUNNING" and tasks and all(t["state"] == "RUNNING" for t in tasks)
        return wait_until(running, timeout, f"{name} RUNNING")


def start_cluster(root, base, n=3, timeout=60):
    """n `ferry distributed` workers w1..wn in folders root/w1..wn with the shared properties
    `base` (worker.id set per worker), started; returns them in order."""
    workers = []
    for i in range(n):
        wd = os.path.join(root, f"w{i + 1}")
        os.makedirs(wd)
        workers.append(Worker(wd, dict(base, **{"worker.id": f"w{i + 1}"}), mode="distributed"))
    for w in workers:
        w.start(timeout=timeout)
    return workers


_tmpdirs = []  # every folder tmpdir() made; removed when the test passes, kept when it fails


def tmpdir(prefix):
    d = tempfile.mkdtemp(prefix=f"ferry-{prefix}-")
    _tmpdirs.append(d)
    return d


def remove_tmpdirs():
    """Removes the folders this test made (worker data, logs, outputs). A whole run writes several
    GB of them; left behind they fill a shared disk, and brokers refuse writes on a full disk."""
    for d in _tmpdirs:
        shutil.rmtree(d, ignore_errors=True)
    _tmpdirs.clear()


_started = []  # every Worker started by this test, killed when the test ends


def run(main):
    """Runs a test's main(); prints a result line CTest shows; exit code 0 only on success. A
    worker left running by a failed test is killed, so it cannot disturb the next test."""
    try:
        main()
    except AssertionError as e:
        print(f"FAIL: {e}", file=sys.stderr)
        for w in _started:  # the exited ones too: a crash is what most needs its log
            if w.proc:
                rc = w.proc.poll()
                state = "running" if rc is None else f"exited with {rc}"
                print(f"--- worker log tail ({w.log_path}, {state}):\n{w.tail_log(40)}", file=sys.stderr)
        sys.exit(1)
    finally:
        for w in _started:
            if w.proc and w.proc.poll() is None:
                w.proc.kill()
                w.proc.wait()
    if os.environ.get("FERRY_KEEP_TMP") != "1":
        remove_tmpdirs()
    print("PASS")
