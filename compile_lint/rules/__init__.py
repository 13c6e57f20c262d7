"""Every rule, in code order: one module per rule, `<family>/jitNNN_<name>.py`.

Rules are discovered, not listed, so adding a rule is adding its file.
"""

from __future__ import annotations

import importlib
import pkgutil
import re

from compile_lint.rules.base import Rule

# A rule module's name: its code in lower case, then its name with `-` spelled `_`.
RULE_MODULE = re.compile(r"^jit\d{3}_[a-z0-9_]+$")


def _rule_modules():
    """Every `<family>.jitNNN_<name>` module below this package, imported."""
    for family in sorted(pkgutil.iter_modules(__path__), key=lambda info: info.name):
        if not family.ispkg or family.name.startswith("_"):
            continue
        package = importlib.import_module(f"{__name__}.{family.name}")
        for info in sorted(pkgutil.iter_modules(package.__path__), key=lambda info: info.name):
            if RULE_MODULE.match(info.name):
                yield importlib.import_module(f"{package.__name__}.{info.name}")


def _collect() -> list[type[Rule]]:
    found: dict[str, type[Rule]] = {}
    for module in _rule_modules():
        for value in vars(module).values():
            if (isinstance(value, type) and issubclass(value, Rule) and "code" in vars(value)
                    and value.__module__ == module.__name__):
                if value.code in found:
                    raise RuntimeError(f"duplicate rule code {value.code}")
                found[value.code] = value
    return sorted(found.values(), key=lambda rule: rule.code)


ALL_RULES: list[type[Rule]] = _collect()
RULES_BY_CODE: dict[str, type[Rule]] = {rule.code: rule for rule in ALL_RULES}
