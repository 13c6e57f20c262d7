"""The loop over every candidate (JIT207's fix of a `for` over `nonzero()`): where it applies, where it must not.

JIT207's own examples prove the fixed code compiles as one graph and computes the same
(tests/test_fix_proof.py); the real MoE blocks of six transformers models are measured by
benchmarks/graphmend_table.py. These tests pin the decisions in between.
"""

from __future__ import annotations

import textwrap

import pytest

from compile_lint.engine.api import fix_text, lint_source
from compile_lint.rules import RULES_BY_CODE
from compile_lint.settings.config import Config
from compile_lint.testing import only

SHAPES = RULES_BY_CODE["JIT207"]
SETTING = "torch._dynamo.config.capture_dynamic_output_shape_ops = True"
MIXTRAL = """\
import torch
from torch import nn


class Experts(nn.Module):
    def forward(self, x, top_k_index, top_k_weights):
        out = torch.zeros_like(x)
        with torch.no_grad():
            expert_mask = torch.nn.functional.one_hot(top_k_index, num_classes=self.num_experts + 1)
            expert_mask = expert_mask.permute(2, 1, 0)
            expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
        for expert_idx in expert_hit:
            expert_idx = expert_idx[0]
            BODY
        return out
"""
STEP = """top_k_pos, token_idx = torch.where(expert_mask[expert_idx])
            h = x[token_idx] @ self.weight[expert_idx]
            out.index_add_(0, token_idx, h * top_k_weights[token_idx, top_k_pos, None])"""


def _fixed(source: str) -> str:
    outcome = fix_text(source, "m.py", Config(select=("JIT207",)), unsafe=True)
    assert outcome.error is None
    return outcome.text


def _loop_finding(source: str):
    found = [d for d in lint_source(source, "m.py", only(SHAPES)).diagnostics if "iterates the indices" in d.message]
    assert len(found) == 1, [d.message for d in lint_source(source, "m.py", only(SHAPES)).diagnostics]
    return found[0]


def test_a_padding_class_the_body_skips_is_left_out_with_its_skip():
    skip = "if expert_idx == self.num_experts:\n                continue\n            "
    source = MIXTRAL.replace("BODY", skip + STEP)
    fixed = _fixed(source)
    assert "for expert_idx in range(self.num_experts):" in fixed
    assert "expert_hit" not in fixed and "expert_idx[0]" not in fixed and "continue" not in fixed
    assert fixed.count(SETTING) == 1


def test_a_padding_class_the_body_would_index_weights_with_is_left_out_and_said_so():
    """dbrx: no skip; the original could not index `self.weight` with the padding class either."""
    finding = _loop_finding(MIXTRAL.replace("BODY", STEP))
    assert finding.fix is not None and "leaves out the last class, `self.num_experts`" in finding.fix.message
    assert "for expert_idx in range(self.num_experts):" in _fixed(MIXTRAL.replace("BODY", STEP))


def test_a_body_that_reads_only_the_mask_keeps_the_padding_class():
    body = """top_k_pos, token_idx = torch.where(expert_mask[expert_idx])
            out.index_add_(0, token_idx, x[token_idx])"""
    assert "for expert_idx in range(self.num_experts + 1):" in _fixed(MIXTRAL.replace("BODY", body))


def test_a_file_that_captures_already_gets_no_second_setting_line():
    source = MIXTRAL.replace("from torch import nn\n", f"from torch import nn\n\n{SETTING}\n").replace("BODY", STEP)
    assert _fixed(source).count(SETTING) == 1


def test_a_mask_of_unknown_sign_is_fixed_with_the_assumption_named():
    """switch_transformers: the one-hot mask comes from the caller; `sum > 0` finds its rows only if it is >= 0."""
    source = textwrap.dedent("""\
        import torch
        from torch import nn


        class Experts(nn.ModuleDict):
            def forward(self, x, selected, weights):
                out = torch.zeros_like(x)
                expert_mask = selected.permute(2, 1, 0)
                expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
                for expert_idx in expert_hit:
                    idx, top_x = torch.where(expert_mask[expert_idx].squeeze(0))
                    h = self[f"expert_{expert_idx[0]}"](x[top_x]) * weights[top_x, idx, None]
                    out.index_add_(0, top_x, h)
                return out
        """)
    finding = _loop_finding(source)
    assert finding.fix is not None and "assumes `expert_mask` holds no negative values" in finding.fix.message
    fixed = _fixed(source)
    assert "for expert_idx in range(expert_mask.shape[0]):" in fixed
    assert 'self[f"expert_{expert_idx}"]' in fixed and "torch.where(expert_mask[expert_idx])" in fixed
    # The permuted mask's first dim is the caller's last (the experts), no batch size: no JIT503 on the loop.
    linted = lint_source(fixed, "m.py", Config(select=("JIT503",))).diagnostics
    assert not linted, [d.message for d in linted]


@pytest.mark.parametrize("body,reason", [
    ("top_k_pos, token_idx = torch.where(expert_mask[expert_idx])\n            outputs.append(x[token_idx])",
     "acts on more than its selection"),
    ("top_k_pos, token_idx = torch.where(expert_mask[expert_idx])\n            last = x[token_idx]",
     "`last`, which the loop body binds, is read outside the loop"),
    (STEP + "\n            if x.sum() > 0:\n                break", "ends the loop with `break`"),
    ("top_k_pos, token_idx = torch.where(other[expert_idx])\n            out.index_add_(0, token_idx, x[token_idx])",
     "acts on more than its selection"),  # a selection of another mask is not empty for a candidate not hit
    ("top_k_pos, token_idx = torch.where(expert_mask[expert_idx])\n            out.index_add_(0, token_idx, "
     "x[token_idx] * x[token_idx].max())", "`max()` in the loop body fails on an empty selection"),
    ("top_k_pos, token_idx = torch.where(expert_mask[expert_idx])\n            self.seen = token_idx",
     "assigns an attribute"),
    (STEP + "\n            out.index_add_(0, token_idx, x[token_idx] * expert_idx)", "is used as more than an index"),
])
def test_a_body_that_would_see_more_than_an_empty_selection_gets_no_fix(body, reason):
    source = MIXTRAL.replace("BODY", body).replace("        return out", "        return out, last" if "last" in body
                                                   else "        return out")
    source = source.replace("out = torch.zeros_like(x)", "out = torch.zeros_like(x)\n        outputs = []")
    finding = _loop_finding(source)
    assert finding.fix is None and reason in finding.message, finding.message
    assert "by hand: run every candidate where an empty selection changes nothing" in finding.message


def test_a_count_the_code_does_not_fix_gets_no_fix():
    source = MIXTRAL.replace("expert_mask.sum(dim=(-1, -2))", "expert_mask.sum(dim=-1)").replace("BODY", STEP)
    finding = _loop_finding(source)
    assert finding.fix is None and "the number of candidates is not known statically" in finding.message


def test_an_op_inside_the_loop_points_at_the_loop_not_at_the_setting():
    """With capture_dynamic_output_shape_ops the loop still breaks: the inner op's step is the loop's."""
    messages = [d.message for d in lint_source(MIXTRAL.replace("BODY", STEP), "m.py", only(SHAPES)).diagnostics]
    inner = [m for m in messages if "in a loop over the indices" in m]
    assert len(inner) == 1 and "capture_dynamic_output_shape_ops = True`" not in inner[0]


def test_ops_the_setting_compiles_are_not_reported_where_the_file_sets_it():
    source = textwrap.dedent(f"""\
        import torch
        from torch import nn

        {SETTING}


        class Picks(nn.Module):
            def forward(self, x):
                return x[x > 0].sum() + torch.nonzero(x).sum()
        """)
    assert not lint_source(source, "m.py", only(SHAPES)).diagnostics
