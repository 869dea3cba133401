"""Pipeline files given to the worker at start-up (`ferry standalone worker.properties p.json`):
applied without REST by the same code as POST/PUT /pipelines (control/pipeline_ops.h).

  (a) a direct pipeline file is created at start: GET /pipelines lists it and 500
      sequence-numbered lines reach the sink's file, each once or more, none missing;
  (b) the same file at the next start changes nothing ("applied", same connector, lines keep
      flowing);
  (c) the file edited to backbone mode with two sinks replaces the pipeline at the next start:
      the direct connector is gone, <name>-source and <name>-sink-1/2 run, both sinks get new lines;
  (d) a file with an invalid sink refuses the start, names the pipeline field and changes nothing.
"""
import json
import os

from harness import Worker, run, tmpdir, wait_until

N = 500


def lines(path):
    try:
        with open(path) as f:
            return [l.rstrip("\n") for l in f if l.strip()]
    except OSError:
        return []


def main():
    d = tmpdir("pipeline-files")
    src, out_a, out_b = (os.path.join(d, n) for n in ("in.txt", "a.txt", "b.txt"))
    with open(src, "w") as f:
        f.writelines(f"line-{i}\n" for i in range(N))
    pfile = os.path.join(d, "iot.json")

    def write_pipeline(body):
        with open(pfile, "w") as f:
            json.dump(body, f)

    direct = {"name": "iot", "mode": "direct",
              "source": {"connector.class": "FileStreamSource", "file": src, "topic": "iot-in"},
              "sink": {"connector.class": "FileStreamSink", "file": out_a}}
    write_pipeline(direct)
    w = Worker(d, connector_files=[pfile])

    # (a)
    w.start()
    assert w.ok("GET", "/pipelines") == ["iot"], w.ok("GET", "/pipelines")
    w.wait_running("iot")
    wait_until(lambda: len(set(lines(out_a))) >= N, 60, f"{N} lines in the sink's file")
    missing = set(f"line-{i}" for i in range(N)) - set(lines(out_a))
    assert not missing, f"(a) missing {sorted(missing)[:5]}"
    p = w.ok("GET", "/pipelines/iot")
    assert p["mode"] == "direct" and [c["name"] for c in p["connectors"]] == ["iot"], p
    assert "created pipeline iot from" in open(w.log_path).read(), w.tail_log()

    # (b)
    w.stop()
    w.start()
    assert w.ok("GET", "/connectors") == ["iot"], w.ok("GET", "/connectors")
    assert "applied pipeline iot from" in open(w.log_path).read(), w.tail_log()
    w.wait_running("iot")
    with open(src, "a") as f:
        f.write("after-restart\n")
    wait_until(lambda: "after-restart" in lines(out_a), 30, "a line written after the restart")

    # (c)
    backbone = {"name": "iot", "mode": "backbone",
                "source": {"connector.class": "FileStreamSource", "file": src},
                "sinks": [{"connector.class": "FileStreamSink", "file": out_a},
                          {"connector.class": "FileStreamSink", "file": out_b}]}
    write_pipeline(backbone)
    w.stop()
    w.start()
    assert sorted(w.ok("GET", "/connectors")) == ["iot-sink-1", "iot-sink-2", "iot-source"], \
        w.ok("GET", "/connectors")
    for c in ("iot-source", "iot-sink-1", "iot-sink-2"):
        w.wait_running(c)
    with open(src, "a") as f:
        f.write("via-backbone\n")
    wait_until(lambda: "via-backbone" in lines(out_a) and "via-backbone" in lines(out_b), 60,
               "the new line in both sinks' files")
    assert w.ok("GET", "/pipelines/iot")["mode"] == "backbone"

    # (d)
    bad = dict(backbone, sinks=[{"connector.class": "FileStreamSink", "file": out_a},
                                {"connector.class": "FileStreamSink"}])
    write_pipeline(bad)
    w.stop()
    before = open(w.log_path).read()
    try:
        w.start(timeout=20)
        raise AssertionError("(d) the worker started with an invalid pipeline file")
    except AssertionError as e:
        if "started with an invalid" in str(e):
            raise
    log = open(w.log_path).read()[len(before):]
    assert "sinks[1].file" in log and "iot.json" in log, f"(d) {log[-1500:]}"
    # Nothing changed: the previous pipeline is still stored as it was.
    write_pipeline(backbone)
    w.start()
    assert sorted(w.ok("GET", "/connectors")) == ["iot-sink-1", "iot-sink-2", "iot-source"]
    w.stop()
    print(json.dumps({"test": "pipeline_files", "lines": N, "result": "ok"}))


if __name__ == "__main__":
    run(main)
