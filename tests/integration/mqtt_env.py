"""Which MQTT broker an MQTT integration test talks to.

FERRY_MQTT_BROKER names it: `mosquitto` (default; scripts/services/mosquitto, 18830..18833) or
`mochi` (scripts/services/mochi, mochi-mqtt 2.7.9 on 1893..1896). Each FERRY_MQTT_* variable
(`scripts/services/<broker> env`) overrides the broker's default."""
import os
import subprocess

_DEFAULTS = {
    "mosquitto": {"port": 18830, "auth_port": 18831, "tls_port": 18832, "mtls_port": 18833,
                  "run": "~/.cache/ferry-peers/mosquitto/run"},
    "mochi": {"port": 1893, "auth_port": 1894, "tls_port": 1895, "mtls_port": 1896,
              "run": "~/.cache/ferry-peers/mochi/run"},
}

NAME = os.environ.get("FERRY_MQTT_BROKER", "mosquitto")
if NAME not in _DEFAULTS:
    raise SystemExit(f"FERRY_MQTT_BROKER={NAME!r}: expected one of {sorted(_DEFAULTS)}")
_d = _DEFAULTS[NAME]
HOST = os.environ.get("FERRY_MQTT_HOST", "127.0.0.1")
PORT = int(os.environ.get("FERRY_MQTT_PORT", _d["port"]))
AUTH_PORT = int(os.environ.get("FERRY_MQTT_AUTH_PORT", _d["auth_port"]))
TLS_PORT = int(os.environ.get("FERRY_MQTT_TLS_PORT", _d["tls_port"]))
MTLS_PORT = int(os.environ.get("FERRY_MQTT_MTLS_PORT", _d["mtls_port"]))
CA = os.environ.get("FERRY_MQTT_CA", os.path.expanduser(_d["run"] + "/certs/ca.crt"))
USER = os.environ.get("FERRY_MQTT_USER", "ferry")
PASSWORD = os.environ.get("FERRY_MQTT_PASSWORD", "ferry-secret")
START_HINT = f"scripts/services/{NAME} start"


def publish(topic, payloads, port=PORT, extra=()):
    """QoS 1 publishes of `payloads` (one message per line) through one mosquitto_pub."""
    p = subprocess.run(["mosquitto_pub", "-h", HOST, "-p", str(port), "-q", "1", "-t", topic, "-l", *extra],
                       input=b"\n".join(payloads) + b"\n", capture_output=True, timeout=120)
    assert p.returncode == 0, f"mosquitto_pub failed: {p.stderr.decode()}"
