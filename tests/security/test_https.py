"""HTTPS on the REST API (Kafka Connect's `listeners` and `listeners.https.ssl.*`), against the real
worker, with a test CA made by `openssl` in a temporary folder:

- https is served with the configured certificate; a client trusting another CA is refused;
- client.authentication=required: a client without a certificate is refused, one with a
  certificate from the truststore's CA is served;
- the keystore file is reloaded without a restart (new connections see the new certificate);
- `ferry ctl` talks https with --cacert (and --cert/--key when a client certificate is required);
- a missing keystore stops the worker at start with the key named.
"""
import hashlib
import json
import os
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
import harness  # noqa: E402

EXT = """[server]
basicConstraints = critical,CA:FALSE
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1,DNS:localhost
[client]
basicConstraints = critical,CA:FALSE
extendedKeyUsage = clientAuth
[ca]
basicConstraints = critical,CA:TRUE
keyUsage = critical,keyCertSign,cRLSign
"""


def openssl(*args, cwd):
    r = subprocess.run(["openssl", *args], cwd=cwd, capture_output=True, text=True)
    assert r.returncode == 0, f"openssl {' '.join(args)} failed: {r.stderr}"


def make_ca(d, name):
    openssl("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-days", "2", "-subj", f"/CN={name}", "-keyout", f"{name}.key", "-out", f"{name}.crt",
            "-config", "ext.cnf", "-extensions", "ca", cwd=d)


def make_cert(d, ca, name, cn, role):
    openssl("req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes",
            "-subj", f"/CN={cn}", "-keyout", f"{name}.key", "-out", f"{name}.csr", cwd=d)
    openssl("x509", "-req", "-in", f"{name}.csr", "-CA", f"{ca}.crt", "-CAkey", f"{ca}.key",
            "-set_serial", str(int.from_bytes(os.urandom(8), "big")), "-days", "2",
            "-extfile", "ext.cnf", "-extensions", role, "-out", f"{name}.crt", cwd=d)


def keystore(d, name, target):
    """A PEM keystore as Kafka Connect's PEM type reads it: private key, then the certificate."""
    with open(os.path.join(d, f"{name}.key")) as k, open(os.path.join(d, f"{name}.crt")) as c:
        data = k.read() + c.read()
    tmp = target + ".tmp"
    with open(tmp, "w") as f:
        f.write(data)
    os.replace(tmp, target)  # atomic, as a certificate manager renews


def context(d, ca, cert=None):
    ctx = ssl.create_default_context(cafile=os.path.join(d, f"{ca}.crt"))
    if cert:
        ctx.load_cert_chain(os.path.join(d, f"{cert}.crt"), os.path.join(d, f"{cert}.key"))
    return ctx


def get(port, ctx, path="/connectors"):
    with urllib.request.urlopen(f"https://127.0.0.1:{port}{path}", context=ctx, timeout=5) as r:
        return r.status, json.loads(r.read().decode())


def refused(port, ctx):
    try:
        get(port, ctx)
    except (ssl.SSLError, ConnectionError, urllib.error.URLError, OSError) as e:
        return str(e) or type(e).__name__
    return None


def served_fingerprint(port, d):
    ctx = context(d, "ca")
    with socket.create_connection(("127.0.0.1", port), timeout=5) as s:
        with ctx.wrap_socket(s, server_hostname="127.0.0.1") as t:
            return hashlib.sha256(t.getpeercert(binary_form=True)).hexdigest()


def fingerprint(d, name):
    der = ssl.PEM_cert_to_DER_cert(open(os.path.join(d, f"{name}.crt")).read())
    return hashlib.sha256(der).hexdigest()


def ctl(*args):
    return subprocess.run([harness.FERRY_BIN, "ctl", *args], capture_output=True, text=True, timeout=30)


def start_worker(d, name, client_auth, ks):
    wd = os.path.join(d, name)
    os.makedirs(wd)
    tls_port = harness.free_port()
    http_port = harness.free_port()
    extra = {
        "rest.port": str(http_port),
        # http for the harness's readiness check, https for everything this test checks
        "listeners": f"http://127.0.0.1:{http_port},https://127.0.0.1:{tls_port}",
        "listeners.https.ssl.keystore.location": ks,
        "listeners.https.ssl.keystore.type": "PEM",
        "listeners.https.ssl.truststore.location": os.path.join(d, "ca.crt"),
        "listeners.https.ssl.client.authentication": client_auth,
    }
    if client_auth == "required":
        # Required client certificates turn authentication on (on every listener): the
        # certificate's CN is the user, and a CN without a users-file entry gets this role.
        extra["rest.auth.mtls.default.role"] = "admin"
    w = harness.Worker(wd, extra=extra)
    w.port = http_port
    w.url = f"http://127.0.0.1:{http_port}"
    w.start()
    return w, tls_port


def main():
    d = harness.tmpdir("https")
    with open(os.path.join(d, "ext.cnf"), "w") as f:
        f.write(EXT)
    make_ca(d, "ca")
    make_ca(d, "wrongca")
    make_cert(d, "ca", "server", "localhost", "server")
    make_cert(d, "ca", "server2", "localhost", "server")
    make_cert(d, "ca", "client", "ops-admin", "client")
    make_cert(d, "wrongca", "stranger", "stranger", "client")
    ks = os.path.join(d, "keystore.pem")
    keystore(d, "server", ks)

    # --- served, wrong CA refused, reload, ctl
    w, port = start_worker(d, "requested", "requested", ks)
    status, names = get(port, context(d, "ca"))
    assert status == 200 and names == [], (status, names)
    why = refused(port, context(d, "wrongca"))
    assert why, "a client trusting another CA accepted the worker's certificate"
    print("wrong CA refused:", why[:100])
    # requested: a client certificate from another CA is refused, one from the truststore's CA served
    assert refused(port, context(d, "ca", cert="stranger")), "a client certificate from an unknown CA was accepted"
    assert get(port, context(d, "ca", cert="client"))[0] == 200

    r = ctl("--url", f"https://127.0.0.1:{port}", "--cacert", os.path.join(d, "ca.crt"), "list", "-o", "json")
    assert r.returncode == 0, f"ferry ctl over https failed ({r.returncode}): {r.stderr}"
    assert json.loads(r.stdout) == {}, r.stdout
    r = ctl("--url", f"https://127.0.0.1:{port}", "--cacert", os.path.join(d, "wrongca.crt"), "list")
    assert r.returncode == 3, f"ferry ctl trusted a certificate from another CA: {r.returncode} {r.stdout} {r.stderr}"

    assert served_fingerprint(port, d) == fingerprint(d, "server")
    keystore(d, "server2", ks)
    harness.wait_until(lambda: served_fingerprint(port, d) == fingerprint(d, "server2"), 10,
                       "the renewed certificate on new connections")
    print("keystore reloaded without a restart")
    # A broken keystore keeps the previous certificate.
    with open(ks, "w") as f:
        f.write("not a pem file\n")
    time.sleep(1.2)
    assert served_fingerprint(port, d) == fingerprint(d, "server2")
    assert served_fingerprint(port, d) == fingerprint(d, "server2")
    keystore(d, "server", ks)
    assert w.stop() == 0

    # --- client certificate required
    w, port = start_worker(d, "required", "required", ks)
    why = refused(port, context(d, "ca"))
    assert why, "client.authentication=required served a client without a certificate"
    print("no client certificate refused:", why[:100])
    assert get(port, context(d, "ca", cert="client"))[0] == 200
    # Authentication is on for the plain listener too: no certificate there, so no way in.
    try:
        with urllib.request.urlopen(f"{w.url}/connectors", timeout=5) as r:
            raise AssertionError(f"the http listener served GET /connectors without credentials: {r.status}")
    except urllib.error.HTTPError as e:
        assert e.code == 401, e.code
    r = ctl("--url", f"https://127.0.0.1:{port}", "--cacert", os.path.join(d, "ca.crt"), "list")
    assert r.returncode == 3, f"ferry ctl without a certificate got through: {r.returncode} {r.stderr}"
    r = ctl("--url", f"https://127.0.0.1:{port}", "--cacert", os.path.join(d, "ca.crt"),
            "--cert", os.path.join(d, "client.crt"), "--key", os.path.join(d, "client.key"), "list")
    assert r.returncode == 0, f"ferry ctl with a client certificate failed: {r.returncode} {r.stderr}"
    assert w.stop() == 0

    # --- a missing keystore stops the worker at start, naming the key
    wd = os.path.join(d, "missing")
    os.makedirs(wd)
    w = harness.Worker(wd, extra={
        "listeners": f"https://127.0.0.1:{harness.free_port()}",
        "listeners.https.ssl.keystore.location": os.path.join(d, "nope.pem"),
    })
    try:
        w.start(timeout=15)
        raise AssertionError("ferry started with a missing keystore")
    except AssertionError as e:
        if "started with a missing keystore" in str(e):
            raise
    assert w.proc.wait(10) != 0
    log = w.tail_log()
    assert "listeners.https.ssl.keystore.location" in log, log


if __name__ == "__main__":
    harness.run(main)
