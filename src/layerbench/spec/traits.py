"""What each engine is, as the code outside the engines asks it: one row per engine kind.

The rows live with their engines, in spec/engines/ (each engine's module: its row, its rule, its probe's
result); this module is the door the generic code reads them through, by trait and never by name.
"""

from __future__ import annotations

from layerbench.spec.engines import ENGINES, traits
from layerbench.spec.engines.row import CONTAINER_PLACEMENTS, HOST_PLACEMENTS, HOST_PROBES, EngineTraits, Probe

TRAITS: dict[str, EngineTraits] = ENGINES

__all__ = ["CONTAINER_PLACEMENTS", "HOST_PLACEMENTS", "HOST_PROBES", "TRAITS", "EngineTraits", "Probe", "traits"]
