"""The lines that close a run: what was fixed and found, and the count per rule (`--statistics`)."""

from __future__ import annotations

import json
from collections import Counter
from typing import Sequence

from compile_lint.core.diagnostics import Diagnostic


def plural(count: int, noun: str) -> str:
    """`1 file`, `2 files`; `fix` -> `fixes`."""
    return f"{count} {noun}{'' if count == 1 else 'es' if noun.endswith('x') else 's'}"


def hidden_fixes(diagnostics: Sequence[Diagnostic], unsafe: bool) -> int:
    """How many findings have an unsafe fix that only `--unsafe-fixes` applies (none when it is given)."""
    return 0 if unsafe else sum(1 for d in diagnostics if d.fix is not None and d.fix.applicability == "unsafe")


def no_fixes_line(hidden: int) -> str:
    """Ruff's line when nothing can be fixed as asked, pointing to `--unsafe-fixes` when that would fix some."""
    if not hidden:
        return "No fixes available.\n"
    enabled = "hidden fix can" if hidden == 1 else "hidden fixes can"
    return f"No fixes available ({hidden} {enabled} be enabled with the `--unsafe-fixes` option).\n"


def fix_only_summary(fixed: int, hidden: int) -> str:
    """`--fix-only`'s one line, in ruff's words; empty when nothing was or could be fixed."""
    more = "additional fix" if hidden == 1 else "additional fixes"
    if fixed:
        after = f" ({hidden} {more} available with `--unsafe-fixes`)" if hidden else ""
        return f"Fixed {plural(fixed, 'finding')}{after}.\n"
    if hidden:
        return f"No findings fixed ({plural(hidden, 'fix')} available with `--unsafe-fixes`).\n"
    return ""


def summary(diagnostics: Sequence[Diagnostic], files: int, fixed: int, unsafe: bool, failed: int = 0,
             unwritten: int = 0, rolled_back: int = 0) -> str:
    """One closing line: what was fixed, what was found, what could not be checked, what --fix can do.

    `failed` counts paths that could not be checked (missing, unreadable, undecodable) and
    `unwritten` the files among them that were fixed but could not be written back: then
    the run never says "All checks passed". `rolled_back` counts files whose fixes
    `--fix --verify` checked and refused (left unchanged, their findings still found).
    """
    safe = sum(1 for d in diagnostics if d.fix is not None and d.fix.applicability == "safe")
    hidden = hidden_fixes(diagnostics, unsafe=False)
    parts = []
    if fixed:  # ruff's fix summary: what was there before --fix, and what of it is left
        parts.append(f"Found {plural(fixed + len(diagnostics), 'finding')} "
                     f"({fixed} fixed, {len(diagnostics)} remaining).")
    if diagnostics and not fixed:
        with_findings = len({d.path for d in diagnostics})
        where = plural(files, "file") if with_findings == files else f"{with_findings} of {plural(files, 'file')}"
        parts.append(f"Found {plural(len(diagnostics), 'finding')} in {where}.")
    if diagnostics:
        # With --unsafe-fixes on the command line already, unsafe fixes only need --fix.
        fixable = safe + hidden if unsafe else safe
        if fixable:
            parts.append(f"{fixable} fixable with --fix.")
        if hidden and not unsafe:
            parts.append(f"{hidden} fixable with --unsafe-fixes.")
    if rolled_back:
        parts.append(f"Rolled back the fixes of {plural(rolled_back, 'file')} that --verify did not prove "
                     "(see the warnings above).")
    if unwritten:
        parts.append(f"{plural(unwritten, 'file')} could not be written (see the errors above).")
    if failed > unwritten:
        checked = files - min(failed, files)
        clean_rest = f"; no findings in the other {plural(checked, 'file')}" if checked and not diagnostics else ""
        parts.append(f"{plural(failed - unwritten, 'path')} could not be checked (see the errors above){clean_rest}.")
    elif not diagnostics and not fixed and not unwritten:
        parts.append(f"All checks passed ({plural(files, 'file')}).")
    return " ".join(parts) + "\n"


def statistics(diagnostics: Sequence[Diagnostic], output_format: str, unsafe: bool = False) -> str:
    """A count per code, most frequent first: a table, or with json an array as ruff prints it.

    Fixable is what `--fix` would apply with these flags: an unsafe fix only with --unsafe-fixes.
    """
    counts = Counter(d.code for d in diagnostics)
    names = {d.code: d.name for d in diagnostics}
    fixable = Counter(d.code for d in diagnostics
                      if d.fix is not None and (unsafe or d.fix.applicability == "safe"))
    ordered = sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    if output_format == "json":
        return json.dumps([{"code": code, "name": names[code], "count": count, "fixable": code in fixable,
                            "fixable_count": fixable[code]} for code, count in ordered], indent=2) + "\n"
    return "".join(f"{count:>5}  {code}  {'[*] ' if code in fixable else '    '}{names[code]}\n"
                   for code, count in ordered)
