"""Recurrent batches: cut trajectories into padded, fixed-length sequences.

Rows of the same episode are cut into sequences of at most ``max_seq_len``
steps, each padded to that length, so a ``[B * T, ...]`` column is ``B``
sequences of ``T`` steps. ``state_in_i`` keeps one row per sequence (the state
before its first step), ``seq_lens`` the true lengths, ``seq_mask`` marks the
real (non-padding) rows for the loss.
"""

from __future__ import annotations

import numpy as np
import torch

from ray.rllib.policy.sample_batch import SampleBatch


def sequence_starts(eps_ids: np.ndarray, max_seq_len: int) -> list[int]:
    starts, length = [], 0
    for i in range(len(eps_ids)):
        if i == 0 or eps_ids[i] != eps_ids[i - 1] or length == max_seq_len:
            starts.append(i)
            length = 0
        length += 1
    return starts


def chop_into_sequences(batch: SampleBatch, max_seq_len: int, num_states: int) -> dict:
    starts = sequence_starts(batch[SampleBatch.EPS_ID], max_seq_len)
    ends = starts[1:] + [batch.count]
    seq_lens = np.array([e - s for s, e in zip(starts, ends)], dtype=np.int32)
    num_seqs = len(starts)
    rows = np.zeros(num_seqs * max_seq_len, dtype=np.int64)
    mask = np.zeros(num_seqs * max_seq_len, dtype=bool)
    for i, (s, e) in enumerate(zip(starts, ends)):
        rows[i * max_seq_len : i * max_seq_len + (e - s)] = np.arange(s, e)
        mask[i * max_seq_len : i * max_seq_len + (e - s)] = True
    out = {"seq_lens": torch.as_tensor(seq_lens), "seq_mask": torch.as_tensor(mask)}
    state_keys = {f"state_in_{i}" for i in range(num_states)}
    for key, value in batch.items():
        if value.dtype.kind in "OUS" or key.startswith("state_out_"):
            continue
        if key in state_keys:
            out[key] = torch.as_tensor(value[starts])
        else:
            padded = value[rows].copy()
            padded[~mask] = 0
            out[key] = torch.as_tensor(padded)
    return out
