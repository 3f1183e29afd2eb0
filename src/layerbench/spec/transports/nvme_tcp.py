"""NVMe over TCP: the kernel's target (nvmet) on the storage host, its initiator (`nvme connect`) here."""

from __future__ import annotations

from layerbench.spec.transports.row import ClientRow, TransportRow

KIND = "nvme-tcp"
TRANSPORT = TransportRow({"kernel": ClientRow((KIND,), "the kernel's NVMe/TCP initiator")})
