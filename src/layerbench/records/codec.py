"""How the records with optional fields become the store's JSON and back, key for key.

A record's JSON has a key for each field that holds a value (None: the key was absent) and, beside them, the
keys it did not know (``extra``), so that a record read from an older or newer run writes back what it read.
A known key stored as null goes to ``extra`` too: read, it is None like an absent one; written, it stays null.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import fields
from typing import Any

JsonObject = dict[str, Any]


def split(cls: type, data: Mapping[str, Any], skip: frozenset[str] = frozenset()) -> tuple[JsonObject, JsonObject]:
    """``data``'s keys that are ``cls``'s fields (and hold a value), and the others (``extra``)."""
    names = {f.name for f in fields(cls)} - {"extra"} - skip
    known = {k: v for k, v in data.items() if k in names and v is not None}
    return known, {k: v for k, v in data.items() if k not in known}


def dumped(record: Any, skip: frozenset[str] = frozenset()) -> JsonObject:
    """The record's fields that hold a value, as JSON, then its ``extra`` keys (where it has them)."""
    names = [f.name for f in fields(record) if f.name not in skip]
    out = {n: encode(getattr(record, n)) for n in names if n != "extra"}
    out = {k: v for k, v in out.items() if v is not None}
    return out | dict(record.extra) if "extra" in names else out


def encode(value: Any) -> Any:
    """A field's value as JSON: records by their ``to_json``, tuples as lists."""
    if hasattr(value, "to_json"):
        return value.to_json()
    if isinstance(value, list | tuple):
        return [encode(v) for v in value]
    if isinstance(value, Mapping):
        return {k: encode(v) for k, v in value.items()}
    return value


def decoded(known: JsonObject, decoders: Mapping[str, Callable[[Any], Any]]) -> JsonObject:
    """``known`` with each value whose key has a decoder decoded (a nested record, a tuple)."""
    return {k: decoders[k](v) if k in decoders else v for k, v in known.items()}


def tuple_of(item: Callable[[Any], Any]) -> Callable[[Any], tuple[Any, ...]]:
    return lambda values: tuple(item(v) for v in values)
