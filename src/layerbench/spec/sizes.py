"""Sizes as fio reads them, for every spec model that takes bytes."""

from __future__ import annotations

import re
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, WithJsonSchema

_UNITS = {"": 1, "k": 2**10, "m": 2**20, "g": 2**30, "t": 2**40}
# What parse_size takes, as JSON Schema says it (`layerbench schema`): its regex without the IGNORECASE flag.
SIZE_SCHEMA = {
    "anyOf": [
        {"type": "integer", "minimum": 0},
        {"type": "string", "pattern": r"^\s*\d+(\.\d+)?\s*[kKmMgGtT]?([iI]?[bB])?\s*$"},
    ],
    "description": "bytes, or a size as fio writes it (binary): 4k, 128KiB, 512MiB, 2G",
}


def parse_size(value: Any) -> int:
    """Sizes as fio reads them: 4k = 4096, 2G = 2 GiB ("KiB", "MB" and friends are binary too)."""
    if isinstance(value, bool):
        raise ValueError("a size is a number of bytes or a string such as 4k, 128KiB, 2GiB")
    if isinstance(value, int):
        return value
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*", str(value), flags=re.IGNORECASE)
    if not match:
        raise ValueError(f"{value!r} is not a size; use bytes or a number with k, M, G or T (binary, as fio)")
    return int(float(match.group(1)) * _UNITS[match.group(2).lower()])


# A size field of a spec model: bytes, or a size as fio writes it; the schema says both.
ByteSize = Annotated[int, BeforeValidator(parse_size), Field(ge=0), WithJsonSchema(SIZE_SCHEMA)]
