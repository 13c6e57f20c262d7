"""What torch 2.13.0 itself says breaks a graph: generated, do not edit.

Regenerate with `python -m compile_lint.rules.support.generate_tables --write`
(tests/test_torch_tables.py checks it is current);
compile_lint/rules/support/generate_tables.py says where each table comes from.
"""

TORCH_VERSION = '2.13.0'

# ATen ops tagged torch.Tag.dynamic_output_shape: their output size depends on data
# ("Dynamic shape operator" under the default compile).
DYNAMIC_OUTPUT_SHAPE_OPS = (
    'aten::_ctc_loss.Tensor',
    'aten::_ctc_loss.default',
    'aten::_unique.default',
    'aten::_unique2.default',
    'aten::argwhere.default',
    'aten::bincount.default',
    'aten::index.Tensor',
    'aten::linalg_lstsq.default',
    'aten::linalg_lstsq.out',
    'aten::masked_select.default',
    'aten::masked_select.out',
    'aten::nonzero.default',
    'aten::nonzero.out',
    'aten::one_hot.default',
    'aten::repeat_interleave.Tensor',
    'aten::unique_consecutive.default',
    'aten::unique_dim.default',
    'aten::unique_dim_consecutive.default',
)

# Python functions spelling those ops -> the ops.
DYNAMIC_OUTPUT_SHAPE_FUNCTIONS = {
    'torch.argwhere': ('aten::argwhere.default',),
    'torch.bincount': ('aten::bincount.default',),
    'torch.ctc_loss': ('aten::_ctc_loss.Tensor', 'aten::_ctc_loss.default'),
    'torch.linalg.lstsq': ('aten::linalg_lstsq.default', 'aten::linalg_lstsq.out'),
    'torch.masked_select': ('aten::masked_select.default', 'aten::masked_select.out'),
    'torch.nn.functional.ctc_loss': ('aten::_ctc_loss.Tensor', 'aten::_ctc_loss.default'),
    'torch.nn.functional.one_hot': ('aten::one_hot.default',),
    'torch.nonzero': ('aten::nonzero.default', 'aten::nonzero.out'),
    'torch.repeat_interleave': ('aten::repeat_interleave.Tensor',),
    'torch.unique': ('aten::_unique.default', 'aten::_unique2.default', 'aten::unique_dim.default'),
    'torch.unique_consecutive': ('aten::unique_consecutive.default', 'aten::unique_dim_consecutive.default'),
}

# Tensor methods spelling those ops -> the ops.
DYNAMIC_OUTPUT_SHAPE_METHODS = {
    'argwhere': ('aten::argwhere.default',),
    'bincount': ('aten::bincount.default',),
    'index': ('aten::index.Tensor',),
    'masked_select': ('aten::masked_select.default', 'aten::masked_select.out'),
    'nonzero': ('aten::nonzero.default', 'aten::nonzero.out'),
    'repeat_interleave': ('aten::repeat_interleave.Tensor',),
    'unique': ('aten::_unique.default', 'aten::_unique2.default', 'aten::unique_dim.default'),
    'unique_consecutive': ('aten::unique_consecutive.default', 'aten::unique_dim_consecutive.default'),
}

# ATen ops tagged torch.Tag.data_dependent_output: fake tensors cannot compute their
# result (DataDependentOutputException, "Data dependent operator").
DATA_DEPENDENT_OUTPUT_OPS = (
    'aten::_local_scalar_dense.default',
    'aten::allclose.default',
    'aten::equal.default',
    'aten::item.default',
)

# Python functions spelling those ops -> the ops.
DATA_DEPENDENT_OUTPUT_FUNCTIONS = {
    'torch.allclose': ('aten::allclose.default',),
    'torch.equal': ('aten::equal.default',),
}

# Tensor methods spelling those ops -> the ops.
DATA_DEPENDENT_OUTPUT_METHODS = {
    'allclose': ('aten::allclose.default',),
    'equal': ('aten::equal.default',),
    'item': ('aten::item.default',),
}

# torch functions Dynamo wraps as SkipFunctionVariable (trace_rules.manual_torch_name_rule_map):
# a call from traced code is "Attempted to call function marked as skipped".
SKIPPED_TORCH_FUNCTIONS = (
    'torch._C._to_dlpack',
    'torch._C.set_anomaly_enabled',
    'torch._C.set_autocast_cpu_dtype',
    'torch._C.set_autocast_cpu_enabled',
    'torch._C.set_autocast_gpu_dtype',
    'torch._C.set_autocast_ipu_dtype',
    'torch._C.set_autocast_ipu_enabled',
    'torch._C.set_autocast_xla_dtype',
    'torch._C.set_autocast_xla_enabled',
    'torch._nested_tensor_from_mask',
    'torch.autograd.backward',
    'torch.cuda.get_rng_state',
    'torch.cuda.manual_seed',
    'torch.cuda.manual_seed_all',
    'torch.cuda.random.manual_seed',
    'torch.cuda.random.manual_seed_all',
    'torch.cuda.set_device',
    'torch.cuda.set_rng_state',
    'torch.distributed.destroy_process_group',
    'torch.distributions.constraints.is_dependent',
    'torch.get_rng_state',
    'torch.jit.isinstance',
    'torch.manual_seed',
    'torch.nn.utils.rnn.pack_padded_sequence',
    'torch.nn.utils.rnn.pad_packed_sequence',
    'torch.resize_as_',
    'torch.resize_as_sparse_',
    'torch.set_rng_state',
    'torch.to_dlpack',
    'torch.xpu.get_rng_state',
    'torch.xpu.set_rng_state',
)

# Standard-library modules in trace_rules.BUILTIN_SKIPLIST.
SKIPPED_STDLIB_MODULES = (
    'abc',
    'copy',
    'importlib',
    'linecache',
    'random',
    're',
)

# Third-party modules in trace_rules.THIRDPARTY_SKIPLIST.
SKIPPED_THIRD_PARTY_MODULES = (
    'fx2trt_oss',
    'hypothesis',
    'networkx',
    'numpy',
    'onnx',
    'onnx_tf',
    'onnxruntime',
    'pandas',
    'sklearn',
    'tabulate',
    'tensorflow',
    'tensorrt',
    'torch2trt',
    'tqdm',
    'tree',
    'tvm',
    'xarray',
)
