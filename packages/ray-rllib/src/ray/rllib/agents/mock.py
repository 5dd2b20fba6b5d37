"""Ray 0.7's mock trainers, registered with Tune as ``__fake``, ``__sigmoid_fake_data`` and
``__parameter_tuning`` (``tune.run("__fake")``): Trainers without an environment or
workers, for testing Tune and schedulers against RLlib's Trainer API.

* ``_MockTrainer`` (``__fake``): reward 10 every iteration; ``mock_error`` raises in the
  second iteration (again after a restore if ``persistent_error``); ``user_checkpoint_freq``
  asks Tune for a checkpoint every that many iterations; ``set_info``/``get_info`` keep a
  value that is saved and restored.
* ``_SigmoidFakeData`` (``__sigmoid_fake_data``): reward ``height * tanh(i / width)``
  from iteration ``offset`` on, a learning curve for early-stopping schedulers.
* ``_ParameterTuningTrainer`` (``__parameter_tuning``): reward ``reward_amt * iteration``.
"""

from __future__ import annotations

import os
import pickle

import numpy as np

from ray.rllib.agents.config import with_common_config
from ray.rllib.agents.trainer import Trainer
from ray.tune import result as tune_result


class _MockTrainer(Trainer):
    """Mock trainer for use in tests."""

    _name = "MockTrainer"
    _default_config = with_common_config({
        "mock_error": False,
        "persistent_error": False,
        "test_variable": 1,
        "num_workers": 0,
        "user_checkpoint_freq": 0,
        "object_store_memory_per_worker": 0,
        "object_store_memory": 0,
    })

    @classmethod
    def default_resource_request(cls, config):
        return None  # Tune's default: one CPU

    def _setup(self, config):
        # No environment and no workers: only the merged config (unknown keys rejected).
        self.config = self.merge_trainer_configs(self._default_config, config)
        self.evaluation_workers = None
        self.info = None
        self.restored = False

    def _train(self):
        if (self.config["mock_error"] and self.iteration == 1
                and (self.config["persistent_error"] or not self.restored)):
            raise Exception("mock error")
        result = dict(episode_reward_mean=10, episode_len_mean=10, timesteps_this_iter=10, info={})
        freq = self.config["user_checkpoint_freq"]
        if freq > 0 and self.iteration > 0 and self.iteration % freq == 0:
            result[tune_result.SHOULD_CHECKPOINT] = True
        return result

    def _save(self, checkpoint_dir):
        path = os.path.join(checkpoint_dir, "mock_agent.pkl")
        with open(path, "wb") as f:
            pickle.dump(self.info, f)
        return path

    def _restore(self, checkpoint_path):
        with open(checkpoint_path, "rb") as f:
            self.info = pickle.load(f)
        self.restored = True

    def _stop(self):
        pass

    def set_info(self, info):
        self.info = info
        return info

    def get_info(self):
        return self.info


class _SigmoidFakeData(_MockTrainer):
    """Trainer that returns sigmoid learning curves (for evaluating early stopping)."""

    _name = "SigmoidFakeData"
    _default_config = with_common_config({
        "width": 100,
        "height": 100,
        "offset": 0,
        "iter_time": 10,
        "iter_timesteps": 1,
        "num_workers": 0,
        "object_store_memory_per_worker": 0,
        "object_store_memory": 0,
    })

    def _train(self):
        i = max(0, self.iteration - self.config["offset"])
        v = np.tanh(float(i) / self.config["width"]) * self.config["height"]
        return dict(episode_reward_mean=v, episode_len_mean=v,
                    timesteps_this_iter=self.config["iter_timesteps"],
                    time_this_iter_s=self.config["iter_time"], info={})


class _ParameterTuningTrainer(_MockTrainer):
    _name = "ParameterTuningTrainer"
    _default_config = with_common_config({
        "reward_amt": 10,
        "dummy_param": 10,
        "dummy_param2": 15,
        "iter_time": 10,
        "iter_timesteps": 1,
        "num_workers": 0,
        "object_store_memory_per_worker": 0,
        "object_store_memory": 0,
    })

    def _train(self):
        return dict(episode_reward_mean=self.config["reward_amt"] * self.iteration,
                    episode_len_mean=self.config["reward_amt"],
                    timesteps_this_iter=self.config["iter_timesteps"],
                    time_this_iter_s=self.config["iter_time"], info={})


MOCK_ALGORITHMS = {
    "__fake": lambda: _MockTrainer,
    "__sigmoid_fake_data": lambda: _SigmoidFakeData,
    "__parameter_tuning": lambda: _ParameterTuningTrainer,
}
