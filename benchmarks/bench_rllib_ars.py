"""ARS on CartPole-v1: mean return >= 150 (issue 10 bar).

    python benchmarks/bench_rllib_ars.py [--seed 0]
"""

import argparse

from bench_rllib_es import main
from rllib_bars import emit

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    emit(main("ARS", parser.parse_args().seed))
