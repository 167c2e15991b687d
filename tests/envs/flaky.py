"""A corridor whose env raises on purpose, to test retries: ``mode`` is ``never``, ``once`` (the first
env to reach ``fail_at`` steps raises and leaves ``marker`` behind; later ones do not) or ``always``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.envs.corridor import Corridor


class FlakyEnvError(RuntimeError):
    pass


class FlakyCorridor(Corridor):
    def __init__(self, config: dict[str, Any] | None = None) -> None:
        config = dict(config or {})
        super().__init__(config)
        self.mode = config.get("mode", "never")
        self.fail_at = int(config.get("fail_at", 300))
        self.marker = Path(config["marker"]) if config.get("marker") else None
        self.lifetime_steps = 0

    def step(self, action: int):  # type: ignore[override]
        self.lifetime_steps += 1
        if self.lifetime_steps == self.fail_at and self._should_fail():
            raise FlakyEnvError(f"flaky env raised on purpose at its step {self.fail_at} (mode {self.mode})")
        return super().step(action)

    def _should_fail(self) -> bool:
        if self.mode == "always":
            return True
        if self.mode == "once" and self.marker is not None and not self.marker.exists():
            self.marker.write_text("failed once\n")
            return True
        return False
