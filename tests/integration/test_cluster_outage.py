"""Status during a backbone outage (distributed mode, kafka backbone): read-only REST answers from
the worker's applied cluster state at once and says how stale it is.

The test runs its OWN Kafka broker (scripts/services/kafka with KAFKA_PORT, KAFKA_CONTROLLER_PORT,
KAFKA_SASL_PORT, KAFKA_SSL_PORT and KAFKA_RUN_DIR overridden: ports $FERRY_OUTAGE_KAFKA_PORT..+3,
default 48092..48095, a run directory in a temporary folder), because it freezes and kills it; the
shared clusters are never touched. Two `ferry distributed` workers, a DatagenSource of 3 tasks.

  (a) healthy: GET /connectors?expand=status answers with the header X-Ferry-State-Age-Ms, small;
  (b) the broker SIGSTOPped (a hung broker: connections stay open, nothing answers) for 8 s: on
      both workers GET /connectors, /connectors?expand=status, /connectors/<c>/status,
      /connectors/<c>/config and /cluster answer 200 with the connector and its 3 tasks (Kafka
      Connect bodies) within 2 s from the first poll (the lease, 1.5 s at the defaults, is the
      longest a read waits once the log stops answering) and within 1 s once the lease is gone;
      X-Ferry-State-Age-Ms and /cluster's state_age_ms grow with the outage;
  (c) SIGCONT: the workers regain their leases, the tasks are RUNNING again and the age is small;
  (d) the broker kill -9ed (connections refused): the same reads answer within 1 s once the lease
      is gone, with a growing age.

Before this change each read first asked the broker for the cluster log's end (up to 10 s) and
waited up to 5 s to apply it: every poll during the outage took 10 s or more.

Environment: FERRY_BIN, FERRY_OUTAGE_KAFKA_PORT (default 48092; uses 4 ports from it)."""
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.error
import urllib.request

from harness import Worker, run, tmpdir, wait_until

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
KAFKA_SCRIPT = os.path.join(ROOT, "scripts", "services", "kafka")
PORT = int(os.environ.get("FERRY_OUTAGE_KAFKA_PORT", "48092"))
TASKS = 3
OUTAGE_S = 8
FIRST_POLL_LIMIT_S = 2.0  # from the freeze on: the lease (session 2 s - margin 0.5 s) bounds a wait
LEASELESS_LIMIT_S = 1.0   # once the lease is gone: at once


class Broker:
    """A private single-node Kafka on its own ports and run directory."""

    def __init__(self):
        self.run_dir = tempfile.mkdtemp(prefix="ferry-outage-kafka-")
        self.env = dict(os.environ, KAFKA_PORT=str(PORT), KAFKA_CONTROLLER_PORT=str(PORT + 1),
                        KAFKA_SASL_PORT=str(PORT + 2), KAFKA_SSL_PORT=str(PORT + 3),
                        KAFKA_RUN_DIR=os.path.join(self.run_dir, "run"), KAFKA_HEAP="-Xmx512M -Xms512M")
        self.bootstrap = f"127.0.0.1:{PORT}"

    def _script(self, *args, timeout=300):
        return subprocess.run([KAFKA_SCRIPT, *args], env=self.env, capture_output=True, timeout=timeout)

    def start(self):
        p = self._script("start")
        assert p.returncode == 0, f"private Kafka on {PORT} did not start: {p.stderr.decode()[-1500:]}"

    def pid(self):
        p = self._script("pid", timeout=30)
        return int(p.stdout.decode().strip()) if p.returncode == 0 and p.stdout.strip() else None

    def signal(self, sig):
        pid = self.pid()
        assert pid, "private Kafka is not running"
        os.kill(pid, sig)

    def stop(self):
        pid = self.pid()
        if pid:
            try:
                os.kill(pid, 18)  # SIGCONT: a frozen broker cannot take the SIGTERM of `stop`
            except OSError:
                pass
        self._script("stop", timeout=120)
        shutil.rmtree(self.run_dir, ignore_errors=True)


def get(w, path, timeout=15):
    """(status, body, X-Ferry-State-Age-Ms or None, seconds); status None when no answer in time."""
    t0 = time.time()
    req = urllib.request.Request(w.url + path, method="GET")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            text = r.read().decode()
            age = r.headers.get("X-Ferry-State-Age-Ms")
            return r.status, json.loads(text) if text.strip() else None, age, time.time() - t0
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), e.headers.get("X-Ferry-State-Age-Ms"), time.time() - t0
    except OSError as e:
        return None, str(e), None, time.time() - t0


def reads(w, name):
    """Every read-only route the brief names, checked for its Kafka Connect body.
    -> [(path, seconds, age ms or None, problem or None)]"""
    out = []

    def check(path, ok):
        status, body, age, took = get(w, path)
        problem = None
        if status != 200:
            problem = f"status {status}: {str(body)[:200]}"
        elif not ok(body):
            problem = f"unexpected body {str(body)[:300]}"
        out.append((path, round(took, 3), int(age) if age is not None else None, problem))

    check("/connectors", lambda b: b == [name])
    check("/connectors?expand=status", lambda b: isinstance(b, dict) and name in b and
          len(b[name]["status"]["tasks"]) == TASKS and "connector" in b[name]["status"])
    check(f"/connectors/{name}/status", lambda b: b.get("name") == name and len(b.get("tasks", [])) == TASKS)
    check(f"/connectors/{name}/config", lambda b: b.get("connector.class") == "DatagenSource")
    check("/cluster", lambda b: "lease" in b and "assignment" in b)
    return out


def lease_of(w):
    status, body, _, _ = get(w, "/cluster", timeout=5)
    return body.get("lease") if status == 200 else None


def all_running(w, name):
    status, body, _, _ = get(w, f"/connectors/{name}/status", timeout=10)
    return status == 200 and len(body["tasks"]) == TASKS and all(t["state"] == "RUNNING" for t in body["tasks"])


def outage(workers, name, phase, first_limit):
    """Polls every read on every worker for OUTAGE_S seconds; asserts the limits. -> a summary."""
    t0 = time.time()
    worst_first, worst_leaseless, ages, problems, polls = 0.0, 0.0, [], [], 0
    no_age = []
    lease_gone = {}
    while time.time() - t0 < OUTAGE_S:
        for i, w in enumerate(workers):
            if i not in lease_gone and lease_of(w) is False:
                lease_gone[i] = round(time.time() - t0, 2)
            for path, took, age, problem in reads(w, name):
                polls += 1
                if problem:
                    problems.append((f"w{i + 1}", path, round(time.time() - t0, 2), problem))
                if path != "/cluster" and age is None and problem is None:
                    no_age.append((f"w{i + 1}", path))
                if i in lease_gone:
                    worst_leaseless = max(worst_leaseless, took)
                    if age is not None:
                        ages.append(age)
                else:
                    worst_first = max(worst_first, took)
        time.sleep(0.2)
    summary = {"test": phase, "polls": polls, "lease_lost_after_s": lease_gone,
               "slowest_read_before_lease_lost_s": round(worst_first, 3),
               "slowest_read_without_lease_s": round(worst_leaseless, 3),
               "state_age_ms_min_max": [min(ages), max(ages)] if ages else None, "problems": problems[:5],
               "reads_without_age_header": len(no_age)}
    print(json.dumps(summary), flush=True)
    assert not problems, f"{phase}: {len(problems)} read(s) failed, first {problems[:5]}"
    assert len(lease_gone) == len(workers), f"{phase}: not every worker saw its lease end: {lease_gone}"
    assert worst_first <= first_limit, f"{phase}: a read took {worst_first:.2f} s before the lease ended"
    assert worst_leaseless <= LEASELESS_LIMIT_S, \
        f"{phase}: a read took {worst_leaseless:.2f} s without the lease (limit {LEASELESS_LIMIT_S} s)"
    assert not no_age, f"{phase}: {len(no_age)} read(s) without X-Ferry-State-Age-Ms, first {no_age[:3]}"
    assert ages and max(ages) >= (OUTAGE_S - 3) * 1000, f"{phase}: the state age did not grow: {ages[-5:]}"
    for w in workers:
        status, body, _, _ = get(w, "/cluster", timeout=5)
        assert status == 200 and body.get("state_age_ms", -1) >= (OUTAGE_S - 3) * 1000, \
            f"{phase}: GET /cluster does not say how stale it is: {str(body)[:300]}"
    return summary


def main():
    broker = Broker()
    broker.start()
    workers = []
    try:
        base = {"backbone": "kafka", "backbone.kafka.bootstrap.servers": broker.bootstrap,
                "cluster.name": f"outage{os.getpid()}", "log.level": "info"}
        for i in range(2):
            w = Worker(tmpdir(f"outage-w{i + 1}"), dict(base, **{"worker.id": f"w{i + 1}"}), mode="distributed")
            w.start(timeout=90)
            workers.append(w)
        name = "gen"
        workers[0].ok("POST", "/connectors", {"name": name, "config": {
            "connector.class": "DatagenSource", "topic": f"outage-data-{os.getpid()}", "tasks.max": str(TASKS),
            "rate": "50", "format": "string"}})
        wait_until(lambda: all(all_running(w, name) for w in workers), 60, "every task RUNNING", 0.2)

        # (a) healthy
        healthy_ages = []
        for w in workers:
            for path, took, age, problem in reads(w, name):
                assert problem is None, (path, problem)
                if path != "/cluster":
                    healthy_ages.append(age)
        status, body, age, took = get(workers[1], "/connectors?expand=status")
        print(json.dumps({"test": "healthy", "expand_status_s": round(took, 3), "state_age_ms": healthy_ages}),
              flush=True)

        # (b) a hung broker
        broker.signal(19)  # SIGSTOP
        try:
            outage(workers, name, "broker_sigstop", FIRST_POLL_LIMIT_S)
        finally:
            broker.signal(18)  # SIGCONT

        # (c) back
        wait_until(lambda: all(lease_of(w) for w in workers), 60, "leases back after SIGCONT", 0.2)
        wait_until(lambda: all(all_running(w, name) for w in workers), 90, "tasks RUNNING after SIGCONT", 0.3)
        ages = []
        for w in workers:
            for path, took, age, problem in reads(w, name):
                assert problem is None, (path, problem)
                if age is not None:
                    ages.append(age)
        assert ages and max(ages) < 3000, f"the state age stayed large after the outage: {ages}"
        print(json.dumps({"test": "recovered", "state_age_ms_max": max(ages)}), flush=True)

        # (d) a dead broker: connections refused. Before the lease ends a read may still wait for
        # an end query librdkafka holds until its timeout; only the lease-less reads are bounded.
        broker.signal(9)
        outage(workers, name, "broker_kill9", 30.0)
    finally:
        for w in workers:
            if w.proc and w.proc.poll() is None:
                w.kill9()  # a graceful stop would wait for the dead broker
        broker.stop()


if __name__ == "__main__":
    run(main)
