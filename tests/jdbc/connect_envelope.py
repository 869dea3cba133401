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


# The typed record both JdbcSink tests write: every type a table column can take.
ORDER_SCHEMA = {"type": "struct", "fields": [
    field(prim("int64"), "id"),
    field(prim("int32"), "qty"),
    field(prim("int16", True), "small"),
    field(prim("int8"), "tiny"),
    field(prim("bytes", name="org.apache.kafka.connect.data.Decimal", version=1, params={"scale": "2"}), "price"),
    field(prim("double", True), "ratio"),
    field(prim("float"), "f32"),
    field(prim("boolean"), "ok"),
    field(prim("string", True), "name"),
    field(prim("bytes", True), "raw"),
    field(prim("int32", name="org.apache.kafka.connect.data.Date", version=1), "day"),
    field(prim("int32", name="org.apache.kafka.connect.data.Time", version=1), "at"),
    field(prim("int64", True, name="org.apache.kafka.connect.data.Timestamp", version=1), "ts"),
    field(prim("string", name="ferry.data.Uuid", version=1), "uid"),
    field(prim("string", True, name="ferry.data.Json", version=1), "doc"),
], "optional": False, "name": "shop.Order"}
