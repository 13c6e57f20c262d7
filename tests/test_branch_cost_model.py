"""The cost model behind `tensor-branch-fix = "auto"` (fixes/branches/choice.py): with the
numbers measured on the H200 (benchmarks/results/h200_payoff/part2), torch.cond for an arm
with any heavy operation or submodule call, torch.where for elementwise work alone."""

from __future__ import annotations

import json
import os

import pytest

from compile_lint.fixes.branches.choice import ARM_COSTS, COND_OVERHEAD, arm_cost, operation_kind, prefers_cond
from tests.helpers import REPO


@pytest.mark.parametrize("call, kind", [
    ({"qualified": "torch.matmul"}, "matmul"),
    ({"qualified": "torch.nn.functional.conv2d"}, "convolution"),
    ({"qualified": "torch.linalg.cholesky"}, "linalg"),
    ({"qualified": "torch.fft.rfft"}, "fft"),
    ({"qualified": "torch.nn.functional.scaled_dot_product_attention"}, "attention"),
    ({"qualified": "torch.tanh"}, "elementwise"),
    ({"qualified": "torch.tanh", "method": "bmm"}, "matmul"),  # `x.bmm(y)` resolved through x
    ({"method": "mm"}, "matmul"),
    ({"method": "sum"}, "elementwise"),
    ({"submodule": True}, "submodule"),
    ({"qualified": "torch.relu", "submodule": True}, "elementwise"),
    ({"matmul_operator": True}, "matmul"),
])
def test_operations_are_sorted_into_the_tables_kinds(call, kind):
    assert operation_kind(**call) == kind and kind in ARM_COSTS


def test_the_measured_numbers_give_cond_for_any_heavy_operation():
    assert not prefers_cond([]) and not prefers_cond(["elementwise"] * 20)
    for kind in ARM_COSTS:
        assert prefers_cond(["elementwise", kind]) is (kind != "elementwise"), kind
    assert arm_cost(["matmul", "matmul", "elementwise"]) == 2 * ARM_COSTS["matmul"] > COND_OVERHEAD


def test_the_numbers_are_the_committed_measurement():
    """COND_OVERHEAD and a matmul's cost as the large default-mode rows of the H200 run give them."""
    path = os.path.join(REPO, "benchmarks", "results", "h200_payoff", "part2", "fix_payoff.json")
    with open(path, encoding="utf-8") as handle:
        rows = {(row["size"], row["depth"], row["mode"]): row for row in json.load(handle)["branches"]["rows"]}
    untaken = {depth: rows[("large", depth, "default")]["untaken_arm_ms"] for depth in (0, 4)}
    assert ARM_COSTS["matmul"] == pytest.approx((untaken[4] - untaken[0]) / 4, abs=0.005)
    assert COND_OVERHEAD == pytest.approx(rows[("large", 0, "default")]["cond_overhead_ms"], abs=0.0005)
