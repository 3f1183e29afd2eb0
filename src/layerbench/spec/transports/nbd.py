"""NBD: qemu-nbd on the storage host; the kernel's nbd driver, nbdfuse or fio's nbd engine here."""

from __future__ import annotations

from layerbench.spec.transports.row import ClientRow, TransportRow

KIND = "nbd"
SCHEME = "nbd://"


def fio_args(uri: str) -> list[str]:
    """fio's nbd engine (libnbd) and the export's URI, in place of a file and an engine."""
    return ["--ioengine=nbd", f"--uri={uri}"]


# Every client needs qemu-nbd and nbdinfo on the storage host ("nbd"), and its own program here.
TRANSPORT = TransportRow(
    {
        "fio": ClientRow(
            (KIND, "nbd-fio"),
            "fio's own nbd engine (no block device here: raw, fio natively or in Docker)",
            "fio's nbd engine",
            SCHEME,
            fio_args,
        ),
        "fuse": ClientRow((KIND, "nbd-fuse"), "nbdfuse under a direct-I/O loop device", "nbdfuse"),
        "kernel": ClientRow((KIND, "nbd-kernel"), "the kernel's nbd driver"),
    }
)
