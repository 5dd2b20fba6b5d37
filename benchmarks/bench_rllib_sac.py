"""RLlib bar: SAC Pendulum-v1 eval >= -250 within 20k steps (prints one JSON line).

    python benchmarks/bench_rllib_sac.py [--seed 0] [--eval-every N]

Runs the ``pendulum-sac`` tuned example through bench_rllib_offpolicy.py.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench_rllib_offpolicy import main  # noqa: E402

if __name__ == "__main__":
    main(["pendulum-sac", *sys.argv[1:]])
