"""File connectors touch only files under file.allowed.dirs (issue 16).

Through REST on a real worker, for FileStreamSource and FileStreamSink (and a direct connector's
sink.file): /etc/passwd, /etc/shadow and other paths outside the allowed folder, `..` traversal
and symbolic links out of it, the worker's own store and a plugin.path folder are refused at
validate (the key carries the error) and at create (400 naming the key); a file swapped for a link
after the connector was created makes the task FAIL with a clear trace, and nothing outside is read
or written; a worker whose allowed folder overlaps plugin.path or lies in data.dir does not start;
and files inside the allowed folder still carry sequence-numbered lines end to end.
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "integration"))
from harness import FERRY_BIN, Worker, run, tmpdir, wait_until  # noqa: E402

VALIDATE = "/connector-plugins/{cls}/config/validate"


def key_errors(report, key):
    for c in report.get("configs", []):
        if c["value"]["name"] == key:
            return c["value"]["errors"]
    return []


def refused(w, name, config, key, words=None):
    """`config` is refused by validate (errors on `key`) and by create (400 naming `key`), and no
    connector `name` exists afterwards."""
    cls = config["connector.class"]
    status, report = w.rest("PUT", VALIDATE.format(cls=cls), config)
    assert status == 200, (status, report)
    errs = key_errors(report, key)
    assert errs and report["error_count"] >= 1, \
        f"validate accepted {key}={config.get(key)} (error_count {report.get('error_count')})"
    if words:
        assert any(words in e for e in errs), (words, errs)
    status, body = w.rest("POST", "/connectors", {"name": name, "config": config})
    assert status == 400, f"create {name} with {key}={config.get(key)!r} -> {status} {body}"
    assert f"{key}: " in body["message"], body
    status, body = w.rest("PUT", f"/connectors/{name}/config", config)
    assert status == 400, f"PUT {name} with {key}={config.get(key)!r} -> {status} {body}"
    assert f"{key}: " in body["message"], body
    assert w.rest("GET", f"/connectors/{name}")[0] == 404


def task_state(w, name):
    status, s = w.rest("GET", f"/connectors/{name}/status")
    if status != 200 or not s.get("tasks"):
        return {}
    return s["tasks"][0]


def lines_of(path):
    try:
        with open(path) as f:
            return f.read().splitlines()
    except OSError:
        return []


def check_refusals(w, d, outside, plugins):
    src = lambda f, **kw: {"connector.class": "FileStreamSource", "file": f, "topic": "t", **kw}
    sink = lambda f, **kw: {"connector.class": "FileStreamSink", "file": f, "topics": "t", **kw}
    secret = os.path.join(outside, "secret.txt")

    # Absolute paths outside: the classic reads and writes.
    for i, path in enumerate(("/etc/passwd", "/etc/shadow", secret)):
        refused(w, f"abs-src-{i}", src(path), "file", "outside the folders")
        refused(w, f"abs-files-{i}", {"connector.class": "FileStreamSource", "topic": "t",
                                      "files": f"{os.path.join(d, 'in.txt')},{path}"}, "files")
    for i, path in enumerate(("/etc/passwd", "/root/.ssh/authorized_keys", "/etc/cron.d/ferry",
                              os.path.join(outside, "new.txt"))):
        refused(w, f"abs-sink-{i}", sink(path), "file", "outside the folders")
    # A direct connector's sink side, named with its prefix.
    refused(w, "direct-out", {"connector.class": "DatagenSource", "topic": "g", "format": "string",
                              "sink.connector.class": "FileStreamSink",
                              "sink.file": os.path.join(outside, "direct.txt")}, "sink.file")

    # `..` traversal.
    up = os.path.join(d, "..", os.path.basename(outside), "secret.txt")
    refused(w, "dots-src", src(up), "file")
    refused(w, "dots-sink", sink(os.path.join(d, "..", os.path.basename(outside), "x.txt")), "file")
    refused(w, "dots-deep", src(os.path.join(d, *[".."] * 12, "etc", "passwd")), "file")

    # Symbolic links out of the allowed folder: at the end, in the middle, dangling.
    os.symlink("/etc/passwd", os.path.join(d, "passwd-link"))
    os.symlink(outside, os.path.join(d, "outside-link"))
    os.symlink(os.path.join(outside, "created-through-link.txt"), os.path.join(d, "dangling"))
    refused(w, "link-end", src(os.path.join(d, "passwd-link")), "file", "resolves to /etc/passwd")
    refused(w, "link-mid", src(os.path.join(d, "outside-link", "secret.txt")), "file")
    refused(w, "link-mid-sink", sink(os.path.join(d, "outside-link", "x.txt")), "file")
    refused(w, "link-dangling", sink(os.path.join(d, "dangling")), "file")

    # The worker's own store (data.dir lies inside the allowed folder here) and plugin.path.
    refused(w, "store", sink(os.path.join(w.data, "store", "configs.json")), "file", "keeps for itself")
    refused(w, "store-read", src(os.path.join(w.data, "store", "configs.json")), "file", "keeps for itself")
    refused(w, "plugin", sink(os.path.join(plugins, "libevil.so")), "file")
    os.symlink(plugins, os.path.join(d, "plugins-link"))
    refused(w, "plugin-link", sink(os.path.join(d, "plugins-link", "libevil.so")), "file")

    # A prefix-sharing sibling of the allowed folder is outside it.
    sibling = d.rstrip("/") + "2"
    os.makedirs(sibling, exist_ok=True)
    refused(w, "sibling", sink(os.path.join(sibling, "x.txt")), "file", "outside the folders")

    assert not os.path.exists(os.path.join(outside, "created-through-link.txt"))
    assert not os.path.exists(os.path.join(plugins, "libevil.so"))
    assert not os.path.exists(os.path.join(outside, "new.txt"))
    assert lines_of(secret) == ["secret"]


def check_end_to_end(w, d):
    src_file = os.path.join(d, "in.txt")
    out_file = os.path.join(d, "sub", "out.txt")
    os.makedirs(os.path.dirname(out_file))
    expected = [f"seq-{i:05d}" for i in range(500)]
    with open(src_file, "w") as f:
        f.write("\n".join(expected[:250]) + "\n")
    w.ok("POST", "/connectors", {"name": "e2e-src", "config": {
        "connector.class": "FileStreamSource", "file": src_file, "topic": "seq"}}, expect=(201,))
    w.ok("POST", "/connectors", {"name": "e2e-sink", "config": {
        "connector.class": "FileStreamSink", "file": out_file, "topics": "seq"}}, expect=(201,))
    w.wait_running("e2e-src")
    w.wait_running("e2e-sink")
    with open(src_file, "a") as f:
        f.write("\n".join(expected[250:]) + "\n")
    wait_until(lambda: len(lines_of(out_file)) >= len(expected), 30, "500 lines at the sink")
    assert lines_of(out_file) == expected, lines_of(out_file)[:5]


def check_swapped_links(w, d, outside):
    """Paths valid at create, swapped for links outside afterwards: the tasks FAIL and nothing
    outside is read or written."""
    secret = os.path.join(outside, "secret.txt")
    target = os.path.join(outside, "target.txt")
    with open(target, "w") as f:
        f.write("untouched\n")
    victim = os.path.join(d, "victim.txt")
    with open(victim, "w") as f:
        f.write("v-1\nv-2\n")
    leak = os.path.join(d, "leak.txt")
    w.ok("POST", "/connectors", {"name": "swap-src", "config": {
        "connector.class": "FileStreamSource", "file": victim, "topic": "swap", "poll.interval.ms": "50"}})
    w.ok("POST", "/connectors", {"name": "swap-watch", "config": {
        "connector.class": "FileStreamSink", "file": leak, "topics": "swap"}})
    w.wait_running("swap-src")
    wait_until(lambda: lines_of(leak) == ["v-1", "v-2"], 30, "victim's lines at the sink")
    # The source follows rotation: the path now names a link to a file outside.
    os.rename(victim, victim + ".old")
    os.symlink(secret, victim)
    t = wait_until(lambda: (lambda s: s if s.get("state") == "FAILED" else None)(task_state(w, "swap-src")), 30,
                   "swap-src FAILED")
    assert "changed after it was checked" in t["trace"] or "outside the folders" in t["trace"], t["trace"]
    assert "FileStreamSource" in t["trace"] and victim in t["trace"], t["trace"]
    print("swap-src trace:", t["trace"].splitlines()[0][:300])
    # A restart opens it again: still refused.
    w.ok("POST", "/connectors/swap-src/restart?includeTasks=true")
    time.sleep(1)
    t = wait_until(lambda: (lambda s: s if s.get("state") == "FAILED" else None)(task_state(w, "swap-src")), 30,
                   "swap-src FAILED after restart")
    time.sleep(1.5)  # more than one flush interval: anything read would have reached the sink
    assert lines_of(leak) == ["v-1", "v-2"], f"read through the swapped link: {lines_of(leak)}"

    # The sink: its file swapped for a link to a file outside, then the task restarted.
    out = os.path.join(d, "swap-out.txt")
    w.ok("POST", "/connectors", {"name": "swap-sink", "config": {
        "connector.class": "FileStreamSink", "file": out, "topics": "swap"}})
    w.wait_running("swap-sink")
    wait_until(lambda: lines_of(out) == ["v-1", "v-2"], 30, "swap-sink caught up")
    w.ok("PUT", "/connectors/swap-sink/pause", expect=(202,))
    os.rename(out, out + ".old")
    os.symlink(target, out)
    w.ok("PUT", "/connectors/swap-sink/resume", expect=(202,))
    w.ok("POST", "/connectors/swap-sink/restart?includeTasks=true")
    t = wait_until(lambda: (lambda s: s if s.get("state") == "FAILED" else None)(task_state(w, "swap-sink")), 30,
                   "swap-sink FAILED")
    assert "FileStreamSink" in t["trace"] and out in t["trace"], t["trace"]
    print("swap-sink trace:", t["trace"].splitlines()[0][:300])
    assert lines_of(target) == ["untouched"], lines_of(target)
    # A sink whose file does not exist yet, its folder swapped for a link outside: not created there.
    newdir = os.path.join(d, "newdir")
    os.makedirs(newdir)
    w.ok("POST", "/connectors", {"name": "swap-dir", "config": {
        "connector.class": "FileStreamSink", "file": os.path.join(newdir, "o.txt"), "topics": "swap"}})
    w.wait_running("swap-dir")
    w.ok("DELETE", "/connectors/swap-dir", expect=(204,))
    os.remove(os.path.join(newdir, "o.txt"))
    os.rmdir(newdir)
    os.symlink(outside, newdir)
    status, body = w.rest("POST", "/connectors", {"name": "swap-dir2", "config": {
        "connector.class": "FileStreamSink", "file": os.path.join(newdir, "o.txt"), "topics": "swap"}})
    assert status == 400 and "file: " in body["message"], (status, body)
    assert not os.path.exists(os.path.join(outside, "o.txt"))


def check_start_refusals(base, plugins):
    """A worker whose allowed folder overlaps plugin.path or lies in data.dir's store refuses to
    start, naming both keys."""
    cases = [
        ("plugins-inside", lambda d: {"file.allowed.dirs": d, "plugin.path": os.path.join(d, "plugins")},
         ["file.allowed.dirs", "plugin.path"]),
        ("inside-plugins", lambda d: {"file.allowed.dirs": os.path.join(d, "plugins", "x"),
                                      "plugin.path": os.path.join(d, "plugins")},
         ["file.allowed.dirs", "plugin.path"]),
        ("in-store", lambda d: {"file.allowed.dirs": os.path.join(d, "data", "store")},
         ["file.allowed.dirs", "data.dir"]),
        ("is-data", lambda d: {"file.allowed.dirs": os.path.join(d, "data")}, ["file.allowed.dirs", "data.dir"]),
    ]
    for name, props, words in cases:
        d = tmpdir(f"confine-start-{name}")
        os.makedirs(os.path.join(d, "plugins", "x"))
        os.makedirs(os.path.join(d, "data", "store"))
        w = Worker(d, props(d))
        proc = subprocess.run([FERRY_BIN, "standalone", w.props], cwd=d, capture_output=True, text=True, timeout=30)
        out = proc.stdout + proc.stderr
        assert proc.returncode != 0, f"{name}: the worker started (or exited 0):\n{out}"
        for word in words:
            assert word in out, f"{name}: {word} not named:\n{out}"


def check_default_folder():
    """Without file.allowed.dirs the worker uses data.dir/files, created 0700."""
    d = tmpdir("confine-default")
    w = Worker(d, {"file.allowed.dirs": None})
    w.start()
    files = os.path.join(w.data, "files")
    assert os.path.isdir(files) and (os.stat(files).st_mode & 0o777) == 0o700, oct(os.stat(files).st_mode)
    with open(os.path.join(files, "in.txt"), "w") as f:
        f.write("a\nb\n")
    w.ok("POST", "/connectors", {"name": "s", "config": {
        "connector.class": "FileStreamSource", "file": os.path.join(files, "in.txt"), "topic": "d"}})
    w.ok("POST", "/connectors", {"name": "k", "config": {
        "connector.class": "FileStreamSink", "file": os.path.join(files, "out.txt"), "topics": "d"}})
    wait_until(lambda: lines_of(os.path.join(files, "out.txt")) == ["a", "b"], 30, "default folder e2e")
    refused(w, "next-to-data", {"connector.class": "FileStreamSink", "topics": "d",
                                "file": os.path.join(d, "out.txt")}, "file", "outside the folders")
    w.stop()


def main():
    base = tmpdir("confine")
    d = os.path.join(base, "work")          # the worker's folder: file.allowed.dirs (harness default)
    outside = os.path.join(base, "outside")
    plugins = os.path.join(base, "plugins")
    for p in (d, outside, plugins):
        os.makedirs(p)
    with open(os.path.join(outside, "secret.txt"), "w") as f:
        f.write("secret\n")
    w = Worker(d, {"plugin.path": plugins})
    w.start()
    check_refusals(w, d, outside, plugins)
    check_end_to_end(w, d)
    check_swapped_links(w, d, outside)
    assert w.stop() == 0
    check_start_refusals(base, plugins)
    check_default_folder()


if __name__ == "__main__":
    run(main)
