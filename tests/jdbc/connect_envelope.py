"""Kafka Connect's JSON schemas and envelopes, as its JsonConverter writes them: the helpers the
JDBC tests build their typed records with. Standard library only."""
import base64
import json


def prim(t, optional=False, name=None, version=None, params=None):
    s = {"type": t, "optional": optional}
    if name:
        s["name"] = name
    if version is not None:
        s["version"] = version
    if params is not None:
        s["parameters"] = params
    return s


def field(schema, name):
    return {**schema, "field": name}


def decimal_b64(unscaled):
    """Kafka's Decimal payload: the unscaled value's big-endian two's complement, base64."""
    n = max(1, (unscaled.bit_length() + 8) // 8)
    return base64.b64encode(unscaled.to_bytes(n, "big", signed=True)).decode()


def envelope(schema, payload):
    return json.dumps({"schema": schema, "payload": payload}, separators=(",", ":"), ensure_ascii=False)
