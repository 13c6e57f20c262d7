"""A PPO-style update and a SAC actor update, each compiled as one step (loss and backward)."""

import torch


def ppo_step(policy, observations, actions, old_log_prob, advantages, returns, clip_range=0.2):
    values, log_prob, entropy = policy.evaluate_actions(observations, actions)
    ratio = torch.exp(log_prob - old_log_prob)
    policy_loss = -torch.min(advantages * ratio, advantages * torch.clamp(ratio, 1 - clip_range, 1 + clip_range)).mean()
    value_loss = torch.nn.functional.mse_loss(returns, values.flatten())
    loss = policy_loss + 0.5 * value_loss - 0.01 * entropy.mean()
    loss.backward()
    return loss


def sac_actor_step(policy, observations, alpha=0.2):
    actions, log_prob = policy.actor.action_log_prob(observations)
    q_values = torch.cat(policy.critic(observations, actions), dim=1)
    loss = (alpha * log_prob - q_values.min(dim=1).values).mean()
    loss.backward()
    return loss


def entropy_bonus(policy, observations):
    """What an exploration schedule reads: the entropy of the current action distribution."""
    return policy.get_distribution(observations).entropy().mean()


compiled_ppo_step = torch.compile(ppo_step)
compiled_sac_actor_step = torch.compile(sac_actor_step)
compiled_entropy_bonus = torch.compile(entropy_bonus)
