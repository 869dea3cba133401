"""MQTTSource resuming a persistent session after a worker kill -9 while the broker holds in-flight
QoS 1 messages of that session (issue 18).

mochi-mqtt keeps one packet-identifier space per session for both directions and refuses a
SUBSCRIBE whose identifier is one of its in-flight messages to the client (MQTT 5: SUBACK reason
0x91 "packet identifier in use"; MQTT 3.1.1: 0x80 for every filter). After a resumed session its
counter starts again at 1, so the messages it queues for an absent client take the identifiers
1, 2, 3, ... — exactly the ones a client that numbers from 1 after every start sends first. The
old client then failed the task for good.

Four connectors in one standalone worker, each with its own client id and persistent session:
MQTT 3.1.1 and 5, through the backbone (→ FileStreamSink) and as direct tasks (sink.file). For each
of two rounds: sequence-numbered QoS 1 messages are published (some while the worker runs, so
some are in flight when it dies), the worker is killed with SIGKILL, more are published while it is
down (the broker queues them as in-flight messages of the session), the worker is started again.
Checks after every restart: every task RUNNING again within RESUME_S seconds, and at the end every
sequence number of every connector in its file (0 lost; duplicates are allowed, at-least-once).

The broker is chosen by FERRY_MQTT_BROKER (mqtt_env.py): CTest runs the test against mochi
(scripts/services/mochi) and against mosquitto. Fails when the broker is unreachable."""
import os
import random
import time

from harness import Worker, read_lines as lines, require_reachable, run, tmpdir, wait_until

from mqtt_env import HOST, NAME, PORT, START_HINT, publish

BROKER = f"{NAME} {HOST}:{PORT}"
RUNNING = 200   # messages per connector and round published while the worker runs
DOWN = 300      # messages per connector and round published while it is down
ROUNDS = 2
RESUME_S = 15   # a resumed task must be RUNNING again within this


def main():
    require_reachable(HOST, PORT, NAME, START_HINT)
    run_id = random.randrange(1 << 30)
    d = tmpdir("mqtt-resume")
    uri = f"tcp://{HOST}:{PORT}"
    # A long flush interval keeps a direct task's messages unacknowledged (in flight at the broker)
    # until its window asks for a commit; the backbone acknowledges as soon as records are stored.
    w = Worker(d, {"offset.flush.interval.ms": "5000"})
    w.start()

    conns = {}
    for version in ("3.1.1", "5"):
        for mode in ("backbone", "direct"):
            tag = f"v{version.replace('.', '')}-{mode}"
            name = f"resume-{tag}-{run_id}"
            out = os.path.join(d, f"{tag}.txt")
            cfg = {"connector.class": "MQTTSource", "mqtt.server.uri": uri, "mqtt.version": version,
                   "mqtt.topics": f"ferry/{run_id}/{tag}/#", "mqtt.qos": "1",
                   "mqtt.client.id": f"ferry-resume-{tag}-{run_id}", "mqtt.clean.start": "false",
                   "mqtt.session.expiry.s": "600"}
            if mode == "direct":
                cfg.update({"sink.connector.class": "FileStreamSink", "sink.file": out})
            else:
                cfg["topic"] = f"resume-{tag}-{run_id}"
                w.ok("POST", "/connectors", {"name": f"{name}-out", "config": {
                    "connector.class": "FileStreamSink", "topics": cfg["topic"], "file": out}})
            w.ok("POST", "/connectors", {"name": name, "config": cfg})
            conns[tag] = {"name": name, "file": out, "topic": f"ferry/{run_id}/{tag}/m", "next": 0}
    for c in conns.values():
        w.wait_running(c["name"], 60)

    def send(n):
        for c in conns.values():
            publish(c["topic"], [b"%s-%d" % (c["name"].encode(), c["next"] + i) for i in range(n)])
            c["next"] += n

    not_running = []  # (round, {connector: states}) — reported at the end, after every round ran
    for rnd in range(1, ROUNDS + 1):
        send(RUNNING)  # no wait: some of these are in flight (unacknowledged) at the kill
        w.kill9()
        send(DOWN)     # queued by the broker as in-flight messages of the sessions
        t0 = time.time()
        w.start()
        seen = {}

        def all_running():
            ok = True
            for c in conns.values():
                status, s = w.rest("GET", f"/connectors/{c['name']}/status")
                tasks = s.get("tasks", []) if status == 200 else []
                seen[c["name"]] = [(t["state"], t.get("trace", "").splitlines()[:1]) for t in tasks] or [("NONE", [])]
                ok = ok and bool(tasks) and all(t["state"] == "RUNNING" for t in tasks)
            return ok
        try:
            wait_until(all_running, RESUME_S, "every resumed MQTTSource task RUNNING", 0.2)
            print(f"round {rnd}: all {len(conns)} tasks RUNNING {time.time() - t0:.1f} s after the restart "
                  f"({BROKER})", flush=True)
        except AssertionError:
            all_running()  # every connector's state, for the report
            bad = {n: st for n, st in seen.items() if any(s != "RUNNING" for s, _ in st)}
            print(f"round {rnd}: NOT RUNNING {RESUME_S} s after the restart ({BROKER}): {bad}", flush=True)
            not_running.append((rnd, bad))

    if not_running:
        raise AssertionError(f"on {BROKER}, tasks not RUNNING {RESUME_S} s after a restart: " +
                             "; ".join(f"round {r}: {bad}" for r, bad in not_running))
    send(RUNNING)  # after the last restart too

    def missing():
        out = {}
        for tag, c in conns.items():
            have = set(lines(c["file"]))
            gone = [i for i in range(c["next"]) if b"%s-%d" % (c["name"].encode(), i) not in have]
            if gone:
                out[tag] = (len(gone), gone[:5])
        return out
    try:
        wait_until(lambda: not missing(), 60, "every sequence number at the far end", 0.5)
    except AssertionError:
        raise AssertionError(f"lost on {BROKER}: {missing()}")
    for tag, c in conns.items():
        got = lines(c["file"])
        print(f"{tag}: {c['next']} sent, {len(set(got))} distinct received, {len(got) - len(set(got))} "
              f"duplicates, 0 lost", flush=True)
    assert w.stop() == 0


if __name__ == "__main__":
    run(main)
