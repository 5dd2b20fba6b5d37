"""RLlib bar: TD3 Pendulum-v1 eval >= -300 within 30k steps (prints one JSON line).

    python benchmarks/bench_rllib_td3.py [--seed 0] [--eval-every N]

Runs the ``pendulum-td3`` tuned example through bench_rllib_offpolicy.py.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_rllib_offpolicy import main  # noqa: E402

if __name__ == "__main__":
    main(["pendulum-td3", *sys.argv[1:]])
