"""scripts/services/redis, the servers of the Redis tests, checked with
redis-cli from the outside:

  (a) the plain server: PING, SET/GET of a value with every byte value;
  (b) the TLS server: a client that trusts the generated CA and gives the password is served;
      without the password it is refused (NOAUTH), and plain TCP on the TLS port gets no answer;
  (c) the cluster: state ok, three masters, all 16,384 slots assigned; a key of another master's
      slot answers MOVED to a client that does not follow redirections, and a client that does
      (-c) reads it.

Environment: FERRY_REDIS_RUN_DIR (default scripts/services/redis's)."""
import os
import subprocess

from harness import run

RUN = os.environ.get("FERRY_REDIS_RUN_DIR", os.path.expanduser("~/.cache/ferry-peers/redis/run"))
CA = os.path.join(RUN, "certs", "ca.crt")
PASSWORD = "ferry-redis-pw"


def cli(*args, port, tls=False, password=None, stdin=None, timeout=10):
    cmd = ["redis-cli", "-h", "127.0.0.1", "-p", str(port)]
    if tls:
        cmd += ["--tls", "--cacert", CA]
    env = dict(os.environ)
    env.pop("REDISCLI_AUTH", None)
    if password:
        env["REDISCLI_AUTH"] = password
    p = subprocess.run(cmd + list(args), capture_output=True, input=stdin, timeout=timeout, env=env)
    return p.returncode, p.stdout.decode(errors="replace").strip(), p.stderr.decode(errors="replace").strip()


def main():
    # (a)
    code, out, err = cli("PING", port=16379)
    assert (code, out) == (0, "PONG"), f"(a) PING: {code} {out!r} {err!r}"
    value = bytes(range(256))
    code, out, err = cli("-x", "SET", "ferry:svc:bytes", port=16379, stdin=value)
    assert code == 0 and out == "OK", f"(a) SET: {code} {out!r} {err!r}"
    p = subprocess.run(["redis-cli", "-h", "127.0.0.1", "-p", "16379", "--no-raw", "STRLEN", "ferry:svc:bytes"],
                       capture_output=True, timeout=10)
    # redis-cli -x appends nothing: the stored value is the 256 bytes given
    assert p.stdout.decode().strip().endswith("256"), f"(a) STRLEN: {p.stdout!r}"
    print("(a) plain server: PING, a 256-byte binary value stored whole", flush=True)

    # (b)
    code, out, err = cli("PING", port=16380, tls=True, password=PASSWORD)
    assert (code, out) == (0, "PONG"), f"(b) PING over TLS with the password: {code} {out!r} {err!r}"
    code, out, err = cli("PING", port=16380, tls=True)
    assert "NOAUTH" in out + err, f"(b) PING over TLS without the password: {code} {out!r} {err!r}"
    code, out, err = cli("PING", port=16380, timeout=15)
    assert out != "PONG", f"(b) plain TCP on the TLS port was answered: {out!r}"
    print("(b) TLS server: served with the CA and the password; NOAUTH without it; plain TCP not served", flush=True)

    # (c)
    code, info, err = cli("CLUSTER", "INFO", port=17001)
    fields = dict(line.split(":", 1) for line in info.splitlines() if ":" in line)
    assert fields.get("cluster_state") == "ok" and fields.get("cluster_slots_assigned") == "16384" \
        and fields.get("cluster_known_nodes") == "3" and fields.get("cluster_size") == "3", f"(c) CLUSTER INFO: {info}"
    moved = None
    for i in range(200):
        key = f"ferry:svc:{i}"
        code, out, err = cli("SET", key, "v", port=17001)
        if "MOVED" in out + err:
            moved = key
            break
    assert moved, "(c) no key of another master's slot answered MOVED"
    code, out, err = cli("-c", "SET", moved, "there", port=17001)
    assert out == "OK", f"(c) SET {moved} following the redirection: {code} {out!r} {err!r}"
    code, out, err = cli("-c", "GET", moved, port=17001)
    assert out == "there", f"(c) GET {moved}: {out!r}"
    print(f"(c) cluster: state ok, 3 masters, 16,384 slots; {moved} answered MOVED, and read after the redirection",
          flush=True)


if __name__ == "__main__":
    run(main)
