"""Which torch a run targets, and whether a rule holds for it.

Some rules are true only for some torch versions (what Dynamo traces changes from
release to release). The target comes from `target-torch-version` in the config, else
from the installed torch's package metadata, read without importing torch.
"""

from __future__ import annotations

import re
from functools import lru_cache
from importlib import metadata
from typing import Optional

_CONSTRAINT = re.compile(r"^\s*(>=|<=|==|!=|>|<)\s*(\d+(?:\.\d+)*)\s*$")


def parse_version(text: str) -> tuple[int, ...]:
    """`"2.13.0+cpu"` -> (2, 13, 0); local and pre-release suffixes are dropped."""
    numbers = re.match(r"\d+(?:\.\d+)*", text.strip())
    return tuple(int(part) for part in numbers.group(0).split(".")) if numbers else ()


@lru_cache(maxsize=1)
def installed_torch_version() -> Optional[str]:
    """The installed torch's version from package metadata, or None when torch is absent."""
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None


def target_torch_version(configured: Optional[str]) -> Optional[tuple[int, ...]]:
    """The version rules are judged against: configured, else installed, else None (all hold)."""
    text = configured or installed_torch_version()
    return parse_version(text) if text else None


def _compare(left: tuple[int, ...], right: tuple[int, ...]) -> int:
    width = max(len(left), len(right))
    left, right = left + (0,) * (width - len(left)), right + (0,) * (width - len(right))
    return (left > right) - (left < right)


def holds_for(spec: str, version: Optional[tuple[int, ...]]) -> bool:
    """Whether a rule's `torch_versions` spec (e.g. ">=2.4,<2.14") includes `version`.

    An empty spec, or an unknown target version, includes everything.
    """
    if not spec or version is None:
        return True
    for part in spec.split(","):
        match = _CONSTRAINT.match(part)
        if match is None:
            raise ValueError(f"bad torch_versions constraint {part!r}")
        operator, bound = match.group(1), parse_version(match.group(2))
        order = _compare(version, bound)
        ok = {">=": order >= 0, "<=": order <= 0, "==": order == 0, "!=": order != 0,
              ">": order > 0, "<": order < 0}[operator]
        if not ok:
            return False
    return True
