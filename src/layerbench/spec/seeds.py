"""Which built-in experiment answers which paper: the presets grouped by the seed that asked for them.

An explicit registry (no discovery): a preset missing here is listed under layerbench's own, and a test
holds every name here to an existing preset. Old names stay as aliases, so scripts and notes that
named them still run.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Seed:
    key: str  # the seed's number, as DESIGN.md counts them
    source: str  # the paper or article, in a line
    presets: tuple[str, ...]  # its own preset first


SEEDS: tuple[Seed, ...] = (
    Seed(
        "000/003",
        "Xu et al., Performance Analysis of Containerized Applications on Local and Remote Storage",
        ("xu-local-storage", "xu-cassandra", "remote", "layers", "db-scaling", "traps"),
    ),
    Seed(
        "001",
        "ScyllaDB, The Cost of Containerization for Your Scylla (Cassandra stands in)",
        ("scylla-docker-tuning",),
    ),
    Seed(
        "002",
        "Seybold et al., the operational models of a containerized DBMS",
        ("seybold-mongodb", "seybold-models", "operational-models"),
    ),
    Seed(
        "004",
        "Wu and Zhao, Containerized Filesystems: containers across filesystems",
        ("wu-filesystems",),
    ),
)
OWN = "layerbench's own"

# Former names of presets that a seed's name replaced.
ALIASES: dict[str, str] = {"fs-macro": "wu-filesystems", "db-scaling-cassandra": "xu-cassandra"}


def seed_of(preset: str) -> str:
    """The seed a preset reproduces, or OWN."""
    return next((f"{s.key}: {s.source}" for s in SEEDS if preset in s.presets), OWN)


def grouped(names: list[str]) -> dict[str, list[str]]:
    """``names`` by seed, in the seeds' order (each seed's own preset first), then layerbench's own."""
    groups = {f"{s.key}: {s.source}": [p for p in s.presets if p in names] for s in SEEDS}
    groups[OWN] = sorted(n for n in names if seed_of(n) == OWN)
    return {seed: presets for seed, presets in groups.items() if presets}
