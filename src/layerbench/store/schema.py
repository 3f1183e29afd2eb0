"""The results database schema, versioned with PRAGMA user_version.

MIGRATIONS[i] takes a database from version i to i+1. A database newer than
this code knows is refused rather than misread.
"""

from __future__ import annotations

import sqlite3

V1 = """
CREATE TABLE runs (
    id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    started_at REAL NOT NULL,
    finished_at REAL,
    status TEXT NOT NULL CHECK (status IN ('running', 'finished', 'interrupted', 'failed')),
    spec_json TEXT NOT NULL,
    spec_digest TEXT NOT NULL,
    host_json TEXT NOT NULL,
    pid INTEGER NOT NULL
);
CREATE TABLE cells (
    run_id TEXT NOT NULL REFERENCES runs(id),
    cell_id TEXT NOT NULL,
    label TEXT NOT NULL,
    stack_label TEXT NOT NULL,
    workload TEXT NOT NULL,
    config_json TEXT NOT NULL,
    is_baseline INTEGER NOT NULL,
    baseline_cell_id TEXT,
    PRIMARY KEY (run_id, cell_id)
);
CREATE TABLE refused (
    run_id TEXT NOT NULL REFERENCES runs(id),
    label TEXT NOT NULL,
    config_json TEXT NOT NULL,
    reason TEXT NOT NULL
);
CREATE TABLE trials (
    id INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(id),
    cell_id TEXT NOT NULL,
    repetition INTEGER NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('ok', 'failed')),
    category TEXT,
    started_at REAL NOT NULL,
    ended_at REAL NOT NULL,
    argv_json TEXT NOT NULL,
    raw_output TEXT NOT NULL,
    stderr TEXT NOT NULL,
    info_json TEXT NOT NULL,
    UNIQUE (run_id, cell_id, repetition)
);
CREATE TABLE samples (
    trial_id INTEGER NOT NULL REFERENCES trials(id),
    metric TEXT NOT NULL,
    value REAL NOT NULL,
    unit TEXT NOT NULL,
    direction TEXT NOT NULL,
    job TEXT NOT NULL
);
CREATE INDEX samples_by_trial ON samples(trial_id);
CREATE TABLE checks (
    trial_id INTEGER NOT NULL REFERENCES trials(id),
    name TEXT NOT NULL,
    status TEXT NOT NULL CHECK (status IN ('pass', 'flag', 'skip')),
    detail TEXT NOT NULL
);
CREATE TABLE monitor (
    trial_id INTEGER NOT NULL REFERENCES trials(id),
    t REAL NOT NULL,
    series TEXT NOT NULL,
    value REAL NOT NULL,
    unit TEXT NOT NULL
);
CREATE INDEX monitor_by_trial ON monitor(trial_id);
"""

# A CPU profile of one trial per profiled cell (``profile: cpu``): folded stacks as
# perf recorded them and the counters perf stat read, kept apart from the trial
# row because a profile is tens of kilobytes that only explanations read.
V2 = """
CREATE TABLE profiles (
    trial_id INTEGER PRIMARY KEY REFERENCES trials(id),
    kind TEXT NOT NULL,
    folded TEXT NOT NULL,
    counters_json TEXT NOT NULL,
    detail TEXT NOT NULL
);
"""

# A tool's own logs beside its output, as it wrote them (fio's latency log, averaged per interval: latency
# over time within a trial), apart from the trial row: only figures read them, parsed when read. Since
# 2026-11-28 a fio trial's completion histograms too ("clat_bins", workloads/fio.py's bins_text): what
# `show --latency` merges, read without parsing the trial's output again.
V3 = """
CREATE TABLE logs (
    trial_id INTEGER NOT NULL REFERENCES trials(id),
    name TEXT NOT NULL,
    text TEXT NOT NULL,
    PRIMARY KEY (trial_id, name)
);
"""

MIGRATIONS: list[str] = [V1, V2, V3]
VERSION = len(MIGRATIONS)


def statements(script: str) -> list[str]:
    """A migration script as single statements.

    ``executescript`` commits before it starts and runs in autocommit, so a
    step failing halfway would leave half a schema under the old version
    number; running the statements one by one keeps a step in one transaction.
    """
    out: list[str] = []
    current = ""
    for piece in script.split(";"):
        current += piece + ";"
        # A ";" inside a string literal or trigger body splits too early; wait for a whole statement.
        if sqlite3.complete_statement(current):
            if current.strip(" \t\n;"):
                out.append(current.strip())
            current = ""
    if current.strip(" \t\n;"):
        raise ValueError(f"migration script ends inside a statement: {current.strip()[:60]!r}")
    return out
