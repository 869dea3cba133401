"""Browser tests of the web console (web/console) in real headless Chromium, driven by Playwright
(npm, web/console/package-lock.json) with the system's browser (Debian `chromium`).

    python3 test_console.py SPEC

starts what SPEC needs — a standalone worker on the embedded backbone (for `auth`: with users of
each role; for `operate`: with a running connector; for `scale`: with 1,000 connectors) — and runs
web/console/tests/SPEC.spec.ts against it with FERRY_URL set. Screenshots land in
$FERRY_WEB_ARTIFACTS (default: build/web-artifacts/SPEC). Fails (never skips) when the binary was
built without the console, Chromium is missing, or web/console's packages are not installed.
"""
import concurrent.futures
import json
import os
import random
import shutil
import subprocess
import sys
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
sys.path.insert(0, os.path.join(ROOT, "tests", "security"))
import harness  # noqa: E402
from harness import Worker, tmpdir, wait_until  # noqa: E402

CONSOLE = os.path.join(ROOT, "web", "console")
CHROMIUM = os.environ.get("FERRY_CHROMIUM", "/usr/bin/chromium")
USERS = {"ada": ("admin", "ada-console-pw-1"), "otto": ("operator", "otto-console-pw-2"),
         "vera": ("viewer", "vera-console-pw-3")}


def call(w, method, path, body=None, auth=None):
    """(status, parsed JSON or text) of one REST request, with an Authorization header if given."""
    headers = {"Accept": "application/json"}
    data = None
    if body is not None:
        data = json.dumps(body).encode()
        headers["Content-Type"] = "application/json"
    if auth:
        headers["Authorization"] = auth
    req = urllib.request.Request(w.url + path, data=data, method=method, headers=headers)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            status, text = r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        status, text = e.code, e.read().decode()
    try:
        return status, json.loads(text) if text else None
    except ValueError:
        return status, text


def preflight(w):
    status, body = call(w, "GET", "/ui/")
    assert status == 200, f"GET /ui/ answered {status}: {body} (build with Node.js and npm: scripts/deps web)"
    assert os.path.exists(CHROMIUM), f"{CHROMIUM} is missing (scripts/deps web installs Debian's chromium)"
    assert os.path.exists(os.path.join(CONSOLE, "node_modules", "@playwright", "test")), \
        "web/console/node_modules is missing: the build runs npm ci there (scripts/build)"


def datagen(name, d, rate="20", state=None):
    cfg = {"connector.class": "DatagenSource", "topic": name, "rate": rate, "format": "json",
           "sink.connector.class": "FileStreamSink", "sink.file": os.path.join(d, name + ".jsonl")}
    body = {"name": name, "config": cfg}
    if state:
        body["initial_state"] = state
    return body


def start_cluster_workers(d):
    """Three `ferry distributed` workers on the Kafka service (scripts/services/kafka, cluster A),
    as tests/integration/test_cluster.py runs them; returns them, w1 first."""
    run_id = random.randrange(1 << 30)
    base = {"backbone": "kafka", "cluster.name": f"web{run_id}", "cluster.session.timeout.ms": "2000",
            "cluster.heartbeat.interval.ms": "300", "cluster.lease.margin.ms": "500",
            "offset.flush.interval.ms": "500",
            "backbone.kafka.bootstrap.servers": os.environ.get("FERRY_KAFKA_BOOTSTRAP", "127.0.0.1:19092")}
    workers = []
    for i in range(3):
        wd = os.path.join(d, f"w{i + 1}")
        os.makedirs(wd)
        workers.append(Worker(wd, dict(base, **{"worker.id": f"w{i + 1}", "file.allowed.dirs": d}), mode="distributed"))
    for w in workers:
        w.start(timeout=60)
    wait_until(lambda: all(len((call(w, "GET", "/cluster")[1] or {}).get("workers", [])) == 3 for w in workers),
               60, "three members everywhere", 0.2)
    return workers


def start_worker(spec, d):
    extra = {}
    if spec == "auth":
        from authlib import passwd_line  # noqa: E402  (ferry passwd, as an operator would)
        users = os.path.join(d, "users")
        with open(users, "w") as f:
            for name, (role, pw) in USERS.items():
                f.write(passwd_line(name, role, pw) + "\n")
        extra["rest.auth.users.file"] = users
    w = Worker(d, extra=extra)
    w.start()
    return w


def prepare(spec, w, d, auth=None):
    def post(body):
        status, answer = call(w, "POST", "/connectors", body, auth)
        assert status == 201, f"POST /connectors {body['name']}: {status} {answer}"
    if spec in ("operate", "a11y", "auth", "rules"):
        post(datagen("demo", d))
        wait_until(lambda: (call(w, "GET", "/connectors/demo/status", auth=auth)[1] or {})
                   .get("connector", {}).get("state") == "RUNNING", 30, "demo RUNNING")
    if spec == "rules":
        # A source writing a backbone topic, for samples taken from a topic.
        post({"name": "feed", "config": {"connector.class": "DatagenSource", "topic": "sensor-feed", "rate": "20",
                                         "format": "json"}})
        wait_until(lambda: any(t.get("metrics", {}).get("records_out", 0) >= 5 for t in
                               (call(w, "GET", "/connectors/feed/status", auth=auth)[1] or {}).get("tasks", [])),
                   30, "feed's first records on the backbone")
    if spec == "a11y":
        # A connector whose task fails (its file is a folder) so the trace dialog has something to show.
        status, answer = call(w, "POST", "/connectors", {"name": "broken", "config": {
            "connector.class": "FileStreamSource", "topic": "broken", "file": d}})
        assert status == 201, answer
    if spec == "scale":
        t0 = time.time()
        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            list(pool.map(post, [datagen(f"scale-{i:04d}", d, rate="1", state="STOPPED") for i in range(1000)]))
        status, names = call(w, "GET", "/connectors")
        assert status == 200 and len(names) == 1000, f"{status} {len(names)} connectors"
        print(f"created 1,000 stopped connectors in {time.time() - t0:.1f} s", flush=True)


def main():
    spec = sys.argv[1]
    artifacts = os.environ.get("FERRY_WEB_ARTIFACTS") or os.path.join(ROOT, "build", "web-artifacts", spec)
    shutil.rmtree(artifacts, ignore_errors=True)
    os.makedirs(artifacts, exist_ok=True)
    d = tmpdir(f"web-{spec}-")
    extra_env = {}
    if spec == "cluster":
        workers = start_cluster_workers(d)
        w = workers[0]
        preflight(w)
        status, answer = call(w, "POST", "/connectors", {"name": "spread", "config": {
            "connector.class": "DatagenSource", "topic": "spread", "rate": "5", "tasks.max": "6",
            "sink.connector.class": "BlackholeSink"}})
        assert status == 201, f"{status} {answer}"
        wait_until(lambda: len({t["worker_id"] for t in (call(w, "GET", "/connectors/spread/status")[1] or {})
                                .get("tasks", []) if t["state"] == "RUNNING"}) == 3, 60, "tasks on all three workers")
        # The browser test kills w3 itself (kill -9), while it watches.
        extra_env = {"FERRY_WEB_VICTIM_PID": str(workers[2].proc.pid), "FERRY_WEB_VICTIM": "w3"}
    else:
        w = start_worker(spec, d)
        preflight(w)
    auth = None
    if spec == "auth":
        import base64
        role_pw = USERS["ada"][1]
        auth = "Basic " + base64.b64encode(f"ada:{role_pw}".encode()).decode()
    prepare(spec, w, d, auth)
    env = {**os.environ, "FERRY_URL": w.url, "FERRY_WEB_DIR": d, "FERRY_WEB_ARTIFACTS": artifacts,
           "FERRY_CHROMIUM": CHROMIUM, "FERRY_WEB_USERS": json.dumps(USERS), "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1",
           **extra_env}
    npx = shutil.which("npx")
    assert npx, "npx (Node.js) is missing: scripts/deps web"
    p = subprocess.run([npx, "playwright", "test", f"tests/{spec}.spec.ts"], cwd=CONSOLE, env=env, timeout=900)
    shots = [f for _, _, fs in os.walk(artifacts) for f in fs if f.endswith(".png")]
    print(f"{len(shots)} screenshots in {artifacts}", flush=True)
    assert p.returncode == 0, f"playwright test {spec} failed (exit {p.returncode}); screenshots in {artifacts}"
    assert shots, f"no screenshots in {artifacts}"
    # The worker is still healthy after the browser's session.
    assert call(w, "GET", "/health")[0] == 200, w.tail_log()


if __name__ == "__main__":
    harness.run(main)
