"""Side-effect rules (JIT6xx) beyond their calibrated examples: logger detection by meaning,
the eager-only guard fix's formatting, and look-alikes that must stay silent."""

from __future__ import annotations

import textwrap

import pytest

from compile_lint.engine.api import fix_text
from compile_lint.engine.lint import lint_text
from compile_lint.settings.config import Config


def _codes(code: str, select: str = "JIT6") -> list[tuple[str, int]]:
    source = textwrap.dedent(code).lstrip("\n")
    return [(d.code, d.line) for d in lint_text(source, "m.py", Config(select=(select,)))]


def _fix(code: str, select: str) -> str:
    source = textwrap.dedent(code).lstrip("\n")
    outcome = fix_text(source, "m.py", Config(select=(select,)), unsafe=True)
    assert outcome.error is None
    return outcome.text


@pytest.mark.parametrize(
    "setup, call",
    [
        ("import logging\nlogger = logging.getLogger(__name__)", "logger.info('x')"),
        ("from logging import getLogger\nLOG = getLogger('m')", "LOG.debug('x %s', 1)"),
        ("from ...utils import logging\nlogger = logging.get_logger(__name__)", "logger.warning_once('x')"),
        ("from transformers.utils import logging\nlogger = logging.get_logger(__name__)", "logger.info_once('x')"),
        ("from accelerate.logging import get_logger\nlogger = get_logger(__name__)", "logger.info('x')"),
        ("from .utils import logger", "logger.warning('x')"),
        ("import logging", "logging.getLogger('m').info('x')"),
        ("import logging", "logging.warning('x')"),
        ("from absl import logging", "logging.info('x')"),
        ("import logging\ntry:\n    log = logging.getLogger('m')\nexcept Exception:\n    log = None", "log.error('x')"),
    ],
)
def test_loggers_are_recognised_by_what_made_them(setup, call):
    module = f"class M(nn.Module):\n    def forward(self, x):\n        {call}\n        return x\n"
    code = f"{setup}\nimport torch\nfrom torch import nn\n\n{module}"
    assert [c for c, _ in _codes(code, "JIT602")] == ["JIT602"]


def test_logger_on_self_and_local_logger():
    code = """
        import logging
        from torch import nn

        class M(nn.Module):
            def __init__(self):
                super().__init__()
                self.logger = logging.getLogger("m")

            def forward(self, x):
                local = logging.getLogger("local")
                self.logger.info("a")
                local.debug("b")
                return x
    """
    assert _codes(code, "JIT602") == [("JIT602", 11), ("JIT602", 12)]


def test_non_loggers_named_like_loggers_are_silent():
    code = """
        import math
        import torch
        from torch import nn

        class Logger:
            def info(self, msg):
                return msg

        logger = Logger()
        log = torch.log

        class M(nn.Module):
            def forward(self, x):
                y = log(x.abs() + 1)
                z = math.log(2.0)
                logger.info("not a logging.Logger")
                return y + z
    """
    assert _codes(code, "JIT602") == []


def test_logging_outside_compiled_regions_and_in_eager_branches_is_silent():
    code = """
        import logging
        import torch
        from torch import nn

        logger = logging.getLogger(__name__)
        logger.info("import time")

        def train(model, x):
            logger.info("training")
            print("step")
            return model(x)

        class M(nn.Module):
            def forward(self, x):
                if not torch.compiler.is_compiling():
                    logger.info("eager only")
                    print("eager only")
                return x
    """
    assert _codes(code) == []


def test_guard_fix_keeps_comments_and_indentation_and_adds_import_once():
    fixed = _fix(
        """
        import logging
        from torch import nn

        logger = logging.getLogger(__name__)

        class M(nn.Module):
            def forward(self, x):
                # shapes for debugging
                print("in", x.shape)  # noisy
                logger.info("out %s", x.shape)
                return x
        """,
        "JIT60",
    )
    assert fixed == textwrap.dedent(
        """\
        import logging
        from torch import nn
        import torch

        logger = logging.getLogger(__name__)

        class M(nn.Module):
            def forward(self, x):
                # shapes for debugging
                if not torch.compiler.is_compiling():
                    print("in", x.shape)  # noisy
                if not torch.compiler.is_compiling():
                    logger.info("out %s", x.shape)
                return x
        """
    )


def test_guard_fix_uses_the_files_spelling_of_torch():
    fixed = _fix(
        """
        import torch as T
        from torch import compiler

        class M(T.nn.Module):
            def forward(self, x):
                print(x)
                return x
        """,
        "JIT601",
    )
    assert "if not compiler.is_compiling():" in fixed
    assert fixed.count("import") == 2


def test_guard_fix_is_not_offered_where_it_would_change_more_than_the_call():
    code = """
        import torch
        from torch import nn

        class M(nn.Module):
            def forward(self, x, verbose: bool = False):
                if verbose: print(x)
                y = x * 2; print(y)
                n = print(y) or 1
                return y * n
    """
    source = textwrap.dedent(code).lstrip("\n")
    diagnostics = lint_text(source, "m.py", Config(select=("JIT601",)))
    assert [d.line for d in diagnostics] == [6, 7, 8]
    assert all(d.fix is None for d in diagnostics)


def test_non_emitting_logger_methods_are_flagged_without_a_fix():
    source = textwrap.dedent(
        """
        import logging
        from torch import nn
        logger = logging.getLogger(__name__)

        class M(nn.Module):
            def forward(self, x):
                if logger.isEnabledFor(logging.DEBUG):
                    x = x * 2
                return x
        """
    ).lstrip("\n")
    (diagnostic,) = lint_text(source, "m.py", Config(select=("JIT602",)))
    assert diagnostic.fix is None


def test_jit_ignore_does_not_hide_a_function_from_dynamo():
    # Measured on torch 2.13: Dynamo traces @torch.jit.ignore functions (print inside breaks).
    code = """
        import torch
        from torch import nn

        class M(nn.Module):
            @torch.jit.ignore
            def helper(self, x):
                print(x)
                return x

            def forward(self, x):
                return self.helper(x)
    """
    assert _codes(code, "JIT601") == [("JIT601", 7)]


def test_data_ptr_alone_and_membership_are_silent():
    code = """
        import torch
        from torch import nn

        class M(nn.Module):
            def forward(self, x, y):
                key = x.data_ptr()
                shared = x.data_ptr() in {1, 2}
                same = x.data_ptr() == y.data_ptr()
                return x
    """
    assert _codes(code, "JIT604") == [("JIT604", 8)]


def test_thread_primitive_methods_need_a_thread_primitive():
    code = """
        import threading
        from torch import nn

        _lock = threading.Lock()
        _event = threading.Event()

        class M(nn.Module):
            def forward(self, x):
                cache = {}
                cache.clear()
                _event.wait()
                with _lock:
                    pass
                return x
    """
    assert _codes(code, "JIT60") == [("JIT607", 11), ("JIT606", 12)]


def test_module_hooks_flagged_tensor_hooks_not():
    code = """
        import torch
        from torch import nn

        class M(nn.Module):
            def forward(self, x):
                x.register_hook(lambda g: g)
                for m in self.modules():
                    m.register_forward_pre_hook(lambda *a: None)
                return x
    """
    assert _codes(code, "JIT610") == [("JIT610", 8)]


def test_compiler_disabled_call_is_off_by_default_and_matches_methods_and_functions():
    code = """
        import torch
        from torch import nn

        @torch.compiler.disable
        def host(x):
            return x

        class M(nn.Module):
            @torch.compiler.disable
            def side(self, x):
                return x

            def host(self, x):
                return x

            def forward(self, x):
                return host(self.side(self.host(x)))
    """
    assert _codes(code, "JIT") == []  # perf rules need a selector beyond the bare prefix
    assert sorted(_codes(code, "JIT611")) == [("JIT611", 17), ("JIT611", 17)]


# ----- is-compiling, every spelling: no guard inside code a test already confines ----------

# transformers 5.23.0, activations.py (XIELUActivation.forward): the warning sits in the
# `else` of `if not is_torchdynamo_compiling():`, so it runs only under compile.
XIELU_FORWARD = '''
from torch import Tensor, nn

from .utils import logging
from .utils.import_utils import is_torchdynamo_compiling

logger = logging.get_logger(__name__)


class XIELUActivation(nn.Module):
    def forward(self, input: Tensor) -> Tensor:
        if self._xielu_cuda_obj is not None and input.is_cuda:
            if not is_torchdynamo_compiling():
                return self._xielu_cuda_fn(input)
            else:
                logger.warning_once("torch._dynamo is compiling, using Python version of xIELU.")
        return self._xielu_python(input)
'''

# transformers 5.23.0, modeling_utils.py (PreTrainedModel.warn_if_padding_and_no_attention_mask),
# called from forward as BERT-style models do: `is_tracing(input_ids)` is True under Dynamo,
# so the early return leaves the warning to eager runs.
WARN_IF_PADDING = '''
from torch import nn

from .utils import is_tracing, logging

logger = logging.get_logger(__name__)


class Model(nn.Module):
    def forward(self, input_ids, attention_mask=None):
        self.warn_if_padding_and_no_attention_mask(input_ids, attention_mask)
        return input_ids

    def warn_if_padding_and_no_attention_mask(self, input_ids, attention_mask):
        """
        Shows a one-time warning if the input_ids appear to contain padding and no attention mask was given.
        """

        # Skip the check during tracing.
        if is_tracing(input_ids):
            return

        if (attention_mask is not None) or (self.config.pad_token_id is None):
            return

        # Check only the first and last input IDs to reduce overhead.
        if self.config.pad_token_id in input_ids[:, [-1, 0]]:
            warn_string = (
                "We strongly recommend passing in an `attention_mask` since your input_ids may be padded. See "
                "https://huggingface.co/docs/transformers/troubleshooting"
                "#incorrect-output-when-padding-tokens-arent-masked."
            )
            logger.warning_once(warn_string)
'''


def test_a_log_call_only_compiled_runs_reach_gets_no_guard_that_would_kill_it():
    source = textwrap.dedent(XIELU_FORWARD).lstrip("\n")
    (finding,) = lint_text(source, "activations.py", Config(select=("JIT602",)))
    assert finding.line == 15
    assert finding.fix is None, "a `not is_compiling()` guard in compile-only code is dead code"
    assert "runs only under torch.compile" in finding.message
    assert _fix(XIELU_FORWARD, "JIT602") == source


def test_code_after_an_is_tracing_early_return_is_eager_only_and_not_flagged():
    assert _codes(WARN_IF_PADDING, "JIT602") == []


@pytest.mark.parametrize(
    "setup, test",
    [
        ("from transformers.utils import is_torchdynamo_compiling", "not is_torchdynamo_compiling()"),
        ("from ...utils.import_utils import is_torchdynamo_compiling as compiling", "not compiling()"),
        ("from transformers.utils import is_tracing", "not is_tracing(x)"),
        ("from ..utils import is_tracing", "not is_tracing()"),
        ("import torch._dynamo", "not torch._dynamo.is_compiling()"),
        ("from torch.compiler import is_dynamo_compiling", "not is_dynamo_compiling()"),
        ("from timm.optim._helpers import _is_compiling", "not _is_compiling()"),
        ("import torch", "not bool(torch.compiler.is_compiling())"),
        ("from transformers.utils import is_torchdynamo_exporting", "is_torchdynamo_exporting()"),
        ("import torch", "torch.compiler.is_exporting() or torch.jit.is_scripting()"),
    ],
)
def test_every_spelling_of_is_compiling_makes_a_branch_eager_only(setup, test):
    code = _warning_module(f"if {test}:\n            warnings.warn('eager only')", setup)
    assert _codes(code, "JIT603") == []


@pytest.mark.parametrize(
    "body",
    [
        # a local bound once to the predicate (diffusers' transformer_anyflow.py spells it so)
        "compiling = torch.compiler.is_compiling()\n        if not compiling:\n            warnings.warn('eager')",
        "if torch.compiler.is_compiling():\n            return x\n        warnings.warn('eager')",
        "if torch.compiler.is_compiling(): return x\n        warnings.warn('eager')",
        "for _ in range(2):\n            if torch.compiler.is_compiling():\n                continue\n"
        "            warnings.warn('eager')",
    ],
)
def test_locals_and_early_exits_of_is_compiling_are_recognised(body):
    assert _codes(_warning_module(body), "JIT603") == []


@pytest.mark.parametrize(
    "body",
    [
        # rebound: the name no longer says whether we compile
        "compiling = torch.compiler.is_compiling()\n        compiling = x.dim() > 1\n"
        "        if not compiling:\n            warnings.warn('maybe')",
        # a parameter that shares the name of a local elsewhere
        "if not self.is_compiling():\n            warnings.warn('a method of the model')",
        # the early return does not always leave
        "if torch.compiler.is_compiling():\n            if x.dim() > 1:\n                return x\n"
        "        warnings.warn('both')",
        # not an is-compiling test: a call with arguments
        "if not is_compiling(x):\n            warnings.warn('other helper')",
    ],
)
def test_look_alikes_of_is_compiling_still_report_and_fix(body):
    (finding,) = _lint_findings(_warning_module(body, "from mylib import is_compiling"), "JIT603")
    assert finding.fix is not None


def test_compile_only_branches_are_recorded_and_get_no_guard():
    code = """
    import warnings
    import torch

    class M(torch.nn.Module):
        def forward(self, x):
            if torch.compiler.is_compiling():
                warnings.warn("compiled path")
            if not torch.compiler.is_compiling():
                return x
            print("only compiled runs get here")
            return x * 2
    """
    findings = _lint_findings(code, "JIT60")
    assert [(d.code, d.line, d.fix) for d in findings] == [("JIT603", 7, None), ("JIT601", 10, None)]


def test_guard_is_spelled_with_the_is_compiling_helper_the_file_imports():
    fixed = _fix(
        """
        import warnings

        import torch
        from ...utils import is_torchdynamo_compiling, logging

        logger = logging.get_logger(__name__)

        class M(torch.nn.Module):
            def forward(self, x):
                warnings.warn("slow path")
                if logger.isEnabledFor(10):
                    logger.info("x")
                return x
        """,
        "JIT60",
    )
    assert "if not is_torchdynamo_compiling():\n            warnings.warn" in fixed
    assert "if not is_torchdynamo_compiling() and logger.isEnabledFor(10):" in fixed
    assert "torch.compiler" not in fixed


def _lint_findings(code: str, select: str):
    return lint_text(textwrap.dedent(code).lstrip("\n"), "m.py", Config(select=(select,)))


def _warning_module(body: str, setup: str = "") -> str:
    """A module whose forward runs `body` (indented for forward's body)."""
    return f"""
import warnings
import torch
{setup}

class M(torch.nn.Module):
    def forward(self, x):
        {body}
        return x
"""


def test_guard_ignores_an_is_compiling_helper_imported_only_inside_another_function():
    fixed = _fix(
        """
        import warnings

        import torch

        def setup():
            from transformers.utils import is_torchdynamo_compiling
            return is_torchdynamo_compiling

        class M(torch.nn.Module):
            def forward(self, x):
                warnings.warn("slow path")
                return x
        """,
        "JIT603",
    )
    assert "if not torch.compiler.is_compiling():" in fixed


def test_a_fix_spells_torch_only_through_an_import_made_at_run_time():
    """transformers' import_utils.py imports torch only under TYPE_CHECKING: a fix naming torch imports it
    (before, the guard JIT602 wrote raised NameError when the module ran)."""
    source = textwrap.dedent("""\
        import logging
        from typing import TYPE_CHECKING

        from torch import nn

        if TYPE_CHECKING:
            import torch

        logger = logging.getLogger(__name__)


        class Net(nn.Module):
            def forward(self, x):
                logger.info("forward")
                return x + 1
        """)
    outcome = fix_text(source, "m.py", Config(select=("JIT602",)), unsafe=True)
    assert outcome.error is None and "if not torch.compiler.is_compiling():" in outcome.text
    namespace: dict = {}
    exec(compile(outcome.text, "m.py", "exec"), namespace)  # noqa: S102 - our own fixed source
    import torch

    assert torch.equal(namespace["Net"]()(torch.ones(2)), torch.full((2,), 2.0))


# ----- JIT609 requires-grad-in-forward: tensors made with requires_grad=True -----------------------


@pytest.mark.parametrize(
    "line, flagged",
    [
        ("w = torch.zeros(8, requires_grad=True)", True),
        ("w = torch.tensor(1.0, requires_grad=True)", True),
        ("w = torch.randn_like(x, requires_grad=True)", True),
        ("w = x.new_tensor([1.0], requires_grad=True)", True),
        ("w = torch.zeros(8, requires_grad=False)", False),
        ("w = torch.zeros(8, requires_grad=self.training)", False),  # not a literal True
        ("w = x.new_zeros(8, requires_grad=True)", False),  # compiles (measured)
        ("w = nn.Parameter(torch.zeros(8, requires_grad=True))", False),  # JIT612's line
        ("w = nn.Parameter(torch.zeros(8), requires_grad=True)", False),
    ],
)
def test_a_tensor_made_requiring_grad_in_forward(line, flagged):
    code = f"""
    import torch
    from torch import nn

    class M(nn.Module):
        def forward(self, x: torch.Tensor):
            {line}
            return x * w
    """
    assert _codes(code, "JIT609") == ([("JIT609", 6)] if flagged else [])


def test_a_tensor_made_requiring_grad_in_init_is_not_flagged():
    code = """
    import torch
    from torch import nn

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.w = torch.zeros(8, requires_grad=True)

        def forward(self, x):
            return x * 2
    """
    assert _codes(code, "JIT609") == []


# ----- JIT619 autograd-grad-call ------------------------------------------------------------------


@pytest.mark.parametrize(
    "header, call",
    [
        ("import torch", "torch.autograd.grad(y, x)"),
        ("from torch import autograd", "autograd.grad(y, x)"),
        ("import torch.autograd as ag", "ag.grad(y, x, create_graph=True)"),
        ("from torch.autograd import grad as g", "g(y, [x])"),
    ],
)
def test_every_spelling_of_autograd_grad_is_flagged(header, call):
    code = f"""
    {header}
    import torch
    from torch import nn

    class M(nn.Module):
        def forward(self, x):
            y = x.sin().sum()
            return {call}
    """
    assert _codes(code, "JIT619") == [("JIT619", 8)]


def test_look_alikes_of_autograd_grad_are_silent():
    code = """
    import torch
    from torch import nn

    class Tape:
        def grad(self, y, x):
            return x

    class M(nn.Module):
        def __init__(self):
            super().__init__()
            self.tape = Tape()

        def forward(self, x):
            g = torch.func.grad(lambda t: t.sin().sum())(x)
            return self.tape.grad(g, x) + torch.func.grad_and_value(lambda t: t.sum())(x)[0]
    """
    assert _codes(code, "JIT619") == []
