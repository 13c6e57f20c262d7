"""How fast `compile-lint server` answers edits of a file inside a big package, and of the same file alone.

Usage: python benchmarks/editor_tree_latency.py [--package DIR] [--file REL] [--edits 10] [--bursts 4]
                                                [--server-source DIR] [--timeout 120] [--json OUT]

The package's `.py` files (default: the `transformers` package installed beside this Python,
2,860 files) are copied into a temporary directory; the real server is started there and
opened on `--file` (default: models/longformer/modeling_longformer.py, 2,104 lines) in
place, then on a copy of the file alone in an empty directory. Every figure is the wall
time from sending a message to the diagnostics of the version it made, with the server
process's CPU time meanwhile (its children, the project's background build, not counted:
they are niced and never delay a lint). Edits are sent as the whole new text (what many
clients send), after a pause longer than the server's debounce:

- open: the first diagnostics of the opened file;
- body edits: insert a statement before a `return` of a `forward`, then remove it;
- outline edits: what other code sees changes: add a parameter to a `forward` (then take
  it away), add an import (then take it away);
- bursts: five edits 60 ms apart on one line, from the last one to its diagnostics.

`--server-source` runs the server from another checkout's sources (the same Python), to
measure a commit before a change. A message that gets no diagnostics in `--timeout`
seconds ends the case, written as timed out.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Optional

import psutil

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, HERE)

import lsp_client  # noqa: E402
from server_latency import PAUSE_SECONDS, Session, edit_points, row, summary  # noqa: E402

DEFAULT_FILE = "models/longformer/modeling_longformer.py"
CASES = ("open", "body_edits", "outline_edits", "bursts")


def installed_package(name: str) -> str:
    """The directory of package `name` installed beside this Python."""
    for folder in sys.path:
        candidate = os.path.join(folder, name)
        if folder and os.path.isfile(os.path.join(candidate, "__init__.py")):
            return candidate
    raise SystemExit(f"{name}: not installed here; pass --package DIR")


def copy_package(source: str, destination: str) -> int:
    """Copy the `.py` files of package directory `source` into `destination`/<its name>; how many."""
    count = 0
    top = os.path.join(destination, os.path.basename(source.rstrip(os.sep)))
    for folder, directories, files in os.walk(source):
        directories[:] = [name for name in directories if name != "__pycache__"]
        target = os.path.join(top, os.path.relpath(folder, source))
        os.makedirs(target, exist_ok=True)
        for name in files:
            if name.endswith(".py"):
                shutil.copyfile(os.path.join(folder, name), os.path.join(target, name))
                count += 1
    return count


class TimedClient(lsp_client.LspClient):
    """An `LspClient` whose waits for diagnostics end after `timeout` seconds."""

    timeout = lsp_client.TIMEOUT

    def diagnostics(self, uri: str, version: Optional[int] = None, timeout: Optional[float] = None) -> dict:
        """As `LspClient.diagnostics`, waiting `timeout` seconds (default: the client's)."""
        return super().diagnostics(uri, version, self.timeout if timeout is None else timeout)


class TimedSession(Session):
    """A `Session` whose server runs from `source` (a checkout's root) and whose waits end after `timeout`."""

    def __init__(self, workdir: str, source: str, timeout: float) -> None:
        env = {**os.environ, "PYTHONPATH": source + os.pathsep + os.environ.get("PYTHONPATH", "")}
        self.client = TimedClient(workdir, env=env)
        self.client.timeout = timeout
        self.process = psutil.Process(self.client.process.pid)
        self.client.initialize(Path(workdir).as_uri())
        self.texts, self.versions = {}, {}


def outline_changes(text: str, count: int) -> list[tuple[int, int, str]]:
    """(0-based line, column, inserted text): parameters added to `forward`s, and an import added."""
    lines = text.splitlines()
    changes = [(number, line.index("(self") + len("(self"), ", probe_arg=None")
               for number, line in enumerate(lines) if re.match(r"\s*def forward\(self\b", line)]
    step = max(1, len(changes) // max(1, count - 1))
    chosen = changes[::step][:max(1, count - 1)]
    first_definition = next(number for number, line in enumerate(lines) if line.startswith(("class ", "def ")))
    return chosen + [(first_definition, 0, "import math as probe_math\n")]


def measure_file(path: str, workdir: str, source: str, edits: int, bursts: int, timeout: float) -> dict:
    """Every case for the file at `path`, the server started in `workdir`; a case that timed out says so."""
    results: dict = {}
    session = TimedSession(workdir, source, timeout)
    try:
        start, cpu = time.perf_counter(), session.cpu()
        uri = Path(path).as_uri()
        session.texts[uri], session.versions[uri] = Path(path).read_text(encoding="utf-8"), 1
        session.client.notify("textDocument/didOpen", {"textDocument": {
            "uri": uri, "languageId": "python", "version": 1, "text": session.texts[uri]}})
        session.client.diagnostics(uri, 1)
        results["open"] = summary([session.client.received_at - start], [session.cpu() - cpu])
        walls, cpus = [], []
        for line, indent in edit_points(session.texts[uri], max(1, edits // 2)):
            for change in ((line, 0, line, 0, f"{indent}probe_value = 1\n"), (line, 0, line + 1, 0, "")):
                wall, spent = session.timed_change(uri, *change, full=True)
                walls.append(wall)
                cpus.append(spent)
        results["body_edits"] = summary(walls, cpus)
        walls, cpus = [], []
        for line, column, inserted in outline_changes(session.texts[uri], max(1, edits // 2)):
            end_line, end_column = (line + 1, 0) if inserted.endswith("\n") else (line, column + len(inserted))
            for change in ((line, column, line, column, inserted), (line, column, end_line, end_column, "")):
                wall, spent = session.timed_change(uri, *change, full=True)
                walls.append(wall)
                cpus.append(spent)
        results["outline_edits"] = summary(walls, cpus)
        samples = [session.burst(uri, line, indent, True) for line, indent in edit_points(session.texts[uri], bursts)]
        results["bursts"] = summary(*map(list, zip(*samples)))
    except queue.Empty:
        results["timed_out"] = f"no diagnostics {timeout:.0f} s after a message of the next case"
    finally:
        try:
            session.close()  # a clean shutdown ends the server's background build too
        except Exception:  # noqa: BLE001 - a server that does not answer is killed
            session.client.kill()
    return results


def measure(package: str, relative: str, source: str, edits: int, bursts: int, timeout: float) -> dict:
    """The file in its package (copied to a temporary directory), then alone in an empty directory."""
    with tempfile.TemporaryDirectory(prefix="compile-lint-tree-") as workdir:
        files = copy_package(package, workdir)
        path = os.path.join(workdir, os.path.basename(package.rstrip(os.sep)), relative)
        lines = Path(path).read_text(encoding="utf-8").count("\n")
        in_tree = measure_file(path, workdir, source, edits, bursts, timeout)
        with tempfile.TemporaryDirectory(prefix="compile-lint-alone-") as alone_dir:
            alone = os.path.join(alone_dir, os.path.basename(path))
            shutil.copyfile(path, alone)
            time.sleep(PAUSE_SECONDS)
            by_itself = measure_file(alone, alone_dir, source, edits, bursts, timeout)
    return {"package": package, "package_files": files, "file": relative, "lines": lines,
            "server_source": source, "in_package": in_tree, "alone": by_itself}


def table(result: dict) -> list[str]:
    """The markdown table of one `measure` result."""
    lines = ["| case | n | wall p50 ms | wall p95 ms | wall max ms | server CPU p50 ms | CPU p95 ms |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for where, label in (("in_package", f"in the package ({result['package_files']} files)"), ("alone", "alone")):
        for case in CASES:
            if case in result[where]:
                lines.append(row(f"{label}: {case.replace('_', ' ')}", result[where][case]))
        if "timed_out" in result[where]:
            lines.append(f"| {label}: timed out | | {result[where]['timed_out']} | | | | |")
    return lines


def main(argv: Optional[list[str]] = None) -> int:
    """Measure, print the table (and the raw figures with --json)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--package", help="a package directory (default: the installed transformers)")
    parser.add_argument("--file", default=DEFAULT_FILE, help="the file to open, relative to the package")
    parser.add_argument("--edits", type=int, default=10, help="edits per kind (half insertions, half removals)")
    parser.add_argument("--bursts", type=int, default=4, help="bursts of five edits 60 ms apart")
    parser.add_argument("--server-source", default=REPO, help="the checkout whose server to run")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds to wait for one message's diagnostics")
    parser.add_argument("--json", help="write the raw results here")
    args = parser.parse_args(argv)
    package = args.package or installed_package("transformers")
    load_before = os.getloadavg()
    result = measure(os.path.abspath(package), args.file, os.path.abspath(args.server_source), args.edits,
                     args.bursts, args.timeout)
    result["load_before"], result["load_after"], result["cpus"] = load_before, os.getloadavg(), os.cpu_count()
    print(f"{result['file']} ({result['lines']} lines); CPUs: {os.cpu_count()}; load average before: "
          f"{', '.join(f'{x:.1f}' for x in load_before)}, after: {', '.join(f'{x:.1f}' for x in os.getloadavg())}")
    print("\n".join(table(result)))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
