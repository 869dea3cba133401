"""A worker whose store files were damaged on disk: a bit flip that keeps the JSON valid is caught
by the checksum and the previous copy is used (with a warning in the log that names the file and
what may be missing); with no usable copy of configs.json the worker refuses to start and says
which files and what to do; a damaged status.json (a cache) never stops it. Store files are 0600."""
import os
import shutil
import stat
import subprocess
import time

from harness import FERRY_BIN, Worker, run, tmpdir, wait_until


def flip(path, needle, offset, bit):
    data = bytearray(open(path, "rb").read())
    at = data.find(needle)
    assert at >= 0, f"{needle!r} not in {path}"
    data[at + offset] ^= bit
    open(path, "wb").write(bytes(data))


def log_since(w, mark):
    with open(w.log_path, "rb") as f:
        f.seek(mark)
        return f.read().decode(errors="replace")


def main():
    d = tmpdir("store-damage")
    src_file = os.path.join(d, "in.txt")
    out_file = os.path.join(d, "out.txt")
    with open(src_file, "w") as f:
        for i in range(100):
            f.write(f"line-{i}\n")
    w = Worker(d)
    store = os.path.join(w.data, "store")
    configs = os.path.join(store, "configs.json")
    w.start()
    w.ok("POST", "/connectors", {"name": "sink", "config": {
        "connector.class": "FileStreamSink", "topics": "corr", "file": out_file}})
    w.ok("POST", "/connectors", {"name": "src", "config": {
        "connector.class": "FileStreamSource", "file": src_file, "topic": "corr"}})
    wait_until(lambda: os.path.exists(out_file) and sum(1 for _ in open(out_file)) == 100, 30,
               "100 lines through")
    w.ok("PUT", "/connectors/src/pause", expect=(202,))
    wait_until(lambda: w.ok("GET", "/connectors/src/status")["connector"]["state"] == "PAUSED", 20,
               "src PAUSED")
    assert w.stop() == 0

    for name in ("configs.json", "positions.json", "status.json"):
        mode = stat.S_IMODE(os.stat(os.path.join(store, name)).st_mode)
        assert mode == 0o600, f"{name} has mode {oct(mode)}, want 0600 (configs hold credentials)"
    assert os.path.exists(configs + ".prev")
    good = {n: open(os.path.join(store, n), "rb").read() for n in os.listdir(store)}

    # 1. The sink's topic flipped from corr to cmrr: still valid JSON, caught by the checksum.
    flip(configs, b'"corr"', 2, 0x02)
    mark = os.path.getsize(w.log_path)
    w.start()
    cfg = w.ok("GET", "/connectors/sink/config")
    assert cfg["topics"] == "corr", f"the damaged value was loaded: {cfg}"
    log = log_since(w, mark)
    assert "checksum mismatch" in log and configs + ".prev" in log and "may be missing" in log, log
    # The previous copy is the state before the last config change (src's pause).
    assert w.ok("GET", "/connectors/src/status")["connector"]["state"] == "RUNNING"
    w.ok("PUT", "/connectors/src/pause", expect=(202,))  # apply the missing change again
    assert w.stop() == 0

    # 2. Both copies of configs.json damaged: the worker refuses to start and says what to do.
    open(configs, "w").write('{"format": 2, "conn')
    open(configs + ".prev", "w").write("")
    mark = os.path.getsize(w.log_path)
    with open(w.log_path, "ab") as log_file:
        rc = subprocess.run([FERRY_BIN, "standalone", w.props], stdout=log_file,
                            stderr=subprocess.STDOUT, cwd=d, timeout=30).returncode
    log = log_since(w, mark)
    assert rc != 0, "a worker with no usable configs.json must not start"
    assert configs + " is damaged" in log and configs + ".prev is damaged" in log, log
    assert "backup" in log, log

    # 3. status.json damaged in both copies: a warning, and the worker starts.
    for n, data in good.items():
        open(os.path.join(store, n), "wb").write(data)
    status = os.path.join(store, "status.json")
    open(status, "w").write("garbage")
    open(status + ".prev", "w").write("")
    mark = os.path.getsize(w.log_path)
    w.start()
    w.wait_running("sink")
    log = log_since(w, mark)
    assert status in log and "empty status cache" in log, log
    assert w.stop() == 0
    if not os.environ.get("FERRY_KEEP"):
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    run(main)
