"""iSCSI: the kernel's target (LIO) on the storage host, open-iscsi's initiator here."""

from __future__ import annotations

from layerbench.spec.transports.row import ClientRow, TransportRow

KIND = "iscsi"
TRANSPORT = TransportRow({"kernel": ClientRow((KIND,), "open-iscsi's initiator")})
