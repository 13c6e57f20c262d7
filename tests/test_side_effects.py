"""Side-effect rules (JIT6xx) beyond their calibrated examples: logger detection by meaning,
the eager-only guard fix's formatting, and look-alikes that must stay silent."""

from __future__ import annotations

import textwrap

import pytest

from compile_lint.autofix.apply import fix_text
from compile_lint.linter.config import Config
from compile_lint.linter.engine import lint_text


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
