"""The presets grouped by seed: every name the registry gives is a preset, each preset is listed once,
and the former names still load."""

from __future__ import annotations

import json

from typer.testing import CliRunner

from layerbench.cli.app import app
from layerbench.spec import load, seeds


def test_every_seed_preset_exists_and_each_preset_is_listed_once() -> None:
    names = load.preset_names()
    for seed in seeds.SEEDS:
        missing = [p for p in seed.presets if p not in names]
        assert not missing, f"seed {seed.key} names presets that do not exist: {missing}"
    listed = [p for group in seeds.grouped(names).values() for p in group]
    assert sorted(listed) == sorted(names)


def test_each_seed_leads_with_its_own_preset() -> None:
    groups = seeds.grouped(load.preset_names())
    firsts = {seed.split(":")[0]: presets[0] for seed, presets in groups.items() if seed != seeds.OWN}
    assert firsts == {
        "000/003": "xu-local-storage",
        "001": "scylla-docker-tuning",
        "002": "seybold-mongodb",
        "004": "wu-filesystems",
    }
    assert "quick" in groups[seeds.OWN] and "smoke" in groups[seeds.OWN]


def test_former_names_load_the_preset_that_replaced_them() -> None:
    assert load.load("fs-macro").name == "wu-filesystems"
    assert load.load("db-scaling-cassandra").name == "xu-cassandra"


def test_presets_json_says_each_presets_seed() -> None:
    listed = json.loads(CliRunner().invoke(app, ["presets", "--json"]).output)
    assert listed["wu-filesystems"]["seed"].startswith("004:")
    assert listed["quick"]["seed"] == seeds.OWN and listed["quick"]["description"]
