"""A CartPole that, as each instance is made and as it is closed (when its trial ends), appends to
``env_config["out"]`` the process it is in and whether that process has imported OpenTelemetry and torch's
compiler (``torch._dynamo``): what a trial's process loaded, seen from inside it."""

from __future__ import annotations

import json
import os
import sys
from typing import Any

from gymnasium.envs.classic_control import CartPoleEnv


class ImportProbe(CartPoleEnv):
    def __init__(self, config: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.out = (config or {}).get("out")
        self._record("made")

    def close(self) -> None:
        self._record("closed")
        super().close()

    def _record(self, at: str) -> None:
        if self.out:
            loaded = any(name.startswith("opentelemetry") for name in sys.modules)
            torch = sys.modules.get("torch")
            with open(self.out, "a") as file:
                file.write(json.dumps({"pid": os.getpid(), "at": at, "opentelemetry": loaded,
                                       "dynamo": "torch._dynamo" in sys.modules,
                                       # that the process seeded torch (RLlib's seeding) and made an Adam
                                       "deterministic": bool(torch and torch.are_deterministic_algorithms_enabled()),
                                       "adam": bool(torch and getattr(torch.optim.Adam.step, "hooked", False))}) + "\n")
