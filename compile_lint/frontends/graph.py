"""`compile-lint graph`: the program model shown to users.

    compile-lint graph [PATHS...]                       what torch.compile traces from each entry point, as a tree
    compile-lint graph --entry pkg/model.py:Net.forward  from one entry point only
    compile-lint graph --output-format json src/        the same tree as JSON
    compile-lint graph --output-format pycg main.py     the whole program's call graph in PyCG's JSON

The tree (text and JSON) is the traced set of the project the paths belong to (the
project the linter uses), from each entry point: every function Dynamo inlines, the line
of the call that reaches it, and the break findings on its lines, each function expanded
once. The PyCG format is the call graph of every function of the modules the given files
import, in the working directory taken as the package root, as PyCG's `callgraph.json`
spells it (node -> callees; module code is the node named after the module).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from dataclasses import dataclass, field
from typing import Optional, Sequence

from compile_lint.analysis.model.build import build_model
from compile_lint.analysis.model.pycg import pycg_graph
from compile_lint.analysis.model.traced import TracedSet
from compile_lint.analysis.model.values import FunctionV, ModuleV, Node
from compile_lint.core.diagnostics import Diagnostic
from compile_lint.engine import api
from compile_lint.engine.project import ProjectIndex
from compile_lint.frontends.arguments import build_parser as check_parser
from compile_lint.frontends.arguments import configure
from compile_lint.frontends.report import error
from compile_lint.settings.config import ConfigError

EXIT_CLEAN, EXIT_ERROR = 0, 2


def build_parser() -> argparse.ArgumentParser:
    """The `graph` subcommand's arguments."""
    parser = argparse.ArgumentParser(
        prog="compile-lint graph",
        description="Show what torch.compile traces from each entry point (a tree with the chain to each "
                    "function and its break findings), or the whole program's call graph in PyCG's JSON.")
    parser.add_argument("paths", nargs="*", help="files or directories (default: .); with --output-format pycg, "
                                                 "the program's main files, run in its package root")
    parser.add_argument("--output-format", choices=("text", "json", "pycg"), default="text")
    parser.add_argument("--entry", action="append", default=[], metavar="FILE:FUNCTION",
                        help="only the tree from this entry point (`pkg/model.py:Net.forward`); repeatable")
    parser.add_argument("--config", action="append", default=[], metavar="CONFIG",
                        help="a config file or an inline `key = value` override, as for linting")
    return parser


def graph_command(argv: Sequence[str]) -> int:
    """`compile-lint graph ...`: print the traced tree or the PyCG call graph; 0, or 2 on a usage error."""
    args = build_parser().parse_args(list(argv))
    paths = args.paths or ["."]
    missing = [path for path in paths if not os.path.exists(path)]
    if missing:
        error(f"{missing[0]}: no such file or directory")
        return EXIT_ERROR
    if args.output_format == "pycg":
        files = [os.path.abspath(path) for path in paths if path.endswith(".py") and os.path.isfile(path)]
        if not files:
            error("--output-format pycg takes the program's Python files (main.py)")
            return EXIT_ERROR
        model = build_model(files, os.getcwd(), whole=True)
        sys.stdout.write(json.dumps(pycg_graph(model), indent=2) + "\n")
        return EXIT_CLEAN
    try:
        config = configure(check_parser().parse_args([*paths, *(f"--config={item}" for item in args.config)]), paths)
    except ConfigError as problem:
        error(str(problem))
        return EXIT_ERROR
    files, _ = api.discover_files(paths, config)
    if not files:
        error("no Python files found under the given path(s)")
        return EXIT_ERROR
    project = ProjectIndex(keep=False)
    reach = project.model_reach(config, files[0])
    if reach is None:
        error("the project's entry-points setting names a function that does not exist (see --show-settings)")
        return EXIT_ERROR
    tree = traced_tree(reach.model, reach.traced, args.entry, _findings(reach.model, reach.traced, config, project))
    if args.entry and not tree:
        error(f"{args.entry[0]}: no entry point of that name (compile-lint graph lists them)")
        return EXIT_ERROR
    if args.output_format == "json":
        sys.stdout.write(json.dumps([entry.json() for entry in tree], indent=2) + "\n")
    else:
        for entry in tree:
            sys.stdout.write("\n".join(entry.lines()) + "\n")
    return EXIT_CLEAN


@dataclass
class TracedFunction:
    """One function of the tree: where it is, the call that reaches it, its findings, what it calls."""

    path: str
    function: str
    line: int
    called_at: Optional[int] = None
    made_at: Optional[str] = None  # an entry's compile call (`pkg/train.py:12`), None for a forward
    findings: list[Diagnostic] = field(default_factory=list)
    calls: list["TracedFunction"] = field(default_factory=list)
    shown_before: bool = False

    def json(self) -> dict:
        """The JSON object of this function and what it calls."""
        found: dict = {"path": self.path, "function": self.function, "line": self.line}
        if self.called_at is not None:
            found["called_at"] = self.called_at
        if self.made_at is not None:
            found["compiled_at"] = self.made_at
        if self.shown_before:
            found["shown_before"] = True
            return found
        found["findings"] = [{"line": d.line, "column": d.column, "code": d.code, "message": d.message}
                             for d in self.findings]
        found["calls"] = [call.json() for call in self.calls]
        return found

    def lines(self, depth: int = 0) -> list[str]:
        """The text tree: one line per function, its findings below it."""
        pad = "    " * depth
        where = f" (line {self.called_at})" if self.called_at is not None and depth else ""
        made = f"  [compiled at {self.made_at}]" if self.made_at else ""
        head = f"{pad}{self.path}:{self.line} {self.function}{where}{made}"
        if self.shown_before:
            return [head + "  (above)"]
        found = [head]
        found += [f"{pad}  ! {_relative(d.path)}:{d.line}:{d.column}: {d.code} {d.message.split('; ')[0]}"
                  for d in self.findings]
        for call in self.calls:
            found += call.lines(depth + 1)
        return found


def traced_tree(model, traced: TracedSet, wanted: Sequence[str],
                findings: dict[tuple[str, str], list[Diagnostic]]) -> list[TracedFunction]:
    """The traced set as one tree per entry point (each function expanded at its first appearance)."""
    shown: set[Node] = set()
    roots = []
    for node in sorted(traced.entries, key=lambda item: _name(model, item)):
        if node in traced.parents or not isinstance(node[0], FunctionV):
            continue
        path, qualname = node[0].key
        if wanted and not any(_matches(want, path, qualname) for want in wanted):
            continue
        made = traced.entries.get(node)
        made_at = f"{_relative(made[0])}:{made[1]}" if made else None
        roots.append(_expand(model, traced, node, None, made_at, shown, findings))
    return roots


def _expand(model, traced: TracedSet, node: Node, called_at: Optional[int], made_at: Optional[str],
            shown: set[Node], findings: dict) -> TracedFunction:
    value = node[0]
    assert isinstance(value, FunctionV)
    path, qualname = value.key
    scope = model.scope(value.key)
    line = scope.node.lineno if scope is not None else 0
    item = TracedFunction(_relative(path), qualname, line, called_at, made_at)
    if node in shown:
        item.shown_before = True
        return item
    shown.add(node)
    item.findings = findings.get(value.key, [])
    for callee, call_line in traced.children.get(node, []):
        if isinstance(callee[0], FunctionV) and not isinstance(callee[0], ModuleV):
            item.calls.append(_expand(model, traced, callee, call_line, None, shown, findings))
    return item


def _findings(model, traced: TracedSet, config, project: ProjectIndex) -> dict[tuple[str, str], list[Diagnostic]]:
    """The break findings of each traced function, by (path, qualname): the linter's, on its lines."""
    spans: dict[str, list[tuple[int, int, str]]] = {}
    for key in traced.functions():
        scope = model.scope(key)
        if scope is not None and scope.function is not None and hasattr(scope.function, "end_lineno"):
            spans.setdefault(key[0], []).append((scope.function.lineno, scope.function.end_lineno or 0, key[1]))
    found: dict[tuple[str, str], list[Diagnostic]] = {}
    files = sorted(path for path in spans if not model.modules[path].library)
    for result in api.lint_files(files, config, api.RunOptions(project=project)):
        for diagnostic in result.diagnostics:
            if diagnostic.kind != "break":
                continue
            holders = [span for span in spans.get(os.path.abspath(result.path), [])
                       if span[0] <= diagnostic.line <= span[1]]
            if holders:
                innermost = min(holders, key=lambda span: span[1] - span[0])
                found.setdefault((os.path.abspath(result.path), innermost[2]), []).append(diagnostic)
    return found


def _matches(wanted: str, path: str, qualname: str) -> bool:
    file, _, function = wanted.rpartition(":")
    return function == qualname and (not file or os.path.abspath(file) == path)


def _name(model, node: Node) -> str:
    value = node[0]
    return f"{value.key[0]}:{value.key[1]}" if isinstance(value, FunctionV) else ""


def _relative(path: str) -> str:
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative
