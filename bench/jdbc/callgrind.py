"""Instructions per row of the JDBC connectors' task threads, counted by valgrind's callgrind: a
figure that does not move with the machine's speed (bench/run's rates and CPU times on this VM vary
by tens of percent between runs of one build), for comparing two builds of one change. Not a
bench/run scenario (no peer, no rate): a profiling aid.

    python3 bench/jdbc/callgrind.py [--side source|sink] [--rows N] [--row-bytes B] BIN [BIN...]

Needs valgrind (Debian package) and scripts/services/postgres running. For each binary, a
standalone worker runs under `valgrind --tool=callgrind` and:
  source  JdbcSource (incrementing on id, batch.max.rows 5000, JsonConverter with the envelope)
          reads a table of N rows (the bench's rows: id, ts, qty, note) into the embedded backbone,
          until the task's ferry_task_records_out_total reaches N;
  sink    FileStreamSource loads N envelopes into the embedded backbone, then JdbcSink (insert,
          auto.create, batch.size 3000) writes them into PostgreSQL, until count(*) reaches N.
One JSON object per binary on stdout: the program's total instructions and, per row, the inclusive
instructions of the functions that make up the task's path (the task loop's step for the source;
put, poll and decode for the sink). The total holds start-up and connections; the source's task
loop step holds the task's start too (its PostgreSQL login, ~140 million instructions: compare
two builds at the same --rows). FERRY_CALLGRIND_KEEP=FILE keeps the (last) callgrind output there,
for callgrind_annotate.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.parse

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import jdbc_bench as jb  # noqa: E402  (psql, rows, envelopes, wait_rows, Worker)

SOURCE_FUNCS = {
    "task_loop_step": "TaskLoop::step()",
    "source_poll": "JdbcSourceTask::poll(",
    "producer_output_accept": "ProducerOutput::accept(",
    "acked_positions_collect": "AckedPositions::collect()",
}
SINK_FUNCS = {
    "jdbc_sink_put": "JdbcSinkTask::put(",
    "backbone_input_poll": "BackboneInput::poll(",
    "backbone_input_decode": "BackboneInput::decode(",
}


def inclusive(out_file, funcs):
    """The inclusive instruction count of each function (by a unique piece of its name)."""
    p = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", out_file],
                       capture_output=True, text=True, check=True)
    found, total = {}, 0
    for line in p.stdout.splitlines():
        parts = line.split(None, 2)
        if len(parts) < 3 or not parts[0].replace(",", "").isdigit():
            continue
        count = int(parts[0].replace(",", ""))
        if "PROGRAM TOTALS" in line:
            total = count
        for key, piece in funcs.items():
            # The function's own line (file:function [object]), not a call line ("=>").
            if piece in line and "=>" not in line and key not in found:
                found[key] = count
    return total, found


def run(binary, side, rows, size, d):
    out_file = os.path.join(d, f"callgrind.{os.getpid()}.{time.time_ns()}")
    wrapper = os.path.join(d, "valgrind-ferry")
    with open(wrapper, "w") as f:
        f.write("#!/bin/sh\nexec valgrind --tool=callgrind --callgrind-out-file=" + out_file +
                " --dump-instr=no " + binary + ' "$@"\n')
    os.chmod(wrapper, 0o755)
    sys.modules["harness"].FERRY_BIN = wrapper  # the binary Worker starts (tests/integration/harness.py)
    url = urllib.parse.urlparse(jb.PG_URL)
    conn = {"connection.url": f"postgresql://{url.hostname}:{url.port}{url.path}", "connection.user": url.username,
            "connection.password": urllib.parse.unquote(url.password or "")}
    wd = tempfile.mkdtemp(prefix="w-", dir=d)
    table = f"cg_{side}_{os.getpid()}"
    jb.psql(f'DROP TABLE IF EXISTS "{table}"')
    w = jb.Worker(wd, extra={"file.allowed.dirs": d})
    try:
        if side == "source":
            csv = jb.write_csv(rows, size, d)
            jb.psql(f'CREATE TABLE "{table}" (id BIGINT PRIMARY KEY, ts TIMESTAMP NOT NULL, qty INTEGER NOT NULL, '
                    f'note TEXT NOT NULL)')
            jb.psql(f'\\copy "{table}" FROM \'{csv}\' WITH (FORMAT csv)')
            jb.psql(f'VACUUM ANALYZE "{table}"')
            w.start(timeout=180)
            w.ok("POST", "/connectors", {"name": "src", "config": dict(conn, **{
                "connector.class": "JdbcSource", "mode": "incrementing", "incrementing.column.name": "id",
                "table.whitelist": table, "topic.prefix": "", "batch.max.rows": "5000",
                "value.converter": "org.apache.kafka.connect.json.JsonConverter",
                "value.converter.schemas.enable": "true"})})
            jb.wait_until(lambda: jb.records_out(w, "src") >= rows, 1800, f"{rows} source records", interval=0.5)
            funcs = SOURCE_FUNCS
        else:
            src = jb.write_envelopes(rows, size, d)
            w.start(timeout=180)
            w.ok("POST", "/connectors", {"name": "load", "config": {
                "connector.class": "FileStreamSource", "file": src, "topic": table}})
            jb.wait_until(lambda: jb.records_out(w, "load") >= rows, 1800, f"{rows} records loaded", interval=0.5)
            w.ok("POST", "/connectors", {"name": "sink", "config": dict(conn, **{
                "connector.class": "JdbcSink", "topics": table, "table.name.format": table,
                "value.converter": "org.apache.kafka.connect.json.JsonConverter", "insert.mode": "insert",
                "auto.create": "true", "batch.size": "3000"})})
            jb.wait_rows(table, rows)
            funcs = SINK_FUNCS
    finally:
        w.stop()
        jb.psql(f'DROP TABLE IF EXISTS "{table}"')
    total, found = inclusive(out_file, funcs)
    if os.environ.get("FERRY_CALLGRIND_KEEP"):
        import shutil
        shutil.copy(out_file, os.environ["FERRY_CALLGRIND_KEEP"])
    return {"tool": "callgrind", "side": side, "binary": binary, "rows": rows, "row_bytes": size,
            "instructions_total": total,
            "instructions_per_row": {k: round(v / rows) for k, v in sorted(found.items())}}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--side", choices=["source", "sink"], default="source")
    ap.add_argument("--rows", type=int, default=100_000)
    ap.add_argument("--row-bytes", type=int, default=100)
    ap.add_argument("binaries", nargs="+")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="ferry-callgrind-") as d:
        for b in a.binaries:
            print(json.dumps(run(os.path.abspath(b), a.side, a.rows, a.row_bytes, d)), flush=True)


if __name__ == "__main__":
    main()
