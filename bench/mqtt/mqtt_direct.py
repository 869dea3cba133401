"""The mqtt-direct scenario of bench/run: MQTTSource -> BlackholeSink as one direct connector on a
fresh standalone worker (release `ferry`, embedded backbone unused), fed by N QoS 1 publishes from
tests/mqtt/mqtt_tool (ferry's MqttClient; one connection, 500 publishes in flight) through the
shared mosquitto (scripts/services/mosquitto, port $FERRY_MQTT_PORT, default 18830).

The connector subscribes (QoS 1, persistent session) and is RUNNING before the publisher starts.
The window runs from the publisher's start until the worker's ferry_task_records_out_total for
the connector reaches N (polled on /metrics every 100 ms: that polling is in the worker's CPU too,
about 10 requests a second). Figures:
  msgs_per_s                 N / window
  ferry_cpu_us_per_msg       the worker's user+system CPU over the window / N
  mosquitto_cpu_us_per_msg   mosquitto's CPU over the same window / N (it receives every message
                             from the publisher and sends it on to ferry; on 2 cores they compete);
                             null when mosquitto was restarted during the window
  load_avg_1m                the machine's 1-minute load average at the end (a shared machine)
  ratio                      ferry / mosquitto CPU per message (the target is well under 1)
  publisher_cpu_us_per_msg   the publishing mqtt_tool's CPU / N (for reference)
  ferry_switches_per_msg     context switches of all the worker's threads over the window / N
                             (each wake-up of a sleeping thread is one: the hand-off cost)
  read_linger_us             the connector's mqtt.read.linger.us; the scenario runs 0 (every
                             socket read at once) and the default, one after the other
  publish_rate               the publisher's pace (bench/run --mqtt-direct-rates; "full": as fast
                             as it goes)

$FERRY_BENCH_PERF=<file>: also `perf record -g -p <worker>` over the window into <file> (look at
it with `perf report -i <file> --no-children --sort symbol`). Standard library only.
"""
import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))
sys.path.insert(0, os.path.join(ROOT, "bench", "mqtt"))
from harness import Worker, tmpdir, wait_until  # noqa: E402
import mqtt_bridge as mqb  # noqa: E402

SCENARIO = "mqtt-direct"
HOST = mqb.HOST
PORT = mqb.PORT


def log(msg):
    print(f"bench: {SCENARIO}: {msg}", file=sys.stderr, flush=True)


def switches(pid):
    """Voluntary + involuntary context switches of every thread of `pid` (a thread hand-off
    that finds its peer asleep costs one)."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                for line in f:
                    if line.startswith(("voluntary_ctxt_switches", "nonvoluntary_ctxt_switches")):
                        total += int(line.split()[1])
        except OSError:
            pass
    return total


def records_out(w, connector):
    status, text = w.rest("GET", "/metrics")
    if status != 200:
        return 0
    raw = text if isinstance(text, str) else json.dumps(text)
    total = 0.0
    for line in raw.splitlines():
        if line.startswith("ferry_task_records_out_total{") and f'connector="{connector}"' in line:
            total += float(line.rsplit(" ", 1)[1])
    return total


def run(n, linger_us=None, rate=0):
    """One run; linger_us sets the connector's mqtt.read.linger.us (None: its default); rate paces
    the publisher (messages/s, 0: as fast as it goes)."""
    try:
        socket.create_connection((HOST, PORT), timeout=3).close()
    except OSError:
        raise RuntimeError(f"mosquitto {HOST}:{PORT} is not running (scripts/services/mosquitto start)")
    d = tmpdir("bench-mqtt-direct")
    w = Worker(d)
    w.start()
    perf = None
    try:
        tag = uuid.uuid4().hex[:8]
        topic = f"bdirect{tag}/t"
        w.ok("POST", "/connectors", {"name": "mqd", "config": {
            "connector.class": "MQTTSource", "mqtt.server.uri": f"tcp://{HOST}:{PORT}",
            "mqtt.topics": f"bdirect{tag}/#", "mqtt.qos": "1", "mqtt.client.id": f"bench-direct-{tag}",
            "sink.connector.class": "BlackholeSink",
            **({} if linger_us is None else {"mqtt.read.linger.us": str(linger_us)})}})
        w.wait_running("mqd", 60)
        time.sleep(0.5)  # the subscription is made in the task's start(); let it settle
        pid = w.proc.pid
        mosq = mqb.others()["mosquitto"]
        if os.environ.get("FERRY_BENCH_PERF"):
            perf = subprocess.Popen(["perf", "record", "-g", "-o", os.environ["FERRY_BENCH_PERF"], "-p", str(pid)],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            time.sleep(0.5)
        c0 = mqb.rrep.cpu_s(pid)
        s0 = switches(pid)
        m0 = mqb.cpu_of(mosq)
        t0 = time.time()
        pub = mqb.publisher(topic, n, rate=rate)
        pub_pid = pub.pid
        pub_cpu = 0.0
        while True:
            try:
                pub_cpu = max(pub_cpu, mqb.rrep.cpu_s(pub_pid))
            except OSError:
                pass
            if records_out(w, "mqd") >= n:
                break
            if time.time() - t0 > 600:
                raise RuntimeError("not all records reached the sink within 600 s")
            time.sleep(0.1)
        t1 = time.time()
        cpu = mqb.rrep.cpu_s(pid) - c0
        mcpu = mqb.cpu_since(m0)
        if sorted(mqb.others()["mosquitto"]) != sorted(mosq):
            mcpu = None  # mosquitto was restarted during the window (a shared service)
        sw = switches(pid) - s0
        if perf is not None:
            perf.send_signal(signal.SIGINT)
            perf.wait(timeout=120)
            perf = None
        mqb.finish(pub, "publisher")
        out = {"scenario": SCENARIO, "system": "ferry", "messages": n,
               "read_linger_us": "default" if linger_us is None else linger_us,
               "publish_rate": rate or "full",
               "msgs_per_s": round(n / (t1 - t0)),
               "ferry_cpu_us_per_msg": round(cpu * 1e6 / n, 2),
               "mosquitto_cpu_us_per_msg": None if mcpu is None else round(mcpu * 1e6 / n, 2),
               "publisher_cpu_us_per_msg": round(pub_cpu * 1e6 / n, 2),
               "ferry_switches_per_msg": round(sw / n, 3),
               "ratio": {"ferry_vs_mosquitto_cpu": None if mcpu is None else round(cpu / max(1e-9, mcpu), 3)},
               "peak_rss_mb": round(mqb.rrep.hwm(pid) / 2**20, 1),
               "load_avg_1m": os.getloadavg()[0]}
        return out
    finally:
        if perf is not None:
            perf.send_signal(signal.SIGINT)
            perf.wait(timeout=120)
        w.stop()


def scenario(n=100_000, lingers=(0, None), rates=(0,)):
    """A run per entry of `lingers` (mqtt.read.linger.us; None = the connector's default) and of
    `rates` (the publisher's messages/s, 0 = as fast as it goes), in that order, on the same
    mosquitto: 0 (every read at once) beside the default shows what read coalescing saves; a
    paced publisher shows the cost at the rates a bridge runs at when its broker side limits it."""
    log(f"MQTTSource -> BlackholeSink (direct), {n} QoS 1 messages, mqtt.read.linger.us in {list(lingers)}, "
        f"publish rates {list(rates)}")
    return [run(n, l, r) for r in rates for l in lingers]


if __name__ == "__main__":
    for r in scenario(int(sys.argv[1]) if len(sys.argv) > 1 else 100_000):
        print(json.dumps(r), flush=True)
