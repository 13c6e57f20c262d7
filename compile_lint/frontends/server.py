"""`compile-lint server`: a language server (LSP over stdio) for editors.

It publishes findings when a document is opened, changed or saved, and offers quick fixes
built from the same fixes `--fix` applies: one code action per fixable finding, an "add
`# noqa: CODE`" action per finding (the edit `--add-noqa` makes), and a "fix all" source
action that runs the CLI's fixer to its fixed point. Needs pygls
(`pip install "compile-lint[lsp]"`); the linter itself does not.

Linting runs on one worker thread, off the thread that reads messages, so the server
answers while it lints. An edit is linted at once; edits less than `DEBOUNCE_SECONDS`
apart (a burst: a paste, an undo, a held key) wait until the burst pauses that long. A
lint whose text has been edited since is cancelled. Each document keeps an incremental
parser (only the top-level statements an edit touched are parsed again, whether the
client sends ranges or the whole text), and diagnostics are published with the version
of the text they are for. Opening a document publishes its own findings first (as if no
other code of the project reached into it: no project index to build or re-check), then
the findings with the project's reach when they differ. Code actions are answered from
the last lint's findings, never by linting again.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import logging
import os
import sys
import threading
import time
import tokenize
from dataclasses import dataclass, field
from typing import Callable, Optional, Sequence

from compile_lint import __version__
from compile_lint.core.diagnostics import Diagnostic, Edit
from compile_lint.core.text_offsets import split_lines
from compile_lint.engine.api import (
    SYNTAX_ERROR_CODE,
    LintCancelled,
    ProjectIndex,
    fix_text,
    is_applicable,
    lint_source,
)
from compile_lint.engine.incremental import IncrementalParser
from compile_lint.engine.positions import RenderCache
from compile_lint.engine.suppressions import add_noqa
from compile_lint.reporters.docs import graph_break_url
from compile_lint.settings.config import Config, ConfigError, load_config

SOURCE = "compile-lint"
FIX_ALL_KIND = "source.fixAll.compile-lint"
# Edits closer together than this are one burst (a paste, an undo, a key held down, a
# client's own batching): lint once the burst pauses this long. Typing at a person's pace
# (60 ms or more between keystrokes) is linted keystroke by keystroke, each version as it
# comes: a lint whose text changed meanwhile is cancelled, and the last keystroke's
# findings come one lint after it, not a debounce plus a lint.
DEBOUNCE_SECONDS = 0.03
# How long a code action request waits for the lint of the document's current text.
CODE_ACTION_WAIT_SECONDS = 5.0
# How long the worker waits for the loop to send a document's first findings before it
# prepares the document's parser for edits.
PUBLISH_WAIT_SECONDS = 0.5
logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Snapshot:
    """One version of one document, as it is to be linted."""

    uri: str
    path: str
    text: str
    version: Optional[int]
    config: Config


@dataclass
class Linted:
    """What the last finished lint of a document found, and for which version of it."""

    version: Optional[int]
    text: str
    findings: list[Diagnostic]


@dataclass
class _Job:
    snapshot: Snapshot
    due: float
    cancel: threading.Event = field(default_factory=threading.Event)


class LintScheduler:
    """Lints the newest version of each document on one worker thread.

    `submit` after a pause of `debounce` seconds since the document's last edit lints at
    once; during typing it waits until the edits pause that long. A newer version
    replaces a waiting one and cancels a running one (the lint stops at its next
    checkpoint). `lint(snapshot, cancelled)` runs on the worker; `deliver(snapshot,
    findings)` is called there with each lint that finished uncancelled.
    """

    def __init__(
        self,
        lint: Callable[[Snapshot, Callable[[], bool]], list[Diagnostic]],
        deliver: Callable[[Snapshot, list[Diagnostic]], None],
        debounce: float = DEBOUNCE_SECONDS,
    ) -> None:
        self.lint, self.deliver, self.debounce = lint, deliver, debounce
        self.pending: dict[str, _Job] = {}
        self.running: Optional[_Job] = None
        self.last_edit: dict[str, float] = {}
        self.closed = False
        self.condition = threading.Condition()
        self.thread = threading.Thread(target=self._work, name="compile-lint-linter", daemon=True)
        self.thread.start()

    def submit(self, snapshot: Snapshot, edit: bool = True) -> None:
        """Lint `snapshot` (an edit is debounced while typing; opening or saving is not)."""
        now = time.monotonic()
        with self.condition:
            last = self.last_edit.get(snapshot.uri)
            typing = edit and last is not None and now - last < self.debounce
            if edit:
                self.last_edit[snapshot.uri] = now
            self.pending[snapshot.uri] = _Job(snapshot, now + self.debounce if typing else now)
            running = self.running
            if running is not None and running.snapshot.uri == snapshot.uri:
                running.cancel.set()
            self.condition.notify()

    def forget(self, uri: str) -> None:
        """Drop a closed document: nothing pending, a running lint cancelled."""
        with self.condition:
            self.pending.pop(uri, None)
            self.last_edit.pop(uri, None)
            if self.running is not None and self.running.snapshot.uri == uri:
                self.running.cancel.set()

    def close(self) -> None:
        """Stop the worker after its current lint."""
        with self.condition:
            self.closed = True
            if self.running is not None:
                self.running.cancel.set()
            self.condition.notify()

    def _next(self) -> Optional[_Job]:
        with self.condition:
            while True:
                if self.closed:
                    return None
                if self.pending:
                    job = min(self.pending.values(), key=lambda item: item.due)
                    wait = job.due - time.monotonic()
                    if wait <= 0:
                        del self.pending[job.snapshot.uri]
                        self.running = job
                        return job
                    self.condition.wait(wait)
                else:
                    self.condition.wait()

    def _work(self) -> None:
        while True:
            job = self._next()
            if job is None:
                return
            findings: Optional[list[Diagnostic]] = None
            try:
                findings = self.lint(job.snapshot, job.cancel.is_set)
            except LintCancelled:
                pass
            except Exception:  # noqa: BLE001 - one bad lint must not stop the server
                logger.exception("compile-lint: linting %s failed", job.snapshot.path)
            with self.condition:
                self.running = None
            if findings is not None and not job.cancel.is_set():
                try:
                    self.deliver(job.snapshot, findings)
                except Exception:  # noqa: BLE001
                    logger.exception("compile-lint: publishing %s failed", job.snapshot.path)


class _Text:
    """The lines of one version of a document and the client's position encoding."""

    def __init__(self, codec, text: str) -> None:
        self.position_codec = codec
        self.source = text
        self.lines = text.splitlines(True)


def _position(types, document, line: int, column: int):
    """An LSP position (0-based, the client's code units) for a 1-based code-point position."""
    return document.position_codec.position_to_client_units(
        document.lines, types.Position(line=line - 1, character=column - 1))


def _range(types, document, line: int, column: int, end_line: int, end_column: int):
    return types.Range(start=_position(types, document, line, column),
                       end=_position(types, document, end_line, end_column))


def _severity(types, diagnostic: Diagnostic):
    if diagnostic.kind == "perf":
        return types.DiagnosticSeverity.Information
    if diagnostic.kind == "error":
        return types.DiagnosticSeverity.Error
    return types.DiagnosticSeverity.Warning


def _to_lsp(types, document, diagnostic: Diagnostic):
    href = graph_break_url(diagnostic.gb_id) if diagnostic.gb_id else None
    return types.Diagnostic(
        range=_range(types, document, diagnostic.line, diagnostic.column, diagnostic.end_line, diagnostic.end_column),
        message=diagnostic.message,
        severity=_severity(types, diagnostic),
        code=diagnostic.code,
        code_description=types.CodeDescription(href=href) if href else None,
        source=SOURCE,
        data={"fixable": diagnostic.fix is not None},
    )


def _text_edits(types, document, edits: Sequence[Edit]):
    return [types.TextEdit(range=_range(types, document, e.line, e.column, e.end_line, e.end_column),
                           new_text=e.content)
            for e in edits]


def _whole_document(types, document, new_text: str):
    lines = document.lines
    end = types.Position(line=len(lines), character=0)
    return types.TextEdit(range=types.Range(start=types.Position(line=0, character=0), end=end), new_text=new_text)


def _overlaps(types, a, b) -> bool:
    def key(position):
        return (position.line, position.character)
    return key(a.start) <= key(b.end) and key(b.start) <= key(a.end)


@dataclass
class _Document:
    """What the server keeps per open document."""

    parser: IncrementalParser = field(default_factory=IncrementalParser)
    renderings: RenderCache = field(default_factory=RenderCache)
    linted: Optional[Linted] = None
    fix_all: Optional[tuple[Optional[int], object]] = None  # (version, the fixer's outcome)
    reach: str = ""  # the digest of what the project reaches in the document, as last linted
    fresh: bool = True  # not linted yet: the first lint publishes the document's own findings first
    preview: Optional[tuple[Optional[int], list[Diagnostic]]] = None  # (version, own findings) published so far


def _supports_resolve(server, types) -> bool:
    """Whether the client can resolve a code action's edit later (`codeAction/resolve`)."""
    capabilities = getattr(server, "client_capabilities", None)
    try:
        support = capabilities.text_document.code_action.resolve_support  # type: ignore[union-attr]
    except AttributeError:
        return False
    return support is not None and "edit" in (support.properties or [])


def _noqa_actions(types, document, uri: str, findings: Sequence[Diagnostic], wanted_range) -> list:
    """One "add `# noqa: CODE`" quick fix per finding in range: the edit `--add-noqa` would make.

    `document` is the text the findings are for (a `_Text`).
    """
    lines = split_lines(document.source)
    actions = []
    for finding in findings:
        lsp_diagnostic = _to_lsp(types, document, finding)
        if finding.code == SYNTAX_ERROR_CODE or not _overlaps(types, lsp_diagnostic.range, wanted_range):
            continue
        try:
            addition = add_noqa(document.source, [finding])
        except (tokenize.TokenError, SyntaxError):
            continue  # text mid-edit that does not tokenize: no comment can be placed safely
        if not addition.added:
            continue
        old, new = lines[finding.line - 1].rstrip("\r\n"), split_lines(addition.text)[finding.line - 1].rstrip("\r\n")
        edit = types.TextEdit(range=_range(types, document, finding.line, 1, finding.line, len(old) + 1), new_text=new)
        actions.append(types.CodeAction(
            title=f"Add `# noqa: {finding.code}` (silence this finding)",
            kind=types.CodeActionKind.QuickFix,
            diagnostics=[lsp_diagnostic],
            edit=types.WorkspaceEdit(changes={uri: [edit]}),
        ))
    return actions


def _plain(method: Callable) -> Callable:
    """A plain function that calls `method` (pygls marks its handlers with attributes, which a bound method refuses)."""
    if asyncio.iscoroutinefunction(method):
        async def handler(params):
            return await method(params)
    else:
        def handler(params):  # type: ignore[misc]  # the plain twin of the async handler above
            return method(params)
    return handler


class CompileLintServer:
    """compile-lint's language server: one method per LSP handler, over the open documents' state.

    Lints run on one worker thread (`LintScheduler`); their diagnostics are converted there
    and published on the event loop. Code actions are built from the last lint of the
    version asked about.
    """

    def __init__(self) -> None:
        from lsprotocol import types
        from pygls.lsp.server import LanguageServer

        self.types = types
        self.server = LanguageServer(SOURCE, __version__,
                                     text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
        self.configs: dict[str, Config] = {}
        # What reaches each document from the rest of its project, as the CLI and flake8 see it.
        self.project = ProjectIndex()
        self.documents: dict[str, _Document] = {}
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        self.scheduler = LintScheduler(self.lint, self.deliver)
        feature = self.server.feature
        feature(types.TEXT_DOCUMENT_DID_OPEN)(_plain(self.did_open))
        feature(types.TEXT_DOCUMENT_DID_CHANGE)(_plain(self.did_change))
        feature(types.TEXT_DOCUMENT_DID_SAVE)(_plain(self.did_save))
        feature(types.TEXT_DOCUMENT_DID_CLOSE)(_plain(self.did_close))
        feature(types.SHUTDOWN)(_plain(self.shutdown))
        feature(types.TEXT_DOCUMENT_CODE_ACTION,
                types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND],
                                        resolve_provider=True))(_plain(self.code_action))
        feature(types.CODE_ACTION_RESOLVE)(_plain(self.resolve_code_action))

    # ----- linting ---------------------------------------------------------------------
    def config_for(self, path: str) -> Config:
        """The settings for a file: its directory's config, read once (until a save)."""
        directory = os.path.dirname(os.path.abspath(path))
        if directory not in self.configs:
            try:
                self.configs[directory] = load_config(start=directory)
            except ConfigError as error:
                self.server.window_show_message(self.types.ShowMessageParams(
                    type=self.types.MessageType.Error, message=f"compile-lint: {error}; using the defaults"))
                self.configs[directory] = Config(root=directory)
        return self.configs[directory]

    def snapshot(self, uri: str) -> Snapshot:
        document = self.server.workspace.get_text_document(uri)
        return Snapshot(uri, document.path, document.source, document.version, self.config_for(document.path))

    def lint(self, job: Snapshot, cancelled: Callable[[], bool]) -> list[Diagnostic]:
        state = self.documents.get(job.uri)
        if state is None:
            return lint_source(job.text, job.path, job.config, cancelled=cancelled, project=self.project).diagnostics
        if state.fresh:
            # Opening a document: its own findings first (what it holds unless other code of
            # the project reaches into it: no project passed), published before the project
            # index is built or re-checked; the findings with the project's reach follow,
            # when they differ.
            own = lint_source(job.text, job.path, job.config, parse=state.parser.parse, prefilter=False,
                              cancelled=cancelled, render_cache=state.renderings).diagnostics
            state.fresh = False
            state.preview = (job.version, own)
            self.send(job, own)
        state.reach = self.project.digest(job.config, job.path)
        findings = lint_source(job.text, job.path, job.config, parse=state.parser.parse, prefilter=False,
                               cancelled=cancelled, render_cache=state.renderings, project=self.project).diagnostics
        self.relint_reached(job.uri)
        return findings

    def relint_reached(self, linted: str) -> None:
        """On the worker: lint again the open documents whose reach a saved caller changed.

        The project index reads files from disk, so only a save changes what reaches another file.
        """
        for uri, other in list(self.documents.items()):
            if uri == linted or self.loop is None:
                continue
            document = self.server.workspace.get_text_document(uri)
            if self.project.digest(self.config_for(document.path), document.path) != other.reach:
                self.loop.call_soon_threadsafe(self.schedule, uri, False)

    def deliver(self, job: Snapshot, findings: list[Diagnostic]) -> None:
        """On the worker: publish a finished lint's findings, unless the document's first ones were these."""
        state = self.documents.get(job.uri)
        preview = state.preview if state is not None else None
        if state is not None:
            state.preview = None
        if preview != (job.version, findings):
            published = self.send(job, findings)
            if state is not None and state.parser.unprepared:
                # The findings are out before the loop would have to wait for the GIL to send them.
                published.wait(PUBLISH_WAIT_SECONDS)
        if state is not None:
            state.parser.prepare()  # after a full parse (opening): what the next edit's splice needs

    def send(self, job: Snapshot, findings: list[Diagnostic]) -> threading.Event:
        """On the worker: convert positions for this version's text, then publish on the loop; set once published."""
        text = _Text(self.server.workspace.position_codec, job.text)
        diagnostics = [_to_lsp(self.types, text, d) for d in findings]
        published = threading.Event()

        def publish() -> None:
            try:
                self.publish(job, findings, diagnostics)
            finally:
                published.set()

        self.loop.call_soon_threadsafe(publish)  # type: ignore[union-attr]
        return published

    def publish(self, job: Snapshot, findings: list[Diagnostic], diagnostics: list) -> None:
        state = self.documents.get(job.uri)
        if state is None:
            return  # closed meanwhile
        state.linted = Linted(job.version, job.text, findings)
        self.server.text_document_publish_diagnostics(
            self.types.PublishDiagnosticsParams(uri=job.uri, diagnostics=diagnostics, version=job.version))

    def schedule(self, uri: str, edit: bool) -> None:
        if self.loop is None:
            self.loop = asyncio.get_running_loop()
        self.documents.setdefault(uri, _Document())
        self.scheduler.submit(self.snapshot(uri), edit=edit)

    # ----- documents -------------------------------------------------------------------
    async def did_open(self, params) -> None:
        self.schedule(params.text_document.uri, edit=False)

    async def did_change(self, params) -> None:
        self.schedule(params.text_document.uri, edit=True)

    async def did_save(self, params) -> None:
        self.configs.clear()  # a saved pyproject.toml may change the selection
        self.schedule(params.text_document.uri, edit=False)

    def did_close(self, params) -> None:
        uri = params.text_document.uri
        self.scheduler.forget(uri)
        self.documents.pop(uri, None)
        self.server.text_document_publish_diagnostics(self.types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    def shutdown(self, params: None) -> None:
        self.scheduler.close()

    # ----- code actions ----------------------------------------------------------------
    async def current_findings(self, uri: str, version: Optional[int]) -> Optional[Linted]:
        """The last lint's findings when they are for `version`, waiting a little for a lint under way."""
        deadline = time.monotonic() + CODE_ACTION_WAIT_SECONDS
        while True:
            state = self.documents.get(uri)
            if state is None:
                return None
            if state.linted is not None and state.linted.version == version:
                return state.linted
            if time.monotonic() >= deadline:
                return None
            await asyncio.sleep(0.01)

    async def fix_all_outcome(self, uri: str, linted: Linted, config: Config):
        """The fixer's outcome for the linted text (run once per version, off the loop)."""
        state = self.documents.get(uri)
        if state is not None and state.fix_all is not None and state.fix_all[0] == linted.version:
            return state.fix_all[1]
        path = self.server.workspace.get_text_document(uri).path
        outcome = await asyncio.get_running_loop().run_in_executor(
            None, functools.partial(fix_text, linted.text, path, config, project=self.project))
        if state is not None:
            state.fix_all = (linted.version, outcome)
        return outcome

    def fix_all_action(self, uri: str, text, outcome):
        types = self.types
        return types.CodeAction(
            title="Fix all safe compile-lint findings",
            kind=FIX_ALL_KIND,
            edit=types.WorkspaceEdit(changes={uri: [_whole_document(types, text, outcome.text)]}),
        )

    def quick_fixes(self, uri: str, text: "_Text", findings: list[Diagnostic], wanted_range) -> list:
        """A code action per finding with a fix under the range, then the `# noqa` ones."""
        types = self.types
        actions = []
        for finding in findings:
            if finding.fix is None:
                continue
            lsp_diagnostic = _to_lsp(types, text, finding)
            if not _overlaps(types, lsp_diagnostic.range, wanted_range):
                continue
            unsafe = finding.fix.applicability == "unsafe"
            actions.append(types.CodeAction(
                title=f"{finding.fix.message} ({finding.code}{', unsafe' if unsafe else ''})",
                kind=types.CodeActionKind.QuickFix,
                diagnostics=[lsp_diagnostic],
                is_preferred=not unsafe,
                edit=types.WorkspaceEdit(changes={uri: _text_edits(types, text, finding.fix.edits)}),
            ))
        return actions + _noqa_actions(types, text, uri, findings, wanted_range)

    async def code_action(self, params) -> list:
        types = self.types
        uri = params.text_document.uri
        document = self.server.workspace.get_text_document(uri)
        linted = await self.current_findings(uri, document.version)
        if linted is None:
            return []  # the text changed since: the editor asks again when new diagnostics arrive
        config = self.config_for(document.path)
        text = _Text(self.server.workspace.position_codec, linted.text)
        wanted = params.context.only
        actions = []
        findings = linted.findings
        if not wanted or types.CodeActionKind.QuickFix in wanted:
            actions += self.quick_fixes(uri, text, findings, params.range)
        wants_fix_all = not wanted or any(FIX_ALL_KIND.startswith(kind) for kind in wanted)
        if wants_fix_all and any(is_applicable(d, unsafe=False) for d in findings):
            if not wanted and _supports_resolve(self.server, types):
                # Offered on every cursor move: the fixer runs only if the user picks it.
                actions.append(types.CodeAction(title="Fix all safe compile-lint findings", kind=FIX_ALL_KIND,
                                                data={"uri": uri, "version": linted.version}))
            else:
                outcome = await self.fix_all_outcome(uri, linted, config)
                if outcome.error is None and outcome.changed:
                    actions.append(self.fix_all_action(uri, text, outcome))
        return actions

    async def resolve_code_action(self, action):
        data = action.data if isinstance(action.data, dict) else {}
        uri = data.get("uri")
        state = self.documents.get(uri) if isinstance(uri, str) else None
        if state is None or state.linted is None or state.linted.version != data.get("version"):
            return action  # the text changed since: nothing to apply
        document = self.server.workspace.get_text_document(uri)
        outcome = await self.fix_all_outcome(uri, state.linted, self.config_for(document.path))
        if outcome.error is None and outcome.changed:
            text = _Text(self.server.workspace.position_codec, state.linted.text)
            action.edit = self.fix_all_action(uri, text, outcome).edit
        return action


def build_server():
    """The pygls LanguageServer with compile-lint's handlers registered."""
    return CompileLintServer().server


def serve(argv: Optional[Sequence[str]] = None) -> int:
    """`compile-lint server [--stdio]`: run the language server on stdin/stdout."""
    parser = argparse.ArgumentParser(prog="compile-lint server", description="Run the compile-lint language server.")
    parser.add_argument("--stdio", action="store_true",
                        help="talk LSP over stdin/stdout (the default and only transport)")
    parser.parse_args(list(argv or ()))
    try:
        server = build_server()
    except ImportError:
        sys.stderr.write('compile-lint: error: the language server needs pygls: pip install "compile-lint[lsp]"\n')
        return 2
    server.start_io()
    return 0
