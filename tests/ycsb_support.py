"""YCSB runs in tests that must see every operation of a mix, whatever the machine's speed."""

from __future__ import annotations

from collections.abc import Mapping

PROPORTION = "proportion"


def every_operation(props: Mapping[str, str], operations: int = 100) -> dict[str, str]:
    """``props`` made to do each of its mix's operations in an even share, ``operations`` in all.

    Mixes D and E insert 5% of the time: a run bounded by time on a slow server (FerretDB scanned
    59 times in 2 s in CI) missed every insert one time in twenty. Even shares and a fixed count
    miss one kind with odds of about 2**-operations, and the time limit is dropped so a slow
    machine cannot cut the count short (the caller's timeout still bounds the run).
    """
    used = [k for k, v in props.items() if k.endswith(PROPORTION) and float(v) > 0]
    share = str(1 / len(used))
    out = {k: v for k, v in props.items() if k != "maxexecutiontime"}
    return out | {k: share for k in used} | {"operationcount": str(operations)}
