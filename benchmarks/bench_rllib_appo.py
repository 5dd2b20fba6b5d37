"""APPO on CartPole-v1: mean return >= 150 within 500k env steps (issue 10 bar).

    python benchmarks/bench_rllib_appo.py [--seed 0]
"""

import argparse

from bench_rllib_impala import main
from rllib_bars import emit

if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=0)
    emit(main("APPO", parser.parse_args().seed))
