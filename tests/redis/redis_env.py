"""What the Redis tests share: the servers of scripts/services/redis, a private AOF-backed server a
test may restart, and helpers to write sequence-numbered input and count what arrived."""
import atexit
import os
import shutil
import signal
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
from harness import free_port, wait_until  # noqa: E402
from resp_client import Redis, RedisError  # noqa: E402

RUN_DIR = os.environ.get("FERRY_REDIS_RUN_DIR", os.path.expanduser("~/.cache/ferry-peers/redis/run"))
PLAIN = int(os.environ.get("FERRY_REDIS_PORT", "16379"))
TLS = int(os.environ.get("FERRY_REDIS_TLS_PORT", "16380"))
CLUSTER = [17001, 17002, 17003]
PASSWORD = "ferry-redis-pw"
CA = os.path.join(RUN_DIR, "certs", "ca.crt")


def require_services():
    for port, kw in ((PLAIN, {}), (TLS, {"password": PASSWORD, "tls_ca": CA}), (CLUSTER[0], {})):
        try:
            Redis(port=port, **kw).call("PING")
        except Exception as e:  # noqa: BLE001
            raise AssertionError(f"Redis on 127.0.0.1:{port} does not answer ({e}); "
                                 "start it with scripts/services/redis start (scripts/test redis does)")


class OwnRedis:
    """A redis-server of the test's own (appendonly, fsync always) on a free port, which the test
    may kill -9 and start again without losing what it acknowledged."""

    def __init__(self, workdir, port=None):
        self.dir = os.path.join(workdir, "redis")
        os.makedirs(self.dir, exist_ok=True)
        self.port = port or free_port()
        self.proc = None
        with open(os.path.join(self.dir, "redis.conf"), "w") as f:
            f.write(f"bind 127.0.0.1\nport {self.port}\ndir {self.dir}\nappendonly yes\nappendfsync always\n"
                    "save \"\"\nprotected-mode yes\nlogfile redis.log\n")

    def start(self):
        if self not in _own:
            _own.append(self)
        binary = shutil.which("redis-server") or "/usr/bin/redis-server"
        self.proc = subprocess.Popen([binary, os.path.join(self.dir, "redis.conf")], cwd=self.dir,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def up():
            try:
                return Redis(port=self.port, timeout=2).call("PING") == "PONG"
            except (OSError, RedisError):  # not listening yet, or LOADING the append-only file
                return False
        wait_until(up, 20, f"own redis on {self.port}")

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(10)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)

    def client(self):
        return Redis(port=self.port)


_own = []  # every OwnRedis started: killed when the test process ends, passed or failed


@atexit.register
def _stop_own():
    for r in _own:
        if r.proc and r.proc.poll() is None:
            r.proc.kill()
            r.proc.wait(10)


def write_lines(path, start, end, fmt):
    with open(path, "a") as f:
        for i in range(start, end):
            f.write(fmt(i) + "\n")


def seqs_of(values, field="seq"):
    """sequence numbers from JSON texts (bytes or str) -> (set, duplicates)"""
    import json
    seen, dups = set(), 0
    for v in values:
        if isinstance(v, bytes):
            v = v.decode()
        s = json.loads(v)[field]
        if s in seen:
            dups += 1
        seen.add(s)
    return seen, dups


def wait_for(cond, timeout, what):
    return wait_until(cond, timeout, what, interval=0.2)


def now():
    return time.time()
