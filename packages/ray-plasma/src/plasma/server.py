"""``plasma_store``: run a store as its own process until SIGTERM/SIGINT."""

from __future__ import annotations

import argparse
import asyncio
import logging
import signal
import sys

from plasma.store import PlasmaStore


def _parse_args(argv):
    parser = argparse.ArgumentParser(
        prog="plasma_store", description="Run a plasma shared-memory object store."
    )
    parser.add_argument("-m", "--memory", type=int, required=True, help="arena size in bytes")
    parser.add_argument("-s", "--socket", required=True, help="Unix socket path to listen on")
    parser.add_argument("-d", "--directory", default="/dev/shm", help="where the arena file lives")
    parser.add_argument("--huge-pages", action="store_true", help="DIRECTORY is a hugetlbfs mount")
    parser.add_argument(
        "--no-prefault", action="store_true", help="do not populate the arena at start"
    )
    parser.add_argument(
        "--serve-while-prefaulting",
        action="store_true",
        help="accept clients at once instead of after the arena is resident",
    )
    return parser.parse_args(argv)


async def _serve(args) -> None:
    store = PlasmaStore(
        args.memory,
        directory=args.directory,
        huge_pages=args.huge_pages,
        prefault=not args.no_prefault,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    await store.start(args.socket, wait_prefault=not args.serve_while_prefaulting)
    print(f"plasma_store: serving {store.capacity_bytes} bytes on {args.socket}", flush=True)
    try:
        await stop.wait()
    finally:
        await store.stop()


def main(argv=None) -> int:
    args = _parse_args(sys.argv[1:] if argv is None else argv)
    logging.basicConfig(level=logging.WARNING, format="plasma_store %(levelname)s %(message)s")
    try:
        import uvloop
    except ImportError:
        asyncio.run(_serve(args))
    else:
        uvloop.run(_serve(args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
