"""A CartPole that, as each instance is made, appends to ``env_config["out"]`` the process it is made in
and whether that process has imported OpenTelemetry: what a trial's process loaded, seen from inside it."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from gymnasium.envs.classic_control import CartPoleEnv


class ImportProbe(CartPoleEnv):
    def __init__(self, config: dict[str, Any] | None = None) -> None:
        super().__init__()
        config = config or {}
        if out := config.get("out"):
            loaded = any(name.startswith("opentelemetry") for name in sys.modules)
            with open(out, "a") as file:
                file.write(json.dumps({"pid": os.getpid(), "opentelemetry": loaded}) + "\n")
