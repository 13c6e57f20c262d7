"""Every rule, in code order. Each module of this package holds one family of small rule classes.

Families are discovered, not listed, so adding a module is all it takes to add rules.
"""

from __future__ import annotations

import importlib
import pkgutil

from compile_lint.rules.base import Rule


def _collect() -> list[type[Rule]]:
    found: dict[str, type[Rule]] = {}
    for info in sorted(pkgutil.iter_modules(__path__), key=lambda i: i.name):
        if info.name == "base" or info.name.startswith("_"):
            continue
        family = importlib.import_module(f"{__name__}.{info.name}")
        for value in vars(family).values():
            if isinstance(value, type) and issubclass(value, Rule) and "code" in vars(value):
                if value.code in found and found[value.code] is not value:
                    raise RuntimeError(f"duplicate rule code {value.code}")
                found[value.code] = value
    return sorted(found.values(), key=lambda rule: rule.code)


ALL_RULES: list[type[Rule]] = _collect()
RULES_BY_CODE: dict[str, type[Rule]] = {rule.code: rule for rule in ALL_RULES}
