"""RLlib bar: Ape-X DQN CartPole-v1 eval >= 150 within 200k steps (prints one JSON line).

    python benchmarks/bench_rllib_apex.py [--seed 0] [--eval-every N]

Runs the ``cartpole-apex`` tuned example through bench_rllib_offpolicy.py.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_rllib_offpolicy import main  # noqa: E402

if __name__ == "__main__":
    main(["cartpole-apex", *sys.argv[1:]])
