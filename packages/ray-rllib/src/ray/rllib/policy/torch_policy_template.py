"""``build_torch_policy``: a TorchPolicy class from a loss function and a few hooks."""

from __future__ import annotations

import sys

from ray.rllib.models.catalog import ModelCatalog
from ray.rllib.policy.torch_policy import TorchPolicy
from ray.rllib.utils.merge import merge_dicts


def build_torch_policy(name, loss_fn, get_default_config=None, stats_fn=None,
                       postprocess_fn=None, extra_action_out_fn=None, extra_grad_process_fn=None,
                       optimizer_fn=None, before_init=None, after_init=None,
                       make_model_and_action_dist=None, mixins=None):
    """Build a TorchPolicy subclass named ``name``.

    ``loss_fn(policy, batch_tensors) -> loss`` and ``stats_fn(policy, batch_tensors) -> dict``
    are called imperatively on each training batch.
    """

    def __init__(self, obs_space, action_space, config):
        if get_default_config:
            config = merge_dicts(get_default_config(), config)
        self.config = config
        if before_init:
            before_init(self, obs_space, action_space, config)
        if make_model_and_action_dist:
            model, dist_class = make_model_and_action_dist(self, obs_space, action_space, config)
        else:
            dist_class, num_outputs = ModelCatalog.get_action_dist(action_space, config["model"])
            model = ModelCatalog.get_model_v2(
                obs_space, action_space, num_outputs, config["model"]
            )
        TorchPolicy.__init__(self, obs_space, action_space, model, loss_fn, dist_class, config)
        for mixin in mixins or []:
            if hasattr(mixin, "__init__") and mixin.__init__ is not object.__init__:
                mixin.__init__(self, config)
        if after_init:
            after_init(self, obs_space, action_space, config)

    def postprocess_trajectory(self, sample_batch, other_agent_batches=None, episode=None):
        if postprocess_fn:
            return postprocess_fn(self, sample_batch, other_agent_batches, episode)
        return sample_batch

    def extra_grad_process(self):
        if extra_grad_process_fn:
            return extra_grad_process_fn(self)
        return TorchPolicy.extra_grad_process(self)

    def extra_action_out(self, input_dict, state_batches, model):
        return extra_action_out_fn(self, input_dict, state_batches, model)

    def optimizer(self):
        if optimizer_fn:
            return optimizer_fn(self, self.config)
        return TorchPolicy.optimizer(self)

    def extra_grad_info(self, batch_tensors):
        return stats_fn(self, batch_tensors) if stats_fn else {}

    namespace = {
        "__init__": __init__,
        "postprocess_trajectory": postprocess_trajectory,
        "extra_grad_process": extra_grad_process,
        "optimizer": optimizer,
        "extra_grad_info": extra_grad_info,
        "__module__": sys._getframe(1).f_globals.get("__name__", __name__),
    }
    if extra_action_out_fn:  # else TorchPolicy's: no extra outputs
        namespace["extra_action_out"] = extra_action_out
    bases = tuple(mixins or ()) + (TorchPolicy,)
    cls = type(name, bases, namespace)
    cls.__qualname__ = name
    return cls
