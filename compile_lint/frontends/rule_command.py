"""`compile-lint rule CODE | --all` (ruff's spelling) and `--explain CODE... | ALL`: the rules' documentation.

Both print the same text: each code's facts, why it breaks, and its examples; with
`--output-format json`, one object per code (an array for several), as `ruff rule` does.
"""

from __future__ import annotations

import json
import sys
from typing import Optional, Sequence

from compile_lint.frontends.arguments import UsageParser
from compile_lint.frontends.report import EXIT_CLEAN, EXIT_ERROR, error

ALL = "ALL"
RULE_FORMATS = ("text", "json")


def all_codes() -> list[str]:
    """Every code that has documentation: the rules in order, then the codes that are not rules."""
    from compile_lint.core.codes import OTHER_CODES
    from compile_lint.rules import ALL_RULES

    return [rule.code for rule in ALL_RULES] + [entry.code for entry in OTHER_CODES]


def explain(code: str) -> Optional[str]:
    """The documentation of `code` (a rule, JIT000 or a verifier finding), or None if there is none."""
    from compile_lint.core.codes import OTHER_CODES_BY_CODE
    from compile_lint.reporters.docs import explain as render_explanation
    from compile_lint.reporters.docs import explain_other
    from compile_lint.rules import RULES_BY_CODE

    rule = RULES_BY_CODE.get(code.upper())
    if rule is not None:
        return render_explanation(rule)
    other = OTHER_CODES_BY_CODE.get(code.upper())
    return explain_other(other) if other is not None else None


def describe(code: str) -> Optional[dict]:
    """`code` as one JSON object (code, name, kind, summary, fix, default, explanation), or None if unknown."""
    from compile_lint.core.codes import OTHER_CODES_BY_CODE
    from compile_lint.rules import RULES_BY_CODE

    explanation = explain(code)
    if explanation is None:
        return None
    rule = RULES_BY_CODE.get(code.upper())
    if rule is not None:
        return {"code": rule.code, "name": rule.name, "kind": rule.kind, "summary": rule.message,
                "fix": rule.fix_applicability, "default_enabled": rule.default_enabled,
                "explanation": explanation}
    other = OTHER_CODES_BY_CODE[code.upper()]
    return {"code": other.code, "name": other.name, "kind": other.kind, "summary": other.summary,
            "fix": None, "default_enabled": True, "explanation": explanation}


def print_explanations(codes: Sequence[str], output_format: str = "text", as_array: bool = True) -> int:
    """Print each code's documentation (ALL: every code's), in text or JSON; exit 2 on an unknown code.

    JSON is an array, or with `as_array=False` and one code the object alone (`ruff rule CODE`'s shape).
    """
    expanded = all_codes() if any(code.upper() == ALL for code in codes) else list(codes)
    unknown = next((code for code in expanded if not _known(code)), None)
    if unknown is not None:
        error(f"unknown rule code '{unknown}'")
        return EXIT_ERROR
    if output_format == "json":
        objects = [describe(code) for code in expanded]
        sys.stdout.write(json.dumps(objects if as_array or len(objects) != 1 else objects[0], indent=2) + "\n")
    else:
        sys.stdout.write("\n".join(explain(code) or "" for code in expanded))
    return EXIT_CLEAN


def _known(code: str) -> bool:
    from compile_lint.core.codes import OTHER_CODES_BY_CODE
    from compile_lint.rules import RULES_BY_CODE

    return code.upper() in RULES_BY_CODE or code.upper() in OTHER_CODES_BY_CODE


def rule_command(argv: Sequence[str]) -> int:
    """`compile-lint rule CODE | --all [--output-format text|json]`."""
    parser = UsageParser(prog="compile-lint rule", description=(
        "Explain a rule (or every rule with --all): what it flags, why it breaks or recompiles, its fix, "
        "and its examples. The same text as `compile-lint --explain CODE`."))
    parser.add_argument("code", nargs="?", metavar="CODE",
                        help="the rule code, e.g. JIT101 (also JIT000, JIT900-JIT905)")
    parser.add_argument("--all", action="store_true", help="explain every rule and code")
    parser.add_argument("--output-format", choices=RULE_FORMATS, default="text",
                        help="text, or json: an object (an array of them with --all)")
    args = parser.parse_args(list(argv))
    if (args.code is None) == (not args.all):
        parser.error("give one rule code or --all")
    if args.all:
        return print_explanations([ALL], args.output_format)
    return print_explanations([args.code], args.output_format, as_array=False)
