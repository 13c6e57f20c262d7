"""Rule metadata is consistent: codes, names, kinds, and graph-break ids that torch knows."""

from __future__ import annotations

import json
import os
import re

import pytest

from compile_lint.rules import ALL_RULES
from compile_lint.rules.base import CODE_PREFIX

FLAKE8_CODE = re.compile(r"^[A-Z]{1,3}[0-9]{0,3}$")


def test_prefix_is_a_valid_flake8_code_prefix():
    assert FLAKE8_CODE.match(CODE_PREFIX)
    for rule in ALL_RULES:
        assert FLAKE8_CODE.match(rule.code), rule.code
        assert rule.code.startswith(CODE_PREFIX)


def test_codes_and_names_are_unique_and_well_formed():
    codes = [rule.code for rule in ALL_RULES]
    names = [rule.name for rule in ALL_RULES]
    assert len(set(codes)) == len(codes)
    assert len(set(names)) == len(names)
    for rule in ALL_RULES:
        assert re.fullmatch(r"[a-z0-9]+(-[a-z0-9]+)*", rule.name), rule.name
        assert rule.kind in ("break", "recompile", "perf"), rule.code
        assert rule.fix_applicability in (None, "safe", "unsafe"), rule.code
        assert rule.message and rule.documentation(), rule.code
        assert rule.scope in ("region", "module"), rule.code
        assert rule.fails_at in ("compile", "import"), rule.code
        if any(ex.fixed is not None for ex in rule.invalid):
            assert rule.fix_applicability is not None, rule.code


def _registry():
    torch = pytest.importorskip("torch")
    path = os.path.join(os.path.dirname(torch.__file__), "_dynamo", "graph_break_registry.json")
    with open(path) as handle:
        return json.load(handle)


def test_graph_break_ids_match_torch_registry():
    registry = _registry()
    for rule in ALL_RULES:
        if rule.gb_id is None:
            continue
        assert rule.gb_id in registry, f"{rule.code}: {rule.gb_id} not in torch's registry"
        types = {entry["Gb_type"] for entry in registry[rule.gb_id]}
        assert rule.gb_type in types, f"{rule.code}: {rule.gb_type!r} is not {rule.gb_id}'s type {types}"


def test_other_graph_break_types_are_torch_types():
    known = {entry["Gb_type"] for entries in _registry().values() for entry in entries}
    for rule in ALL_RULES:
        assert rule.gb_type or not rule.gb_types, f"{rule.code}: gb_types without a gb_type"
        for gb_type in rule.gb_types:
            assert gb_type in known, f"{rule.code}: {gb_type!r} is not a graph-break type torch knows"


def test_every_graph_break_type_a_rule_predicts_is_one_torch_knows():
    known = {entry["Gb_type"] for entries in _registry().values() for entry in entries}
    for rule in ALL_RULES:
        if rule.gb_type is not None:
            assert rule.gb_type in known, f"{rule.code}: {rule.gb_type!r} is not in torch's graph-break registry"
