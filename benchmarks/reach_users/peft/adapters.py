"""LoRA adapters on a small causal language model (a tiny Llama built from its config: no download),
and on a user's own MLP; the PEFT README's layout."""

import torch
from peft import LoraConfig, get_peft_model
from transformers import LlamaConfig, LlamaForCausalLM

TINY_LLAMA = dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=2,
                  num_key_value_heads=1, max_position_embeddings=64, pad_token_id=0, bos_token_id=1, eos_token_id=2)


def _base():
    return LlamaForCausalLM(LlamaConfig(**TINY_LLAMA))


def lora_llama():
    config = LoraConfig(r=4, lora_alpha=8, lora_dropout=0.1, target_modules=["q_proj", "v_proj"],
                        task_type="CAUSAL_LM")
    return get_peft_model(_base(), config)


def dora_llama():
    """Weight-decomposed LoRA on every linear layer."""
    config = LoraConfig(r=4, lora_alpha=8, use_dora=True, target_modules="all-linear", task_type="CAUSAL_LM")
    return get_peft_model(_base(), config)


class MLP(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.seq = torch.nn.Sequential(torch.nn.Linear(10, 16), torch.nn.ReLU(), torch.nn.Linear(16, 2))

    def forward(self, x):
        return self.seq(x)


def lora_mlp():
    """A custom model: the layers to adapt named by their module names, the head trained fully."""
    config = LoraConfig(r=2, target_modules=["seq.0"], modules_to_save=["seq.2"])
    return get_peft_model(MLP(), config)
