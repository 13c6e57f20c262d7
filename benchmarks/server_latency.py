"""How fast `compile-lint server` answers an editor: from a message to its diagnostics, over stdio.

Usage: python benchmarks/server_latency.py [FILE ...] [--edits 20] [--opens 5] [--bursts 6] [--json OUT]

For each file (default: transformers' modeling_longformer.py, 2,104 lines, from the pinned
corpus) it starts the real server and talks to it like an editor. Every figure is the wall
time from sending a message to receiving the diagnostics of the version it made, and the
CPU time the server process used meanwhile (what it costs on one idle core, whatever else
the machine runs). Reported: median and 95th percentile of each.

- open: the first didOpen of the file in a freshly started server (`--opens` servers), to
  its first diagnostics; open, settled: to its last diagnostics (the server publishes the
  file's own findings first, and those with the project's reach after when they differ),
  with the CPU the server spent until it was idle (prepared for edits);
- edits, ranged / full text: insert a statement line before a `return` of a `forward`,
  pause (longer than the server's debounce), remove it, and so on over the file's
  forwards. Sent as a ranged (incremental) change, then again as the whole new text (what
  many clients send);
- bursts, ranged / full text: five edits 60 ms apart on one line (typing), measured from
  the last one;
- typing: ten keystrokes 100 ms apart (typing `probe = 10` into a new line; the texts in
  between do not all parse); how many diagnostics were published for the ten versions
  and the time from the last keystroke to the diagnostics of the last version;
- cross-file: a small package whose model calls a helper in another file, both open; the
  caller is edited and saved (the project index reads files from disk) to call, then no
  longer call, the helper; measured from the save to the helper's new diagnostics.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Optional

import psutil

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

from lsp_client import LspClient  # noqa: E402

DEFAULT_FILES = ["transformers/models/longformer/modeling_longformer.py"]
CORPUS_ROOTS = [os.path.join(HERE, ".cache", "corpus"), "/work/scratch/rw"]
PAUSE_SECONDS = 0.4  # longer than the server's debounce: each edit is an edit after a pause
KEYSTROKE_SECONDS = 0.1
BURST_EDITS, BURST_SECONDS = 5, 0.06
IDLE_SECONDS = 0.3  # a server that spends no CPU for this long has finished with a document it opened

HELPERS = """
import torch


def gate(x):
    if x.sum() > 0:
        return x
    return -x
"""

CALLER = """
import torch
from torch import nn

from . import helpers


class Net(nn.Module):
    def forward(self, x):
        return x * 2
"""


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


def summary(walls: list[float], cpus: list[float]) -> dict:
    """The samples with their median and 95th percentile (linear interpolation between samples)."""
    def p95(values: list[float]) -> float:
        return statistics.quantiles(values, n=20, method="inclusive")[18] if len(values) > 1 else values[0]
    return {"n": len(walls), "wall_s": walls, "cpu_s": cpus,
            "wall_p50_s": statistics.median(walls), "wall_p95_s": p95(walls), "wall_max_s": max(walls),
            "cpu_p50_s": statistics.median(cpus), "cpu_p95_s": p95(cpus)}


class Session:
    """The server and the documents it has open, each with its text and version."""

    def __init__(self, workdir: str) -> None:
        env = {**os.environ, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")}
        self.client = LspClient(workdir, env=env)
        self.process = psutil.Process(self.client.process.pid)
        self.client.initialize(Path(workdir).as_uri())
        self.texts: dict[str, str] = {}
        self.versions: dict[str, int] = {}

    def cpu(self) -> float:
        """CPU seconds the server process has used so far."""
        times = self.process.cpu_times()
        return times.user + times.system

    def open(self, path: str) -> tuple[str, float, float]:
        """Open the file at `path`; its uri, seconds to its first diagnostics, server CPU seconds."""
        uri, first, cpu, _, _ = self.open_settled(path)
        return uri, first, cpu

    def open_settled(self, path: str) -> tuple[str, float, float, float, float]:
        """Open the file at `path` and wait until the server is idle again.

        The server publishes a document's own findings first and those with the project's
        reach after, when they differ. (uri, seconds to the first diagnostics, server CPU
        meanwhile, seconds to the last diagnostics, server CPU until idle).
        """
        uri = Path(path).as_uri()
        self.texts[uri], self.versions[uri] = Path(path).read_text(encoding="utf-8"), 1
        cpu, start = self.cpu(), time.perf_counter()
        self.client.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": self.texts[uri]}})
        self.client.diagnostics(uri, 1)
        first, first_cpu = self.client.received_at - start, self.cpu() - cpu
        last = first
        while True:  # idle: no CPU spent for IDLE_SECONDS
            before = self.cpu()
            try:
                self.client.diagnostics(uri, 1, timeout=IDLE_SECONDS)
                last = self.client.received_at - start
            except queue.Empty:
                if self.cpu() - before < 0.005:
                    return uri, first, first_cpu, last, self.cpu() - cpu

    def change(self, uri: str, line: int, character: int, end_line: int, end_character: int, new_text: str,
               full: bool = False) -> int:
        """Send one change, as a range or (`full`) as the whole new text; the new version."""
        self.versions[uri] += 1
        lines = self.texts[uri].splitlines(True)
        start = sum(len(item) for item in lines[:line]) + character
        end = sum(len(item) for item in lines[:end_line]) + end_character
        text = self.texts[uri] = self.texts[uri][:start] + new_text + self.texts[uri][end:]
        if full:
            change = {"text": text}
        else:
            change = {"range": {"start": {"line": line, "character": character},
                                "end": {"line": end_line, "character": end_character}}, "text": new_text}
        self.client.notify("textDocument/didChange", {
            "textDocument": {"uri": uri, "version": self.versions[uri]}, "contentChanges": [change]})
        return self.versions[uri]

    def timed_change(self, uri: str, *change, full: bool = False) -> tuple[float, float]:
        """A change after a pause; (seconds to its diagnostics, server CPU seconds)."""
        time.sleep(PAUSE_SECONDS)
        cpu, start = self.cpu(), time.perf_counter()
        version = self.change(uri, *change, full=full)
        self.client.diagnostics(uri, version)
        return self.client.received_at - start, self.cpu() - cpu

    def burst(self, uri: str, line: int, indent: str, full: bool) -> tuple[float, float]:
        """Five edits of one new line 60 ms apart; (seconds from the last to its diagnostics, server CPU)."""
        time.sleep(PAUSE_SECONDS)
        cpu = self.cpu()
        self.change(uri, line, 0, line, 0, f"{indent}probe_value = 0\n", full=full)
        for value in range(1, BURST_EDITS):
            time.sleep(BURST_SECONDS)
            column = len(indent) + len("probe_value = ")
            last_sent = time.perf_counter()
            version = self.change(uri, line, column, line, column + 1, str(value), full=full)
        self.client.diagnostics(uri, version)
        wall, spent = self.client.received_at - last_sent, self.cpu() - cpu
        self.timed_change(uri, line, 0, line + 1, 0, "", full=full)  # back to the file as it was
        return wall, spent

    def typing(self, uri: str, line: int, indent: str, word: str = "probe = 10") -> dict:
        """Type `word` into a new line before `line`, one keystroke every 100 ms."""
        time.sleep(PAUSE_SECONDS)
        first = self.versions[uri] + 1
        self.change(uri, line, 0, line, 0, indent + "\n")
        for index, character in enumerate(word):
            time.sleep(KEYSTROKE_SECONDS)
            last_sent = time.perf_counter()
            self.change(uri, line, len(indent) + index, line, len(indent) + index, character)
        published: list = []

        def until_last(message: dict) -> bool:
            if message.get("method") != "textDocument/publishDiagnostics" or message["params"]["uri"] != uri:
                return False
            published.append(message["params"].get("version"))
            return published[-1] == self.versions[uri]

        self.client.wait(until_last)
        return {"keystrokes": self.versions[uri] - first + 1, "published": len(published),
                "published_versions": published, "after_last_keystroke_s": self.client.received_at - last_sent}

    def save(self, uri: str, path: str) -> float:
        """Write the document's text to disk and send didSave; when it was sent."""
        Path(path).write_text(self.texts[uri], encoding="utf-8")
        sent = time.perf_counter()
        self.client.notify("textDocument/didSave", {"textDocument": {"uri": uri}})
        return sent

    def close(self) -> None:
        """Shut the server down."""
        self.client.close()


def copy_into(path: str, workdir: str) -> str:
    """`path` copied into `workdir` (the server's project); the copy's path."""
    copy = os.path.join(workdir, os.path.basename(path))
    Path(copy).write_text(Path(path).read_text(encoding="utf-8"), encoding="utf-8")
    return copy


def measure_opens(path: str, opens: int) -> tuple[dict, dict]:
    """The first open of `path` in `opens` freshly started servers: to its first diagnostics, and to its last."""
    firsts, first_cpus, lasts, total_cpus = [], [], [], []
    for _ in range(opens):
        with tempfile.TemporaryDirectory(prefix="compile-lint-latency-") as workdir:
            session = Session(workdir)
            try:
                _, first, first_cpu, last, total_cpu = session.open_settled(copy_into(path, workdir))
            finally:
                session.close()
        firsts.append(first)
        first_cpus.append(first_cpu)
        lasts.append(last)
        total_cpus.append(total_cpu)
    return summary(firsts, first_cpus), summary(lasts, total_cpus)


def measure_edits(path: str, edits: int, bursts: int) -> dict:
    """Open `path` in a fresh server; edits after pauses, bursts and typing, ranged and full text."""
    results: dict = {}
    with tempfile.TemporaryDirectory(prefix="compile-lint-latency-") as workdir:
        session = Session(workdir)
        try:
            uri, _, _ = session.open(copy_into(path, workdir))
            points = edit_points(session.texts[uri], max(1, edits // 2))
            for full in (False, True):
                walls, cpus = [], []
                for line, indent in points:
                    for change in ((line, 0, line, 0, f"{indent}probe_value = 1\n"), (line, 0, line + 1, 0, "")):
                        wall, cpu = session.timed_change(uri, *change, full=full)
                        walls.append(wall)
                        cpus.append(cpu)
                results["edits_full" if full else "edits_ranged"] = summary(walls, cpus)
            for full in (False, True):
                samples = [session.burst(uri, line, indent, full)
                           for line, indent in edit_points(session.texts[uri], bursts)]
                results["bursts_full" if full else "bursts_ranged"] = summary(*map(list, zip(*samples)))
            middle = points[len(points) // 2]
            results["typing"] = session.typing(uri, middle[0], middle[1])
        finally:
            session.close()
    return results


def measure_cross_file(rounds: int) -> dict:
    """Seconds from saving a caller that starts (or stops) calling a helper to the helper's new diagnostics."""
    walls, cpus = [], []
    with tempfile.TemporaryDirectory(prefix="compile-lint-latency-") as workdir:
        package = os.path.join(workdir, "pkg")
        os.makedirs(package)
        for name, text in (("__init__.py", ""), ("helpers.py", HELPERS), ("model.py", CALLER)):
            Path(package, name).write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
        session = Session(workdir)
        try:
            helper, _, _ = session.open(os.path.join(package, "helpers.py"))
            model_path = os.path.join(package, "model.py")
            model, _, _ = session.open(model_path)
            line = session.texts[model].splitlines().index("        return x * 2")
            for round_number in range(rounds * 2):
                calls = round_number % 2 == 0
                time.sleep(PAUSE_SECONDS)
                new_line = "        return helpers.gate(x)" if calls else "        return x * 2"
                old_length = len(session.texts[model].splitlines()[line])
                version = session.change(model, line, 0, line, old_length, new_line)
                session.client.diagnostics(model, version)
                time.sleep(PAUSE_SECONDS)
                cpu = session.cpu()
                sent = session.save(model, model_path)
                published = session.client.diagnostics(helper)
                if bool(published["diagnostics"]) != calls:
                    raise SystemExit(f"the helper's diagnostics after the save: {published['diagnostics']}")
                walls.append(session.client.received_at - sent)
                cpus.append(session.cpu() - cpu)
        finally:
            session.close()
    return summary(walls, cpus)


def measure(path: str, edits: int = 20, opens: int = 5, bursts: int = 6, cross_file: int = 5) -> dict:
    """Every figure for `path` (and the cross-file case, with `cross_file` rounds)."""
    opened, settled = measure_opens(path, opens)
    return {"file": path, "lines": Path(path).read_text(encoding="utf-8").count("\n"),
            "open": opened, "open_settled": settled, **measure_edits(path, edits, bursts),
            "cross_file": measure_cross_file(cross_file) if cross_file else None}


def table(result: dict) -> list[str]:
    """The markdown table of one `measure` result, and the typing line."""
    lines = ["| case | n | wall p50 ms | wall p95 ms | wall max ms | server CPU p50 ms | CPU p95 ms |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    name = f"{os.path.basename(result['file'])} ({result['lines']} lines)"
    for case in ("open", "open_settled", "edits_ranged", "edits_full", "bursts_ranged", "bursts_full"):
        lines.append(row(f"{name}: {case.replace('_', ', ')}", result[case]))
    if result["cross_file"]:
        lines.append(row("cross-file: save a caller, helper re-published", result["cross_file"]))
    typing = result["typing"]
    lines += ["", (f"Typing {typing['keystrokes']} keystrokes 100 ms apart: {typing['published']} diagnostics "
                   f"published, the last {typing['after_last_keystroke_s'] * 1000:.0f} ms after the last keystroke.")]
    return lines


def row(name: str, figures: dict) -> str:
    """One table row: sample count, wall p50/p95/max and server CPU p50/p95, in milliseconds."""
    return (f"| {name} | {figures['n']} | {figures['wall_p50_s'] * 1000:.0f} | {figures['wall_p95_s'] * 1000:.0f} "
            f"| {figures['wall_max_s'] * 1000:.0f} | {figures['cpu_p50_s'] * 1000:.0f} "
            f"| {figures['cpu_p95_s'] * 1000:.0f} |")


def load() -> str:
    """The machine's load averages (1, 5, 15 minutes), as text."""
    return ", ".join(f"{x:.1f}" for x in os.getloadavg())


def main(argv: Optional[list[str]] = None) -> int:
    """Measure each file and print a table (and JSON with --json)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", default=DEFAULT_FILES)
    parser.add_argument("--edits", type=int, default=20,
                        help="edits after a pause per kind (half insertions, half removals)")
    parser.add_argument("--opens", type=int, default=5, help="fresh servers to measure the first open in")
    parser.add_argument("--bursts", type=int, default=6, help="bursts of five edits 60 ms apart per kind")
    parser.add_argument("--cross-file", type=int, default=5, help="rounds of the cross-file case (two saves each)")
    parser.add_argument("--json", help="write the raw results here")
    args = parser.parse_args(argv)
    load_before, cpu_before = load(), psutil.cpu_percent(interval=1.0)
    results = [measure(find_file(name), args.edits, args.opens, args.bursts, args.cross_file if index == 0 else 0)
               for index, name in enumerate(args.files)]
    load_after = load()
    print(f"CPUs: {os.cpu_count()}; load average before: {load_before} (CPU busy {cpu_before:.0f}%), "
          f"after: {load_after}")
    for result in results:
        print("\n".join(table(result)))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"cpus": os.cpu_count(), "load_before": load_before, "cpu_busy_before_percent": cpu_before,
                       "load_after": load_after, "results": results}, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
