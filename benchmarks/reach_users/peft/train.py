"""Fine-tuning step and generation, compiled."""

import torch


def train_step(model, input_ids, labels):
    loss = model(input_ids=input_ids, labels=labels).loss
    loss.backward()
    return loss


def base_logits(model, input_ids):
    """The frozen base model's logits (adapters switched off), e.g. for a KL penalty."""
    with model.disable_adapter():
        return model(input_ids=input_ids).logits


def generate(model, input_ids):
    return model.generate(input_ids=input_ids, max_new_tokens=3, do_sample=False)


compiled_train_step = torch.compile(train_step)
compiled_base_logits = torch.compile(base_logits)
compiled_generate = torch.compile(generate)
