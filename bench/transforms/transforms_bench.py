"""bench/run --scenarios transforms: ferry's transform chain and the rule language against Apache
Kafka Connect's own SMTs, in one thread each, on the same ~200-byte JSON records.

  ferry: bench/transforms/transform_bench (a CMake target; $FERRY_TRANSFORM_BENCH, else next to
         $FERRY_BIN's build dir, else build/release), which also writes the records it generated
         to a file;
  peer:  bench/transforms/SmtBench.java, compiled with javac against the Kafka 4.1.1 jars of
         scripts/services/kafka (fetched with mvn into ~/.cache/ferry-peers/, never into the
         repository) into ~/.cache/ferry-peers/smt-bench-<version>/, run on the same records file.

Yields ferry's objects (one per case), then the peer's; the peer's chain5, json-schema-write and
json-schema-read objects carry "ratio"
(ferry/peer: records_per_s, records_per_cpu_s, records_per_process_cpu_s; > 1 = ferry ahead). The
rule has no Connect equivalent (see bench/README.md): its peer stand-in, rule-projection, carries
"ratio_vs_ferry_rule" instead, and ferry's rule objects carry "vs_ferry_chain5".
Standard library only; every call blocks its caller.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bench", "peers"))
import kafka_connect as kc  # noqa: E402

PEER = "kafka-connect-smt"
SCENARIO = "transforms"
JAVA_SRC = os.path.join(HERE, "SmtBench.java")
CLASS_DIR = os.path.join(os.path.expanduser("~"), ".cache", "ferry-peers",
                         "smt-bench-" + os.environ.get("KAFKA_VERSION", "4.1.1"))
FERRY_CASES = "baseline,chain5,rule,chain5+rule,json-converter,json-schema-write,json-schema-read"
PEER_CASES = "chain5,converters-only,rule-projection,json-schema-write,json-schema-read"


def default_binary():
    """$FERRY_TRANSFORM_BENCH, else next to $FERRY_BIN's build dir, else build/release."""
    if os.environ.get("FERRY_TRANSFORM_BENCH"):
        return os.environ["FERRY_TRANSFORM_BENCH"]
    fb = os.environ.get("FERRY_BIN", "")
    if fb.endswith(os.path.join("apps", "ferry", "ferry")):
        cand = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(fb))),
                            "bench", "transforms", "transform_bench")
        if os.path.exists(cand):
            return cand
    return os.path.join(ROOT, "build", "release", "bench", "transforms", "transform_bench")


def json_lines(text):
    return [json.loads(line) for line in text.splitlines() if line.startswith("{")]


def run_ferry(binary, records, repeats, records_file):
    if not os.path.exists(binary):
        raise RuntimeError(f"{binary} not found: build the transform_bench target (FERRY_BUILD_BENCH=ON) "
                           "or set $FERRY_TRANSFORM_BENCH")
    cmd = [binary, "--records", str(records), "--repeats", str(repeats), "--scenarios", FERRY_CASES,
           "--write-records", records_file]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    if p.returncode != 0:
        raise RuntimeError(f"transform_bench failed ({p.returncode}): {p.stderr[-1500:]}")
    for line in p.stderr.splitlines():
        print(line, file=sys.stderr)
    return json_lines(p.stdout)


def compile_peer(classpath):
    """javac SmtBench.java into CLASS_DIR unless the class there is newer than the source."""
    cls = os.path.join(CLASS_DIR, "SmtBench.class")
    if os.path.exists(cls) and os.path.getmtime(cls) >= os.path.getmtime(JAVA_SRC):
        return
    if shutil.which("javac") is None:
        raise kc.PeerError("javac not found (a JDK is needed for the Kafka Connect SMT peer)")
    os.makedirs(CLASS_DIR, exist_ok=True)
    p = subprocess.run(["javac", "-nowarn", "-cp", classpath, "-d", CLASS_DIR, JAVA_SRC],
                       capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise kc.PeerError(f"javac SmtBench.java failed: {(p.stderr or p.stdout)[-1500:]}")


def run_peer(records_file, repeats, warmup_s):
    classpath = kc.libs_classpath()
    compile_peer(classpath)
    cmd = ["java", *kc.JVM_OPTS, *kc.CONNECT_HEAP, f"-Dlog4j2.configurationFile={kc.log4j_config()}",
           "-cp", f"{CLASS_DIR}{os.pathsep}{classpath}", "SmtBench", "--records-file", records_file,
           "--repeats", str(repeats), "--warmup-s", str(warmup_s), "--cases", PEER_CASES]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=900)
    except subprocess.TimeoutExpired:
        raise kc.PeerError("SmtBench timed out after 900 s")
    if p.returncode != 0:
        raise kc.PeerError(f"SmtBench failed ({p.returncode}): {(p.stderr or p.stdout)[-1500:]}")
    for line in p.stderr.splitlines():
        if line.startswith("SmtBench:"):
            print(line, file=sys.stderr)
    return json_lines(p.stdout)


def ratio(a, b, digits=2):
    return round(a / b, digits) if a and b else None


RATE_KEYS = ("records_per_s", "records_per_cpu_s", "records_per_process_cpu_s")


def scenario(records, peers, repeats=5, warmup_s=4.0, binary=None, tmp=None):
    d = tmp or tempfile.mkdtemp(prefix="bench-transforms-")
    os.makedirs(d, exist_ok=True)
    records_file = os.path.join(d, "records.txt")
    try:
        ferry = run_ferry(binary or default_binary(), records, repeats, records_file)
        by_case = {f["case"]: f for f in ferry}
        chain5 = by_case.get("chain5")
        for f in ferry:
            if f["case"] in ("rule", "chain5+rule") and chain5:
                f["vs_ferry_chain5"] = {k: ratio(f[k], chain5[k]) for k in RATE_KEYS}
            yield f
        if not peers:
            return
        try:
            peer = run_peer(records_file, repeats, warmup_s)
        except (kc.PeerError, OSError, subprocess.SubprocessError) as e:
            yield {"scenario": SCENARIO, "peer": PEER, "error": str(e)[-1500:]}
            return
        for p in peer:
            mine = by_case.get({"chain5": "chain5", "rule-projection": "rule", "json-schema-write": "json-schema-write",
                                "json-schema-read": "json-schema-read"}.get(p["case"], ""))
            if p["case"] in ("chain5", "json-schema-write", "json-schema-read") and mine:
                p["ratio"] = {k: ratio(mine[k], p[k]) for k in RATE_KEYS}
            elif p["case"] == "rule-projection" and mine:
                p["equivalent"] = False
                p["note"] = ("no SQL/condition on value fields in Connect's SMTs: the SELECT "
                             "projection only, every record kept")
                p["ratio_vs_ferry_rule"] = {k: ratio(mine[k], p[k]) for k in RATE_KEYS}
            yield p
    finally:
        if tmp is None:
            shutil.rmtree(d, ignore_errors=True)
