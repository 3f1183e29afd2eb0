"""ldd's output: the libraries a binary loads, for images and probe bundles built from host binaries."""

from __future__ import annotations

import re

_LDD_LINE = re.compile(r"^\s*(?:\S+\s+=>\s+)?(/\S+)\s+\(0x[0-9a-fA-F]+\)\s*$")
_LDD_MISSING = re.compile(r"^\s*(\S+)\s+=>\s+not found\s*$")


def parse_ldd(text: str) -> list[str]:
    """Absolute paths of the libraries and the loader that ldd lists, in its order (vdso has none)."""
    paths = []
    for line in text.splitlines():
        match = _LDD_LINE.match(line)
        if match:
            paths.append(match.group(1))
    return list(dict.fromkeys(paths))


def missing_libraries(text: str) -> list[str]:
    """Libraries ldd could not find (`libfoo.so => not found`)."""
    return [m.group(1) for m in map(_LDD_MISSING.match, text.splitlines()) if m]
