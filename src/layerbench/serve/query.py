"""What a request asks, read from its query string and path: typed, or refused with what is allowed.

A typo (``?hots=``) or a date that is no date is a 400 naming the parameter and what it takes, never a filter
silently ignored.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from layerbench.records.run import RunRow

# A run's id as the store makes them (20261127-130059-c2b9); a path segment outside it is refused before any read.
RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
PER_PAGE_DEFAULT, PER_PAGE_MAX = 50, 500
FILTERS = ("host", "preset", "layer", "since", "until", "tag")
RUNS_PARAMS = (*FILTERS, "page", "per_page")
NO_TAGS = "runs have no tags in this store (its schema keeps none): filter by host, preset, layer or date"


class BadRequest(ValueError):
    """The request names something that cannot be read as asked: a 400 with this message."""


class NotFound(LookupError):
    """The request names a run the store does not hold: a 404 with this message."""


def params(items: Sequence[tuple[str, str]], allowed: Sequence[str]) -> dict[str, str]:
    """The query's parameters, each given once and each one of ``allowed``; empty values dropped (a form's
    empty fields)."""
    out: dict[str, str] = {}
    for name, value in items:
        if name not in allowed:
            raise BadRequest(f"unknown parameter {name!r}: this page takes {', '.join(allowed)}")
        if name in out:
            raise BadRequest(f"parameter {name!r} is given twice: give it once")
        if value.strip():
            out[name] = value.strip()
    return out


def run_id(text: str, name: str = "run id") -> str:
    if not RUN_ID.match(text):
        raise BadRequest(f"{name} {text!r} is not a run id (letters, digits, '.', '_', '-'; e.g. 20261127-130059-c2b9)")
    return text


@dataclass(frozen=True)
class RunFilter:
    """Which runs a list or a history reads: every field that is set must match."""

    host: str | None = None  # the host's name as the run recorded it, exactly
    preset: str | None = None  # the experiment's name (a preset's, or a spec's own), exactly
    layer: str | None = None  # part of a stack's label, e.g. "docker:overlay2" or "overlay2/volume"
    since: dt.date | None = None  # started on or after this day (UTC)
    until: dt.date | None = None  # started on or before this day (UTC)

    def matches(self, run: RunRow) -> bool:
        """Everything but the layer, which needs the run's cells."""
        day = started_day(run)
        return (
            (self.host is None or host_of(run) == self.host)
            and (self.preset is None or run.name == self.preset)
            and (self.since is None or day >= self.since)
            and (self.until is None or day <= self.until)
        )

    def as_json(self) -> dict[str, str | None]:
        return {
            "host": self.host,
            "preset": self.preset,
            "layer": self.layer,
            "since": self.since.isoformat() if self.since else None,
            "until": self.until.isoformat() if self.until else None,
        }


def run_filter(given: Mapping[str, str]) -> RunFilter:
    if "tag" in given:
        raise BadRequest(f"tag {given['tag']!r}: {NO_TAGS}")
    since, until = _date(given, "since"), _date(given, "until")
    if since and until and since > until:
        raise BadRequest(f"since {since} is after until {until}: no run can match")
    return RunFilter(given.get("host"), given.get("preset"), given.get("layer"), since, until)


def _date(given: Mapping[str, str], name: str) -> dt.date | None:
    text = given.get(name)
    if text is None:
        return None
    try:
        if not DATE.match(text):
            raise ValueError
        return dt.date.fromisoformat(text)
    except ValueError:
        raise BadRequest(f"{name} {text!r} is not a date: give YYYY-MM-DD (UTC), e.g. 2026-12-07") from None


@dataclass(frozen=True)
class Page:
    number: int  # from 1
    size: int

    def of(self, total: int) -> slice:
        last = max(1, math.ceil(total / self.size))
        if self.number > last:
            raise BadRequest(f"page {self.number} is past the last page ({last}) of {total} runs")
        return slice((self.number - 1) * self.size, self.number * self.size)

    def pages(self, total: int) -> int:
        return max(1, math.ceil(total / self.size))


def page(given: Mapping[str, str]) -> Page:
    return Page(_count(given, "page", 1, 1, None), _count(given, "per_page", PER_PAGE_DEFAULT, 1, PER_PAGE_MAX))


def _count(given: Mapping[str, str], name: str, default: int, low: int, high: int | None) -> int:
    text = given.get(name)
    if text is None:
        return default
    allowed = f"a whole number from {low}" + (f" to {high}" if high else "")
    if not text.isdigit() or int(text) < low or (high is not None and int(text) > high):
        raise BadRequest(f"{name} {text!r} is not {allowed}")
    return int(text)


def host_of(run: RunRow) -> str:
    return str(run.host.get("hostname") or "")


def started_day(run: RunRow) -> dt.date:
    return dt.datetime.fromtimestamp(run.started_at, dt.UTC).date()
