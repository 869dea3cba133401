"""Power-loss simulation for durability tests (Python 3, standard library only).

Works with the LD_PRELOAD layer built from unsynced.c (libferry_powerloss.so):

    powerloss.init(root, shadow)          # before the process starts: the tree is durable
    env = powerloss.layer_env(root, shadow, lib)   # add to the process environment
    ... start the process with env, let it work, kill it with SIGKILL ...
    report = powerloss.crash(root, shadow)  # the tree below root is now what a power loss leaves

crash() replaces the tree below root by its durable state and then calls init() again, so the
process can be restarted (with or without the layer) and crashed again.

Shadow layout (shared with unsynced.c; <key> is "<dev hex>_<ino>_<gen>"):
    meta            "root=<realpath of root>\\nrootkey=<key>\\n"
    attached        one line per process that loaded the layer: its pid
    data/<key>      durable content (and size) of a regular file's inode generation
    dir/<key>       durable listing of a directory's inode generation; records of six
                    NUL-terminated fields: type (f, d, l), dev (hex), ino, gen, name, link target
    pend/<key>      unsynced writes since the file's last sync: native-endian u64 pairs (start, end)
    gen/<dev>_<ino> the current generation of an inode number (absent: 0)
A regular file whose key has no data/ entry is "live": the layer could not see its writes (stdio,
or written by a process without the layer); crash() keeps the content it holds at crash time.

Command line: powerloss.py init ROOT SHADOW | crash ROOT SHADOW [--names strict|journaled]
              [--unsynced drop|random] [--seed N] [--keep P]
"""
import json
import os
import random
import shutil
import stat
import struct
import sys

PAGE = 4096
NAMES_MODES = ("strict", "journaled")
UNSYNCED_MODES = ("drop", "random")


def _b(p):
    return os.fsencode(p)


def _key(dev, ino, gen):
    return b"%x_%d_%d" % (dev, ino, gen)


def layer_env(root, shadow, lib):
    """Environment variables that load the layer into a process for this root and shadow."""
    return {
        "LD_PRELOAD": os.path.realpath(lib),
        "FERRY_POWERLOSS_ROOT": os.path.realpath(root),
        "FERRY_POWERLOSS_SHADOW": os.path.realpath(shadow),
    }


def _check_apart(root, shadow):
    def below(a, b):
        return a == b or a.startswith(b.rstrip(b"/") + b"/")
    if below(shadow, root) or below(root, shadow):
        raise ValueError(f"shadow {shadow!r} and root {root!r} must not contain one another")


def _write_listing(path, entries):
    out = bytearray()
    for t, dev, ino, gen, name, target in entries:
        out += b"%s\0%x\0%d\0%d\0%s\0%s\0" % (t, dev, ino, gen, name, target)
    with open(path, "wb") as f:
        f.write(out)


def _read_listing(path):
    with open(path, "rb") as f:
        parts = f.read().split(b"\0")
    entries = []
    for i in range(0, len(parts) - 1, 6):
        t, dev, ino, gen, name, target = parts[i:i + 6]
        entries.append((t, int(dev, 16), int(ino), int(gen), name, target))
    return entries


def _entries_of(path, gen_of):
    """The current entries of a real directory, in listing form."""
    entries = []
    with os.scandir(path) as it:
        for e in it:
            try:
                st = e.stat(follow_symlinks=False)
            except FileNotFoundError:
                continue
            if stat.S_ISREG(st.st_mode):
                entries.append((b"f", st.st_dev, st.st_ino, gen_of(st.st_dev, st.st_ino), e.name, b""))
            elif stat.S_ISDIR(st.st_mode):
                entries.append((b"d", st.st_dev, st.st_ino, gen_of(st.st_dev, st.st_ino), e.name, b""))
            elif stat.S_ISLNK(st.st_mode):
                entries.append((b"l", st.st_dev, st.st_ino, 0, e.name, os.readlink(e.path)))
    return entries


def init(root, shadow):
    """Records the current tree below root as fully durable (call it before starting the process
    under the layer). The shadow folder is created, or emptied if it holds an earlier shadow."""
    root, shadow = _b(os.path.realpath(root)), _b(os.path.realpath(shadow))
    _check_apart(root, shadow)
    if not os.path.isdir(root):
        raise FileNotFoundError(f"root {root!r} is not a folder")
    if os.path.lexists(shadow):
        if os.listdir(shadow) and not os.path.exists(os.path.join(shadow, b"meta")):
            raise ValueError(f"{shadow!r} exists and is not a power-loss shadow; refusing to empty it")
        shutil.rmtree(shadow)
    for sub in (b"data", b"dir", b"gen", b"pend", b"tmp"):
        os.makedirs(os.path.join(shadow, sub))
    copied = set()

    def walk(path):
        st = os.lstat(path)
        entries = _entries_of(path, lambda dev, ino: 0)
        for t, dev, ino, gen, name, _ in entries:
            child = os.path.join(path, name)
            if t == b"f" and (dev, ino) not in copied:
                shutil.copyfile(child, os.path.join(shadow, b"data", _key(dev, ino, 0)))
                copied.add((dev, ino))
            elif t == b"d":
                walk(child)
        _write_listing(os.path.join(shadow, b"dir", _key(st.st_dev, st.st_ino, 0)), entries)
        return st

    st = walk(root)
    with open(os.path.join(shadow, b"meta"), "wb") as f:
        f.write(b"root=%s\nrootkey=%s\n" % (root, _key(st.st_dev, st.st_ino, 0)))


def attached(shadow):
    """Pids of the processes that loaded the layer since init()."""
    try:
        with open(os.path.join(_b(shadow), b"attached"), "rb") as f:
            return [int(x) for x in f.read().split()]
    except FileNotFoundError:
        return []


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
        return state not in (b"Z", b"X")
    except (FileNotFoundError, IndexError):
        return False


def _read_meta(shadow):
    meta = {}
    with open(os.path.join(shadow, b"meta"), "rb") as f:
        for line in f.read().splitlines():
            k, _, v = line.partition(b"=")
            meta[k] = v
    return meta


def _tree(root):
    """relative path -> ("f", size) | ("d", 0) | ("l", target), for reporting."""
    out = {}

    def walk(path, rel):
        with os.scandir(path) as it:
            for e in it:
                r = os.path.join(rel, e.name) if rel else e.name
                st = e.stat(follow_symlinks=False)
                if stat.S_ISDIR(st.st_mode):
                    out[r] = ("d", 0)
                    walk(e.path, r)
                elif stat.S_ISREG(st.st_mode):
                    out[r] = ("f", st.st_size)
                elif stat.S_ISLNK(st.st_mode):
                    out[r] = ("l", os.readlink(e.path))
    walk(root, b"")
    return out


def _same_content(a, b):
    with open(a, "rb") as fa, open(b, "rb") as fb:
        while True:
            x, y = fa.read(1 << 20), fb.read(1 << 20)
            if x != y:
                return False
            if not x:
                return True


def crash(root, shadow, names="strict", unsynced="drop", seed=None, keep=0.5, require_attached=True):
    """Replaces the tree below root by what a power loss at the moment of the SIGKILL leaves.

    names:    "strict"    a name exists only as its directory's last fsync recorded it (default);
              "journaled" every name operation that returned survives (a journaling file system
                          whose last commit covered them); data still follows the fsyncs.
    unsynced: "drop"      writes after a file's last sync are lost, its size is the synced size
                          (default);
              "random"    each 4 KiB page touched by such writes is kept with probability `keep`,
                          and the size is either the synced or the current one (seeded by `seed`).
    Returns a report, paths relative to root (str):
      gone            paths the power loss removed
      changed         files whose content or size went back: {path, size, durable_size}
      restored        paths that came back (removed or renamed without a folder fsync)
      live_files      files kept as they were because the layer could not see their writes
      random_pages    unsynced="random": {path: [pages kept, unsynced pages]}
      unsynced_names  folders whose names differed from their last fsynced listing:
                      {dir, not_durable: [names], durable_only: [names]} (a diagnostic: it shows
                      which folder fsync was missing, even when a parent's loss hides the effect)
    """
    if names not in NAMES_MODES:
        raise ValueError(f"names must be one of {NAMES_MODES}")
    if unsynced not in UNSYNCED_MODES:
        raise ValueError(f"unsynced must be one of {UNSYNCED_MODES}")
    root, shadow = _b(os.path.realpath(root)), _b(os.path.realpath(shadow))
    meta = _read_meta(shadow)
    if meta.get(b"root") != root:
        raise ValueError(f"shadow {shadow!r} belongs to root {meta.get(b'root')!r}, not {root!r}")
    pids = attached(shadow)
    if require_attached and not pids:
        raise RuntimeError("no process loaded the power-loss layer since init() (check LD_PRELOAD and the "
                           "FERRY_POWERLOSS_* variables); crash() would only restore the init() snapshot")
    running = [p for p in pids if _alive(p)]
    if running:
        raise RuntimeError(f"process(es) {running} still run with the layer; kill them with SIGKILL first")

    gen_cache = {}

    def gen_of(dev, ino):
        k = (dev, ino)
        if k not in gen_cache:
            try:
                with open(os.path.join(shadow, b"gen", b"%x_%d" % (dev, ino)), "rb") as f:
                    gen_cache[k] = int(f.read().strip() or b"0")
            except FileNotFoundError:
                gen_cache[k] = 0
        return gen_cache[k]

    live = {}  # (dev, ino) -> a live path

    def index(path):
        st = os.lstat(path)
        live.setdefault((st.st_dev, st.st_ino), path)
        if stat.S_ISDIR(st.st_mode):
            for name in os.listdir(path):
                index(os.path.join(path, name))
    index(root)

    def live_path(dev, ino, gen):
        p = live.get((dev, ino))
        return p if p is not None and gen_of(dev, ino) == gen else None

    staging = root.rstrip(b"/") + b".powerloss-staging"
    if os.path.lexists(staging):
        shutil.rmtree(staging)
    os.mkdir(staging)
    rng = random.Random(seed)
    produced = {}
    keep_inode = {}  # key -> (live path of that inode, staged paths that name it)
    report = {"gone": [], "changed": [], "restored": [], "live_files": [], "random_pages": {}, "unsynced_names": []}

    def rel(out):
        return os.fsdecode(os.path.relpath(out, staging))

    def apply_random(key, lp, out):
        try:
            with open(os.path.join(shadow, b"pend", key), "rb") as f:
                recs = list(struct.iter_unpack("=QQ", f.read()))
        except FileNotFoundError:
            return
        if not recs or lp is None:
            return  # nothing unsynced, or the inode is gone and its unsynced pages with it
        with open(lp, "rb") as f:
            now = f.read()
        with open(out, "rb") as f:
            durable = f.read()
        size = rng.choice((len(durable), len(now)))
        buf = bytearray(durable[:size].ljust(size, b"\0"))
        pages = set()
        for s, e in recs:
            pages.update(range(s // PAGE, (min(e, size) + PAGE - 1) // PAGE))
        kept = 0
        for p in sorted(pages):
            if rng.random() < keep:
                a, b = p * PAGE, min(p * PAGE + PAGE, size)
                buf[a:b] = now[a:b].ljust(b - a, b"\0")
                kept += 1
        with open(out, "wb") as f:
            f.write(buf)
        report["random_pages"][rel(out)] = [kept, len(pages)]

    def produce_file(dev, ino, gen, out):
        key = _key(dev, ino, gen)
        if key in produced:
            os.link(produced[key], out)
            if key in keep_inode:
                keep_inode[key][1].append(out)
            return
        data = os.path.join(shadow, b"data", key)
        lp = live_path(dev, ino, gen)
        if lp is not None:
            keep_inode[key] = (lp, [out])
        if os.path.exists(data):
            shutil.copyfile(data, out)
            if unsynced == "random":
                apply_random(key, lp, out)
        elif lp is not None:
            shutil.copyfile(lp, out)  # the layer could not see its writes: treated as durable
            report["live_files"].append(rel(out))
        else:
            open(out, "wb").close()
        produced[key] = out

    def build_dir(dev, ino, gen, out, path_keys):
        key = _key(dev, ino, gen)
        if key in path_keys:
            return  # a stale listing naming an ancestor: cannot happen on a real disk, skip it
        listing = os.path.join(shadow, b"dir", key)
        if os.path.exists(listing):
            entries = _read_listing(listing)
        else:
            lp = live_path(dev, ino, gen)
            entries = _entries_of(lp, gen_of) if lp is not None else []
        for t, edev, eino, egen, name, target in entries:
            o = os.path.join(out, name)
            if t == b"f":
                produce_file(edev, eino, egen, o)
            elif t == b"d":
                os.mkdir(o)
                build_dir(edev, eino, egen, o, path_keys | {key})
            elif t == b"l":
                os.symlink(target, o)

    def build_journaled(path, out):
        for t, dev, ino, gen, name, target in _entries_of(path, gen_of):
            o = os.path.join(out, name)
            if t == b"f":
                produce_file(dev, ino, gen, o)
            elif t == b"d":
                os.mkdir(o)
                build_journaled(os.path.join(path, name), o)
            elif t == b"l":
                os.symlink(target, o)

    # Diagnostics: folders whose current names differ from their durable listing (what a folder
    # fsync would have saved).
    for (dev, ino), path in sorted(live.items(), key=lambda kv: kv[1]):
        if not os.path.isdir(path) or os.path.islink(path):
            continue
        listing = os.path.join(shadow, b"dir", _key(dev, ino, gen_of(dev, ino)))
        if not os.path.exists(listing):
            continue
        durable = {(e[4], e[0], e[1], e[2], e[3]) for e in _read_listing(listing)}
        now = {(e[4], e[0], e[1], e[2], e[3]) for e in _entries_of(path, gen_of)}
        if durable != now:
            report["unsynced_names"].append({
                "dir": os.fsdecode(os.path.relpath(path, root)),
                "not_durable": sorted(os.fsdecode(e[0]) for e in now - durable),
                "durable_only": sorted(os.fsdecode(e[0]) for e in durable - now)})

    try:
        if names == "strict":
            rst = os.lstat(root)
            build_dir(rst.st_dev, rst.st_ino, gen_of(rst.st_dev, rst.st_ino), staging, frozenset())
        else:
            build_journaled(root, staging)
        before, after = _tree(root), _tree(staging)
        for r, (t, v) in sorted(before.items()):
            if r not in after:
                report["gone"].append(os.fsdecode(r))
            elif t == "f" and after[r][0] == "f":
                if v != after[r][1] or not _same_content(os.path.join(root, r), os.path.join(staging, r)):
                    report["changed"].append({"path": os.fsdecode(r), "size": v, "durable_size": after[r][1]})
        report["restored"] = [os.fsdecode(r) for r in sorted(after) if r not in before]
        # A file that survives keeps its inode, as on a real disk (its number and birth time are
        # how a program may recognise it): its durable content goes into the live inode, which
        # then takes the place of the staged copy under every name it has.
        for lp, outs in keep_inode.values():
            with open(outs[0], "rb") as src, open(lp, "r+b") as dst:
                shutil.copyfileobj(src, dst, 1 << 20)
                dst.truncate()
            for o in outs:
                os.unlink(o)
                os.link(lp, o)
        for name in os.listdir(root):
            p = os.path.join(root, name)
            if os.path.isdir(p) and not os.path.islink(p):
                shutil.rmtree(p)
            else:
                os.unlink(p)
        for name in os.listdir(staging):
            os.rename(os.path.join(staging, name), os.path.join(root, name))
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    init(root, shadow)
    return report


def main(argv):
    import argparse
    ap = argparse.ArgumentParser(description="power-loss simulation: init / crash a tree")
    ap.add_argument("command", choices=("init", "crash"))
    ap.add_argument("root")
    ap.add_argument("shadow")
    ap.add_argument("--names", choices=NAMES_MODES, default="strict")
    ap.add_argument("--unsynced", choices=UNSYNCED_MODES, default="drop")
    ap.add_argument("--seed", type=int)
    ap.add_argument("--keep", type=float, default=0.5)
    a = ap.parse_args(argv)
    if a.command == "init":
        init(a.root, a.shadow)
    else:
        print(json.dumps(crash(a.root, a.shadow, a.names, a.unsynced, a.seed, a.keep), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
