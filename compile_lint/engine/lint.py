"""The lint engine: one parse per file, one traversal for every rule, findings with fixes."""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import gc
import os
import sys
import threading
import warnings
from typing import Callable, Iterable, Iterator, Optional, Sequence

import libcst as cst

from compile_lint.analysis.file.context import FileContext
from compile_lint.analysis.file.paths import NEVER, condition_text, only_mode, static_condition
from compile_lint.analysis.file.regions import is_imported_module_class
from compile_lint.analysis.kinds.facts import Kind
from compile_lint.analysis.project.reach import FileReach, file_alone
from compile_lint.analysis.project.symbols import SymbolIndex
from compile_lint.analysis.syntax.predicates import DEFAULT_MODULE_BASE_NAMES
from compile_lint.analysis.syntax.walk import flat_walks
from compile_lint.core.codes import SYNTAX_ERROR_CODE
from compile_lint.core.diagnostics import Diagnostic, split_message
from compile_lint.core.results import LintCancelled
from compile_lint.core.source_index import SourceIndex
from compile_lint.engine.dispatch import Dispatcher
from compile_lint.engine.evidence import with_evidence
from compile_lint.engine.library_findings import LibraryLinter, call_site_findings
from compile_lint.engine.parse import parse_module, python_rejects_nesting
from compile_lint.engine.positions import Anchor, NodePositions, RenderCache
from compile_lint.engine.prefilter import may_fire, needs_lint, relevant_words
from compile_lint.engine.project import ProjectIndex, symbol_index
from compile_lint.engine.source import SourceError, decode_source, read_source
from compile_lint.engine.suppressions import UNUSED_NOQA_CODE, unused_noqa, without_suppressed
from compile_lint.fixes.rendering import FixBuilder
from compile_lint.rules import ALL_RULES
from compile_lint.rules.base import Rule
from compile_lint.settings.config import Config
from compile_lint.settings.selection import fix_allowed, rule_enabled
from compile_lint.settings.versions import holds_for, target_torch_version


def may_hold_regions(text: str, module_bases: Iterable[str] = (), cross_file: bool = True) -> bool:
    """False when `text` cannot hold a finding (a cheap pre-parse filter; see `prefilter`).

    With `cross_file`, a file that defines a class may hold a module whose nn.Module base
    is in another file, so it passes.
    """
    return any(word in text for word in relevant_words(module_bases)) or (cross_file and "class" in text)


def rules_for(config: Config, path: Optional[str] = None) -> list[type[Rule]]:
    """The rule classes enabled for `path` under `config` that hold for the target torch."""
    version = target_torch_version(config.target_torch_version)
    return [
        rule for rule in ALL_RULES
        if rule_enabled(rule.code, rule.default_enabled, config, path) and holds_for(rule.torch_versions, version)
    ]


def _syntax_error(path: str, text: str, error: cst.ParserSyntaxError) -> Diagnostic:
    """A JIT000 finding, placed where Python's own parser puts the error when it rejects the file."""
    message = str(error.message).splitlines()[0] if error.message else "invalid syntax"
    line, column = error.raw_line, error.raw_column + 1
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # SyntaxWarnings are not the user's question here
            compile(text, path, "exec", flags=ast.PyCF_ONLY_AST, dont_inherit=True)
    except SyntaxError as python_error:
        message = python_error.msg
        line = python_error.lineno or line
        column = python_error.offset or column
    except (ValueError, RecursionError, MemoryError):
        pass
    return Diagnostic(
        path=path, line=line, column=column, end_line=line, end_column=column,
        code=SYNTAX_ERROR_CODE, name="syntax-error", kind="error",
        message=f"SyntaxError: {message}; compile-lint cannot check this file",
    )


class _AnchoredFindings(list):
    """A rule's findings that remember, for each finding, the anchors around the walk when it was reported."""

    def __init__(self, stack: list[Anchor]) -> None:
        super().__init__()
        self.stack = stack
        self.anchors: list[tuple[Anchor, ...]] = []

    def append(self, finding) -> None:
        super().append(finding)
        self.anchors.append(tuple(self.stack))

    def with_anchors(self) -> list[tuple[object, tuple[Anchor, ...]]]:
        """(finding, anchors) pairs; no anchors for any when a rule changed the list another way."""
        if len(self.anchors) != len(self):
            return [(finding, ()) for finding in self]
        return list(zip(self, self.anchors))


def lint_module(
    path: str,
    module: cst.Module,
    rule_classes: Sequence[type[Rule]],
    module_bases: Iterable[str] = (),
    prune: bool = True,
    source: Optional[str] = None,
    cancelled: Optional[Callable[[], bool]] = None,
    render_cache: Optional[RenderCache] = None,
    symbols: Optional[SymbolIndex] = None,
    branch_fix: Optional[str] = None,
    reach: Optional[FileReach] = None,
) -> list[Diagnostic]:
    """Run `rule_classes` over a parsed module; findings are not yet noqa-filtered.

    With `prune`, the walk skips what no rule can see (code outside compiled regions
    when every rule is region-scoped); without, it walks every node. `source`, the
    module's text, saves regenerating it. When `cancelled()` turns true, the walk stops
    at the next top-level statement or function with `LintCancelled`. `render_cache` keeps statement
    renderings from one lint of a document to the next (see `positions.RenderCache`).
    `symbols` lets the analysis follow base classes and helpers into other files.
    `branch_fix` is the `tensor-branch-fix` setting (None: the rules' default).
    `reach`, the project index's answer for this file, adds what other code reaches.
    """
    context = FileContext(path, module, module_bases, source if prune else None, symbols, branch_fix, reach)
    rules = [rule_class(context) for rule_class in rule_classes]
    dispatcher = Dispatcher(context, rules, prune, cancelled)
    for rule in rules:
        rule.findings = _AnchoredFindings(dispatcher.anchors)
    try:
        with flat_walks(module):
            dispatcher.run(module)
        findings = [pair for rule in rules for pair in rule.findings.with_anchors()]  # type: ignore[attr-defined]
    finally:
        for rule in rules:
            # A finding names its rule, which holds its findings: a reference cycle that would
            # keep the file's whole tree alive until the garbage collector found it (a quarter
            # of the lint's time on a large model file).
            rule.findings = []
    if not findings:
        return []
    if cancelled is not None and cancelled():
        raise LintCancelled()
    code = source if source is not None else module.code
    positions = NodePositions(module, code, render_cache)
    diagnostics = []
    builder = FixBuilder(module, lambda: context.parents, code, positions) if any(f.fix for f, _ in findings) else None
    traced = context.regions.functions
    # Branches no traced run takes (a constant decides their test): findings there cannot happen.
    untraced = [span for record in reach.functions.values() for span in record.untraced] if reach is not None else []
    for finding, anchors in findings:
        mode = condition = None
        if finding.function is not None and finding.function in traced:
            modes = context.modes_at(finding.path_node or finding.node, finding.function)
            if modes == NEVER:
                continue  # the code never runs under compile (both modes return before it)
            mode = only_mode(modes)
            function = finding.function
            condition = static_condition(finding.node, finding.path_node,
                                         lambda expr: context.facts.kind(expr, function) in _STATIC_KINDS)
        line, column, end_line, end_column = positions.span(finding.node, anchors)
        if untraced and finding.function is not None and finding.function in traced and any(
                first <= line <= last for first, last in untraced):
            continue
        fix = None
        if finding.fix is not None and builder is not None:
            fix = builder.build(
                finding.fix.replacements, finding.fix.message,
                finding.fix.applicability, finding.fix.imports, anchors,
            )
            if fix is not None and finding.fix.rests_on:
                fix = dataclasses.replace(fix, rests_on=tuple(finding.fix.rests_on))
        rule = finding.rule
        chain = context.regions.reached_from.get(finding.function) if finding.function is not None else None
        reached_from = tuple((_link_path(link.path), link.line, link.function) for link in chain or ())
        diagnostics.append(
            Diagnostic(
                path=path,
                line=line,
                column=column + 1,
                end_line=end_line,
                end_column=end_column + 1,
                code=rule.code, name=rule.name, kind=rule.kind,
                message=_reached(with_evidence(_with_conditions(finding.message, mode, condition), finding.node,
                                               context.regions.external.get(finding.function)), reached_from),
                help=split_message(finding.message)[1],
                reached_from=reached_from,
                gb_type=rule.gb_type, gb_id=rule.gb_id, fix=fix, mode=mode,  # type: ignore[arg-type]
                condition=condition,
            )
        )
    return diagnostics


# Kinds Python decides while tracing (guarded values), so a finding behind them needs them true.
_STATIC_KINDS = frozenset({Kind.PY, Kind.SHAPE})


def _link_path(path: str) -> str:
    """A chain link's file: relative to the working directory when under it."""
    relative = os.path.relpath(path)
    return path if relative.startswith("..") else relative


def _reached(message: str, reached_from: tuple) -> str:
    """The message of a finding in code other code reaches, ending with the entry point's call.

    The call's file is named as the report names files (relative to the working directory when
    under it), so that two `base.py` of a project are told apart and the path can be opened.
    """
    if not reached_from:
        return message
    path, line, function = reached_from[0]
    return f"{message} (reached from {path}:{line} in {function})"


def _with_conditions(message: str, mode: Optional[str], condition: Optional[str]) -> str:
    """The message, with the mode it needs ("only when self.training") and its static condition."""
    if mode:
        message = f"{message} ({condition_text(mode)})"
    return f"{message} (breaks only when `{condition}`)" if condition else message


DEEP_STACK_BYTES = 512 * 1024 * 1024
DEEP_RECURSION_LIMIT = 100_000


def run_with_deep_stack(function):
    """Run `function` in a thread with a large C stack and a high recursion limit.

    libcst's visitors recurse once per nesting level, so generated code (a 2,500-term sum,
    150 nested calls) overflows Python's default limit. Only such files pay for this; deeper
    code, which Python cannot compile either, never gets here (`python_rejects_nesting`).
    """
    outcome: dict = {}

    def target() -> None:
        try:
            outcome["value"] = function()
        except BaseException as error:  # re-raised in the caller's thread
            outcome["error"] = error

    old_limit = sys.getrecursionlimit()
    old_size = threading.stack_size()
    threading.stack_size(DEEP_STACK_BYTES)
    sys.setrecursionlimit(DEEP_RECURSION_LIMIT)
    try:
        thread = threading.Thread(target=target, name="compile-lint-deep")
        thread.start()
        thread.join()
    finally:
        sys.setrecursionlimit(old_limit)
        threading.stack_size(old_size)
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


@contextlib.contextmanager
def _gc_paused() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while linting one file.

    A libcst parse allocates about a hundred thousand nodes, which sets off collections
    that walk every object the process holds (in a language server: every tree it keeps)
    and find nothing: the trees hold no reference cycles, so reference counting frees
    them. Pausing it cut the CPU time of linting a 2,000-line model file by a third.
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


def lint_text(
    text: str,
    path: str,
    config: Config,
    noqa: bool = True,
    fast: bool = True,
    *,
    parse: Optional[Callable[[str], cst.Module]] = None,
    prefilter: bool = True,
    cancelled: Optional[Callable[[], bool]] = None,
    render_cache: Optional[RenderCache] = None,
    project: Optional[ProjectIndex] = None,
    source: Optional[SourceIndex] = None,
) -> list[Diagnostic]:
    """Lint source text; a syntax error becomes a JIT000 finding.

    `noqa=False` keeps findings on `# noqa` lines (flake8's `--disable-noqa`).
    With `fast` (the default), files that provably cannot hold a finding are not parsed
    with libcst (see `prefilter`), and the rule walk skips code outside compiled regions
    when no module-scoped rule runs. `fast=False` parses and walks everything; both give
    identical findings (the test suite checks it). `parse` replaces `fast_parse.parse_module`
    (the language server's incremental parser gives the same tree faster), and
    `prefilter=False` skips the pre-parse check (for a host that lints the same file over
    and over: it would only cost time there, never change a finding). A host that may
    no longer want the result passes `cancelled`; the lint then raises `LintCancelled`
    once it turns true (checked at each top-level statement and function). `render_cache` keeps
    statement renderings between lints of one document (with `parse` incremental, the
    statements an edit did not touch are the same nodes, rendered once). With JIT001
    (unused-noqa) selected and `noqa` on, the `# noqa` codes that suppressed nothing are
    findings too. Without `project`, the file is linted as if no other code of its project
    reached it, and no project is read; with a `ProjectIndex`, what the entry points of the
    file's project reach in it is linted too (the project is indexed on first use). `source`, the text's
    `SourceIndex`, is for a caller that asks the text more questions (its lines and
    comments are then found once).
    """
    source = source if source is not None else SourceIndex(text)
    noqa = noqa and not config.ignore_noqa  # `--ignore-noqa`: the comments are not read at all
    with _gc_paused():
        if not noqa or not rule_enabled(UNUSED_NOQA_CODE, False, config, path):
            return _fixable_only(_lint_text(source, path, config, noqa, fast, parse or parse_module, prefilter,
                                            cancelled, render_cache, project), config)
        raw = _lint_text(source, path, config, False, fast, parse or parse_module, prefilter, cancelled, render_cache,
                         project)
        if any(d.code == SYNTAX_ERROR_CODE for d in raw):
            return raw
        enabled = [rule.code for rule in rules_for(config, path)]
        unused = unused_noqa(source, path, raw, lambda code: any(known.startswith(code) for known in enabled))
        return _fixable_only(sorted(without_suppressed(raw + unused, source), key=Diagnostic.sort_key), config)


def _fixable_only(diagnostics: list[Diagnostic], config: Config) -> list[Diagnostic]:
    """The findings, those of codes `fixable`/`unfixable` exclude without their fix (as ruff drops it)."""
    if config.fixable == ("ALL",) and not config.unfixable:
        return diagnostics
    return [dataclasses.replace(d, fix=None) if d.fix is not None and not fix_allowed(d.code, config) else d
            for d in diagnostics]


def _on_disk(path: str, text: str) -> bool:
    """Whether `text` is what the file `path` holds on disk: the project's model read the disk, so its
    answer is about that text; stdin named by --stdin-filename, or an unsaved buffer, is modelled alone."""
    try:
        with open(path, "rb") as handle:
            data = handle.read()
        return decode_source(data, path).text == text
    except (OSError, SourceError):
        return False


def _lint_text(source: SourceIndex, path: str, config: Config, noqa: bool, fast: bool,
               parse: Callable[[str], cst.Module], prefilter: bool,
               cancelled: Optional[Callable[[], bool]], render_cache: Optional[RenderCache],
               project: Optional[ProjectIndex]) -> list[Diagnostic]:
    text = source.text
    rule_classes = rules_for(config, path)
    syntax_enabled = rule_enabled(SYNTAX_ERROR_CODE, True, config, path)
    symbols = symbol_index(config)
    answers = project is not None and (getattr(project, "answers_for_text", False) or _on_disk(path, text))
    reach = project.reach(config, path) if project is not None and answers else None
    reached = reach is not None and bool(reach.functions)  # then the file is linted, torch or not
    if fast:
        def inherits_module(qualified: str) -> bool:
            return is_imported_module_class(symbols, qualified, path, config.module_bases)

        if not reached and prefilter and not needs_lint(text, rule_classes, syntax_enabled, config.module_bases,
                                                        inherits_module):
            return []
        rule_classes = [rule for rule in rule_classes if may_fire(rule, text)]
    nesting = python_rejects_nesting(text, path)
    if nesting is not None:
        # Python cannot compile it either; libcst would take minutes, or crash, to parse it.
        line, column, message = nesting
        return [Diagnostic(path, line, column, line, column, SYNTAX_ERROR_CODE, "syntax-error", "error",
                           f"{message}; compile-lint cannot check this file")] if syntax_enabled else []
    try:
        module = parse(text)
    except cst.ParserSyntaxError as error:
        return [_syntax_error(path, text, error)] if syntax_enabled else []
    except RecursionError:
        if not syntax_enabled:
            return []
        return [Diagnostic(path, 1, 1, 1, 1, SYNTAX_ERROR_CODE, "syntax-error", "error",
                           "file is nested too deeply to parse; compile-lint cannot check this file")]
    if not reached and not may_hold_regions(text, config.module_bases):
        return []
    if reach is None:
        # Linted alone: a project of one file, the same program model (analysis/project/reach.py).
        reach = file_alone(path, text, symbols.modules, tuple(DEFAULT_MODULE_BASE_NAMES) + tuple(config.module_bases))
    if cancelled is not None and cancelled():
        raise LintCancelled()
    try:
        diagnostics = lint_module(path, module, rule_classes, config.module_bases, prune=fast, source=text,
                                  cancelled=cancelled, render_cache=render_cache, symbols=symbols,
                                  branch_fix=config.tensor_branch_fix, reach=reach)
    except RecursionError:
        try:
            diagnostics = run_with_deep_stack(
                lambda: lint_module(path, module, rule_classes, config.module_bases, prune=fast, source=text,
                                    cancelled=cancelled, render_cache=render_cache, symbols=symbols,
                                    branch_fix=config.tensor_branch_fix, reach=reach))
        except RecursionError:
            return [Diagnostic(path, 1, 1, 1, 1, SYNTAX_ERROR_CODE, "syntax-error", "error",
                               "file is nested too deeply to analyse; compile-lint cannot check this file")]
    if reach is not None and reach.library_calls:
        diagnostics += [dataclasses.replace(d, message=_reached(d.message, d.reached_from)) for d in
                        call_site_findings(path, text, reach, config, library_linter(config), symbols, _link_path)]
    if config.mode != "both":
        # Findings that need the other mode cannot happen the way this user compiles.
        diagnostics = [d for d in diagnostics if d.mode is None or d.mode == config.mode]
    if not noqa:
        return sorted(diagnostics, key=Diagnostic.sort_key)
    return sorted(without_suppressed(diagnostics, source), key=Diagnostic.sort_key)


def library_linter(config: Config) -> LibraryLinter:
    """How an installed library's file is linted for the calls into it (engine/library_findings.py): the
    same rules, only in what the project reaches of it, its findings at their place in it (no `# noqa`:
    the library's comments do not stop Dynamo)."""
    def lint_library(path: str, reach: FileReach) -> list[Diagnostic]:
        try:
            text = read_source(path).text
            module = parse_module(text)
        except (SourceError, cst.ParserSyntaxError):
            return []  # a library file compile-lint cannot read or parse: nothing to name in it
        rule_classes = [rule for rule in rules_for(config, path) if may_fire(rule, text)]
        diagnostics = lint_module(path, module, rule_classes, config.module_bases, source=text,
                                  symbols=symbol_index(config), branch_fix=config.tensor_branch_fix, reach=reach)
        return [d for d in diagnostics if config.mode == "both" or d.mode is None or d.mode == config.mode]

    return lint_library
