"""A neighbour that runs Ray: the busy-machine condition of a benchmark where the other work is itself Ray's.

Over and over until SECONDS have passed: start a local Ray runtime of its own, keep one CPU-bound task per
core busy for WORK seconds, and shut the runtime down again: as another user's scripts or test runs that
start and stop Ray beside a sweep. It runs at niceness NICE (default 10, as the busy-machine runs' busy
loops), in a session of its own (another terminal), and is ended by its own PID when COMMAND ends.

    .venv/bin/python benchmarks/ray_neighbour.py SECONDS [--work W] [--nice N] -- COMMAND ...

e.g. ``.venv/bin/python benchmarks/ray_neighbour.py 1800 -- .venv/bin/python benchmarks/time_to_solve.py
--condition "ray neighbour: ..."``. Each cycle's start, end and tasks go to stderr with ``-v``.
"""

from __future__ import annotations

import argparse
import logging
import os
import subprocess
import sys
import time


def neighbour(seconds: float, work_s: float, verbose: bool) -> None:
    import ray

    @ray.remote(num_cpus=1)
    def spin(until: float) -> int:
        count = 0
        while time.time() < until:
            count += 1
        return count

    end = time.time() + seconds
    cycle = 0
    while time.time() < end:
        cycle += 1
        started = time.time()
        ray.init(address="local", include_dashboard=False, logging_level=logging.ERROR, log_to_driver=False)
        until = min(time.time() + work_s, end)
        tasks = int(ray.cluster_resources().get("CPU", 1))
        ray.get([spin.remote(until) for _ in range(tasks)])
        ray.shutdown()
        if verbose:
            print(f"ray-neighbour: cycle {cycle}: Ray started, {tasks} busy tasks until {work_s:.0f} s after its start, "
                  f"stopped; {time.time() - started:.1f} s in all", file=sys.stderr, flush=True)


def main() -> int:
    argv = sys.argv[1:]
    command = argv[argv.index("--") + 1:] if "--" in argv else []
    own = argv[: argv.index("--")] if "--" in argv else argv
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("seconds", type=float)
    parser.add_argument("--work", type=float, default=20.0, help="seconds of CPU-bound tasks per Ray runtime")
    parser.add_argument("--nice", type=int, default=10)
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.add_argument("--run", action="store_true", help=argparse.SUPPRESS)  # the neighbour itself
    args = parser.parse_args(own)
    if args.run:
        neighbour(args.seconds, args.work, args.verbose)
        return 0
    child = subprocess.Popen(
        ["nice", "-n", str(args.nice), sys.executable, os.path.abspath(__file__), str(args.seconds), "--work", str(args.work),
         "--run", *(["-v"] if args.verbose else [])],
        start_new_session=True,
    )
    if not command:
        return child.wait()
    try:
        return subprocess.call(command)
    finally:
        # Its own session, so its whole group (the driver and the Ray runtime it started) is ended by its PID.
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from _zoo import _stop

        _stop(child)


if __name__ == "__main__":
    sys.exit(main())
