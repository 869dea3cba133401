"""Power loss under a real worker: FileStreamSource -> embedded backbone -> FileStreamSink.

The worker runs with the power-loss layer on its state folder (data.dir and the sink's output
file); it is killed with SIGKILL while records flow, powerloss.crash() turns the folder into what a
power loss would leave, and the worker is restarted without the layer. Checks: it starts, and
every input line reaches the sink file (at-least-once: nothing acknowledged is lost).

  powerloss_smoke.py [--names strict|journaled] [--unsynced drop|random] [--seed N]
                     [--records N] [--rate N] [--fresh] [--worker key=value ...]

By default the worker first runs once without the layer (folders, stores, connectors made and
durable), then runs under it while a feeder appends lines to the source file; --fresh attaches the
layer to the worker's first start instead.

Environment: FERRY_BIN (the ferry binary), FERRY_POWERLOSS_LIB (the layer). Prints one JSON line
with what crash() changed and what arrived; exit status 1 when a line was lost or the worker did
not come back. Not registered in CTest: it probes the worker's current fsync behaviour.
"""
import argparse
import json
import os
import shutil
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "integration"))
sys.path.insert(0, os.path.join(HERE, "powerloss"))
import powerloss  # noqa: E402
from harness import Worker, tmpdir, wait_until, _started  # noqa: E402


def count_lines(path):
    try:
        with open(path, "rb") as f:
            return f.read().count(b"\n")
    except FileNotFoundError:
        return 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--names", default="strict", choices=powerloss.NAMES_MODES)
    ap.add_argument("--unsynced", default="drop", choices=powerloss.UNSYNCED_MODES)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--records", type=int, default=300000)
    ap.add_argument("--rate", type=int, default=50000, help="input lines per second")
    ap.add_argument("--fresh", action="store_true",
                    help="attach the layer to the worker's very first start (folders not yet made)")
    ap.add_argument("--kill-at", type=float, default=0.4, help="fraction of records in the sink at the kill")
    ap.add_argument("--worker", action="append", default=[], help="extra worker property key=value")
    a = ap.parse_args()
    lib = os.environ.get("FERRY_POWERLOSS_LIB")
    if not lib:
        print("FAIL: set FERRY_POWERLOSS_LIB to libferry_powerloss.so")
        return 1

    d = tmpdir("powerloss-smoke")
    root = os.path.join(d, "state")          # what the power loss affects
    shadow = os.path.join(d, "shadow")
    os.makedirs(root)
    src = os.path.join(d, "in.txt")          # the outside system: not affected
    out = os.path.join(root, "out.txt")
    open(src, "w").close()
    extra = {"data.dir": os.path.join(root, "data")}
    extra.update(kv.split("=", 1) for kv in a.worker)
    w = Worker(d, extra)
    result = {"names": a.names, "unsynced": a.unsynced, "records": a.records, "rate": a.rate,
              "fresh": a.fresh, "worker": a.worker}
    stop_feeding = threading.Event()

    def feed():  # the outside system: appends lines to the source file at a steady rate
        chunk = max(1, a.rate // 50)
        with open(src, "a") as f:
            for start in range(0, a.records, chunk):
                if stop_feeding.is_set():
                    return
                f.write("".join(f"line-{i}\n" for i in range(start, min(start + chunk, a.records))))
                f.flush()
                time.sleep(chunk / a.rate)
    feeder = threading.Thread(target=feed)

    def create_connectors():
        w.ok("POST", "/connectors", {"name": "src", "config": {
            "connector.class": "FileStreamSource", "file": src, "topic": "lines", "tasks.max": "1"}})
        w.ok("POST", "/connectors", {"name": "sink", "config": {
            "connector.class": "FileStreamSink", "topics": "lines", "file": out, "tasks.max": "1"}})

    try:
        if not a.fresh:
            # An established worker: folders, stores and connectors exist (and are durable) before
            # the layer is attached; the power loss then hits the steady state only.
            w.start()
            create_connectors()
            w.wait_running("src")
            w.wait_running("sink")
            w.stop()
        powerloss.init(root, shadow)
        w.start(env=powerloss.layer_env(root, shadow, lib))
        if a.fresh:
            create_connectors()
        feeder.start()
        target = int(a.records * a.kill_at)
        wait_until(lambda: count_lines(out) >= target, 120, f"{target} lines in the sink", 0.05)
        time.sleep(1.5)  # let commits happen: positions, consumer offsets, periodic fsyncs
        result["sink_lines_at_kill"] = count_lines(out)
        w.kill9()
        result["attached"] = len(powerloss.attached(shadow))
        report = powerloss.crash(root, shadow, names=a.names, unsynced=a.unsynced, seed=a.seed)
        result["crash"] = {"gone": report["gone"], "changed": report["changed"][:20],
                           "restored": report["restored"], "live_files": report["live_files"],
                           "unsynced_names": report["unsynced_names"]}
        result["sink_lines_after_crash"] = count_lines(out)
        w.start(env={})  # without the layer
        result["restarted"] = True
        feeder.join()  # the outside system finishes writing its lines
        # Everything from the input must arrive (at-least-once), or stall short of it.
        last, stable_since = -1, time.time()
        deadline = time.time() + 120
        while time.time() < deadline:
            n = count_lines(out)
            if n != last:
                last, stable_since = n, time.time()
            if n >= a.records and time.time() - stable_since > 3:
                break
            if time.time() - stable_since > 15:
                break  # nothing moves any more
            time.sleep(0.2)
        seen = set()
        if os.path.exists(out):
            with open(out, "rb") as f:
                for line in f:
                    seen.add(line.strip())
        lost = [i for i in range(a.records) if b"line-%d" % i not in seen]
        result["sink_lines_final"] = count_lines(out)
        result["lost"] = len(lost)
        result["lost_first"] = lost[:5]
        st, body = w.rest("GET", "/connectors/sink/status")
        result["connectors_after_restart"] = w.ok("GET", "/connectors")
        result["sink_status"] = body if st == 200 else st
        st, body = w.rest("GET", "/connectors/src/status")
        result["src_status"] = body if st == 200 else st
        w.stop()
    except AssertionError as e:
        result["error"] = str(e)
        result["log_tail"] = w.tail_log(15)
    finally:
        stop_feeding.set()
        if feeder.is_alive():
            feeder.join()
        for x in _started:
            if x.proc and x.proc.poll() is None:
                x.proc.kill()
                x.proc.wait()
    print(json.dumps(result, indent=1))
    ok = result.get("restarted") and result.get("lost") == 0 and "error" not in result
    print("PASS" if ok else f"FAIL (files kept in {d})")
    if ok:
        shutil.rmtree(d, ignore_errors=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
