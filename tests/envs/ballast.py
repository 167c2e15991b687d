"""CartPole that, the first time a process makes it, briefly holds ``ballast_mb`` of memory (touched, so it
is resident) and notes the process id in ``pid_file``. Two trials run one after the other in one reused
worker process: the first's peak memory includes the ballast, the second's must not."""

from __future__ import annotations

import os
from typing import Any

import gymnasium as gym

_HELD_ONCE = False


class BallastCartPole(gym.Wrapper):
    def __init__(self, config: dict[str, Any] | None = None) -> None:
        global _HELD_ONCE
        config = config or {}
        super().__init__(gym.make("CartPole-v1"))
        with open(config["pid_file"], "a") as out:
            out.write(f"{os.getpid()}\n")
        if not _HELD_ONCE:
            _HELD_ONCE = True
            ballast = bytearray(int(config.get("ballast_mb", 0)) * 2**20)
            ballast[:: 4096] = b"x" * len(ballast[:: 4096])  # one byte per page: every page resident
            del ballast
