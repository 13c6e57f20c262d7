"""The cost model behind `tensor-branch-fix = "auto"` (fixes/branches/choice.py): until GPU
numbers are plugged in, its table must give exactly today's rule: torch.cond for an arm with
any heavy operation or submodule call, torch.where for elementwise work alone."""

from __future__ import annotations

import pytest

from compile_lint.fixes.branches.choice import ARM_COSTS, COND_OVERHEAD, arm_cost, operation_kind, prefers_cond


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


def test_todays_numbers_give_todays_rule():
    assert not prefers_cond([]) and not prefers_cond(["elementwise"] * 20)
    for kind in ARM_COSTS:
        assert prefers_cond(["elementwise", kind]) is (kind != "elementwise"), kind
    assert arm_cost(["matmul", "matmul", "elementwise"]) == 2 * ARM_COSTS["matmul"] > COND_OVERHEAD
