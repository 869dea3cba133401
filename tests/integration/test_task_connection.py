"""A task's connection in its status, /metrics and `ferry ctl status`, and a quick resume when its
client reconnects by itself (ferry/connector.h, ConnectionHealth). The sources are the blocking
test plugin's TestBlockingSource with `outage.file`: while the file exists, poll fails
(Unavailable), as a source whose peer is down.

  (a) inferred (the task reports nothing): the status says RUNNING with connection
      "reconnecting", the poll's error as its reason and the trace, within 3 s of the outage;
      ferry_task_connected is 0, ferry_task_reconnects_total 1; once the file is gone, records flow
      again and the connection says "connected".
  (b) reported (reports.connection=true: the task reports reconnecting, and connected from a
      thread of its own within 20 ms of the file going away, as a client that reconnects by
      itself): after 14 s of outage the runner's next retry is ~11 s away; the first record after
      the end of the outage arrives within 1.5 s (without the wake it would wait out the back-off).
  (c) three outages within a minute: the connection shows "degraded", naming the last error;
      ferry_task_connection_degraded is 1.
  (d) `ferry ctl status` shows the CONNECTION column and the reason.

Environment: FERRY_BIN, FERRY_BLOCKING_PLUGIN."""
import os
import subprocess
import time

from harness import Worker, run, tmpdir, wait_until

PLUGIN = os.environ.get("FERRY_BLOCKING_PLUGIN", "build/release/test-plugins/blocking/blocking_plugin.so")




def task0(w, name):
    status, st = w.rest("GET", f"/connectors/{name}/status")
    return st["tasks"][0] if status == 200 and st.get("tasks") else {}


def records(w, name):
    return w.metric("ferry_task_records_out_total", name) or 0


def main():
    work = tmpdir("task-connection")
    w = Worker(work, {"plugin.path": os.path.dirname(os.path.abspath(PLUGIN))})
    w.start()
    down = {}

    def create(name, reports):
        down[name] = os.path.join(work, name + ".down")
        w.ok("POST", "/connectors", {"name": name, "config": {
            "connector.class": "TestBlockingSource", "topic": name, "poll.wait.ms": "20",
            "outage.file": down[name], "reports.connection": "true" if reports else "false",
            "errors.retry.delay.max.ms": "60000"}})
        wait_until(lambda: records(w, name) > 5, 30, f"{name}: records flowing")
        wait_until(lambda: task0(w, name).get("connection", {}).get("state") == "connected", 10,
                   f"{name}: connected")

    # (a) inferred from the failing polls
    create("inferred", False)
    open(down["inferred"], "w").close()
    t0 = time.time()
    t = wait_until(lambda: (lambda t: t if t.get("connection", {}).get("state") == "reconnecting" else None)(
        task0(w, "inferred")), 10, "(a) reconnecting in the status")
    shown = time.time() - t0
    assert t["state"] == "RUNNING", t
    assert "peer down" in t["connection"]["error"] and "peer down" in t.get("trace", ""), t
    assert shown < 3, f"(a) the status said reconnecting only after {shown:.1f} s"
    assert w.metric("ferry_task_connected", "inferred") == 0, "(a) ferry_task_connected is not 0"
    assert w.metric("ferry_task_reconnects_total", "inferred") == 1
    os.unlink(down["inferred"])
    before = records(w, "inferred")
    wait_until(lambda: records(w, "inferred") > before, 30, "(a) records again")
    wait_until(lambda: task0(w, "inferred").get("connection", {}).get("state") == "connected", 10,
               "(a) connected again")
    assert w.metric("ferry_task_connected", "inferred") == 1
    print(f"(a) inferred: RUNNING + reconnecting ({t['connection']['error']!r}) {shown:.1f} s after the outage "
          "began; connected again after it", flush=True)

    # (b) reported, and the runner woken by the reconnect
    create("reported", True)
    open(down["reported"], "w").close()
    wait_until(lambda: task0(w, "reported").get("connection", {}).get("state") == "reconnecting", 10,
               "(b) reconnecting")
    # Retries after waits of 0.1, 0.2, 0.4, ... s: at 0.1, 0.3, 0.7, 1.5, 3.1, 6.3, 12.7 and 25.5 s; 14 s
    # in, the runner waits another ~11 s.
    time.sleep(14)
    before = records(w, "reported")
    os.unlink(down["reported"])
    t1 = time.time()
    wait_until(lambda: records(w, "reported") > before, 30, "(b) the first record after the outage", 0.02)
    resumed = time.time() - t1
    assert resumed < 1.5, f"(b) the first record came {resumed:.2f} s after the peer was back (the back-off, not the reconnect)"
    print(f"(b) reported: the first record {resumed:.2f} s after the peer was back (the next retry was ~11 s away)", flush=True)

    # (c) three outages within a minute: degraded
    for _ in range(2):
        open(down["reported"], "w").close()
        wait_until(lambda: task0(w, "reported").get("connection", {}).get("state") == "reconnecting", 10,
                   "(c) reconnecting")
        os.unlink(down["reported"])
        wait_until(lambda: task0(w, "reported").get("connection", {}).get("state") != "reconnecting", 10,
                   "(c) back")
    c = task0(w, "reported")["connection"]
    assert c["state"] == "degraded" and c["reconnects"] == 3 and "peer down" in c["error"], c
    assert w.metric("ferry_task_connection_degraded", "reported") == 1
    assert w.metric("ferry_task_connected", "reported") == 1
    print(f"(c) three outages within a minute: degraded ({c['error']!r})", flush=True)

    # (d) ferry ctl status
    out = subprocess.run([os.environ["FERRY_BIN"], "ctl", "--url", w.url, "status", "reported"],
                         capture_output=True, text=True, timeout=30)
    assert out.returncode == 0, out.stderr
    assert "CONNECTION" in out.stdout and "degraded since" in out.stdout and "peer down" in out.stdout, out.stdout
    print("(d) ferry ctl status:\n" + out.stdout, flush=True)
    w.stop()


if __name__ == "__main__":
    run(main)
