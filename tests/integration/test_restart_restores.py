"""A restarted worker brings back every connector in its target state and resumes each source
exactly from its committed position (graceful stop: no line lost, none repeated)."""
import os

from harness import Worker, run, tmpdir, wait_until


def main():
    d = tmpdir("restore")
    src_file = os.path.join(d, "in.txt")
    out_file = os.path.join(d, "out.txt")
    with open(src_file, "w") as f:
        for i in range(1000):
            f.write(f"line-{i}\n")
    w = Worker(d)
    w.start()
    w.ok("POST", "/connectors", {"name": "src", "config": {
        "connector.class": "FileStreamSource", "file": src_file, "topic": "t"}})
    w.ok("POST", "/connectors", {"name": "sink", "config": {
        "connector.class": "FileStreamSink", "topics": "t", "file": out_file}})
    w.ok("POST", "/connectors", {"name": "idle", "config": {
        "connector.class": "DatagenSource", "topic": "g", "rate": "1"}})
    w.ok("PUT", "/connectors/idle/pause", expect=(202,))
    wait_until(lambda: os.path.exists(out_file) and sum(1 for _ in open(out_file)) == 1000, 30, "first 1000 lines")
    assert w.stop() == 0, "graceful stop must exit 0"

    with open(src_file, "a") as f:
        for i in range(1000, 1500):
            f.write(f"line-{i}\n")
    w.start()
    assert sorted(w.ok("GET", "/connectors")) == ["idle", "sink", "src"]
    w.wait_running("src")
    w.wait_running("sink")
    wait_until(lambda: w.ok("GET", "/connectors/idle/status")["connector"]["state"] == "PAUSED", 20, "idle PAUSED")
    wait_until(lambda: sum(1 for _ in open(out_file)) >= 1500, 30, "1500 lines")
    lines = [l.rstrip("\n") for l in open(out_file)]
    assert lines == [f"line-{i}" for i in range(1500)], \
        f"expected exactly line-0..line-1499 in order once each; got {len(lines)} lines"
    w.stop()


if __name__ == "__main__":
    run(main)
