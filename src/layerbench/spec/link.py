"""Delays and rates as tc writes them, for a remote device's link: 50us, 1ms; 10gbit, 500mbit."""

from __future__ import annotations

import re
from typing import Any

_TIME_NS = {"ns": 1, "us": 10**3, "ms": 10**6, "s": 10**9}
_RATE_BITS = {"bit": 1, "kbit": 10**3, "mbit": 10**6, "gbit": 10**9}
# What parse_delay and parse_rate take, as JSON Schema says it (`layerbench schema`).
DELAY_SCHEMA = {
    "anyOf": [
        {"type": "integer", "exclusiveMinimum": 0},
        {"type": "string", "pattern": r"^\s*\d+(\.\d+)?\s*(ns|us|ms|s)\s*$"},
    ],
    "description": "one-way delay: nanoseconds, or 50us, 1.5ms",
}
RATE_SCHEMA = {
    "anyOf": [
        {"type": "integer", "exclusiveMinimum": 0},
        {"type": "string", "pattern": r"^\s*\d+(\.\d+)?\s*([bB][iI][tT]|[kKmMgG][bB][iI][tT])\s*$"},
    ],
    "description": "link rate: bits per second, or 10gbit, 500mbit",
}


def parse_delay(value: Any) -> int:
    """A one-way delay in nanoseconds, from "50us", "1.5ms" or a number of nanoseconds."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ns|us|ms|s)\s*", str(value))
    if not match:
        raise ValueError(f"{value!r} is not a delay; use a number with ns, us, ms or s (50us, 1ms)")
    return round(float(match.group(1)) * _TIME_NS[match.group(2)])


def parse_rate(value: Any) -> int:
    """A link rate in bits per second, from "10gbit", "500mbit" or a number of bits per second."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(bit|kbit|mbit|gbit)\s*", str(value).lower())
    if not match:
        raise ValueError(f"{value!r} is not a rate; use a number with bit, kbit, mbit or gbit (10gbit)")
    return round(float(match.group(1)) * _RATE_BITS[match.group(2)])


def delay_text(ns: int) -> str:
    """The shortest exact spelling tc and a person both read: 50000 -> "50us"."""
    for unit in ("s", "ms", "us"):
        if ns % _TIME_NS[unit] == 0:
            return f"{ns // _TIME_NS[unit]}{unit}"
    return f"{ns}ns"


def rate_text(bits: int) -> str:
    for unit in ("gbit", "mbit", "kbit"):
        if bits % _RATE_BITS[unit] == 0:
            return f"{bits // _RATE_BITS[unit]}{unit}"
    return f"{bits}bit"
