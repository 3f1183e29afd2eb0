"""native: the workload runs on this host itself, the baseline every layer is compared with."""

from __future__ import annotations

from layerbench.spec.engines.row import HOST_PLACEMENTS, EngineTraits

KIND = "native"
# No layer and no rule of its own: what it needs (a filesystem, a tool) the generic rules ask.
ENGINE = EngineTraits(
    "native",
    layer=False,
    container=False,
    placements=HOST_PLACEMENTS,
    default_placement="host-dir",
    server_limits=False,
    clients=True,
)
