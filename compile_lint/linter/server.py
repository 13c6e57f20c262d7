"""`compile-lint server`: a language server (LSP over stdio) for editors.

It publishes findings when a document is opened, changed or saved, and offers quick fixes
built from the same fixes `--fix` applies: one code action per fixable finding, an "add
`# noqa: CODE`" action per finding (the edit `--add-noqa` makes), and a "fix all" source
action that runs the CLI's fixer to its fixed point. Needs pygls
(`pip install "compile-lint[lsp]"`); the linter itself does not.
"""

from __future__ import annotations

import argparse
import os
import sys
import tokenize
from typing import Optional, Sequence

from compile_lint import __version__
from compile_lint.autofix.apply import fix_text, is_applicable
from compile_lint.linter.config import Config, ConfigError, load_config
from compile_lint.linter.diagnostics import Diagnostic, Edit
from compile_lint.linter.docs import graph_break_url
from compile_lint.linter.engine import SYNTAX_ERROR_CODE, lint_text
from compile_lint.linter.suppressions import add_noqa
from compile_lint.linter.text_offsets import split_lines

SOURCE = "compile-lint"
FIX_ALL_KIND = "source.fixAll.compile-lint"


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
    return [types.TextEdit(range=_range(types, document, e.line, e.column, e.end_line, e.end_column), new_text=e.content)
            for e in edits]


def _whole_document(types, document, new_text: str):
    lines = document.lines
    end = types.Position(line=len(lines), character=0)
    return types.TextEdit(range=types.Range(start=types.Position(line=0, character=0), end=end), new_text=new_text)


def _overlaps(types, a, b) -> bool:
    def key(position):
        return (position.line, position.character)
    return key(a.start) <= key(b.end) and key(b.start) <= key(a.end)


def _noqa_actions(types, document, uri: str, findings: Sequence[Diagnostic], wanted_range) -> list:
    """One "add `# noqa: CODE`" quick fix per finding in range: the edit `--add-noqa` would make."""
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


def build_server():
    """The pygls LanguageServer with compile-lint's handlers registered."""
    from lsprotocol import types
    from pygls.lsp.server import LanguageServer

    server = LanguageServer(SOURCE, __version__, text_document_sync_kind=types.TextDocumentSyncKind.Incremental)
    configs: dict[str, Config] = {}

    def config_for(path: str) -> Config:
        directory = os.path.dirname(os.path.abspath(path))
        if directory not in configs:
            try:
                configs[directory] = load_config(start=directory)
            except ConfigError as error:
                server.window_show_message(types.ShowMessageParams(
                    type=types.MessageType.Error, message=f"compile-lint: {error}; using the defaults"))
                configs[directory] = Config(root=directory)
        return configs[directory]

    def lint(document) -> list[Diagnostic]:
        return lint_text(document.source, document.path, config_for(document.path))

    def publish(uri: str) -> None:
        document = server.workspace.get_text_document(uri)
        diagnostics = [_to_lsp(types, document, d) for d in lint(document)]
        server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=document.version))

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(params: types.DidOpenTextDocumentParams) -> None:
        publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(params: types.DidChangeTextDocumentParams) -> None:
        publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE)
    def did_save(params: types.DidSaveTextDocumentParams) -> None:
        configs.clear()  # a saved pyproject.toml may change the selection
        publish(params.text_document.uri)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(params: types.DidCloseTextDocumentParams) -> None:
        server.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=params.text_document.uri, diagnostics=[]))

    @server.feature(
        types.TEXT_DOCUMENT_CODE_ACTION,
        types.CodeActionOptions(code_action_kinds=[types.CodeActionKind.QuickFix, FIX_ALL_KIND], resolve_provider=False),
    )
    def code_action(params: types.CodeActionParams) -> list:
        uri = params.text_document.uri
        document = server.workspace.get_text_document(uri)
        config = config_for(document.path)
        wanted = params.context.only
        actions = []
        # Fixes are recomputed from the current text, so they always match the document's version.
        findings = lint_text(document.source, document.path, config)
        if not wanted or types.CodeActionKind.QuickFix in wanted:
            for finding in findings:
                if finding.fix is None:
                    continue
                lsp_diagnostic = _to_lsp(types, document, finding)
                if not _overlaps(types, lsp_diagnostic.range, params.range):
                    continue
                unsafe = finding.fix.applicability == "unsafe"
                actions.append(types.CodeAction(
                    title=f"{finding.fix.message} ({finding.code}{', unsafe' if unsafe else ''})",
                    kind=types.CodeActionKind.QuickFix,
                    diagnostics=[lsp_diagnostic],
                    is_preferred=not unsafe,
                    edit=types.WorkspaceEdit(changes={uri: _text_edits(types, document, finding.fix.edits)}),
                ))
            actions += _noqa_actions(types, document, uri, findings, params.range)
        wants_fix_all = not wanted or any(FIX_ALL_KIND.startswith(kind) for kind in wanted)
        if wants_fix_all and any(is_applicable(d, unsafe=False) for d in findings):
            outcome = fix_text(document.source, document.path, config)
            if outcome.error is None and outcome.changed:
                actions.append(types.CodeAction(
                    title="Fix all safe compile-lint findings",
                    kind=FIX_ALL_KIND,
                    edit=types.WorkspaceEdit(changes={uri: [_whole_document(types, document, outcome.text)]}),
                ))
        return actions

    return server


def serve(argv: Optional[Sequence[str]] = None) -> int:
    """`compile-lint server [--stdio]`: run the language server on stdin/stdout."""
    parser = argparse.ArgumentParser(prog="compile-lint server", description="Run the compile-lint language server.")
    parser.add_argument("--stdio", action="store_true", help="talk LSP over stdin/stdout (the default and only transport)")
    parser.parse_args(list(argv or ()))
    try:
        server = build_server()
    except ImportError:
        sys.stderr.write('compile-lint: error: the language server needs pygls: pip install "compile-lint[lsp]"\n')
        return 2
    server.start_io()
    return 0
