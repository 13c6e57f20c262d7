"""`# noqa` and `# noqa: CODE[, CODE]` comments, as flake8 and ruff read them."""

from __future__ import annotations

import re
from typing import Optional

NOQA = re.compile(r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]*(?:[,\s]+[A-Z]+[0-9]*)*))?", re.IGNORECASE)


def noqa_codes(line: str) -> Optional[frozenset[str]]:
    """None when the line has no noqa; an empty set for a bare `# noqa` (all codes)."""
    match = NOQA.search(line)
    if match is None:
        return None
    codes = match.group("codes")
    if not codes:
        return frozenset()
    return frozenset(code.upper() for code in re.split(r"[,\s]+", codes.strip()) if code)


def is_suppressed(code: str, line: str) -> bool:
    """True when `line` carries a noqa that covers `code` (a listed code or its prefix)."""
    codes = noqa_codes(line)
    if codes is None:
        return False
    return not codes or any(code.startswith(listed) for listed in codes)
