import random

import torch
from torch import nn

from .layers import CheckpointingLayer


class DetrLayer(CheckpointingLayer):
    """DETR encoder layer: a training-only clamp, in a class whose nn.Module base is in layers.py."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, hidden_states):
        hidden_states = self.fc(hidden_states)
        if self.training:
            if not torch.isfinite(hidden_states).all():
                hidden_states = torch.clamp(hidden_states, min=-1e4, max=1e4)
        return hidden_states


class Wav2Vec2Encoder(nn.Module):
    """wav2vec2 layer-drop: a tensor flag built only in training."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(2)])
        self.layerdrop = 0.5

    def forward(self, hidden_states):
        synced_gpus = False
        for layer in self.layers:
            dropout_probability = torch.rand([])
            skip_the_layer = self.training and dropout_probability < self.layerdrop
            if not skip_the_layer or synced_gpus:
                hidden_states = layer(hidden_states)
        return hidden_states


class MusicgenDecoder(nn.Module):
    """musicgen layer-drop with Python's random: Dynamo traces the draw as a tensor."""

    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(8, 8) for _ in range(2)])
        self.layerdrop = 0.5

    def forward(self, hidden_states):
        for layer in self.layers:
            dropout_probability = random.uniform(0, 1)
            if self.training and (dropout_probability < self.layerdrop):
                continue
            hidden_states = layer(hidden_states)
        return hidden_states


class LongformerAttention(nn.Module):
    """Longformer: a 0-d tensor returned by a helper is a size in another helper."""

    @staticmethod
    def _get_global_attn_indices(is_index_global_attn):
        num_global_attn_indices = is_index_global_attn.long().sum(dim=1)
        max_num_global_attn_indices = num_global_attn_indices.max()
        return max_num_global_attn_indices, num_global_attn_indices

    def _concat_with_global_key_attn_probs(self, key_vectors, max_num_global_attn_indices):
        batch_size = key_vectors.shape[0]
        return key_vectors.new_zeros(batch_size, max_num_global_attn_indices, key_vectors.shape[-1])

    def forward(self, hidden_states, is_index_global_attn):
        max_num, _ = self._get_global_attn_indices(is_index_global_attn)
        extra = self._concat_with_global_key_attn_probs(hidden_states, max_num)
        return hidden_states.sum() + extra.sum()


class OmniRopeIndex(nn.Module):
    """qwen2.5-omni get_rope_index: counts bound to 0, then to tensors, used as a loop bound."""

    def forward(self, input_ids):
        image_nums, audio_nums = 0, 0
        audio_nums = torch.sum(input_ids == 3)
        image_nums = (input_ids == 4).sum()
        multimodal_nums = image_nums + audio_nums
        total = input_ids.float()
        for _ in range(multimodal_nums):
            total = total + 1
        return total


class HunyuanEmbeddings(nn.Module):
    """HunYuan-VL: per-image rows of grid_thw used as repeat counts."""

    def forward(self, embeddings, grid_thw: torch.Tensor):
        parts = []
        for t, h, w in grid_thw:
            parts.append(embeddings[:1].repeat(t, 1))
        return torch.cat(parts, dim=0)


class BriaTransformer(nn.Module):
    """Bria: an optional guidance tensor tested for truth."""

    def forward(self, hidden_states, guidance: torch.Tensor = None):
        if guidance is not None:
            guidance = guidance.to(hidden_states.dtype)
        else:
            guidance = None
        temb = hidden_states.mean()
        if guidance:
            temb = temb + guidance
        return hidden_states + temb


class DeepstackMerge(nn.Module):
    """qwen3-vl: a mask's sum used as a size, the mask passed into a helper."""

    def _deepstack_process(self, hidden_states, visual_pos_masks, visual_embeds):
        visual_pos_masks = visual_pos_masks.to(hidden_states.device)
        joint = hidden_states.new_zeros(visual_pos_masks.sum(), hidden_states.shape[-1])
        return joint.sum() + visual_embeds.sum()

    def forward(self, hidden_states, input_ids):
        image_mask = input_ids == 3
        return self._deepstack_process(hidden_states, image_mask, hidden_states)
