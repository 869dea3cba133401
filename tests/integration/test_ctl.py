"""`ferry ctl` against a real worker: create from JSON, YAML and .properties files, list, status,
pause/resume/stop/restart/delete, offsets, and its exit codes (0 ok, 1 server error, 2 usage,
3 unreachable)."""
import json
import os
import subprocess

from harness import FERRY_BIN, Worker, free_port, run, tmpdir, wait_until


def ctl(w_url, *args, expect=0):
    p = subprocess.run([FERRY_BIN, "ctl", "--url", w_url, *args], capture_output=True, text=True, timeout=30)
    assert p.returncode == expect, f"ferry ctl {' '.join(args)} exited {p.returncode}, expected {expect}:\n{p.stdout}\n{p.stderr}"
    return p.stdout + p.stderr


def main():
    d = tmpdir("ctl")
    w = Worker(d)
    w.start()
    u = w.url
    inp = os.path.join(d, "in.txt")
    open(inp, "w").write("x\n")
    with open(os.path.join(d, "a.json"), "w") as f:
        json.dump({"name": "a", "config": {"connector.class": "FileStreamSource", "file": inp, "topic": "t"}}, f)
    with open(os.path.join(d, "b.yaml"), "w") as f:
        f.write(f"name: b\nconfig:\n  connector.class: FileStreamSink\n  topics: t\n  file: {d}/out.txt\n")
    with open(os.path.join(d, "c.properties"), "w") as f:
        f.write("name=c\nconnector.class=DatagenSource\ntopic=g\nrate=5\n")
    with open(os.path.join(d, "bad.json"), "w") as f:
        f.write('{"name": "bad", "config": {"connector.class": "FileStreamSource"}}')

    for fn in ("a.json", "b.yaml", "c.properties"):
        ctl(u, "create", "-f", os.path.join(d, fn))
    out = ctl(u, "create", "-f", os.path.join(d, "bad.json"), expect=1)
    assert "topic" in out, out
    w.wait_running("a")
    w.wait_running("b")
    out = ctl(u, "list")
    for name in ("a", "b", "c"):
        assert name in out, out
    assert "RUNNING" in out, out
    names = json.loads(ctl(u, "list", "-o", "json"))
    assert sorted(names if isinstance(names, list) else names.keys()) == ["a", "b", "c"], names
    assert "RUNNING" in ctl(u, "status", "a")
    ctl(u, "pause", "c")
    wait_until(lambda: "PAUSED" in ctl(u, "status", "c"), 20, "c PAUSED")
    ctl(u, "resume", "c")
    ctl(u, "restart", "c", "--include-tasks")
    ctl(u, "stop", "a")
    wait_until(lambda: "STOPPED" in ctl(u, "status", "a"), 20, "a STOPPED")
    ctl(u, "offsets", "a")
    ctl(u, "offsets", "reset", "a")
    ctl(u, "delete", "c")
    ctl(u, "status", "c", expect=1)
    ctl(u, "plugins")
    ctl(u, "frobnicate", expect=2)
    ctl(f"http://127.0.0.1:{free_port()}", "list", expect=3)
    w.stop()


if __name__ == "__main__":
    run(main)
