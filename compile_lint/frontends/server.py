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
of the text they are for. Code actions are answered from the last lint's findings, never
by linting again.

A lint costs the edited file, whatever the size of its project. What the project's entry
points reach in a document is built off the lints, in a child process (project_builds.py),
for every open document with its unsaved text; each lint uses the last answer built, moved
to the document's current lines (engine/buffer_reach.py). Opening a document publishes its
own findings first (no other file read), then, once the project's answer is built, the
findings with it when they differ. An edit that changes what other code sees of the file
(imports, signatures, class bases, decorators) asks for a new answer once typing pauses
`OUTLINE_PAUSE_SECONDS`; any other edit once it pauses `BODY_PAUSE_SECONDS`, and a save
at once (other open documents may be reached from the saved one). When the new answer
changes a document's findings, they are published again for the same version.
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
from compile_lint.analysis.project.reach import FileReach, buffer_alone
from compile_lint.analysis.syntax.predicates import DEFAULT_MODULE_BASE_NAMES
from compile_lint.core.diagnostics import Diagnostic, Edit
from compile_lint.core.text_offsets import split_lines
from compile_lint.engine.api import (
    SYNTAX_ERROR_CODE,
    fix_text,
    is_applicable,
    lint_source,
)
from compile_lint.engine.buffer_reach import KnownReach, moved_reach, outline
from compile_lint.engine.incremental import IncrementalParser
from compile_lint.engine.positions import RenderCache
from compile_lint.engine.project import symbol_index
from compile_lint.engine.suppressions import add_noqa
from compile_lint.frontends.lint_scheduler import LintScheduler, Snapshot
from compile_lint.frontends.project_builds import Answers, BuildRequest, ProjectBuilds
from compile_lint.reporters.docs import graph_break_url
from compile_lint.settings.config import Config, ConfigError, load_config

SOURCE = "compile-lint"
FIX_ALL_KIND = "source.fixAll.compile-lint"
# How long a code action request waits for the lint of the document's current text.
CODE_ACTION_WAIT_SECONDS = 5.0
# How long the worker waits for the loop to send a document's first findings before it
# prepares the document's parser for edits.
PUBLISH_WAIT_SECONDS = 0.5
# After an edit, how long typing pauses before the project's answer is built again: soon when
# the edit changed what other code sees of the file, later when it changed a function body
# only (the answer moved to the new lines holds unless the body changed what is traced).
OUTLINE_PAUSE_SECONDS = 0.3
BODY_PAUSE_SECONDS = 2.0
logger = logging.getLogger(__name__)


@dataclass
class Linted:
    """What the last finished lint of a document found, and for which version of it."""

    version: Optional[int]
    text: str
    findings: list[Diagnostic]


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
    latest: Optional[Snapshot] = None  # the newest version the editor sent
    published: Optional[tuple[Optional[int], list[Diagnostic]]] = None  # (version, findings) last published
    # The project's answer for the document and the text it is for, replaced whole (a build's thread sets
    # it while the worker reads it); whether a build made it (else the text's own), the text's outline.
    known: Optional[tuple[Optional[FileReach], str]] = None
    answered: bool = False
    known_outline: Optional[str] = None


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
        self.documents: dict[str, _Document] = {}
        self.loop: Optional[asyncio.AbstractEventLoop] = None
        self.scheduler = LintScheduler(self.lint, self.deliver)
        # What reaches each document from the rest of its project, as the CLI and flake8 see it.
        self.builds = ProjectBuilds(self.build_request, self.built)
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

    def reach_for(self, state: _Document, job: Snapshot) -> Optional[FileReach]:
        """What the project reaches in this version: the last answer built, moved to its lines. Until the
        first is built, what the first text linted reaches on its own (no other file read), moved likewise."""
        known = state.known
        if known is None:
            bases = tuple(DEFAULT_MODULE_BASE_NAMES) + tuple(job.config.module_bases)
            known = state.known = (buffer_alone(job.path, job.text, symbol_index(job.config).modules, bases), job.text)
        reach, text = known
        return moved_reach(reach, text, job.text) if reach is not None else None

    def lint(self, job: Snapshot, cancelled: Callable[[], bool]) -> list[Diagnostic]:
        state = self.documents.get(job.uri)
        if state is None:
            return []  # closed meanwhile
        reach = self.reach_for(state, job)
        return lint_source(job.text, job.path, job.config, parse=state.parser.parse, prefilter=False,
                           cancelled=cancelled, render_cache=state.renderings,
                           project=KnownReach(job.path, reach)).diagnostics  # type: ignore[arg-type]

    def deliver(self, job: Snapshot, findings: list[Diagnostic]) -> None:
        """On the worker: publish a finished lint's findings, unless those of this version are out already."""
        state = self.documents.get(job.uri)
        if state is None:
            return
        if state.published != (job.version, findings):
            state.published = (job.version, findings)
            published = self.send(job, findings)
            if state.parser.unprepared:
                # The findings are out before the loop would have to wait for the GIL to send them.
                published.wait(PUBLISH_WAIT_SECONDS)
        state.parser.prepare()  # after a full parse (opening): what the next edit's splice needs

    # ----- the project's answers -------------------------------------------------------
    def build_request(self) -> Optional[BuildRequest]:
        """On a timer thread: the open documents to build the project's answers for, if any needs one."""
        snapshots = [state.latest for state in list(self.documents.values()) if state.latest is not None]
        return BuildRequest(tuple((job.path, job.text, job.config) for job in snapshots)) if snapshots else None

    def after_edit(self) -> None:
        """On a timer thread, typing having paused: build at once if the edit changed what other code sees
        of a document, else once typing pauses `BODY_PAUSE_SECONDS`."""
        edited = [(state, state.latest.text) for state in list(self.documents.values())
                  if state.latest is not None and (state.known is None or state.known[1] != state.latest.text)]
        if any(not state.answered or outline(text) not in (None, state.known_outline) for state, text in edited):
            self.builds.schedule(0)
        elif edited:
            self.builds.schedule(BODY_PAUSE_SECONDS - OUTLINE_PAUSE_SECONDS)

    def built(self, request: BuildRequest, answers: Answers) -> None:
        """On the build's thread: keep each document's new answer; lint again those it may change."""
        texts = {path: text for path, text, _ in request.documents}
        for uri, state in list(self.documents.items()):
            latest = state.latest
            if latest is None or latest.path not in answers:
                continue
            state.known_outline = outline(texts[latest.path])
            state.known = (answers[latest.path], texts[latest.path])
            state.answered = True
            if self.loop is not None:
                self.loop.call_soon_threadsafe(self.schedule, uri, False)

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
        if uri not in self.documents and edit:
            return  # closed meanwhile
        state = self.documents.setdefault(uri, _Document())
        state.latest = self.snapshot(uri)
        self.scheduler.submit(state.latest, edit=edit)

    # ----- documents -------------------------------------------------------------------
    async def did_open(self, params) -> None:
        self.documents.pop(params.text_document.uri, None)
        self.schedule(params.text_document.uri, edit=False)
        self.builds.schedule(0)

    async def did_change(self, params) -> None:
        self.schedule(params.text_document.uri, edit=True)
        self.builds.schedule(OUTLINE_PAUSE_SECONDS, then=self.after_edit)

    async def did_save(self, params) -> None:
        self.configs.clear()  # a saved pyproject.toml may change the selection
        self.schedule(params.text_document.uri, edit=False)
        self.builds.schedule(0)  # what the saved file reaches in other open documents may have changed

    def did_close(self, params) -> None:
        uri = params.text_document.uri
        self.scheduler.forget(uri)
        self.documents.pop(uri, None)
        self.server.text_document_publish_diagnostics(self.types.PublishDiagnosticsParams(uri=uri, diagnostics=[]))

    def shutdown(self, params: None) -> None:
        self.scheduler.close()
        self.builds.close()

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
        # The fixer's lints use the reach the findings were linted with (the fixes keep functions where they are).
        reach = self.reach_for(state, Snapshot(uri, path, linted.text, linted.version, config)) if state else None
        outcome = await asyncio.get_running_loop().run_in_executor(
            None, functools.partial(fix_text, linted.text, path, config,
                                    project=KnownReach(path, reach)))  # type: ignore[arg-type]
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
