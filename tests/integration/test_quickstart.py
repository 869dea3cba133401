"""The quickstart's own files (scripts/quickstart-config) on a real worker: the file pipeline
delivers transformed lines and the datagen direct task writes sequence numbers."""
import json
import os
import subprocess

from harness import Worker, run, tmpdir, wait_until

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def main():
    d = tmpdir("quickstart")
    w = Worker(d)  # picks a free port; the quickstart files are written for it
    subprocess.run([os.path.join(ROOT, "scripts", "quickstart-config"), d, str(w.port)], check=True)
    w.props = os.path.join(d, "worker.properties")
    w.connector_files = [os.path.join(d, f) for f in ("file-pipeline.json", "file-pipeline-sink.json", "datagen.json")]
    w.start()
    for name in ("quickstart-file-source", "quickstart-file-sink", "quickstart-datagen"):
        w.wait_running(name)
    out = os.path.join(d, "files", "output.jsonl")
    with open(os.path.join(d, "files", "input.txt"), "a") as f:
        f.write("a third line\n")
    def lines():
        try:
            return [json.loads(l) for l in open(out)]
        except (OSError, ValueError):
            return []
    got = wait_until(lambda: len(lines()) >= 3 and lines(), 30, "3 transformed lines")
    assert got[0] == {"line": "hello ferry", "pipeline": "quickstart"}, got[0]
    assert got[2]["line"] == "a third line", got
    dg = os.path.join(d, "files", "datagen.txt")
    wait_until(lambda: os.path.exists(dg) and len(open(dg).read().splitlines()) >= 2, 30, "datagen output")
    assert open(dg).read().splitlines()[:2] == ["0-0", "0-1"]
    w.stop()


if __name__ == "__main__":
    run(main)
