"""Three `ferry distributed` workers on the Kafka backbone (cluster A of scripts/services/kafka) with
REST authentication on, sharing one users file:

  - an admin creates a connector through worker 1; a viewer reads it RUNNING from workers 2 and 3;
  - an operator pauses it through worker 3; every worker then reports it PAUSED;
  - an unauthenticated write to worker 2 is 401 and a viewer's write to worker 1 is 403, and
    neither created anything;
  - writes do not travel between workers over REST (each worker appends to the cluster log and all
    apply it), so the workers hold no REST credential for each other; src/control and src/cluster
    contain no HTTP client, which this test checks too.

Environment: FERRY_BIN, FERRY_KAFKA_BOOTSTRAP (default 127.0.0.1:19092)."""
import json
import os
import random
import re

from authlib import ROOT, basic, passwd_line, request
from harness import run, start_cluster, tmpdir, wait_until

BOOTSTRAP = os.environ.get("FERRY_KAFKA_BOOTSTRAP", "127.0.0.1:19092")
PASSWORDS = {"viewer": "pw-viewer-C1", "operator": "pw-operator-C2", "admin": "pw-admin-C3"}


def no_http_client_in_control_plane():
    pattern = re.compile(r"httplib|curl_easy|HTTPConnection|http_client|boost/beast", re.I)
    hits = []
    for sub in ("control", "cluster"):
        for dirpath, _, files in os.walk(os.path.join(ROOT, "src", sub)):
            for name in files:
                if name.endswith((".cc", ".h", ".txt")):
                    path = os.path.join(dirpath, name)
                    with open(path, errors="replace") as f:
                        if pattern.search(f.read()):
                            hits.append(os.path.relpath(path, ROOT))
    assert not hits, f"an HTTP client in the control plane (workers would need REST credentials): {hits}"


def main():
    no_http_client_in_control_plane()
    root = tmpdir("security-auth-cluster")
    users = os.path.join(root, "users")
    with open(users, "w") as f:
        for role, pw in PASSWORDS.items():
            f.write(passwd_line(role, role, pw) + "\n")
    auth = {role: {"Authorization": basic(role, pw)} for role, pw in PASSWORDS.items()}
    run_id = random.randrange(1 << 30)
    base = {"backbone": "kafka", "backbone.kafka.bootstrap.servers": BOOTSTRAP, "cluster.name": f"auth{run_id}",
            "cluster.session.timeout.ms": "2000", "cluster.heartbeat.interval.ms": "300",
            "rest.auth.users.file": users}
    workers = start_cluster(root, base)
    w1, w2, w3 = workers

    def members(w):
        status, _, body = request(w.port, "GET", "/cluster", headers=auth["viewer"])
        return status == 200 and len(body["workers"]) == 3
    wait_until(lambda: all(members(w) for w in workers), 60, "three members everywhere", 0.2)
    assert request(w1.port, "GET", "/cluster")[0] == 401, "GET /cluster without credentials"

    name = f"gen-{run_id}"
    config = {"connector.class": "DatagenSource", "topic": f"auth-cluster-{run_id}", "tasks.max": "2", "rate": "10"}
    status, _, body = request(w1.port, "POST", "/connectors", json.dumps({"name": name, "config": config}),
                              {**auth["admin"], "Content-Type": "application/json"})
    assert status == 201, f"admin POST /connectors on w1 -> {status} {body}"

    last = {}

    def state_on(w, want):
        status, _, s = request(w.port, "GET", f"/connectors/{name}/status", headers=auth["viewer"])
        last[w.url] = (status, s)
        return status == 200 and s["connector"]["state"] == want and len(s["tasks"]) == 2 and \
            all(t["state"] == want for t in s["tasks"])
    for w in (w2, w3):
        wait_until(lambda: state_on(w, "RUNNING"), 60, f"{name} RUNNING seen by a viewer on {w.url}", 0.2)

    status, _, body = request(w3.port, "PUT", f"/connectors/{name}/pause", "", auth["operator"])
    assert status == 202, f"operator pause on w3 -> {status} {body}"
    for w in workers:
        try:
            wait_until(lambda: state_on(w, "PAUSED"), 30, f"{name} PAUSED on {w.url}", 0.2)
        except AssertionError as e:
            raise AssertionError(f"{e}; last status: {last.get(w.url)}")

    status, _, body = request(w2.port, "POST", "/connectors", json.dumps({"name": "intruder", "config": config}),
                              {"Content-Type": "application/json"})
    assert status == 401 and body["error_code"] == 401, f"unauthenticated POST on w2 -> {status} {body}"
    status, _, body = request(w2.port, "DELETE", f"/connectors/{name}")
    assert status == 401, f"unauthenticated DELETE on w2 -> {status} {body}"
    status, _, body = request(w1.port, "PUT", f"/connectors/{name}/resume", "", auth["viewer"])
    assert status == 403 and "viewer" in body["message"], f"viewer resume on w1 -> {status} {body}"
    for w in workers:
        status, _, names = request(w.port, "GET", "/connectors", headers=auth["viewer"])
        assert status == 200 and "intruder" not in names and name in names, (w.url, status, names)
        assert state_on(w, "PAUSED"), f"the refused writes changed {name} on {w.url}"
    print(json.dumps({"test": "auth_cluster", "workers": 3, "create_on": "w1", "read_on": ["w2", "w3"],
                      "pause_on": "w3", "unauthenticated_write": 401}), flush=True)

    status, _, _ = request(w1.port, "DELETE", f"/connectors/{name}", headers=auth["admin"])
    assert status == 204, status
    for w in workers:
        w.stop()


if __name__ == "__main__":
    run(main)
