"""How many tensor-branching and tensor-to-Python findings in real code carry a fix.

Lints library sources (e.g. the unpacked transformers, timm and diffusers of the
real-world list) with `--select JIT101,JIT102,JIT103,JIT201,JIT202` (or the `--codes`
given) and reports, per code, the findings, those carrying a safe or an unsafe fix, and
why the others have none (the reason each finding's message gives after "no automatic fix:",
without the "by hand:" next step that follows it).

    python benchmarks/fix_coverage.py PATH [PATH ...] [--codes JIT207] [--out benchmarks/results/fix_coverage]

`--codes break` counts every rule of kind "break" that is on by default.

Writes OUT.json (every finding: path, line, code, fix applicability, reason) and OUT.md.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import subprocess
import sys
import time

from compile_lint.fixes.next_steps import next_step

CODES = ("JIT101", "JIT102", "JIT103", "JIT201", "JIT202")
REASON_MARK = "; no automatic fix: "
# The reason of a finding a Dynamo setting removes (its rule checked what comes after) in a file
# with no single compile call to write it before: the message names the line to add.
SETTING_STEP = "`torch.compile` call to set `"
BY_HAND_MARK = "; by hand: "


def break_codes() -> tuple[str, ...]:
    """The codes of the rules of kind "break" that are on by default."""
    from compile_lint.rules import ALL_RULES

    return tuple(rule.code for rule in ALL_RULES if rule.kind == "break" and rule.default_enabled)


def lint(paths: list[str], codes: tuple[str, ...] = CODES) -> list[dict]:
    """The JSON findings of compile-lint on `paths` for `codes` (fresh, no cache)."""
    command = [sys.executable, "-m", "compile_lint", "--select", ",".join(codes), "--no-cache",
               "--output-format", "json", "--exit-zero", *paths]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise SystemExit(f"compile-lint failed ({result.returncode}): {result.stderr.strip()[-2000:]}")
    return json.loads(result.stdout)


def summarise(findings: list[dict], root: str, codes: tuple[str, ...] = CODES) -> dict:
    """Per code: findings, safe and unsafe fixes, and the reasons for no fix."""
    rows = []
    for finding in findings:
        message = finding["message"]
        reason = _withheld_reason(message)
        fix = finding.get("fix")
        rows.append({
            "path": os.path.relpath(finding["path"], root),
            "line": finding["line"],
            "code": finding["code"],
            "fix": fix["applicability"] if fix else None,
            "fix_message": fix["message"] if fix else None,
            "reason": reason,
            # no fix, but a checked Dynamo setting to add where the code is compiled (fixes/settings.py)
            "setting": fix is None and SETTING_STEP in (reason or ""),
        })
    per_code = {}
    for code in codes:
        mine = [row for row in rows if row["code"] == code]
        reasons = collections.Counter(_reason_kind(row["reason"]) for row in mine if row["fix"] is None)
        fixes = collections.Counter(_fix_kind(row["fix_message"]) for row in mine if row["fix"])
        per_code[code] = {
            "findings": len(mine),
            "safe": sum(row["fix"] == "safe" for row in mine),
            "unsafe": sum(row["fix"] == "unsafe" for row in mine),
            "setting": sum(row["setting"] for row in mine),
            "fix_kinds": dict(fixes.most_common()),
            "no_fix_reasons": dict(reasons.most_common()),
        }
    total = len(rows)
    fixed = sum(row["fix"] is not None for row in rows)
    settings = sum(row["setting"] for row in rows)
    return {"total": total, "fixed": fixed, "settings": settings, "per_code": per_code, "findings": rows}


def _withheld_reason(message: str) -> str | None:
    """The reason a message gives for having no fix, with its mode or condition but not its next step."""
    if REASON_MARK not in message:
        return None
    reason = message.split(REASON_MARK, 1)[1]
    head, _, tail = reason.partition(BY_HAND_MARK)
    step = next_step(head)
    if step is not None and tail.startswith(step.recipe):
        return head + tail[len(step.recipe):]
    return reason


def _reason_kind(reason: str | None) -> str:
    """A reason with the code it quotes dropped, so that like reasons group together."""
    if reason is None:
        return "(no reason given)"
    parts = reason.split("`")
    return "`…`".join(parts[0::2]) if len(parts) > 1 else reason


def _fix_kind(message: str | None) -> str:
    if message is None:
        return ""
    parts = message.split("`")
    return "`…`".join(parts[0::2]) if len(parts) > 1 else message


def markdown(summary: dict, paths: list[str], seconds: float, codes: tuple[str, ...] = CODES,
             codes_option: str = "") -> str:
    """The summary as a Markdown report (`codes_option`: `--codes` as given, when not the default)."""
    option = f" --codes {codes_option or ','.join(codes)}" if codes != CODES else ""
    title = "the tensor-branching and tensor-to-Python findings" if codes == CODES else ", ".join(codes)
    lines = [
        f"# Fix coverage of {title}",
        "",
        f"`python benchmarks/fix_coverage.py {' '.join(paths)}{option}` ({seconds:.0f} s).",
        "",
        f"**{summary['fixed']} of {summary['total']} findings carry a fix "
        f"({100 * summary['fixed'] / max(summary['total'], 1):.1f}%); {summary.get('settings', 0)} more name a "
        "checked Dynamo setting to add before the `torch.compile` that compiles them (no compile call in "
        f"their file): together {100 * (summary['fixed'] + summary.get('settings', 0)) / max(summary['total'], 1):.1f}%"
        ".**",
        "",
        "| code | findings | safe fix | unsafe fix | with a fix | setting named |",
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    for code, row in summary["per_code"].items():
        fixed = row["safe"] + row["unsafe"]
        share = f"{100 * fixed / row['findings']:.0f}%" if row["findings"] else "-"
        lines.append(f"| {code} | {row['findings']} | {row['safe']} | {row['unsafe']} | {share} "
                     f"| {row.get('setting', 0)} |")
    for code, row in summary["per_code"].items():
        if not row["findings"]:
            continue
        lines += ["", f"## {code}", ""]
        if row["fix_kinds"]:
            lines += ["Fixes:", ""] + [f"- {count} × {kind}" for kind, count in row["fix_kinds"].items()] + [""]
        if row["no_fix_reasons"]:
            lines += ["No fix, because:", ""]
            lines += [f"- {count} × {reason}" for reason, count in row["no_fix_reasons"].items()]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    """Lint, summarise, write OUT.json and OUT.md, print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--out", default="benchmarks/results/fix_coverage")
    parser.add_argument("--codes", default=",".join(CODES),
                        help='the codes to count, or "break" for every break rule (default: %(default)s)')
    args = parser.parse_args(argv)
    codes = break_codes() if args.codes == "break" else tuple(
        code.strip() for code in args.codes.split(",") if code.strip())
    root = os.path.commonpath([os.path.abspath(p) for p in args.paths])
    root = root if os.path.isdir(root) else os.path.dirname(root)
    start = time.perf_counter()
    summary = summarise(lint(args.paths, codes), root, codes)
    seconds = time.perf_counter() - start
    shown = args.paths if len(args.paths) <= 4 else [root + f" ({len(args.paths)} files under it)"]
    report = markdown(summary, shown, seconds, codes, args.codes)
    with open(args.out + ".json", "w", encoding="utf-8") as handle:
        json.dump(summary, handle, indent=1)
    with open(args.out + ".md", "w", encoding="utf-8") as handle:
        handle.write(report)
    print(report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
