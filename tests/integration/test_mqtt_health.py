"""MQTTSource and MQTTSink report their connection (issue 23): on mosquitto and on mochi-mqtt 2.7.9,
each as a broker process of this test's own on a free port (the shared services are not touched),
plus a hostile broker written here.

  (a) outage, both brokers in parallel: the broker is stopped (SIGTERM) → within a few seconds the
      source's and the sink's status say RUNNING + connection "reconnecting" with the client's
      reason; 70 s later it starts again → the source's first new record arrives within 2 s of
      the broker accepting connections, and every sequence-numbered QoS 1 message published after
      the broker came back arrives, none twice (mochi keeps sessions in memory: there, those
      published before the re-SUBSCRIBE are dropped by the broker, so the check starts at the
      first record; mosquitto keeps the session on disk and must deliver all). The sink
      (FileStreamSource → backbone → MQTTSink) is fed 40 lines during the outage; it reaches the
      broker through a TCP forwarder of this test, which opens only after the far-end subscriber
      has subscribed again (else the broker drops what nobody subscribes to yet): all 40 arrive,
      in order, the first within 2 s of the forwarder opening, and the sink says connected.
  (b) a hostile broker: CONNACK, then a PUBLISH with a malformed remaining length, on every
      connection → within 5 connections the status says degraded with a reason naming the bad
      packet (and the worker log says so at error); the worker's REST stays up.
  (c) a hostile broker that sends a well-framed QoS 1 PUBLISH whose topic is not UTF-8:
      errors.tolerance=all → the source acknowledges it (PUBACK), the broker stops re-sending it,
      the connection stays up and the log names it; errors.tolerance=none → FAILED, the trace
      naming it.
  (d) a broker that grants the SUBSCRIBE, drops the connection, and refuses the re-SUBSCRIBE
      (SUBACK 0x80) → a warn line in the log and connection "degraded" naming the refusal.

Environment: FERRY_BIN; MOCHI_SERVER (default ~/.cache/ferry-peers/mochi/mochi-server, built by
scripts/services/mochi build); mosquitto on PATH or /usr/sbin."""
import os
import shutil
import signal
import socket
import struct
import subprocess
import threading
import time

from harness import Worker, free_port, run, tmpdir, wait_until

MOCHI = os.environ.get("MOCHI_SERVER", os.path.expanduser(
    os.path.join(os.environ.get("MOCHI_HOME", "~/.cache/ferry-peers/mochi"), "mochi-server")))
MOSQUITTO = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
OUTAGE_S = float(os.environ.get("FERRY_MQTT_OUTAGE_S", "70"))
_procs = []  # every broker process started here, killed at the end


# ---- a small MQTT 3.1.1 client (for publishing, subscribing and the hostile broker) -------------

def varint(n):
    out = bytearray()
    while True:
        b = n % 128
        n //= 128
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def mstr(b):
    return struct.pack(">H", len(b)) + b


def packet(first, body):
    return bytes([first]) + varint(len(body)) + body


def read_packet(sock):
    """(first byte, body) of the next packet, or None when the peer closed."""
    def exact(n):
        buf = b""
        while len(buf) < n:
            chunk = sock.recv(n - len(buf))
            if not chunk:
                return None
            buf += chunk
        return buf
    h = exact(1)
    if h is None:
        return None
    n, mult = 0, 1
    while True:
        b = exact(1)
        if b is None:
            return None
        n += (b[0] & 0x7F) * mult
        mult *= 128
        if not b[0] & 0x80:
            break
    body = exact(n) if n else b""
    return None if body is None else (h[0], body)


class MiniClient:
    """A blocking MQTT 3.1.1 client: QoS 1 publish (waits for PUBACK), subscribe, receive."""

    def __init__(self, port, client_id, clean=True):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        body = mstr(b"MQTT") + bytes([4, 0x02 if clean else 0x00]) + struct.pack(">H", 60) + mstr(client_id.encode())
        self.sock.sendall(packet(0x10, body))
        p = read_packet(self.sock)
        assert p and p[0] == 0x20 and p[1][1] == 0, f"CONNACK: {p}"
        self.next_id = 1

    def publish(self, topic, payload):
        pid = self.next_id
        self.next_id = self.next_id % 65535 + 1
        self.sock.sendall(packet(0x32, mstr(topic.encode()) + struct.pack(">H", pid) + payload))
        while True:
            p = read_packet(self.sock)
            assert p, "publisher: connection closed"
            if p[0] >> 4 == 4:
                return

    def subscribe(self, topic):
        self.sock.sendall(packet(0x82, struct.pack(">H", 1) + mstr(topic.encode()) + b"\x01"))
        p = read_packet(self.sock)
        assert p and p[0] >> 4 == 9 and p[1][2] < 0x80, f"SUBACK: {p}"

    def receive(self, into, stop):
        """Appends (time, payload) of every PUBLISH to `into` (acknowledging QoS 1) until `stop`."""
        self.sock.settimeout(0.2)
        while not stop.is_set():
            try:
                p = read_packet(self.sock)
            except socket.timeout:
                continue
            except OSError:
                return
            if p is None:
                return
            first, body = p
            if first >> 4 != 3:
                continue
            tlen = struct.unpack(">H", body[:2])[0]
            pos = 2 + tlen
            qos = (first >> 1) & 3
            if qos:
                pid = body[pos:pos + 2]
                pos += 2
                self.sock.sendall(packet(0x40, pid))
            into.append((time.time(), body[pos:]))

    def close(self):
        try:
            self.sock.sendall(b"\xe0\x00")
            self.sock.close()
        except OSError:
            pass


# ---- brokers ------------------------------------------------------------------------------------

def accepting(port):
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=0.2):
            return True
    except OSError:
        return False


class OwnBroker:
    """A broker process of this test's own on `port` (mosquitto with persistence, or mochi)."""

    def __init__(self, kind, root, port):
        self.kind, self.port, self.proc = kind, port, None
        self.dir = os.path.join(root, kind)
        os.makedirs(self.dir, exist_ok=True)
        self.log = os.path.join(self.dir, "broker.log")
        if kind == "mosquitto":
            self.conf = os.path.join(self.dir, "mosquitto.conf")
            with open(self.conf, "w") as f:
                f.write(f"user {os.environ.get('USER') or 'root'}\npersistence true\npersistence_location {self.dir}/\n"
                        f"autosave_interval 1\nmax_queued_messages 100000\nmax_inflight_messages 0\n"
                        f"log_dest file {self.log}\nlistener {port} 127.0.0.1\nallow_anonymous true\n")

    def start(self):
        if self.kind == "mosquitto":
            cmd = [MOSQUITTO, "-c", self.conf]
        else:
            cmd = [MOCHI, "-host", "127.0.0.1", "-port", str(self.port), "-auth-port", "0"]
        log = open(self.log, "ab")
        self.proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        _procs.append(self.proc)
        wait_until(lambda: accepting(self.port), 20, f"{self.kind} on {self.port} accepting connections", 0.01)
        return time.time()

    def stop(self):
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


class Forwarder:
    """TCP forwarder 127.0.0.1:port → target; close() refuses and cuts every connection, open()
    listens again (the sink's way to its broker, see (a))."""

    def __init__(self, target):
        self.port, self.target = free_port(), target
        self.lsock, self.conns, self.lock = None, [], threading.Lock()

    def open(self):
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", self.port))
        self.lsock.listen(16)
        threading.Thread(target=self._accept, args=(self.lsock,), daemon=True).start()

    def _accept(self, lsock):
        while True:
            try:
                c, _ = lsock.accept()
            except OSError:
                return
            try:
                u = socket.create_connection(("127.0.0.1", self.target), timeout=2)
            except OSError:
                c.close()
                continue
            with self.lock:
                self.conns += [c, u]
            for a, b in ((c, u), (u, c)):
                threading.Thread(target=self._pipe, args=(a, b), daemon=True).start()

    @staticmethod
    def _pipe(a, b):
        try:
            while True:
                data = a.recv(65536)
                if not data:
                    break
                b.sendall(data)
        except OSError:
            pass
        for s in (a, b):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def close(self):
        if self.lsock:
            self.lsock.close()
            self.lsock = None
        with self.lock:
            for s in self.conns:
                try:
                    s.shutdown(socket.SHUT_RDWR)
                    s.close()
                except OSError:
                    pass
            self.conns = []


class Hostile:
    """A TCP server speaking just enough MQTT 3.1.1; `script(conn_no, sock)` plays one connection."""

    def __init__(self, script):
        self.port, self.script = free_port(), script
        self.connections, self.pubacks = 0, []
        self.lsock = socket.socket()
        self.lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.lsock.bind(("127.0.0.1", self.port))
        self.lsock.listen(16)
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self):
        while True:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._play, args=(self.connections, c), daemon=True).start()

    def _play(self, n, c):
        try:
            c.settimeout(5)
            p = read_packet(c)
            if p is None or p[0] >> 4 != 1:
                return
            c.sendall(b"\x20\x02\x00\x00")  # CONNACK, no session, accepted
            self.script(self, n, c)
        except OSError:
            pass
        finally:
            c.close()

    def answer(self, c, suback_code, until):
        """Answers SUBSCRIBE (with `suback_code`), PINGREQ; records PUBACKs; until `until()` or close."""
        c.settimeout(0.2)
        while not until():
            try:
                p = read_packet(c)
            except socket.timeout:
                continue
            if p is None:
                return
            t = p[0] >> 4
            if t == 8:
                c.sendall(packet(0x90, p[1][:2] + bytes([suback_code])))
            elif t == 12:
                c.sendall(b"\xd0\x00")
            elif t == 4:
                self.pubacks.append(struct.unpack(">H", p[1][:2])[0])

    def close(self):
        self.lsock.close()


# ---- the worker's view --------------------------------------------------------------------------

def task0(w, name):
    status, st = w.rest("GET", f"/connectors/{name}/status")
    return st["tasks"][0] if status == 200 and st.get("tasks") else {}


def conn(w, name):
    return task0(w, name).get("connection", {})


def metric(w, name, connector):
    status, text = w.rest("GET", "/metrics")
    assert status == 200, status
    for line in text.splitlines():
        if line.startswith(name + "{") and f'connector="{connector}"' in line:
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def log_text(w):
    with open(w.log_path, "rb") as f:
        return f.read().decode(errors="replace")


# ---- (a) outage -----------------------------------------------------------------------------------

def outage(w, work, kind, results):
    port = free_port()
    broker = OwnBroker(kind, work, port)
    broker.start()
    fwd = Forwarder(port)
    fwd.open()
    src, sink, out_file, in_file = f"src-{kind}", f"sink-{kind}", os.path.join(work, f"out-{kind}.txt"), \
        os.path.join(work, f"in-{kind}.txt")
    open(in_file, "w").close()
    w.ok("POST", "/connectors", {"name": src, "config": {
        "connector.class": "MQTTSource", "mqtt.server.uri": f"tcp://127.0.0.1:{port}",
        "mqtt.topics": f"health/{kind}/src", "mqtt.qos": "1", "mqtt.client.id": f"health-{kind}",
        "topic": f"hs-{kind}", "errors.retry.delay.max.ms": "60000"}})
    w.ok("POST", "/connectors", {"name": f"file-{kind}", "config": {
        "connector.class": "FileStreamSink", "topics": f"hs-{kind}", "file": out_file}})
    w.ok("POST", "/connectors", {"name": f"lines-{kind}", "config": {
        "connector.class": "FileStreamSource", "file": in_file, "topic": f"hk-{kind}", "poll.interval.ms": "50"}})
    w.ok("POST", "/connectors", {"name": sink, "config": {
        "connector.class": "MQTTSink", "topics": f"hk-{kind}", "mqtt.server.uri": f"tcp://127.0.0.1:{fwd.port}",
        "mqtt.topic": f"health/{kind}/sink", "mqtt.qos": "1", "mqtt.client.id": f"health-sink-{kind}",
        "errors.retry.delay.max.ms": "60000"}})
    for name in (src, sink):
        w.wait_running(name, 60)
        wait_until(lambda: conn(w, name).get("state") == "connected", 20, f"(a) {kind}: {name} connected")
    # Far end of the sink: a subscriber straight on the broker.
    got, stop = [], threading.Event()

    def subscriber():
        c = MiniClient(port, f"far-{kind}")
        c.subscribe(f"health/{kind}/sink")
        return c
    far = subscriber()
    rx = threading.Thread(target=far.receive, args=(got, stop), daemon=True)
    rx.start()
    pub = MiniClient(port, f"pub-{kind}")
    for i in range(10):
        pub.publish(f"health/{kind}/src", b"before-%d" % i)
    with open(in_file, "a") as f:
        f.write("".join(f"warm-{i}\n" for i in range(5)))
    wait_until(lambda: metric(w, "ferry_task_records_out_total", src) >= 10, 30, f"(a) {kind}: records before")
    wait_until(lambda: len(got) >= 5, 30, f"(a) {kind}: sink records before")
    pub.close()

    # The broker goes down.
    stop.set()
    t_down = time.time()
    broker.stop()
    fwd.close()
    shown = {}

    def reconnecting(name):
        c = conn(w, name)
        if c.get("state") == "reconnecting":
            shown[name] = (time.time() - t_down, c, task0(w, name))
            return True
        return False
    wait_until(lambda: all(n in shown or reconnecting(n) for n in (src, sink)), 15,
               f"(a) {kind}: source and sink reconnecting", 0.1)
    for name in (src, sink):
        secs, c, t = shown[name]
        assert t["state"] == "RUNNING", t
        assert c.get("error") and t.get("trace"), f"(a) {kind}: {name} has no reason: {t}"
        assert metric(w, "ferry_task_connected", name) == 0, f"(a) {kind}: ferry_task_connected of {name} is not 0"
    # Records for the sink while the broker is down.
    for i in range(40):
        with open(in_file, "a") as f:
            f.write(f"down-{i}\n")
        time.sleep(OUTAGE_S / 80)
    time.sleep(max(0.0, t_down + OUTAGE_S - time.time()))
    before = metric(w, "ferry_task_records_out_total", src)

    # Back: publish a sequence every 50 ms; the source's first new record must come within 2 s.
    t_up = broker.start()
    published = []
    pub_done = threading.Event()

    def publisher():
        p = MiniClient(port, f"pub-{kind}-2")
        i = 0
        while not pub_done.is_set():
            p.publish(f"health/{kind}/src", b"after-%d" % i)
            published.append((time.time(), i))
            i += 1
            time.sleep(0.05)
        p.close()
    pt = threading.Thread(target=publisher, daemon=True)
    pt.start()
    far = subscriber()  # subscribed again before the sink can reach the broker
    got2, stop2 = [], threading.Event()
    threading.Thread(target=far.receive, args=(got2, stop2), daemon=True).start()
    fwd.open()
    t_fwd = time.time()
    wait_until(lambda: metric(w, "ferry_task_records_out_total", src) > before, 30,
               f"(a) {kind}: the first record after the outage", 0.02)
    first = time.time() - t_up
    wait_until(lambda: len(got2) >= 40, 30, f"(a) {kind}: the 40 lines of the outage at the far end", 0.02)
    sink_first = got2[0][0] - t_fwd
    time.sleep(2)
    pub_done.set()
    pt.join(10)
    n_pub = len(published)
    t_first_abs = t_up + first
    must = [i for (t, i) in published] if kind == "mosquitto" else [i for (t, i) in published if t > t_first_abs]
    want = {b"after-%d" % i for i in must}

    def file_lines():
        try:
            with open(out_file, "rb") as f:
                return f.read().splitlines()
        except OSError:
            return []
    wait_until(lambda: want <= set(file_lines()), 30, f"(a) {kind}: every message published after the outage", 0.2)
    lines = [x for x in file_lines() if x.startswith(b"after-")]
    dups = len(lines) - len(set(lines))
    early = [i for (t, i) in published if t <= t_first_abs]
    early_lost = len({b"after-%d" % i for i in early} - set(lines))
    stop2.set()
    far.close()
    far_lines = [p for (_, p) in got2]
    want_sink = [b"down-%d" % i for i in range(40)]
    sink_ok = [p for p in far_lines if p.startswith(b"down-")]
    for name in (src, sink):
        wait_until(lambda: conn(w, name).get("state") in ("connected", "degraded") and
                   metric(w, "ferry_task_connected", name) == 1, 10, f"(a) {kind}: {name} connected again")
    assert first < 2, f"(a) {kind}: the first record came {first:.2f} s after the broker was back"
    assert sink_first < 2, f"(a) {kind}: the sink's first record came {sink_first:.2f} s after the broker was reachable"
    assert sorted(set(sink_ok)) == sorted(want_sink), f"(a) {kind}: sink lost {sorted(set(want_sink) - set(sink_ok))[:5]}"
    assert dups == 0 or kind == "mochi", f"(a) {kind}: {dups} duplicates"
    results[kind] = (
        f"(a) {kind}: reconnecting in the status {shown[src][0]:.1f} s (source: {shown[src][1]['error']!r}) / "
        f"{shown[sink][0]:.1f} s (sink) after the broker stopped; after {OUTAGE_S:.0f} s the source's first record "
        f"{first:.2f} s after the broker accepted connections, {len(must)} of {n_pub} published checked, 0 lost "
        f"(of the {len(early)} published before the first record, {early_lost} dropped by the broker), "
        f"{dups} duplicates; the sink's 40 outage records at the far end, the first {sink_first:.2f} s after "
        f"the broker was reachable, 0 lost ({len(sink_ok) - 40} duplicates)")
    broker.stop()
    fwd.close()


# ---- (b)-(d) hostile brokers ----------------------------------------------------------------------

def hostile_frame(w, out):
    # (b) unreadable framing after every CONNACK: a remaining length of five bytes.
    def bad_length(h, n, c):
        c.sendall(b"\x30\xff\xff\xff\xff\x7f")
        h.answer(c, 0, lambda: False)
    hb = Hostile(bad_length)
    w.ok("POST", "/connectors", {"name": "hostile-frame", "config": {
        "connector.class": "MQTTSource", "mqtt.server.uri": f"tcp://127.0.0.1:{hb.port}", "mqtt.version": "3.1.1",
        "mqtt.topics": "x/#", "mqtt.qos": "1", "topic": "hostile-frame"}})
    c = wait_until(lambda: (lambda c: c if c.get("state") == "degraded" else None)(conn(w, "hostile-frame")), 30,
                   "(b) degraded after repeated bad packets", 0.05)
    attempts = hb.connections
    assert "bad packet" in c["error"] and "remaining length" in c["error"], f"(b) the reason: {c}"
    assert attempts <= 5, f"(b) degraded only after {attempts} connections"
    assert task0(w, "hostile-frame")["state"] == "RUNNING"
    assert "unreadable packet" in log_text(w), "(b) no log line about the unreadable packets"
    st, _ = w.rest("GET", "/connectors")
    assert st == 200, "(b) the worker's REST is down"
    out.append(f"(b) malformed remaining length after every CONNACK: degraded after {attempts} connections: {c['error']!r}")
    w.ok("DELETE", "/connectors/hostile-frame")
    hb.close()


def poison_publish(w, out):
    # (c) a well-framed PUBLISH with a topic that is not UTF-8, QoS 1, packet id 7.
    bad_publish = packet(0x32, mstr(b"bad/\xff\xfe/topic") + struct.pack(">H", 7) + b"poison")

    def poison(h, n, c):
        if 7 not in h.pubacks:
            c.sendall(bad_publish)
        h.answer(c, 0, lambda: False)
    hc = Hostile(poison)
    w.ok("POST", "/connectors", {"name": "poison-all", "config": {
        "connector.class": "MQTTSource", "mqtt.server.uri": f"tcp://127.0.0.1:{hc.port}", "mqtt.version": "3.1.1",
        "mqtt.topics": "x/#", "mqtt.qos": "1", "topic": "poison", "errors.tolerance": "all"}})
    wait_until(lambda: 7 in hc.pubacks, 20, "(c) the malformed PUBLISH acknowledged under errors.tolerance=all")
    time.sleep(2)
    assert hc.connections == 1, f"(c) {hc.connections} connections: the poison message was not taken"
    assert conn(w, "poison-all").get("state") == "connected", conn(w, "poison-all")
    assert "cannot be read" in log_text(w), "(c) no log line about the skipped message"
    w.ok("DELETE", "/connectors/poison-all")
    hc.close()
    hc2 = Hostile(poison)
    w.ok("POST", "/connectors", {"name": "poison-none", "config": {
        "connector.class": "MQTTSource", "mqtt.server.uri": f"tcp://127.0.0.1:{hc2.port}", "mqtt.version": "3.1.1",
        "mqtt.topics": "x/#", "mqtt.qos": "1", "topic": "poison2"}})
    t = wait_until(lambda: (lambda t: t if t.get("state") == "FAILED" else None)(task0(w, "poison-none")), 20,
                   "(c) FAILED under errors.tolerance=none")
    assert "cannot be read" in t.get("trace", "") and "UTF-8" in t.get("trace", ""), f"(c) the trace: {t}"
    assert 7 not in hc2.pubacks, "(c) acknowledged under errors.tolerance=none"
    out.append(f"(c) a PUBLISH with a non-UTF-8 topic: tolerance=all acknowledged it after 1 connection; "
               f"tolerance=none: FAILED ({t['trace'].splitlines()[0][:160]!r})")
    w.ok("DELETE", "/connectors/poison-none")
    hc2.close()


def refused_resubscribe(w, out):
    # (d) SUBSCRIBE granted on the first connection, dropped, the re-SUBSCRIBE refused with 0x80.
    def refuse_again(h, n, c):
        if n == 1:
            deadline = time.time() + 1.5
            h.answer(c, 0x01, lambda: time.time() > deadline)
        else:
            h.answer(c, 0x80, lambda: False)
    hd = Hostile(refuse_again)
    w.ok("POST", "/connectors", {"name": "resub", "config": {
        "connector.class": "MQTTSource", "mqtt.server.uri": f"tcp://127.0.0.1:{hd.port}", "mqtt.version": "3.1.1",
        "mqtt.topics": "x/#", "mqtt.qos": "1", "topic": "resub"}})
    c = wait_until(lambda: (lambda c: c if c.get("state") == "degraded" and "re-subscription" in c.get("error", "")
                            else None)(conn(w, "resub")), 20, "(d) degraded: re-SUBSCRIBE refused", 0.05)
    assert "0x80" in c["error"], c
    warn = [ln for ln in log_text(w).splitlines() if "refused the re-subscription" in ln]
    assert warn and any("warn" in ln.lower() for ln in warn), "(d) no warn line about the refused re-SUBSCRIBE"
    out.append(f"(d) re-SUBSCRIBE refused: degraded {c['error']!r}, and at warn in the log")
    w.ok("DELETE", "/connectors/resub")
    hd.close()


def main():
    assert os.path.exists(MOCHI), f"{MOCHI} missing: scripts/services/mochi build"
    work = tmpdir("mqtt-health")
    w = Worker(work)
    w.start()
    try:
        results, errors = {}, {}

        def one(kind):
            try:
                outage(w, work, kind, results)
            except BaseException as e:  # noqa: BLE001 - reported below
                errors[kind] = e
        threads = [threading.Thread(target=one, args=(k,)) for k in ("mosquitto", "mochi")]
        for t in threads:
            t.start()
        hostile = []
        for part in (hostile_frame, poison_publish, refused_resubscribe):  # meanwhile, on the same worker
            try:
                part(w, hostile)
            except AssertionError as e:
                errors[part.__name__] = e
        for t in threads:
            t.join()
        for line in [results[k] for k in ("mosquitto", "mochi") if k in results] + hostile:
            print(line, flush=True)
        if errors:  # every part ran: all failures at once
            raise AssertionError("; ".join(f"{k}: {e}" for k, e in errors.items()))
        w.stop()
    finally:
        for p in _procs:
            if p.poll() is None:
                p.kill()
                p.wait()


if __name__ == "__main__":
    run(main)
