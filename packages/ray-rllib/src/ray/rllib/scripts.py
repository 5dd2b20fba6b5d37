"""The ``rllib`` command: ``rllib train ...`` and ``rllib rollout ...``."""

from __future__ import annotations

import sys

USAGE = """usage: rllib <command> [options]

commands:
  train     Train an algorithm on an env (run `rllib train --help`)
  rollout   Roll out a policy from a checkpoint (run `rllib rollout --help`)
"""


def cli(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    command, rest = argv[0], argv[1:]
    if command == "train":
        from ray.rllib import train

        return train.main(rest)
    if command == "rollout":
        from ray.rllib import rollout

        return rollout.main(rest)
    print(f"rllib: unknown command {command!r}\n\n{USAGE}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(cli())
