"""Policy mixins shared by algorithms: learning-rate schedule, adaptive KL coefficient."""

from __future__ import annotations

from ray.rllib.utils.schedules import PiecewiseSchedule


class LearningRateSchedule:
    """Sets the optimizer's lr from ``lr_schedule`` at each global timestep."""

    def __init__(self, config):
        schedule = config.get("lr_schedule")
        self.lr_schedule = PiecewiseSchedule(schedule) if schedule else None
        self.cur_lr = config.get("lr")

    def on_global_var_update(self, global_vars):
        super().on_global_var_update(global_vars)
        if self.lr_schedule is not None:
            self.cur_lr = self.lr_schedule.value(global_vars["timestep"])
            for group in self._optimizer.param_groups:
                group["lr"] = self.cur_lr


class KLCoeffMixin:
    """Adapt the KL penalty towards ``kl_target`` (PPO paper, section 4)."""

    def __init__(self, config):
        self.kl_coeff = config.get("kl_coeff", 0.0)
        self.kl_target = config.get("kl_target", 0.01)

    def get_state(self):
        return dict(super().get_state(), kl_coeff=self.kl_coeff)

    def set_state(self, state):
        super().set_state(state)
        self.kl_coeff = state.get("kl_coeff", self.kl_coeff)

    def update_kl(self, sampled_kl: float) -> float:
        if sampled_kl > 2.0 * self.kl_target:
            self.kl_coeff *= 1.5
        elif sampled_kl < 0.5 * self.kl_target:
            self.kl_coeff *= 0.5
        return self.kl_coeff


class ValueNetworkMixin:
    """``policy.value(obs)``: V(s) from the model, for bootstrapping (TorchPolicy has it)."""

    def __init__(self, config):
        pass
