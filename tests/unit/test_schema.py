"""The spec's JSON Schema (`layerbench schema`): committed as docs/reference/spec.schema.json, named by every
preset's first line for editors, and accepting every preset while catching what the models refuse."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest
import yaml
from typer.testing import CliRunner

from layerbench.cli.app import app
from layerbench.errors import SpecError
from layerbench.spec import load
from layerbench.spec.schema import DOCS_PATH

ROOT = Path(__file__).parent.parent.parent
PRESETS = ROOT / "src" / "layerbench" / "spec" / "presets"
MODELINE = "# yaml-language-server: $schema="


def printed() -> str:
    result = CliRunner().invoke(app, ["schema"])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = json.loads(printed())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_the_committed_schema_is_what_layerbench_schema_prints() -> None:
    assert (ROOT / DOCS_PATH).read_text() == printed(), "regenerate: layerbench schema > " + DOCS_PATH


@pytest.mark.parametrize("name", load.preset_names())
def test_every_preset_names_the_schema_and_is_valid_under_it(
    name: str, validator: jsonschema.Draft202012Validator
) -> None:
    path = PRESETS / f"{name}.yaml"
    first = path.read_text().splitlines()[0]
    assert first.startswith(MODELINE), f"{path.name}'s first line should be the yaml-language-server comment"
    assert (path.parent / first.removeprefix(MODELINE)).resolve() == (ROOT / DOCS_PATH).resolve()
    errors = [f"{list(e.absolute_path)}: {e.message}" for e in validator.iter_errors(yaml.safe_load(path.read_text()))]
    assert errors == []


@pytest.mark.parametrize(
    ("change", "where"),
    [
        (lambda d: d["stacks"][0].update(filesystem="zfs"), ["stacks", 0, "filesystem"]),
        (lambda d: d["stacks"][0].update(engine="docker:zfs"), ["stacks", 0, "engine"]),
        (lambda d: d["stacks"][0].update(colour="red"), ["stacks", 0]),
        (lambda d: d["device"].update(size="512 lots"), ["device", "size"]),
        (lambda d: d.update(trials={"repetitions": 0}), ["trials", "repetitions"]),
    ],
)
def test_the_schema_catches_what_the_models_refuse(
    change: object, where: list[object], validator: jsonschema.Draft202012Validator
) -> None:
    data = yaml.safe_load(load.preset_text("smoke"))
    change(data)  # type: ignore[operator]
    errors = list(validator.iter_errors(data))
    assert [list(e.absolute_path) for e in errors] == [where]
    if where[0] != "stacks":  # stack entries are the matrix's to check, when it expands them
        with pytest.raises(SpecError):
            load.validate(data)


def test_shorthands_and_axes_are_valid(validator: jsonschema.Draft202012Validator) -> None:
    data = yaml.safe_load(load.preset_text("smoke"))
    data["stacks"] = [{"filesystem": ["ext4", "xfs"], "engine": ["native", "docker:overlay2"], "placement": "volume"}]
    data["device"] = {"kind": "loop", "size": 2**30}
    data["workloads"] = [{"name": "RR"}, {"name": "Z", "kind": "iozone"}]  # no kind: fio
    assert list(validator.iter_errors(data)) == []
    load.validate(data)


def test_presets_name_prints_what_show_prints() -> None:
    runner = CliRunner()
    by_name = runner.invoke(app, ["presets", "smoke"])
    by_show = runner.invoke(app, ["presets", "--show", "smoke"])
    assert by_name.exit_code == by_show.exit_code == 0
    assert by_name.output == by_show.output == load.preset_text("smoke") + "\n"
    assert runner.invoke(app, ["presets", "smoke", "--show", "quick"]).exit_code == 2
    assert runner.invoke(app, ["presets", "nosuch"]).exit_code == 2
