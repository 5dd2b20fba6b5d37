"""Piecewise-linear schedules over environment timesteps (``lr_schedule``)."""

from __future__ import annotations

import numpy as np


class PiecewiseSchedule:
    """``[[t0, v0], [t1, v1], ...]``: linear in between, the last value after."""

    def __init__(self, endpoints):
        endpoints = sorted((float(t), float(v)) for t, v in endpoints)
        if not endpoints:
            raise ValueError("a schedule needs at least one [timestep, value] point")
        self.ts = np.array([t for t, _ in endpoints])
        self.vs = np.array([v for _, v in endpoints])

    def value(self, t: float) -> float:
        return float(np.interp(t, self.ts, self.vs))
