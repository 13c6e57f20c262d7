"""Every rule, in code order: one module per rule, `<family>/jitNNN_<name>.py`.

Rules are discovered, not listed, so adding a rule is adding its file. `ALL_RULES` and
`RULES_BY_CODE` import every rule module on first use; `rule_codes()` reads the codes
from the file names, without importing anything (a run answered from the cache needs
no rule, and no libcst).
"""

from __future__ import annotations

import importlib
import pkgutil
import re
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from compile_lint.rules.base import Rule

# A rule module's name: its code in lower case, then its name with `-` spelled `_`.
RULE_MODULE = re.compile(r"^jit\d{3}_[a-z0-9_]+$")


def _rule_module_names():
    """(family, module name) of every `<family>/jitNNN_<name>.py` below this package, in order."""
    for family in sorted(pkgutil.iter_modules(__path__), key=lambda info: info.name):
        if not family.ispkg or family.name.startswith("_"):
            continue
        path = [f"{directory}/{family.name}" for directory in __path__]
        for info in sorted(pkgutil.iter_modules(path), key=lambda info: info.name):
            if RULE_MODULE.match(info.name):
                yield family.name, info.name


def rule_codes() -> frozenset[str]:
    """The code of every rule, read from the rule files' names (`jit101_...` is JIT101)."""
    return frozenset(name.split("_", 1)[0].upper() for _, name in _rule_module_names())


def _rule_modules():
    """Every `<family>.jitNNN_<name>` module below this package, imported."""
    for family, name in _rule_module_names():
        yield importlib.import_module(f"{__name__}.{family}.{name}")


def _collect() -> list[type[Rule]]:
    from compile_lint.rules.base import Rule

    found: dict[str, type[Rule]] = {}
    for module in _rule_modules():
        for value in vars(module).values():
            if (isinstance(value, type) and issubclass(value, Rule) and "code" in vars(value)
                    and value.__module__ == module.__name__):
                if value.code in found:
                    raise RuntimeError(f"duplicate rule code {value.code}")
                found[value.code] = value
    return sorted(found.values(), key=lambda rule: rule.code)


def __getattr__(name: str) -> Any:
    """`ALL_RULES` (every rule class, in code order) and `RULES_BY_CODE`, collected on first use."""
    if name in ("ALL_RULES", "RULES_BY_CODE"):
        rules = _collect()
        globals()["ALL_RULES"] = rules
        globals()["RULES_BY_CODE"] = {rule.code: rule for rule in rules}
        return globals()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
