"""``json.dumps(value, indent=2)``, byte for byte, at the C encoder's speed.

Python's json module has no C encoder for indented output: with ``indent`` it runs its pure-Python one,
2.3 s for `show --json` of a 10,500-cell run. Here the C encoder writes the value on one line (its strings
and numbers exactly as the indented output has them) and msgspec's C formatter indents that text; it copies
strings and numbers as they are. NaN and infinities (not JSON: msgspec refuses them) go the slow way.
"""

from __future__ import annotations

import json
from typing import Any

import msgspec


def dumps(value: Any) -> str:
    text = json.dumps(value)
    try:
        return msgspec.json.format(text, indent=2)
    except msgspec.DecodeError:
        return json.dumps(value, indent=2)
