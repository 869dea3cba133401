"""ferry's JsonConverter against Kafka Connect 4.1.1's own, byte for byte, on typed records.

Both sides hold the same fixed list of records (every Kafka Connect type, the logical types,
optional / default / doc / version / parameters, nested structs, maps with string and with
integer keys, nulls, escapes): JsonSchemaCompat.java builds them with Kafka Connect's data API,
json_schema_tool with ferry's SDK. Checked:

  1. written by Kafka Connect == written by ferry, line by line, byte for byte;
  2. ferry reads what Kafka Connect wrote and writes it again unchanged;
  3. Kafka Connect reads what ferry wrote into the same data as what it wrote itself (both read and
     written again by Kafka Connect compare equal).

Needs java and the Kafka jars (scripts/services/kafka classpath fetches them; no broker).
FERRY_JSON_SCHEMA_TOOL names the ferry tool. Standard library only.
"""
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))

import kafka_connect as kc  # noqa: E402

JAVA_SRC = os.path.join(HERE, "json_schema", "JsonSchemaCompat.java")


def run(cmd, stdin=None):
    p = subprocess.run(cmd, input=stdin, capture_output=True, timeout=300)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:3])} ... exited {p.returncode}: {p.stderr.decode(errors='replace')[-2000:]}")
    return p.stdout


def lines(data):
    return data.decode("utf-8").splitlines()


def compare(what, expected, got):
    bad = 0
    if len(expected) != len(got):
        print(f"FAIL {what}: {len(expected)} lines expected, {len(got)} got")
        bad += 1
    for i, (e, g) in enumerate(zip(expected, got)):
        if e != g:
            bad += 1
            at = next((k for k in range(min(len(e), len(g))) if e[k] != g[k]), min(len(e), len(g)))
            print(f"FAIL {what}, record {i + 1}: first difference at character {at}\n"
                  f"  expected ...{e[max(0, at - 60):at + 60]}\n  got      ...{g[max(0, at - 60):at + 60]}")
    if not bad:
        print(f"ok   {what}: {len(expected)} records identical")
    return bad


def main():
    tool = os.environ["FERRY_JSON_SCHEMA_TOOL"]
    java = [os.environ.get("FERRY_JAVA", "java"), "-cp", kc.libs_classpath(), JAVA_SRC]
    kafka_written = run(java + ["write"])
    ferry_written = run([tool, "write"])
    k, f = lines(kafka_written), lines(ferry_written)
    if len(k) < 8:
        raise SystemExit(f"Kafka Connect wrote {len(k)} records, expected 8")
    bad = compare("written by Kafka Connect vs by ferry", k, f)
    bad += compare("Kafka Connect's bytes read and written again by ferry", k, lines(run([tool, "roundtrip"], kafka_written)))
    # Kafka Connect reads maps into a HashMap, so what it writes again can order map entries
    # differently from what it read: compare with what it makes of its own bytes.
    bad += compare("ferry's bytes vs Kafka Connect's own, each read and written again by Kafka Connect",
                   lines(run(java + ["roundtrip"], kafka_written)), lines(run(java + ["roundtrip"], ferry_written)))
    if bad:
        raise SystemExit(f"{bad} differences")


if __name__ == "__main__":
    main()
