"""The Redis connectors against TLS, passwords and servers that misbehave:

  (a) TLS + password (scripts/services/redis, 16380): 2,000 sequence-numbered records RedisSink
      RPUSH -> list -> RedisSource -> file, all arrive; the password is masked in the config
      answers and appears nowhere in the worker's log.
  (b) a wrong password: the task FAILED, its trace says the login was refused (and not the password).
  (c) a CA that did not sign the server's certificate: FAILED, the trace says the certificate check failed.
  (d) plain TCP to the TLS port: FAILED or retrying with a clear reason, never RUNNING with data.
  (e) Redis down when the connectors start: the task runs, its connection reconnecting with the
      reason ("cannot connect"); once a server listens there, records flow without a restart.
  (f) hostile servers: one that answers every command with an array of 9,999,999,999 elements,
      one that never answers: clear errors (FAILED with a protocol error / reconnecting with no
      answer in time), the worker stays healthy and another connector keeps running.
"""
import json
import os
import socket
import subprocess
import threading
import time

from redis_env import CA, PASSWORD, TLS, OwnRedis, require_services, seqs_of, wait_for, write_lines
from harness import Worker, free_port, run, tmpdir


def task_state(w, name):
    status, s = w.rest("GET", f"/connectors/{name}/status")
    if status != 200 or not s.get("tasks"):
        return None, ""
    t = s["tasks"][0]
    return t["state"], t.get("trace", "")


def connection_of(w, name):
    status, s = w.rest("GET", f"/connectors/{name}/status")
    return s["tasks"][0].get("connection", {}) if status == 200 and s.get("tasks") else {}


def wait_reconnecting_with(w, name, text, timeout=30):
    """Waits until `name`'s task is RUNNING with its connection reconnecting for `text`."""
    def reconnecting():
        state, trace = task_state(w, name)
        c = connection_of(w, name)
        return state == "RUNNING" and c.get("state") == "reconnecting" and text in c.get("error", "") and \
            text in trace and c
    return wait_for(reconnecting, timeout, f"{name} RUNNING, reconnecting with '{text}'")


def wait_failed_with(w, name, text, timeout=30):
    def failed():
        state, trace = task_state(w, name)
        return (state == "FAILED" and text in trace) and trace
    return wait_for(failed, timeout, f"{name} FAILED with '{text}'")


class Hostile(threading.Thread):
    """A TCP server on 127.0.0.1 that answers each read with `answer` (None: never answers)."""

    def __init__(self, answer):
        super().__init__(daemon=True)
        self.answer = answer
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.conns = []

    def run(self):
        while True:
            try:
                c, _ = self.sock.accept()
            except OSError:
                return
            self.conns.append(c)
            threading.Thread(target=self.serve, args=(c,), daemon=True).start()

    def serve(self, c):
        try:
            while c.recv(65536):
                if self.answer is not None:
                    c.sendall(self.answer)
        except OSError:
            pass


def main():
    require_services()
    work = tmpdir("redis-tls-faults")
    run_id = os.urandom(3).hex()
    w = Worker(work)
    w.start()
    tls = {"redis.hosts": f"127.0.0.1:{TLS}", "redis.ssl.enabled": "true", "redis.ssl.ca.location": CA,
           "redis.password": PASSWORD}

    # (a)
    src, out = os.path.join(work, "in.txt"), os.path.join(work, "out.txt")
    open(src, "w").close()
    n = 2000
    w.ok("PUT", "/connectors/lines/config", {"connector.class": "FileStreamSource", "file": src, "topic": "seq"})
    w.ok("PUT", "/connectors/push/config", dict(tls, **{"connector.class": "RedisSink", "topics": "seq",
                                                          "redis.command": "RPUSH", "redis.key": f"{run_id}:q"}))
    w.ok("PUT", "/connectors/pop/config", dict(tls, **{"connector.class": "RedisSource", "redis.lists": f"{run_id}:q",
                                                         "topic": "back"}))
    w.ok("PUT", "/connectors/file/config", {"connector.class": "FileStreamSink", "topics": "back", "file": out})
    for name in ("lines", "push", "pop", "file"):
        w.wait_running(name)
    write_lines(src, 0, n, lambda i: json.dumps({"seq": i}))

    def arrived():
        if not os.path.exists(out):
            return False
        return seqs_of([l for l in open(out).read().splitlines() if l.strip()])[0] == set(range(n))
    wait_for(arrived, 60, "every record through TLS")
    cfg = w.ok("GET", "/connectors/push/config")
    assert PASSWORD not in json.dumps(cfg), f"the password in the config answer: {cfg}"
    assert PASSWORD not in json.dumps(w.ok("GET", "/connectors/pop/status"))
    assert PASSWORD not in open(w.log_path).read(), "the password in the worker log"
    print(f"(a) TLS + password: {n} records RPUSH -> list -> RedisSource, all arrived; password masked "
          f"(redis.password={cfg.get('redis.password')!r}) and absent from the log", flush=True)

    # (b)
    w.ok("PUT", "/connectors/badpw/config", dict(tls, **{"connector.class": "RedisSink", "topics": "seq",
                                                           "redis.password": "not-the-password-123"}))
    trace = wait_failed_with(w, "badpw", "refused the login")
    assert "not-the-password-123" not in trace, trace
    print("(b) wrong password: FAILED, 'refused the login' in the trace, the password not in it", flush=True)

    # (c)
    other = os.path.join(work, "other-ca")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", other + ".key",
                    "-out", other + ".crt", "-subj", "/CN=not-the-ca", "-days", "1"], check=True, capture_output=True)
    w.ok("PUT", "/connectors/badca/config", dict(tls, **{"connector.class": "RedisSink", "topics": "seq",
                                                           "redis.ssl.ca.location": other + ".crt"}))
    wait_failed_with(w, "badca", "certificate check failed")
    print("(c) a CA that did not sign the server's certificate: FAILED, 'certificate check failed'", flush=True)

    # (d)
    w.ok("PUT", "/connectors/notls/config", {"connector.class": "RedisSink", "topics": "seq",
                                             "redis.hosts": f"127.0.0.1:{TLS}", "redis.password": PASSWORD,
                                             "redis.timeout.ms": "1000", "redis.connect.timeout.ms": "1000"})
    def refused():
        state, trace = task_state(w, "notls")
        if state == "FAILED" and trace:
            return trace
        c = connection_of(w, "notls")
        return state == "RUNNING" and c.get("state") == "reconnecting" and c.get("error")
    trace = wait_for(refused, 30, "plain TCP to the TLS port refused")
    assert "Redis 127.0.0.1:%d" % TLS in trace, trace
    print(f"(d) plain TCP to the TLS port: FAILED or reconnecting: {trace.splitlines()[0][:160]}", flush=True)

    # (e)
    port = free_port()
    down = {"redis.hosts": f"127.0.0.1:{port}"}
    w.ok("PUT", "/connectors/later/config", dict(down, **{"connector.class": "RedisSink", "topics": "seq",
                                                            "redis.command": "RPUSH", "redis.key": f"{run_id}:later"}))
    # The task runs and says why it cannot write (Kafka's state RUNNING, the connection
    # reconnecting with the reason); once Redis listens the records flow, without a restart.
    t = wait_reconnecting_with(w, "later", "cannot connect")
    redis = OwnRedis(work, port)
    redis.start()
    wait_for(lambda: redis.client().call("LLEN", f"{run_id}:later") >= n, 60, "records once Redis listens")
    wait_for(lambda: connection_of(w, "later").get("state") == "connected", 30, "later connected")
    print(f"(e) Redis down at start: RUNNING, reconnecting ({t['error'][:100]!r}); once Redis listens the "
          "records flow without a restart and the connection says connected", flush=True)

    # (f)
    huge = Hostile(b"*9999999999\r\n")
    silent = Hostile(None)
    huge.start()
    silent.start()
    for name, h in (("huge", huge), ("silent", silent)):
        w.ok("PUT", f"/connectors/{name}/config", {
            "connector.class": "RedisSource", "redis.hosts": f"127.0.0.1:{h.port}", "redis.lists": "x",
            "redis.timeout.ms": "1000", "redis.connect.timeout.ms": "1000", "topic": "h"})
    t1 = wait_failed_with(w, "huge", "protocol error")
    t2 = wait_reconnecting_with(w, "silent", "no answer in time")["error"]
    status, health = w.rest("GET", "/health")
    assert status == 200, health
    write_lines(src, n, n + 10, lambda i: json.dumps({"seq": i}))
    wait_for(lambda: redis.client().call("LLEN", f"{run_id}:later") >= n + 10, 30, "the other connector still running")
    print(f"(f) hostile servers: '{t1.splitlines()[0][:120]}' / '{t2.splitlines()[0][:120]}'; the worker healthy, "
          "another connector kept running", flush=True)
    w.stop()
    redis.stop()


if __name__ == "__main__":
    run(main)
