"""REST authentication, roles, CSRF, Host and CORS checks against real `ferry standalone` workers.

  csrf       text/plain, form and type-less POST /connectors with a body are 415 and create nothing;
             a body-less PUT .../pause without Content-Type still works; a cross-origin write is 403
  host       a foreign Host header (DNS rebinding) is refused, even on /health; loopback names and
             configured names are served; a configured list replaces the defaults
  cors       no CORS header by default; with access.control.allow.origin only listed origins get
             an answer to their preflight and Access-Control-Allow-Origin
  exposure   rest.host=0.0.0.0 without authentication refuses to start, naming the keys (before
             binding); rest.auth.allow.unauthenticated=true starts it with a warning (stopped at
             once); access.control.allow.origin=* with authentication and an unparsable users file
             refuse too (the line number is named, never the line)
  matrix     every route of the README's routes x roles table x {nobody, wrong password,
             certificate-only user with a password, unknown token, viewer, operator, admin, bearer
             token (operator)} -> 401 (with both WWW-Authenticate challenges and Kafka Connect's
             error body) / 403 (naming user, role and the role needed) / not an auth refusal
  reload     a user added to the users file works without a restart
  logs       the worker log holds no password or token; failed attempts are logged with the
             remote address
  ctl        ferry ctl with credentials (when ctl has --user; otherwise urllib above covers it)

Environment: FERRY_BIN."""
import json
import os
import subprocess
import time

from authlib import (Checks, basic, header_values, passwd_line, readme_routes, request, token_line)
from harness import Worker, run, tmpdir, wait_until, FERRY_BIN

PASSWORDS = {"viewer": "pw-viewer-Q7x", "operator": "pw-operator-K2m", "admin": "pw-admin-Z9p"}
DATAGEN = {"connector.class": "DatagenSource", "topic": "auth-t", "tasks.max": "1", "rate": "5"}


def concrete(pattern):
    out, prev = [], ""
    for seg in pattern.strip("/").split("/"):
        if not seg:
            continue
        if seg == "*":
            seg = {"tasks": "0", "connector-plugins": "DatagenSource", "loggers": "ferry.authtest",
                   "pipelines": "p1"}.get(prev, "m")
        out.append(seg)
        prev = seg
    return "/" + "/".join(out)


def create(port, name, auth=None):
    headers = {"Content-Type": "application/json"}
    if auth:
        headers["Authorization"] = auth
    return request(port, "POST", "/connectors", json.dumps({"name": name, "config": DATAGEN}), headers)


def check_csrf(w):
    port = w.port
    for i, ctype in enumerate(["text/plain", "application/x-www-form-urlencoded", None]):
        name = f"csrf-{i}"
        headers = {"Content-Type": ctype} if ctype else {}
        status, _, body = request(port, "POST", "/connectors", json.dumps({"name": name, "config": DATAGEN}), headers)
        assert status == 415, f"POST /connectors as {ctype or 'no type'} -> {status} {body}"
        assert "application/json" in body["message"] and body["error_code"] == 415, body
        status, _, _ = request(port, "GET", f"/connectors/{name}")
        assert status == 404, f"{name} exists after a {ctype or 'type-less'} POST ({status})"
    status, _, body = request(port, "PUT", "/connectors/csrf-put/config", json.dumps(DATAGEN), {"Content-Type": "text/plain"})
    assert status == 415, f"PUT .../config as text/plain -> {status} {body}"
    assert request(port, "GET", "/connectors/csrf-put")[0] == 404, "csrf-put exists"
    status, _, body = create(port, "ok")
    assert status == 201, f"the same body as application/json -> {status} {body}"
    # Kafka clients: no body (Content-Length: 0), no type. (A PUT with neither Content-Length nor
    # a body is refused 400 by the HTTP library itself, before any check of ours.)
    status, _, body = request(port, "PUT", "/connectors/ok/pause", "")
    assert status == 202, f"body-less PUT pause without Content-Type -> {status} {body}"
    status, _, body = request(port, "POST", "/connectors/ok/restart", "", {"Origin": "http://evil.example"})
    assert status == 403, f"cross-origin restart -> {status} {body}"
    status, _, body = request(port, "DELETE", "/connectors/ok", headers={"Origin": "http://evil.example"})
    assert status == 403 and request(port, "GET", "/connectors/ok")[0] == 200, f"cross-origin delete -> {status}"


def check_host(w):
    port = w.port
    for host in [f"evil.example:{port}", "attacker.example", f"127.0.0.1.nip.io:{port}"]:
        for path in ["/connectors", "/health"]:
            status, _, body = request(port, "GET", path, host=host)
            assert status in (421, 403), f"GET {path} with Host {host} -> {status} {body}"
        status, _, body = request(port, "POST", "/connectors", json.dumps({"name": "rebound", "config": DATAGEN}),
                                  {"Content-Type": "application/json"}, host=host)
        assert status in (421, 403), f"POST with Host {host} -> {status}"
    assert request(port, "GET", "/connectors/rebound")[0] == 404, "a rebound POST created a connector"
    for host in [f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}", "LOCALHOST"]:
        status, _, body = request(port, "GET", "/connectors", host=host)
        assert status == 200, f"GET /connectors with Host {host} -> {status} {body}"


def check_advertised_host(root):
    """rest.advertised.host.name joins the default Host names; others stay refused."""
    w = worker(root, "advertised", {"rest.advertised.host.name": "connect-1.internal"})
    w.start()
    try:
        assert request(w.port, "GET", "/connectors", host=f"connect-1.internal:{w.port}")[0] == 200
        assert request(w.port, "GET", "/connectors", host=f"127.0.0.1:{w.port}")[0] == 200
        assert request(w.port, "GET", "/connectors", host=f"connect-2.internal:{w.port}")[0] in (421, 403)
    finally:
        w.stop()


def check_cors_default(w):
    status, headers, _ = request(w.port, "OPTIONS", "/connectors",
                                 headers={"Origin": "https://ui.example", "Access-Control-Request-Method": "POST"})
    cors = [k for k, _ in headers if k.lower().startswith("access-control-")]
    assert not cors, f"preflight with CORS unconfigured answered {status} with {cors}"
    status, headers, _ = request(w.port, "GET", "/connectors", headers={"Origin": "https://ui.example"})
    assert status == 200 and not header_values(headers, "Access-Control-Allow-Origin"), headers


def check_cors_configured(root):
    w = worker(root, "cors", {"access.control.allow.origin": "https://ui.example,http://localhost:3000",
                              "access.control.allow.methods": "GET,POST,PUT",
                              "rest.allowed.host.names": "connect.example,127.0.0.1"})
    w.start()
    try:
        pre = {"Origin": "https://ui.example", "Access-Control-Request-Method": "PUT"}
        status, headers, _ = request(w.port, "OPTIONS", "/connectors/x/pause", headers=pre)
        assert status in (200, 204), status
        assert header_values(headers, "Access-Control-Allow-Origin") == ["https://ui.example"], headers
        assert "PUT" in ",".join(header_values(headers, "Access-Control-Allow-Methods")), headers
        for origin, method in [("https://evil.example", "PUT"), ("https://ui.example", "DELETE")]:
            status, headers, _ = request(w.port, "OPTIONS", "/connectors/x",
                                         headers={"Origin": origin, "Access-Control-Request-Method": method})
            assert not header_values(headers, "Access-Control-Allow-Origin"), f"{origin} {method}: {headers}"
        status, headers, _ = request(w.port, "GET", "/connectors", headers={"Origin": "http://localhost:3000"})
        assert status == 200 and header_values(headers, "Access-Control-Allow-Origin") == ["http://localhost:3000"]
        status, headers, _ = request(w.port, "GET", "/connectors", headers={"Origin": "https://evil.example"})
        assert not header_values(headers, "Access-Control-Allow-Origin"), headers
        # rest.allowed.host.names replaces the defaults
        assert request(w.port, "GET", "/connectors", host=f"connect.example:{w.port}")[0] == 200
        assert request(w.port, "GET", "/connectors", host=f"localhost:{w.port}")[0] in (421, 403)
    finally:
        w.stop()


def worker(root, name, props=None):
    workdir = os.path.join(root, name)
    os.makedirs(workdir, exist_ok=True)
    return Worker(workdir, props)


def refused_start(workdir, props, timeout=20):
    """Starts a worker that must refuse: -> (exit code, output). Killed (and failed) if it serves."""
    os.makedirs(workdir, exist_ok=True)
    w = Worker(workdir, props)
    log = open(w.log_path, "wb")
    p = subprocess.Popen([FERRY_BIN, "standalone", w.props], stdout=log, stderr=subprocess.STDOUT, cwd=workdir)
    log.close()
    try:
        p.wait(timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        raise AssertionError(f"the worker started (props {props}); it should have refused:\n{w.tail_log(10)}")
    return p.returncode, w.tail_log(20)


def check_exposure(root):
    code, out = refused_start(os.path.join(root, "exposed"), {"rest.host": "0.0.0.0"})
    assert code != 0 and "rest.auth.users.file" in out and "rest.auth.allow.unauthenticated" in out, (code, out)
    assert "listening" not in out, f"it bound before refusing:\n{out}"
    # Explicitly allowed: starts (on every address, so it is stopped at once) and warns.
    w = worker(root, "exposed-ok", {"rest.host": "0.0.0.0", "rest.auth.allow.unauthenticated": "true"})
    w.start()
    w.stop()
    assert "authentication is off" in w.tail_log(40), w.tail_log(40)
    users = os.path.join(root, "star-users")
    with open(users, "w") as f:
        f.write(passwd_line("admin", "admin", "pw-star-admin-W1") + "\n")
    code, out = refused_start(os.path.join(root, "star"), {"rest.auth.users.file": users,
                                                            "access.control.allow.origin": "*"})
    assert code != 0 and "access.control.allow.origin" in out, (code, out)
    bad = os.path.join(root, "bad-users")
    with open(bad, "w") as f:
        f.write("# users\nalice:admin:Secret-In-Clear-123\n")
    code, out = refused_start(os.path.join(root, "badfile"), {"rest.auth.users.file": bad})
    assert code != 0 and "line 2" in out and "Secret-In-Clear-123" not in out, (code, out)


def make_auth_worker(root):
    users = os.path.join(root, "users")
    tokens = os.path.join(root, "tokens")
    with open(users, "w") as f:
        f.write("# REST users\n")
        for role, pw in PASSWORDS.items():
            f.write(passwd_line(role, role, pw) + "\n")
        f.write("certonly:admin:-\n")
    token, line = token_line("ci", "operator")
    with open(tokens, "w") as f:
        f.write(line + "\n")
    # The RocketMQ dialect on, so every route of the README table exists (its GET-verb writes
    # need the write's role).
    w = worker(root, "auth", {"rest.auth.users.file": users, "rest.auth.tokens.file": tokens,
                              "rest.rocketmq.compat.enabled": "true"})
    w.start()
    return w, users, token


def check_matrix(w, token):
    port = w.port
    admin = basic("admin", PASSWORDS["admin"])
    status, _, body = create(port, "m", admin)
    assert status == 201, f"admin creates m -> {status} {body}"
    rank = {"open": 0, "viewer": 1, "operator": 2, "admin": 3}
    principals = [("nobody", None, None), ("wrong password", basic("admin", "not-the-password"), None),
                  ("certificate-only user", basic("certonly", "-"), None), ("unknown token", "Bearer " + "A" * 43, None),
                  ("viewer", basic("viewer", PASSWORDS["viewer"]), "viewer"),
                  ("operator", basic("operator", PASSWORDS["operator"]), "operator"),
                  ("bearer token (operator)", "Bearer " + token, "operator"),
                  ("admin", admin, "admin")]
    routes = readme_routes()
    bad = []
    counts = {}
    for method, pattern, need in routes:
        path = concrete(pattern)
        for label, auth, role in principals:
            headers = {"Authorization": auth} if auth else {}
            body = None
            if method in ("POST", "PUT", "PATCH"):
                headers["Content-Type"] = "application/json"
                body = "{}"
            status, hdrs, payload = request(port, method, path, body, headers)
            if need == "open":
                want = "served"
            elif role is None:
                want = 401
            elif rank[role] < rank[need]:
                want = 403
            else:
                want = "served"
            counts[str(want)] = counts.get(str(want), 0) + 1
            where = f"{method} {path} ({need}) as {label}"
            if want == "served":
                if status in (401, 403):
                    bad.append(f"{where}: {status} {payload}")
            elif status != want:
                bad.append(f"{where}: {status}, expected {want}: {payload}")
            elif want == 401:
                challenges = " ".join(header_values(hdrs, "WWW-Authenticate"))
                if 'Basic realm="ferry"' not in challenges or "Bearer" not in challenges:
                    bad.append(f"{where}: 401 without both challenges: {challenges!r}")
                if not isinstance(payload, dict) or payload.get("error_code") != 401 or not payload.get("message"):
                    bad.append(f"{where}: 401 body {payload}")
            elif want == 403:
                msg = payload.get("message", "") if isinstance(payload, dict) else ""
                if payload.get("error_code") != 403 or f"({role})" not in msg or need not in msg:
                    bad.append(f"{where}: 403 body {payload}")
            if method == "DELETE" and path == "/connectors/m" and status == 204:
                assert create(port, "m", admin)[0] == 201
    print(json.dumps({"test": "auth_matrix", "routes": len(routes), "principals": len(principals),
                      "requests": len(routes) * len(principals), "expected": counts, "wrong": len(bad)}), flush=True)
    assert not bad, f"{len(bad)} wrong answers:\n" + "\n".join(bad[:40])
    # CSRF with credentials: still 415, nothing created
    status, _, _ = request(port, "POST", "/connectors", json.dumps({"name": "csrf-auth", "config": DATAGEN}),
                           {"Authorization": admin, "Content-Type": "text/plain"})
    assert status == 415, status
    assert request(port, "GET", "/connectors/csrf-auth", headers={"Authorization": admin})[0] == 404


def check_reload(w, users):
    late = basic("late", "pw-late-R4t")
    assert request(w.port, "GET", "/connectors", headers={"Authorization": late})[0] == 401
    with open(users, "a") as f:
        f.write(passwd_line("late", "admin", "pw-late-R4t") + "\n")
    wait_until(lambda: request(w.port, "GET", "/connectors", headers={"Authorization": late})[0] == 200, 10,
               "the added user is accepted")
    status, _, body = create(w.port, "by-late", late)
    assert status == 201, (status, body)


def check_logs(w, token):
    text = open(w.log_path, errors="replace").read()
    for secret in list(PASSWORDS.values()) + [token, "pw-late-R4t", "not-the-password"]:
        assert secret not in text, f"the worker log contains a credential ({secret[:6]}...)"
    failures = [l for l in text.splitlines() if "authentication failed" in l]
    assert failures and all("127.0.0.1" in l for l in failures), failures[:3]
    print(json.dumps({"test": "failure_log_lines", "lines": len(failures)}), flush=True)


def check_ctl(w):
    help_text = subprocess.run([FERRY_BIN, "ctl", "--help"], capture_output=True, text=True, timeout=30)
    if "--user" not in help_text.stdout + help_text.stderr:
        print(json.dumps({"test": "ctl_user", "note": "ferry ctl has no --user flag in this build; "
                                                      "credentials were checked with raw HTTP requests"}), flush=True)
        return
    base = [FERRY_BIN, "ctl", "--url", f"http://127.0.0.1:{w.port}"]
    p = subprocess.run(base + ["list"], capture_output=True, text=True, timeout=30)
    assert p.returncode != 0, f"ctl list without credentials -> {p.returncode}"
    p = subprocess.run(base + ["--user", f"viewer:{PASSWORDS['viewer']}", "list"], capture_output=True, text=True, timeout=30)
    assert p.returncode == 0 and "m" in p.stdout, f"ctl --user viewer list -> {p.returncode}: {p.stdout}{p.stderr}"
    p = subprocess.run(base + ["--user", f"viewer:{PASSWORDS['viewer']}", "pause", "m"], capture_output=True, text=True, timeout=30)
    assert p.returncode != 0 and "403" in p.stdout + p.stderr or "may not" in p.stdout + p.stderr, p.stderr


def main():
    root = tmpdir("security-auth")
    checks = Checks()
    plain = worker(root, "plain")
    plain.start()
    checks.run("csrf", lambda: check_csrf(plain))
    checks.run("host", lambda: check_host(plain))
    checks.run("cors_off_by_default", lambda: check_cors_default(plain))
    plain.stop()
    checks.run("cors_configured", lambda: check_cors_configured(root))
    checks.run("advertised_host", lambda: check_advertised_host(root))
    checks.run("exposure", lambda: check_exposure(root))
    state = {}

    def start_auth():
        state["w"], state["users"], state["token"] = make_auth_worker(root)
    checks.run("auth_worker_starts", start_auth)
    if "w" in state:
        w = state["w"]
        checks.run("auth_matrix", lambda: check_matrix(w, state["token"]))
        checks.run("users_file_reload", lambda: check_reload(w, state["users"]))
        checks.run("ctl", lambda: check_ctl(w))
        w.stop()
        checks.run("no_credentials_in_log", lambda: check_logs(w, state["token"]))
    checks.fail()


if __name__ == "__main__":
    run(main)
