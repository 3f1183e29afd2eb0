"""scipy.special, imported when a function of it is first called: its import is 0.15 s of every command's
start, and the commands that read a cached analysis or export samples call none of it."""

from __future__ import annotations

from typing import Any


class _Special:
    def __getattr__(self, name: str) -> Any:
        from scipy import special

        return getattr(special, name)


special = _Special()
