"""vm+docker: a dockerd in the vm engine's guest, on the filesystem the guest makes on its disk."""

from __future__ import annotations

from layerbench.spec.engines import vm
from layerbench.spec.engines.row import GUEST_UNPROFILED, EngineTraits

KIND = "vm+docker"
# Its guest is the vm engine's: the same probe boot, the same rule.
ENGINE = EngineTraits(
    "Docker in a VM",
    guest=True,
    drivers=("overlay2", "vfs"),
    server_limits=False,
    unprofiled=GUEST_UNPROFILED,
    probe="guest-boot",
    rule=vm.ready,
)
