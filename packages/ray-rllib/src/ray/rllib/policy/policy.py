"""The Policy interface: compute actions, postprocess trajectories, learn from batches."""

from __future__ import annotations

import numpy as np

from ray.rllib.utils.annotations import DeveloperAPI


@DeveloperAPI
class Policy:
    """A policy maps observations to actions and learns from experience.

    Observations arrive already preprocessed and filtered (flat float arrays).
    """

    def __init__(self, observation_space, action_space, config):
        self.observation_space = observation_space
        self.action_space = action_space
        self.config = config

    def compute_actions(self, obs_batch, state_batches=None, prev_action_batch=None,
                        prev_reward_batch=None, info_batch=None, episodes=None, explore=None,
                        **kwargs):
        """Return ``(actions, state_outs, extra_fetches)`` for a batch of observations."""
        raise NotImplementedError

    def compute_single_action(self, obs, state=None, prev_action=None, prev_reward=None,
                              info=None, episode=None, clip_actions=False, explore=None,
                              **kwargs):
        state_batches = [np.asarray([s]) for s in (state or [])]
        actions, state_out, extra = self.compute_actions(
            np.asarray([obs]),
            state_batches,
            None if prev_action is None else np.asarray([prev_action]),
            None if prev_reward is None else np.asarray([prev_reward]),
            None if info is None else [info],
            None if episode is None else [episode],
            explore=explore,
            **kwargs,
        )
        action = actions[0]
        if clip_actions:
            action = clip_action(action, self.action_space)
        return action, [s[0] for s in state_out], {k: v[0] for k, v in extra.items()}

    def postprocess_trajectory(self, sample_batch, other_agent_batches=None, episode=None):
        return sample_batch

    def learn_on_batch(self, samples) -> dict:
        grads, info = self.compute_gradients(samples)
        self.apply_gradients(grads)
        return info

    def compute_gradients(self, postprocessed_batch):
        raise NotImplementedError

    def apply_gradients(self, gradients):
        raise NotImplementedError

    def get_weights(self):
        raise NotImplementedError

    def set_weights(self, weights) -> None:
        raise NotImplementedError

    def get_state(self):
        return self.get_weights()

    def set_state(self, state) -> None:
        self.set_weights(state)

    def on_global_var_update(self, global_vars: dict) -> None:
        self.global_timestep = global_vars.get("timestep", 0)

    def get_initial_state(self) -> list:
        return []

    def num_state_tensors(self) -> int:
        return len(self.get_initial_state())

    def export_model(self, export_dir: str) -> None:
        raise NotImplementedError

    def export_checkpoint(self, export_dir: str) -> None:
        raise NotImplementedError


def clip_action(action, space):
    """``np.clip`` a Box action into its bounds (other spaces pass through)."""
    low = getattr(space, "low", None)
    if low is None or space.dtype.kind not in "f":
        return action
    return np.clip(action, space.low, space.high)
