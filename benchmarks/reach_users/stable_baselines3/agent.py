"""Policies of a small control task, built directly (no environment needed to build them)."""

import gymnasium as gym
import numpy as np
import torch
from stable_baselines3.common.policies import ActorCriticCnnPolicy, ActorCriticPolicy, MultiInputActorCriticPolicy
from stable_baselines3.dqn.policies import DQNPolicy
from stable_baselines3.sac.policies import SACPolicy

OBSERVATIONS = gym.spaces.Box(low=-1.0, high=1.0, shape=(6,), dtype=np.float32)


def constant_rate(_progress: float) -> float:
    return 3e-4


def discrete_policy() -> ActorCriticPolicy:
    return ActorCriticPolicy(OBSERVATIONS, gym.spaces.Discrete(3), constant_rate, net_arch=dict(pi=[16], vf=[16]))


def continuous_policy() -> ActorCriticPolicy:
    actions = gym.spaces.Box(low=-2.0, high=2.0, shape=(2,), dtype=np.float32)
    return ActorCriticPolicy(OBSERVATIONS, actions, constant_rate, net_arch=dict(pi=[16], vf=[16]))


def sac_policy() -> SACPolicy:
    actions = gym.spaces.Box(low=-1.0, high=1.0, shape=(2,), dtype=np.float32)
    return SACPolicy(OBSERVATIONS, actions, constant_rate, net_arch=[16])


def dqn_policy() -> DQNPolicy:
    return DQNPolicy(OBSERVATIONS, gym.spaces.Discrete(3), constant_rate, net_arch=[16])


def pixel_policy() -> ActorCriticCnnPolicy:
    frames = gym.spaces.Box(low=0, high=255, shape=(3, 36, 36), dtype=np.uint8)
    return ActorCriticCnnPolicy(frames, gym.spaces.Discrete(3), constant_rate, net_arch=[16])


def multi_input_policy() -> MultiInputActorCriticPolicy:
    spaces = gym.spaces.Dict({"state": OBSERVATIONS, "mode": gym.spaces.Discrete(5)})
    return MultiInputActorCriticPolicy(spaces, gym.spaces.Discrete(3), constant_rate, net_arch=[16])


def act(policy, observation):
    """The deployed agent's step: numpy observation in, numpy action out."""
    action, _state = policy.predict(observation, deterministic=True)
    return action


compiled_act = torch.compile(act)
