"""Version-dependent rules follow the target torch version."""

import pytest

from compile_lint.engine.lint import rules_for
from compile_lint.rules import ALL_RULES
from compile_lint.settings.config import Config
from compile_lint.settings.versions import holds_for, installed_torch_version, parse_version, target_torch_version


def test_parse_version_drops_local_suffixes():
    assert parse_version("2.13.0+cpu") == (2, 13, 0)
    assert parse_version("2.11.0a0+git123") == (2, 11, 0)


@pytest.mark.parametrize("spec,version,expected", [
    ("", (2, 0), True),
    (">=2.4", (2, 13, 0), True),
    (">=2.4", (2, 3, 1), False),
    (">=2.4,<2.14", (2, 14), False),
    ("==2.13", (2, 13, 0), True),
    (">=2.4", None, True),
])
def test_holds_for(spec, version, expected):
    assert holds_for(spec, version) is expected


def test_bad_spec_is_an_error():
    with pytest.raises(ValueError):
        holds_for("~2.4", (2, 4))


def test_target_prefers_config_then_installed_metadata():
    assert target_torch_version("2.3") == (2, 3)
    installed = installed_torch_version()
    assert target_torch_version(None) == (parse_version(installed) if installed else None)


def test_every_rule_spec_parses():
    for rule in ALL_RULES:
        holds_for(rule.torch_versions, (2, 13))


def test_rules_outside_the_target_version_are_dropped():
    versioned = [rule for rule in ALL_RULES if rule.torch_versions]
    if not versioned:
        pytest.skip("no version-dependent rule")
    rule = versioned[0]
    assert rule in rules_for(Config(target_torch_version="2.13"))
    assert rule not in rules_for(Config(target_torch_version="1.0"))
