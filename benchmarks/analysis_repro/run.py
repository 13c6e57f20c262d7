"""Compile each reproduction in eval() and train() mode; print whether Dynamo breaks (default compile)
and whether fullgraph=True fails. Lint findings are printed by `compile-lint --select ALL pkg`."""
import torch
from compile_lint.verifier.probe import probe

from pkg import models

CASES = {
    "DetrLayer": [(torch.randn(2, 8),)],
    "Wav2Vec2Encoder": [(torch.randn(2, 8),)],
    "MusicgenDecoder": [(torch.randn(2, 8),)],
    "LongformerAttention": [(torch.randn(2, 4, 8), torch.tensor([[1, 0, 1, 0], [0, 0, 1, 0]]).bool())],
    "OmniRopeIndex": [(torch.tensor([3, 4, 4, 1]),)],
    "HunyuanEmbeddings": [(torch.randn(4, 8), torch.tensor([[1, 2, 2], [2, 2, 2]]))],
    "BriaTransformer": [(torch.randn(2, 8), torch.tensor([1.0]))],
    "DeepstackMerge": [(torch.randn(4, 8), torch.tensor([3, 1, 3, 2]))],
}
for name, calls in CASES.items():
    for training in (False, True):
        torch.manual_seed(0)
        module = getattr(models, name)().train(training)
        result = probe(module, calls)
        breaks = [b.splitlines()[0][:60] for b in result.graph_breaks]
        print(f"{name:20} {'train' if training else 'eval ':5} breaks={breaks} fullgraph_error={(result.fullgraph_error or '')[:70]!r} eager_error={result.eager_error}")
