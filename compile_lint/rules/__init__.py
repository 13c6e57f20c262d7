"""Every rule, in code order. Each module holds one family; each rule is one small class."""

from __future__ import annotations

from compile_lint.rules.base import Rule
from compile_lint.rules import control_flow

_FAMILIES = (control_flow,)


def _collect() -> list[type[Rule]]:
    found = []
    for family in _FAMILIES:
        for value in vars(family).values():
            if isinstance(value, type) and issubclass(value, Rule) and value is not Rule and hasattr(value, "code"):
                found.append(value)
    return sorted(found, key=lambda rule: rule.code)


ALL_RULES: list[type[Rule]] = _collect()
RULES_BY_CODE: dict[str, type[Rule]] = {rule.code: rule for rule in ALL_RULES}
