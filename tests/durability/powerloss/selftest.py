"""Self-test of the power-loss simulator: the LD_PRELOAD layer (libferry_powerloss.so) and
powerloss.py, checked against hand-written expectations with a scripted writer program.

Every case runs powerloss_writer under the layer, lets it SIGKILL itself, checks the live tree
first (the control: without the simulated power loss the unsynced data *is* there, so each
expectation below can fail), then calls powerloss.crash() and checks what is left.

Environment (CTest sets both): FERRY_POWERLOSS_LIB (the layer), FERRY_POWERLOSS_WRITER.
Run one case: selftest.py <case-name>...
"""
import os
import shutil
import signal
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import powerloss  # noqa: E402

LIB = os.environ.get("FERRY_POWERLOSS_LIB", "")
WRITER = os.environ.get("FERRY_POWERLOSS_WRITER", "")
CASES = []


def case(fn):
    CASES.append(fn)
    return fn


def expect(actual, wanted, what):
    if actual != wanted:
        raise AssertionError(f"{what}: got {_show(actual)}, expected {_show(wanted)}")


def _show(v):
    if isinstance(v, bytes) and len(v) > 80:
        return f"<{len(v)} bytes {v[:40]!r}...>"
    return repr(v)


class Box:
    """A root with a shadow next to it; the writer runs with the root as its working folder."""

    def __init__(self, name):
        self.tmp = tempfile.mkdtemp(prefix=f"ferry-powerloss-{name}-")
        self.root = os.path.join(self.tmp, "root")
        self.shadow = os.path.join(self.tmp, "shadow")
        os.mkdir(self.root)

    def put(self, rel, data):
        p = os.path.join(self.root, rel)
        os.makedirs(os.path.dirname(p), exist_ok=True)
        with open(p, "wb") as f:
            f.write(data)

    def init(self):
        powerloss.init(self.root, self.shadow)
        return self

    def run(self, *ops, layer=True, killed=True):
        env = dict(os.environ)
        if layer:
            env.update(powerloss.layer_env(self.root, self.shadow, LIB))
        ops = list(ops) + (["kill"] if killed else [])
        p = subprocess.run([WRITER, *ops], cwd=self.root, env=env, capture_output=True, timeout=120)
        want = -signal.SIGKILL if killed else 0
        if p.returncode != want:
            raise AssertionError(f"writer exited {p.returncode} (expected {want}): {p.stderr.decode()}")
        return p.stdout.decode()

    def read(self, rel):
        try:
            with open(os.path.join(self.root, rel), "rb") as f:
                return f.read()
        except FileNotFoundError:
            return None

    def exists(self, rel):
        return os.path.lexists(os.path.join(self.root, rel))

    def crash(self, **kw):
        return powerloss.crash(self.root, self.shadow, **kw)

    def close(self):
        shutil.rmtree(self.tmp, ignore_errors=True)


# ----- data


@case
def unsynced_write_is_lost():
    b = Box("unsynced")
    b.put("a.txt", b"base")
    b.init().run("open", "h", "a.txt", "wronly", "pwrite", "h", "4", "XYZ")
    expect(b.read("a.txt"), b"baseXYZ", "live file after kill -9 (control)")
    b.crash()
    expect(b.read("a.txt"), b"base", "after power loss")
    b.close()


@case
def fsynced_write_survives():
    b = Box("fsynced")
    b.put("a.txt", b"base")
    b.init().run("open", "h", "a.txt", "wronly", "pwrite", "h", "4", "XYZ", "fsync", "h",
                 "pwrite", "h", "7", "-tail")
    expect(b.read("a.txt"), b"baseXYZ-tail", "live file (control)")
    b.crash()
    expect(b.read("a.txt"), b"baseXYZ", "after power loss: the fsynced write, not the later one")
    b.close()


@case
def sync_through_another_descriptor():
    # fsync makes the inode's data durable, whichever descriptor wrote it (here a dup'ed one and a
    # second open of the same file).
    b = Box("otherfd")
    b.put("a.txt", b"0123456789")
    b.init().run("open", "h", "a.txt", "wronly", "dup", "h", "h2", "pwrite", "h2", "2", "ab",
                 "open", "r", "a.txt", "rdonly", "fdatasync", "r", "pwrite", "h", "6", "cd")
    expect(b.read("a.txt"), b"01ab45cd89", "live file (control)")
    b.crash()
    expect(b.read("a.txt"), b"01ab456789", "after power loss")
    b.close()


@case
def fsync_of_a_descriptor_opened_behind_the_layer():
    # The layer did not see the open (nor, so, the writes): the fsync makes the whole file durable.
    b = Box("rawfd")
    b.put("a.txt", b"base")
    # (Opened through the layer first, so the layer already follows this inode.)
    b.init().run("open", "o", "a.txt", "rdonly", "close", "o",
                 "rawopen", "h", "a.txt", "wronly", "pwrite", "h", "4", "XYZ", "fsync", "h")
    b.crash()
    expect(b.read("a.txt"), b"baseXYZ", "after power loss")
    b.close()


@case
def append_keeps_exactly_the_synced_prefix():
    b = Box("append")
    b.put("log.txt", b"l0\n")
    b.init().run("open", "h", "log.txt", "wronly,append",
                 "write", "h", "l1\n", "fsync", "h",
                 "writev", "h", "l2", "\n",
                 # On Linux pwrite on an O_APPEND descriptor appends: the layer must count it at
                 # the end of the file, not at offset 0 (else the synced tail would be zeros).
                 "pwrite", "h", "0", "l3\n", "fdatasync", "h",
                 "write", "h", "l4\n", "pwritev", "h", "0", "l5", "\n")
    expect(b.read("log.txt"), b"l0\nl1\nl2\nl3\nl4\nl5\n", "live file (control)")
    b.crash()
    expect(b.read("log.txt"), b"l0\nl1\nl2\nl3\n", "after power loss")
    b.close()


@case
def ftruncate_then_sync():
    b = Box("ftruncate")
    b.put("t.bin", b"x" * 100)
    b.init().run("open", "h", "t.bin", "rdwr", "ftruncate", "h", "40", "fsync", "h", "ftruncate", "h", "10")
    expect(len(b.read("t.bin")), 10, "live size (control)")
    b.crash()
    expect(b.read("t.bin"), b"x" * 40, "after power loss: the synced truncation only")
    b.close()

    # Shrink, grow back, sync: the bytes past the shrink point are zeros now, not the old x's.
    b = Box("shrinkgrow")
    b.put("t.bin", b"x" * 100)
    b.init().run("open", "h", "t.bin", "rdwr", "ftruncate", "h", "10", "ftruncate", "h", "100", "fsync", "h")
    b.crash()
    expect(b.read("t.bin"), b"x" * 10 + b"\0" * 90, "after power loss")
    b.close()

    # truncate(2) by path, then fsync through a new descriptor; fallocate growth unsynced.
    b = Box("truncpath")
    b.put("t.bin", b"y" * 50)
    b.init().run("truncate", "t.bin", "20", "open", "h", "t.bin", "rdonly", "fsync", "h",
                 "open", "w", "t.bin", "wronly", "fallocate", "w", "0", "4096")
    expect(len(b.read("t.bin")), 4096, "live size (control)")
    b.crash()
    expect(b.read("t.bin"), b"y" * 20, "after power loss")
    b.close()


@case
def o_trunc_makes_durable_content_empty():
    # The model's documented choice: O_TRUNC empties the durable content at once, the new data
    # needs a sync (ext4's "zero-length file after a crash").
    b = Box("otrunc")
    b.put("o.txt", b"old")
    b.init().run("open", "h", "o.txt", "wronly,trunc", "write", "h", "new")
    expect(b.read("o.txt"), b"new", "live file (control)")
    b.crash()
    expect(b.read("o.txt"), b"", "after power loss")
    b.close()


@case
def o_dsync_writes_are_durable_without_fsync():
    b = Box("dsync")
    b.put("d.txt", b"")
    b.init().run("open", "h", "d.txt", "wronly,dsync", "write", "h", "sync-written")
    b.crash()
    expect(b.read("d.txt"), b"sync-written", "after power loss")
    b.close()


# ----- names


@case
def new_file_needs_its_folder_fsynced():
    b = Box("newfile")
    b.init().run("open", "h", "new.txt", "wronly,creat", "write", "h", "hello", "fsync", "h")
    expect(b.read("new.txt"), b"hello", "live file (control)")
    r = b.crash()
    expect(b.exists("new.txt"), False, "file whose folder was never fsynced, after power loss")
    expect(r["gone"], ["new.txt"], "report")
    expect(r["unsynced_names"], [{"dir": ".", "not_durable": ["new.txt"], "durable_only": []}],
           "report: the folder fsync that was missing")
    b.close()

    b = Box("newfile-dir")
    b.init().run("open", "h", "new.txt", "wronly,creat", "write", "h", "hello", "fsync", "h", "fsyncdir", ".")
    b.crash()
    expect(b.read("new.txt"), b"hello", "after power loss (file and folder fsynced)")
    b.close()

    # The name is durable, the data is not: an empty file.
    b = Box("newfile-nodata")
    b.init().run("open", "h", "new.txt", "wronly,creat", "write", "h", "hello", "fsyncdir", ".")
    b.crash()
    expect(b.read("new.txt"), b"", "after power loss (only the folder fsynced)")
    b.close()


@case
def atomic_replace_gives_old_or_new():
    steps = [
        ["open", "t", "target.tmp", "wronly,creat,trunc"],
        ["write", "t", "new-contents"],
        ["fsync", "t"],
        ["close", "t"],
        ["rename", "target.tmp", "target"],
        ["fsyncdir", "."],
    ]
    for cut in range(len(steps) + 1):  # power lost after `cut` steps
        ops = [op for s in steps[:cut] for op in s]
        for mode in ("drop", "random"):
            b = Box(f"replace{cut}{mode}")
            b.put("target", b"old")
            b.init().run(*ops)
            live = b.read("target")
            if cut >= 5:
                expect(live, b"new-contents", "live target after the rename (control)")
            b.crash(unsynced=mode, seed=cut)
            want = b"new-contents" if cut == len(steps) else b"old"
            expect(b.read("target"), want, f"target after power loss after {cut} steps ({mode})")
            expect(b.exists("target.tmp"), False, f"temporary file after {cut} steps ({mode})")
            b.close()


@case
def rename_without_folder_fsync_is_undone():
    b = Box("rename")
    b.put("a.txt", b"A")
    b.init().run("rename", "a.txt", "b.txt", "open", "h", "b.txt", "rdonly", "fsync", "h")
    expect((b.exists("a.txt"), b.read("b.txt")), (False, b"A"), "live names (control)")
    b.crash()
    expect((b.read("a.txt"), b.exists("b.txt")), (b"A", False), "names after power loss")
    b.close()


@case
def unlink_without_folder_fsync_is_undone():
    b = Box("unlink")
    b.put("a.txt", b"A")
    b.put("b.txt", b"B")
    b.init().run("unlink", "a.txt", "unlink", "b.txt", "fsyncdir", ".")
    b.crash()
    expect(b.exists("a.txt") or b.exists("b.txt"), False, "unlink made durable by the folder fsync")
    b.close()

    b = Box("unlink2")
    b.put("a.txt", b"A")
    b.init().run("unlink", "a.txt")
    expect(b.exists("a.txt"), False, "live (control)")
    b.crash()
    expect(b.read("a.txt"), b"A", "unlinked file after power loss (folder not fsynced)")
    b.close()


@case
def folder_created_without_parent_fsync_vanishes():
    ops = ["mkdir", "sub", "open", "h", "sub/f", "wronly,creat", "write", "h", "data", "fsync", "h",
           "fsyncdir", "sub"]
    b = Box("mkdir")
    b.init().run(*ops)
    expect(b.read("sub/f"), b"data", "live file (control)")
    b.crash()
    expect(b.exists("sub"), False, "folder whose parent was never fsynced, after power loss")
    b.close()

    b = Box("mkdir-synced")
    b.init().run(*ops, "fsyncdir", ".")
    b.crash()
    expect(b.read("sub/f"), b"data", "after power loss (parent fsynced too)")
    b.close()

    # Parent fsynced, the new folder itself not: it comes back empty.
    b = Box("mkdir-empty")
    b.init().run("mkdir", "sub", "fsyncdir", ".", "open", "h", "sub/f", "wronly,creat", "write", "h", "data",
                 "fsync", "h")
    b.crash()
    expect((b.exists("sub"), os.listdir(os.path.join(b.root, "sub"))), (True, []), "after power loss")
    b.close()


@case
def reused_inode_keeps_the_old_name_content():
    b = Box("reuse")
    out = b.init().run("open", "a", "f1", "wronly,creat", "write", "a", "first", "fsync", "a", "close", "a",
                       "fsyncdir", ".", "ino", "f1", "unlink", "f1",
                       "open", "b", "f2", "wronly,creat", "write", "b", "second", "fsync", "b", "close", "b",
                       "ino", "f2")
    inos = [line.split()[2] for line in out.splitlines() if line.startswith("ino ")]
    b.crash()
    expect((b.read("f1"), b.exists("f2")), (b"first", False), "after power loss")
    if inos[0] != inos[1]:
        print("  note: the file system did not reuse the inode number here; the check is weaker")
    b.close()


@case
def surviving_files_keep_their_inode():
    # A power loss does not move a file to a new inode: a file that survives keeps its inode
    # number (and so its birth time), changed by the crash or not, new or old, in every mode.
    # FileStreamSink recognises its own file by device, inode and birth time.
    for mode in ("drop", "random"):
        b = Box(f"inode-{mode}")
        b.put("a.txt", b"base")
        b.put("same.txt", b"unchanged")
        b.put("sub/deep.txt", b"deep")
        b.init().run("open", "h", "a.txt", "wronly", "pwrite", "h", "4", "XYZ",
                     "open", "n", "new.txt", "wronly,creat", "write", "n", "fresh", "fsync", "n", "fsyncdir", ".",
                     "open", "d", "sub/deep.txt", "wronly", "pwrite", "d", "4", "er")
        names = ("a.txt", "same.txt", "sub/deep.txt", "new.txt")
        before = {n: os.stat(os.path.join(b.root, n)).st_ino for n in names}
        expect(b.read("a.txt"), b"baseXYZ", "live file (control)")
        b.crash(unsynced=mode, seed=3, keep=1.0)
        after = {n: os.stat(os.path.join(b.root, n)).st_ino for n in names}
        expect(after, before, f"inode numbers after the power loss ({mode})")
        # random keeps every unsynced page here (keep=1.0) but may keep the synced size
        want = b"base" if mode == "drop" or b.read("a.txt") == b"base" else b"baseXYZ"
        expect((b.read("a.txt"), b.read("same.txt"), b.read("new.txt")), (want, b"unchanged", b"fresh"),
               f"content after the power loss ({mode})")
        b.close()


@case
def sync_makes_everything_durable():
    b = Box("sync")
    b.init().run("mkdir", "d", "open", "h", "d/x", "wronly,creat", "write", "h", "xx", "close", "h",
                 "open", "g", "y", "wronly,creat", "write", "g", "yy", "sync", "write", "g", "zz")
    b.crash()
    expect((b.read("d/x"), b.read("y")), (b"xx", b"yy"), "after power loss")
    b.close()


# ----- threads


@case
def threads_writing_files_at_once():
    n, records, every = 6, 3000, 97
    b = Box("threads")
    out = b.init().run("mkdir", "logs", "fsyncdir", ".", "threads", str(n), "logs", str(records), str(every))
    synced = {int(p[1]): int(p[2]) for p in (line.split() for line in out.splitlines()) if p[0] == "synced"}
    expect(sorted(synced), list(range(n)), "threads reported")
    for i in range(n):
        expect(b.read(f"logs/t{i}.log").count(b"\n"), records, f"live lines of t{i} (control)")
    b.crash()
    for i in range(n):
        want = b"".join(b"t%d-%d\n" % (i, k) for k in range(synced[i]))
        expect(b.read(f"logs/t{i}.log"), want, f"t{i}.log after power loss ({synced[i]} synced records)")
    b.close()


# ----- modes and limits


@case
def journaled_names_keep_names_not_data():
    b = Box("journaled")
    b.put("a.txt", b"A")
    b.init().run("open", "h", "new.txt", "wronly,creat", "write", "h", "hello", "fsync", "h",
                 "open", "g", "nodata.txt", "wronly,creat", "write", "g", "lost",
                 "rename", "a.txt", "b.txt")
    b.crash(names="journaled")
    expect((b.read("new.txt"), b.read("nodata.txt"), b.exists("a.txt"), b.read("b.txt")),
           (b"hello", b"", False, b"A"), "after power loss (journaled names)")
    b.close()


@case
def random_mode_keeps_a_subset_of_unsynced_pages():
    page = powerloss.PAGE
    outcomes = set()
    for seed in range(8):
        b = Box(f"random{seed}")
        b.put("r.bin", b"a" * (16 * page))
        b.init().run("open", "h", "r.bin", "rdwr", "fill", "h", "0", str(16 * page), "b",
                     "fill", "h", str(16 * page), str(2 * page), "c")
        r = b.crash(unsynced="random", seed=seed)
        data = b.read("r.bin")
        if len(data) not in (16 * page, 18 * page):
            raise AssertionError(f"seed {seed}: size {len(data)} is neither the synced nor the live size")
        pages = [data[i:i + page] for i in range(0, len(data), page)]
        for i, p in enumerate(pages):
            allowed = (b"a" * page, b"b" * page) if i < 16 else (b"\0" * page, b"c" * page)
            if p not in allowed:
                raise AssertionError(f"seed {seed}: page {i} is a mix: {p[:8]!r}...")
        kept = sum(1 for p in pages[:16] if p == b"b" * page)
        expect(r["random_pages"].get("r.bin", [None])[0] is not None, True, "report lists the file")
        outcomes.add(0 if kept == 0 else 2 if kept == 16 else 1)
        b.close()
    expect(1 in outcomes, True, "some seed keeps part of the unsynced pages")

    # keep=0 is the drop mode.
    b = Box("random-none")
    b.put("r.bin", b"a" * page)
    b.init().run("open", "h", "r.bin", "rdwr", "fill", "h", "0", str(page), "b")
    b.crash(unsynced="random", seed=1, keep=0.0)
    expect(b.read("r.bin") in (b"a" * page,), True, "keep=0 keeps no unsynced page")
    b.close()


@case
def stdio_writes_are_treated_as_durable():
    # The layer cannot see fwrite (libc writes internally): such files keep what they hold.
    b = Box("stdio")
    b.put("s.log", b"a\n")
    b.init().run("stdio_append", "s.log", "b\n", "stdio_append", "new.log", "x\n")
    b.crash()
    expect((b.read("s.log"), b.exists("new.log")), (b"a\nb\n", False),
           "after power loss (data kept, new name still needs its folder fsynced)")
    b.close()


@case
def layer_must_be_loaded():
    b = Box("nolayer")
    b.put("a.txt", b"base")
    out = b.init().run("layer", "open", "h", "a.txt", "wronly", "pwrite", "h", "4", "XYZ", layer=False)
    expect(out.strip(), "layer 0", "writer without the layer")
    try:
        b.crash()
    except RuntimeError:
        pass
    else:
        raise AssertionError("crash() accepted a run in which no process loaded the layer")
    out = b.run("layer", killed=False)
    expect(out.strip(), "layer 1", "writer with the layer")
    b.close()


def main(argv):
    if not LIB or not WRITER:
        print("FAIL: FERRY_POWERLOSS_LIB and FERRY_POWERLOSS_WRITER must be set (CTest sets them)")
        return 1
    chosen = [c for c in CASES if not argv or c.__name__ in argv]
    if argv and len(chosen) != len(argv):
        print(f"FAIL: unknown case in {argv}")
        return 1
    failed = 0
    for c in chosen:
        try:
            c()
            print(f"ok   {c.__name__}")
        except Exception as e:  # noqa: BLE001 - report every case, then fail
            failed += 1
            print(f"FAIL {c.__name__}: {type(e).__name__}: {e}")
    print(f"{len(chosen) - failed}/{len(chosen)} cases passed")
    print("PASS" if failed == 0 else "FAIL")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
