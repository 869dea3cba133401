#!/usr/bin/env python3
"""Keeps the layering of ARCHITECTURE.md true: each folder includes only the layers below it.

  include/ferry  -> the C++ standard library and ferry/ only
  src/core       -> SDK
  src/rocketmq   -> core, SDK (the RocketMQ protocol client)
  src/mqtt       -> core, SDK (the MQTT protocol codec and client)
  src/kafka      -> core, SDK (helpers over librdkafka)
  src/backbone   -> rocketmq, kafka, core, SDK
  src/store      -> core, SDK
  src/cluster    -> core, SDK (the cluster log's state machine: pure logic)
  connectors/    -> SDK, core, protocol clients (rocketmq, mqtt, kafka), their own folder
  transforms/    -> SDK (and core for logging), their own folder
  src/runtime    -> store, backbone, core, SDK, connectors/transforms (built-in registration)
  src/jvm        -> runtime (the plugin registry), transforms (Kafka's JSON schemas), core, SDK (the JVM connector host's worker side)
  src/control    -> runtime, cluster and below
  src/rest       -> control and below
Prints every violation; exits 1 if any.
"""
import os
import re
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
INC = re.compile(r'^\s*#\s*include\s*([<"])([^>"]+)[>"]')

ALLOWED = {
    "src/core": {"ferry", "core"},
    "src/rocketmq": {"ferry", "core", "rocketmq"},
    "src/mqtt": {"ferry", "core", "mqtt"},
    "src/kafka": {"ferry", "core", "kafka"},
    "src/redis": {"ferry", "core", "redis"},
    "src/backbone": {"ferry", "core", "rocketmq", "kafka", "backbone"},
    "src/store": {"ferry", "core", "store"},
    "src/cluster": {"ferry", "core", "cluster"},
    "connectors": {"ferry", "core", "rocketmq", "mqtt", "kafka", "redis", "connectors"},
    "transforms": {"ferry", "core", "transforms"},
    "src/runtime": {"ferry", "core", "backbone", "store", "cluster", "runtime", "connectors", "transforms"},
    "src/jvm": {"ferry", "core", "runtime", "transforms", "jvm"},
    "src/control": {"ferry", "core", "backbone", "store", "cluster", "runtime", "control", "connectors", "transforms"},
    "src/rest": {"ferry", "core", "runtime", "control", "rest", "store"},
}
PROJECT_TOPS = {"ferry", "core", "rocketmq", "mqtt", "kafka", "redis", "backbone", "store", "cluster", "runtime", "jvm", "control", "rest", "connectors", "transforms", "apps"}


def files(folder):
    for dp, _, fns in os.walk(os.path.join(ROOT, folder)):
        for fn in fns:
            if fn.endswith((".h", ".cc", ".hpp", ".cpp")):
                yield os.path.join(dp, fn)


def main():
    bad = []
    # The SDK: standard library and ferry/ only.
    for path in files("include/ferry"):
        for n, line in enumerate(open(path), 1):
            m = INC.match(line)
            if not m:
                continue
            kind, target = m.groups()
            if kind == '"' and not target.startswith("ferry/"):
                bad.append(f"{path}:{n}: SDK includes {target}")
            if kind == "<" and ("/" in target or target.endswith(".h") and target not in ("cassert.h",)):
                bad.append(f"{path}:{n}: SDK includes non-standard <{target}>")
    for folder, allowed in ALLOWED.items():
        for path in files(folder):
            for n, line in enumerate(open(path), 1):
                m = INC.match(line)
                if not m or m.group(1) != '"':
                    continue
                top = m.group(2).split("/")[0]
                if "/" not in m.group(2):
                    continue  # a file of the same folder
                if top in PROJECT_TOPS and top not in allowed:
                    bad.append(f"{os.path.relpath(path, ROOT)}:{n}: {folder} must not include {m.group(2)}")
    for b in bad:
        print(b)
    print(f"{len(bad)} layering violations")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
