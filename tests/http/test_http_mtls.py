"""HttpSink with client certificates (mutual TLS) against a real HTTPS server that requires one
(tests/http/http_target.py --tls-client-ca, its own process). The PKI is made at test time with the
openssl tool inside the worker's file.allowed.dirs: a test CA signing the server's certificate
(127.0.0.1) and a client certificate (CN ferry-client), the same client key encrypted with a
password, and another CA with a client certificate of its own (CN stranger).

A DatagenSource writes N sequence-numbered records to a topic; one HttpSink per case reads it
(ndjson batches, its own path):
  (a) http.ssl.ca.location + http.ssl.certificate.location + http.ssl.key.location: every record
      arrives, over connections whose client certificate is ferry-client's;
  (b) the same with the encrypted key and http.ssl.key.password (masked in the config read back):
      every record arrives;
  (c) no client certificate, (d) a client certificate of the other CA, (e) the encrypted key with a
      wrong password, against the server kept to TLS 1.2: nothing reaches the target, the task
      stays RUNNING and retries, the worker log names the URL and the TLS failure ("alert
      handshake failure" / "unknown ca" / "unable to set private key file"), the target counts
      the refused handshakes with their reasons; then the connector's config is corrected (PUT):
      every record arrives, 0 lost. (c) again over TLS 1.3, where the client learns of the refusal
      only at its next read or write and libcurl's text is sometimes just "Failed sending data to
      the peer": the same, the target's reason naming the missing certificate;
  (f) a key file outside file.allowed.dirs: refused, naming the key and file.allowed.dirs.
"""
import json
import os
import shutil
import subprocess
import tempfile
import time

from http_env import Target, make_ca, make_cert, seqs
from harness import Worker, free_port, run, tmpdir, wait_until

N = 3000
PASSWORD = "key-pass-123"


def main():
    d = tmpdir("http-mtls")
    pki = os.path.join(d, "pki")
    ca = make_ca(pki, "test-ca")
    other_ca = make_ca(pki, "other-ca")
    server = make_cert(pki, "server", ca, "127.0.0.1", server=True)
    client = make_cert(pki, "client", ca, "ferry-client")
    client_enc = (client[0], os.path.join(pki, "client-enc.key"))
    # The same key, encrypted (PKCS#8, AES-256).
    subprocess.run(["openssl", "pkey", "-in", client[1], "-aes256", "-passout", f"pass:{PASSWORD}",
                    "-out", client_enc[1]], check=True, capture_output=True)
    assert "ENCRYPTED" in open(client_enc[1]).read()
    stranger = make_cert(pki, "stranger", other_ca, "stranger")

    target = Target(free_port(), os.path.join(d, "received"),
                    tls={"cert": server[0], "key": server[1], "client_ca": ca[0], "ca": ca[0],
                         "client_cert": client[0], "client_key": client[1]})
    # The same over TLS 1.2 at most, where a refused client certificate fails the handshake itself.
    target12 = Target(free_port(), os.path.join(d, "received12"),
                      tls={"cert": server[0], "key": server[1], "client_ca": ca[0], "ca": ca[0],
                           "client_cert": client[0], "client_key": client[1], "max_version": "1.2"})
    w = Worker(d, {"task.restart.backoff.initial.ms": "200", "task.restart.backoff.max.ms": "1000"})
    outside = tempfile.mkdtemp(prefix="ferry-http-mtls-outside-")
    try:
        target.start()
        target12.start()
        w.start()
        w.ok("POST", "/connectors", {"name": "gen", "config": {
            "connector.class": "DatagenSource", "topic": "mtls", "format": "string", "key.mode": "seq",
            "max.records": str(N)}})

        def sink(name, at=target, **tls):
            cfg = {"connector.class": "HttpSink", "topics": "mtls", "http.url": f"{at.url}/{name}",
                   "http.batch.format": "ndjson", "http.batch.max.records": "100",
                   "http.retry.backoff.ms": "100", "http.retry.backoff.max.ms": "500",
                   "http.ssl.ca.location": ca[0]}
            cfg.update({f"http.ssl.{k.replace('_', '.')}": v for k, v in tls.items()})
            return cfg

        def complete(name, at=target):
            return set(seqs(at.lines(name))) >= set(range(N))

        # (a) client certificate and key
        w.ok("POST", "/connectors", {"name": "mtls-plain", "config": sink(
            "plain", certificate_location=client[0], key_location=client[1])})
        wait_until(lambda: complete("plain"), 60, f"all {N} records over mutual TLS", 0.1)
        cns = target.stats()["client_cns"]
        assert set(cns) == {"ferry-client"} and cns["ferry-client"] > 0, cns
        print(f"(a) {N} records over mutual TLS, every request's client certificate ferry-client's "
              f"({cns['ferry-client']} requests)", flush=True)

        # (b) encrypted key with its password
        w.ok("POST", "/connectors", {"name": "mtls-enc", "config": sink(
            "enc", certificate_location=client_enc[0], key_location=client_enc[1], key_password=PASSWORD)})
        wait_until(lambda: complete("enc"), 60, f"all {N} records with the encrypted key", 0.1)
        cfg = w.ok("GET", "/connectors/mtls-enc/config")
        assert PASSWORD not in json.dumps(cfg), cfg
        print(f"(b) {N} records with an encrypted client key (http.ssl.key.password, masked in the config)",
              flush=True)

        # (c), (d), (e): refused until corrected. Over TLS 1.2 the client hears the refusal in the
        # handshake, so its error names it every time; over TLS 1.3 it may first hear of it as a
        # connection the server closed ("Failed sending data to the peer"), so there (nocert13)
        # the target's reason is what names it.
        tls_words = ("ssl", "alert", "certificate", "unknown ca", "handshake")
        cases = [
            ("nocert", target12, {}, tls_words, "PEER_DID_NOT_RETURN_A_CERTIFICATE"),
            ("stranger", target12, {"certificate_location": stranger[0], "key_location": stranger[1]},
             ("unknown ca",), "CERTIFICATE_VERIFY_FAILED"),
            ("badpass", target12, {"certificate_location": client_enc[0], "key_location": client_enc[1],
                                   "key_password": "wrong"}, ("private key",), None),
            ("nocert13", target, {}, None, "PEER_DID_NOT_RETURN_A_CERTIFICATE"),
        ]
        for name, at, tls, words, reason in cases:
            failures0 = at.stats()["tls_failures"]
            w.ok("POST", "/connectors", {"name": f"mtls-{name}", "config": sink(name, at, **tls)})

            def logged():
                log = open(w.log_path, errors="replace").read().splitlines()
                return [l for l in log if f"mtls-{name}:" in l and "retrying" in l]
            lines = wait_until(logged, 30, f"({name}) a logged failure", 0.1)
            # Time for several attempts: none of them may deliver.
            time.sleep(2)
            first = lines[0].lower()
            assert f"{at.url}/{name}" in lines[0], f"({name}) the failure does not name the URL: {lines[0]}"
            if words:
                assert any(wd in first for wd in words), f"({name}) the failure does not say what failed: {lines[0]}"
            st = w.ok("GET", f"/connectors/mtls-{name}/status")
            assert st["tasks"][0]["state"] == "RUNNING", st
            assert at.lines(name) == [], f"({name}) records arrived without a valid client certificate"
            stats = at.stats()
            if reason:
                assert stats["tls_failures"] > failures0, stats
                assert reason in json.dumps(stats["tls_failure_reasons"]), stats["tls_failure_reasons"]
            tls_version = "TLS 1.2" if at is target12 else "TLS 1.3"
            print(f"({name}, {tls_version}) refused, nothing delivered, task RUNNING; logged: "
                  f"{lines[0].split(' ms: ', 1)[-1][:200]}" + (f"; the server: {reason}" if reason else ""), flush=True)
            # Corrected: everything arrives.
            fixed = sink(name, at, certificate_location=client_enc[0], key_location=client_enc[1],
                         key_password=PASSWORD)
            w.ok("PUT", f"/connectors/mtls-{name}/config", fixed)
            wait_until(lambda: complete(name, at), 60, f"({name}) all {N} records once corrected", 0.1)
            got = seqs(at.lines(name))
            print(f"({name}) corrected: all {N} records arrived, 0 lost, {len(got) - len(set(got))} duplicates",
                  flush=True)

        # (f) PEM files outside file.allowed.dirs are refused
        shutil.copy(client[1], os.path.join(outside, "client.key"))
        status, body = w.rest("POST", "/connectors", {"name": "mtls-outside", "config": sink(
            "outside", certificate_location=client[0], key_location=os.path.join(outside, "client.key"))})
        text = json.dumps(body)
        if status in (200, 201):
            def failed():
                s = w.ok("GET", "/connectors/mtls-outside/status")
                t = (s.get("tasks") or [{}])[0]
                return t if t.get("state") == "FAILED" else None
            text = wait_until(failed, 30, "mtls-outside FAILED").get("trace", "")
        assert "http.ssl.key.location" in text and "file.allowed.dirs" in text, f"(f) {status}: {text[:400]}"
        assert target.lines("outside") == []
        print(f"(f) a key outside file.allowed.dirs: refused ({status}): {text[:200]}", flush=True)
        assert w.stop() == 0
    finally:
        target.stop()
        target12.stop()
        shutil.rmtree(outside, ignore_errors=True)


if __name__ == "__main__":
    run(main)
