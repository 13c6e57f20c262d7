"""How fast `compile-lint server` answers an editor: from an edit to its diagnostics, over stdio.

Usage: python benchmarks/server_latency.py [FILE ...] [--edits 20] [--json OUT]

For each file (default: transformers' modeling_longformer.py, 2,104 lines, from the pinned
corpus) it starts the real server, opens the file like an editor (didOpen), then:

- edits: inserts a statement line before a `return` of a `forward`, waits for the
  diagnostics of that version, pauses (longer than the server's debounce), removes it,
  and so on over the file's forwards. Each edit is sent as an incremental change, as
  editors send them. Measured: wall time from sending the change to receiving the
  diagnostics of its version, and the CPU time the server process used meanwhile (what
  the edit costs on one idle core, whatever else the machine runs);
- typing: ten keystrokes 100 ms apart (typing `probe = 10` into a new line; the texts in
  between do not all parse); measured: how many diagnostics were published for the ten
  versions (a server that queues every keystroke publishes ten) and the time from the last
  keystroke to the diagnostics of the last version.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import psutil

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests"))

from lsp_client import LspClient  # noqa: E402

DEFAULT_FILES = ["transformers/models/longformer/modeling_longformer.py"]
CORPUS_ROOTS = [os.path.join(HERE, ".cache", "corpus"), "/work/scratch/rw"]
PAUSE_SECONDS = 0.4  # longer than the server's debounce: each edit is an edit after a pause
KEYSTROKE_SECONDS = 0.1


def find_file(name: str) -> str:
    """A corpus file by its path inside the corpus, or a path as given."""
    if os.path.exists(name):
        return name
    for root in CORPUS_ROOTS:
        path = os.path.join(root, name)
        if os.path.exists(path):
            return path
    raise SystemExit(f"{name}: not found (run benchmarks/speed.py once to fetch the corpus)")


def edit_points(text: str, count: int) -> list[tuple[int, str]]:
    """(0-based line, indentation) of `return` lines inside `forward` methods, spread over the file."""
    lines = text.splitlines()
    points, in_forward, forward_indent = [], False, 0
    for number, line in enumerate(lines):
        stripped = line.lstrip()
        indent = len(line) - len(stripped)
        if re.match(r"def forward\b", stripped):
            in_forward, forward_indent = True, indent
        elif stripped and indent <= forward_indent and not stripped.startswith((")", "#", '"')):
            in_forward = in_forward and indent > forward_indent
        if in_forward and stripped.startswith("return ") and indent > forward_indent:
            points.append((number, line[:indent]))
    if not points:
        raise SystemExit("no `return` inside a `forward` to edit next to")
    step = max(1, len(points) // count)
    return points[::step][:count]


class Session:
    """The server, one open document, and its version counter."""

    def __init__(self, path: str, workdir: str) -> None:
        env = {**os.environ, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")}
        self.client = LspClient(workdir, env=env)
        self.process = psutil.Process(self.client.process.pid)
        self.client.initialize(Path(workdir).as_uri())
        self.text = Path(path).read_text(encoding="utf-8")
        self.path = os.path.join(workdir, os.path.basename(path))
        Path(self.path).write_text(self.text, encoding="utf-8")
        self.uri = Path(self.path).as_uri()
        self.version = 1

    def cpu(self) -> float:
        times = self.process.cpu_times()
        return times.user + times.system

    def open(self) -> tuple[float, float]:
        """Open the document; (seconds to its first diagnostics, server CPU seconds)."""
        cpu, start = self.cpu(), time.perf_counter()
        self.client.notify("textDocument/didOpen", {"textDocument": {
            "uri": self.uri, "languageId": "python", "version": 1, "text": self.text}})
        self.client.diagnostics(self.uri, 1)
        return self.client.received_at - start, self.cpu() - cpu

    def change(self, line: int, character: int, end_line: int, end_character: int, new_text: str) -> int:
        """Send one incremental change; the new version."""
        self.version += 1
        lines = self.text.splitlines(True)
        start = sum(len(item) for item in lines[:line]) + character
        end = sum(len(item) for item in lines[:end_line]) + end_character
        self.text = self.text[:start] + new_text + self.text[end:]
        self.client.notify("textDocument/didChange", {
            "textDocument": {"uri": self.uri, "version": self.version},
            "contentChanges": [{"range": {"start": {"line": line, "character": character},
                                          "end": {"line": end_line, "character": end_character}},
                                "text": new_text}]})
        return self.version

    def timed_change(self, *change) -> tuple[float, float, int]:
        """A change after a pause; (seconds to its diagnostics, server CPU seconds, findings)."""
        time.sleep(PAUSE_SECONDS)
        cpu, start = self.cpu(), time.perf_counter()
        version = self.change(*change)
        published = self.client.diagnostics(self.uri, version)
        return self.client.received_at - start, self.cpu() - cpu, len(published["diagnostics"])

    def typing(self, line: int, indent: str, word: str = "probe = 10") -> dict:
        """Type `word` into a new line before `line`, one keystroke every 100 ms."""
        time.sleep(PAUSE_SECONDS)
        first = self.version + 1
        self.change(line, 0, line, 0, indent + "\n")
        for index, character in enumerate(word):
            time.sleep(KEYSTROKE_SECONDS)
            last_sent = time.perf_counter()
            self.change(line, len(indent) + index, line, len(indent) + index, character)
        published: list = []

        def until_last(message: dict) -> bool:
            if message.get("method") != "textDocument/publishDiagnostics" or message["params"]["uri"] != self.uri:
                return False
            published.append(message["params"].get("version"))
            return published[-1] == self.version

        self.client.wait(until_last)
        return {"keystrokes": self.version - first + 1, "published": len(published),
                "published_versions": published, "after_last_keystroke_s": self.client.received_at - last_sent}

    def close(self) -> None:
        self.client.close()


def measure(path: str, edits: int) -> dict:
    """Open `path` in a fresh server and measure edits and typing."""
    with tempfile.TemporaryDirectory(prefix="compile-lint-latency-") as workdir:
        session = Session(path, workdir)
        try:
            open_s, open_cpu = session.open()
            # One edit first: the server is warm from here on (imports, caches).
            points = edit_points(session.text, max(1, edits // 2))
            walls, cpus = [], []
            for line, indent in points:
                for change in ((line, 0, line, 0, f"{indent}probe_value = 1\n"), (line, 0, line + 1, 0, "")):
                    wall, cpu, _ = session.timed_change(*change)
                    walls.append(wall)
                    cpus.append(cpu)
            typing = session.typing(points[len(points) // 2][0], points[len(points) // 2][1])
        finally:
            session.close()
    lines = Path(path).read_text(encoding="utf-8").count("\n")
    return {
        "file": path, "lines": lines, "open_s": open_s, "open_cpu_s": open_cpu,
        "edits": len(walls), "edit_wall_s": walls, "edit_cpu_s": cpus,
        "edit_wall_median_s": statistics.median(walls), "edit_wall_max_s": max(walls),
        "edit_cpu_median_s": statistics.median(cpus), "edit_cpu_max_s": max(cpus),
        "typing": typing,
    }


def main() -> int:
    """Measure each file and print a table (and JSON with --json)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", default=DEFAULT_FILES)
    parser.add_argument("--edits", type=int, default=20, help="edits per file (half insertions, half removals)")
    parser.add_argument("--json", help="write the raw results here")
    args = parser.parse_args()
    results = [measure(find_file(name), args.edits) for name in args.files]
    print(f"load average: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print("| file | lines | open s | edit wall median s | max | edit server CPU median s | max "
          "| typing: keystrokes, published, s after last |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for r in results:
        t = r["typing"]
        print(f"| {os.path.basename(r['file'])} | {r['lines']} | {r['open_s']:.2f} | {r['edit_wall_median_s']:.3f} "
              f"| {r['edit_wall_max_s']:.3f} | {r['edit_cpu_median_s']:.3f} | {r['edit_cpu_max_s']:.3f} "
              f"| {t['keystrokes']}, {t['published']}, {t['after_last_keystroke_s']:.3f} |")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"load": os.getloadavg(), "results": results}, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
