"""Write compile_lint/rules/support/torch_tables.py from the installed torch's own tables.

    python -m compile_lint.rules.support.generate_tables --write   # regenerate the module
    python -m compile_lint.rules.support.generate_tables --check   # exit 1 if it is out of date

What breaks is torch's to say, not ours: the tables come from the ATen op tags
(`torch.Tag.dynamic_output_shape`, `torch.Tag.data_dependent_output`, which the fake-tensor
implementations turn into DynamicOutputShapeException / DataDependentOutputException),
Dynamo's trace rules (`torch._dynamo.trace_rules`: the torch functions it wraps as
SkipFunctionVariable, the standard-library and third-party modules it skips). Rules'
graph-break types are checked against torch's graph-break registry by
tests/test_rule_metadata.py. An op is mapped to the Python spellings users write by its name
(`aten::nonzero` -> `torch.nonzero`, `Tensor.nonzero`; `aten::_unique2` and
`aten::unique_dim` -> `torch.unique`; `aten::linalg_lstsq` -> `torch.linalg.lstsq`;
`aten::one_hot` -> `torch.nn.functional.one_hot`), keeping only names the installed torch
has. Which overload a call picks (tensor repeats, a boolean index, no `num_classes`) depends
on its arguments: the rules decide that, and say why.

torch is imported only here, never by the linter: the rules read the generated module.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import Iterable

TABLES_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_tables.py")
COMMAND = "python -m compile_lint.rules.support.generate_tables --write"


def aten_overloads() -> list:
    """Every ATen op overload the dispatcher knows, sorted by name."""
    import torch

    found = {}
    for full in torch._C._dispatch_get_all_op_names():
        namespace, _, rest = full.partition("::")
        if namespace != "aten":
            continue
        base, _, overload = rest.partition(".")
        try:
            op = getattr(getattr(torch.ops.aten, base), overload or "default")
        except (AttributeError, RuntimeError):
            continue
        found[str(op)] = op
    return [found[name] for name in sorted(found)]


def tagged(overloads: Iterable, tag) -> list[str]:
    """`aten::name.overload` of every overload carrying `tag`."""
    return [f"{op._schema.name}.{op._overloadname}" for op in overloads if tag in op.tags]


def _base_names(op_name: str) -> list[str]:
    """The public names an ATen op goes by: `_unique2` -> unique, `unique_dim_consecutive` -> unique_consecutive."""
    base = op_name.split("::", 1)[1].split(".", 1)[0]
    stripped = re.sub(r"\d+$", "", base.lstrip("_"))
    names = [stripped, stripped.replace("_dim", "", 1)] if "_dim" in stripped else [stripped]
    return list(dict.fromkeys(name for name in names if name))


def python_spellings(op_names: Iterable[str]) -> tuple[dict[str, list[str]], dict[str, list[str]]]:
    """(functions, methods): qualified Python function names and Tensor method names -> the ATen overloads."""
    import torch
    import torch.nn.functional as functional

    functions: dict[str, set[str]] = {}
    methods: dict[str, set[str]] = {}
    for op_name in op_names:
        for name in _base_names(op_name):
            owners = [("torch", torch, name), ("torch.nn.functional", functional, name)]
            if name.startswith("linalg_"):
                owners.append(("torch.linalg", torch.linalg, name[len("linalg_"):]))
            for prefix, owner, attr in owners:
                if callable(getattr(owner, attr, None)):
                    functions.setdefault(f"{prefix}.{attr}", set()).add(op_name)
            if callable(getattr(torch.Tensor, name, None)):
                methods.setdefault(name, set()).add(op_name)
    return ({k: sorted(v) for k, v in sorted(functions.items())}, {k: sorted(v) for k, v in sorted(methods.items())})


def skipped_torch_functions() -> list[str]:
    """Torch functions Dynamo does not trace: "Attempted to call function marked as skipped"."""
    from torch._dynamo import trace_rules
    from torch._dynamo.variables import SkipFunctionVariable

    return sorted(name for name, rule in trace_rules.manual_torch_name_rule_map.items()
                  if rule is SkipFunctionVariable and "#" not in name)


def skipped_modules() -> tuple[list[str], list[str]]:
    """(standard library, third party) modules whose frames Dynamo skips."""
    from torch._dynamo import trace_rules

    return (sorted(module.__name__ for module in trace_rules.BUILTIN_SKIPLIST), sorted(trace_rules.THIRDPARTY_SKIPLIST))


def _tuple(name: str, values: Iterable[str], comment: str) -> str:
    lines = [f"# {line}" for line in comment.splitlines()] + [f"{name} = ("]
    lines += [f"    {value!r}," for value in values] + [")", ""]
    return "\n".join(lines)


def _mapping(name: str, mapping: dict[str, list[str]], comment: str) -> str:
    lines = [f"# {line}" for line in comment.splitlines()] + [f"{name} = {{"]
    for key, values in mapping.items():
        lines.append(f"    {key!r}: ({', '.join(repr(v) for v in values)}{',' if len(values) == 1 else ''}),")
    lines += ["}", ""]
    return "\n".join(lines)


def render() -> str:
    """The text of torch_tables.py for the installed torch."""
    import torch

    overloads = aten_overloads()
    dynamic = tagged(overloads, torch.Tag.dynamic_output_shape)
    data_dependent = tagged(overloads, torch.Tag.data_dependent_output)
    dynamic_functions, dynamic_methods = python_spellings(dynamic)
    data_functions, data_methods = python_spellings(data_dependent)
    stdlib, third_party = skipped_modules()
    version = torch.__version__.split("+")[0]
    parts = [
        f'"""What torch {version} itself says breaks a graph: generated, do not edit.\n\n'
        f"Regenerate with `{COMMAND}`\n(tests/test_torch_tables.py checks it is current);\n"
        'compile_lint/rules/support/generate_tables.py says where each table comes from.\n"""\n',
        f"TORCH_VERSION = {version!r}\n",
        _tuple("DYNAMIC_OUTPUT_SHAPE_OPS", sorted(set(dynamic)),
               "ATen ops tagged torch.Tag.dynamic_output_shape: their output size depends on data\n"
               "(\"Dynamic shape operator\" under the default compile)."),
        _mapping("DYNAMIC_OUTPUT_SHAPE_FUNCTIONS", dynamic_functions,
                 "Python functions spelling those ops -> the ops."),
        _mapping("DYNAMIC_OUTPUT_SHAPE_METHODS", dynamic_methods, "Tensor methods spelling those ops -> the ops."),
        _tuple("DATA_DEPENDENT_OUTPUT_OPS", sorted(set(data_dependent)),
               "ATen ops tagged torch.Tag.data_dependent_output: fake tensors cannot compute their\n"
               "result (DataDependentOutputException, \"Data dependent operator\")."),
        _mapping("DATA_DEPENDENT_OUTPUT_FUNCTIONS", data_functions, "Python functions spelling those ops -> the ops."),
        _mapping("DATA_DEPENDENT_OUTPUT_METHODS", data_methods, "Tensor methods spelling those ops -> the ops."),
        _tuple("SKIPPED_TORCH_FUNCTIONS", skipped_torch_functions(),
               "torch functions Dynamo wraps as SkipFunctionVariable (trace_rules.manual_torch_name_rule_map):\n"
               "a call from traced code is \"Attempted to call function marked as skipped\"."),
        _tuple("SKIPPED_STDLIB_MODULES", stdlib, "Standard-library modules in trace_rules.BUILTIN_SKIPLIST."),
        _tuple("SKIPPED_THIRD_PARTY_MODULES", third_party, "Third-party modules in trace_rules.THIRDPARTY_SKIPLIST."),
    ]
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", action="store_true", help="rewrite torch_tables.py")
    group.add_argument("--check", action="store_true", help="exit 1 when torch_tables.py is out of date")
    args = parser.parse_args(argv)
    text = render()
    if args.write:
        with open(TABLES_PATH, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        return 0
    with open(TABLES_PATH, encoding="utf-8") as handle:
        current = handle.read()
    if current != text:
        print(f"{TABLES_PATH} is out of date: run `{COMMAND}`", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
