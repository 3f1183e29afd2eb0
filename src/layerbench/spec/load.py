"""Read an experiment from a YAML file or a built-in preset.

Pydantic does the validation; this module turns its errors into one SpecError
whose lines each name the field and, where the field has a fixed set of
values, the values allowed.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from layerbench.errors import SpecError
from layerbench.spec.models import WORKLOAD_KINDS, Experiment
from layerbench.spec.seeds import ALIASES

PRESET_PACKAGE = "layerbench.spec.presets"


def preset_names() -> list[str]:
    files = resources.files(PRESET_PACKAGE).iterdir()
    return sorted(f.name.removesuffix(".yaml") for f in files if f.name.endswith(".yaml"))


def preset_text(name: str) -> str:
    name = ALIASES.get(name, name)
    if name not in preset_names():
        raise SpecError(
            f"no preset named {name!r}",
            hint=f"presets: {', '.join(preset_names())}; or give a path to a YAML spec",
        )
    return resources.files(PRESET_PACKAGE).joinpath(f"{name}.yaml").read_text()


def load(ref: str) -> Experiment:
    """``ref`` is a preset name or a path to a YAML file."""
    path = Path(ref)
    if path.suffix in {".yaml", ".yml"} or _exists(path):
        try:
            text = path.read_text()
        except OSError as exc:
            raise SpecError(f"cannot read spec {ref}: {exc.strerror}") from exc
        return parse(text, source=str(path))
    return parse(preset_text(ref), source=f"preset {ref}")


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except OSError:  # a name too long to be a file is then a preset name, refused as such
        return False


def parse(text: str, source: str = "spec") -> Experiment:
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        raise SpecError(f"{source}: not valid YAML: {exc}") from exc
    if not isinstance(data, dict):
        raise SpecError(f"{source}: the top level must be a mapping with name, stacks, workloads")
    return validate(data, source)


# The most rounds a spec may ask for (Trials.repetitions' bound): a budget run's cap.
MAX_ROUNDS = 1000


def validate(data: dict[str, Any], source: str = "spec") -> Experiment:
    try:
        return Experiment.model_validate(data)
    except ValidationError as exc:
        raise spec_error(exc, source) from None


def with_budget(exp: Experiment, budget: str) -> Experiment:
    """``run --budget``: the experiment decided by comparisons within ``budget`` (a duration of trials or a count
    of trials), its cap on rounds raised to the most a spec allows so that the budget, not the cap, ends it."""
    trials = {**exp.trials.model_dump(), "budget": budget, "repetitions": MAX_ROUNDS, "precision": None}
    return validate({**exp.model_dump(), "trials": trials}, "--budget")


def spec_error(exc: ValidationError, source: str, prefix: str = "") -> SpecError:
    errors = exc.errors(include_url=False)
    lines = [_describe(err, prefix) for err in errors if not _echo(err, errors)]
    return SpecError(
        f"{source}: " + "; ".join(lines),
        hint="see `layerbench presets --show NAME` for a valid spec",
    )


def _echo(err: Any, errors: list[Any]) -> bool:
    """A list's "too short" that only repeats that one of its items failed (pydantic reports both)."""
    loc = tuple(err["loc"])
    return err["type"] == "too_short" and any(
        tuple(e["loc"])[: len(loc)] == loc and len(e["loc"]) > len(loc) for e in errors
    )


def _describe(err: Any, prefix: str) -> str:
    where = prefix + _location(err["loc"])
    msg = err["msg"]
    if err["type"] == "literal_error":
        allowed = err.get("ctx", {}).get("expected", "")
        msg = f"{err.get('input')!r} is not allowed; allowed values: {allowed}"
    elif err["type"] == "union_tag_invalid":
        msg = f"{err['ctx']['tag']!r} is not allowed; allowed values: {err['ctx']['expected_tags']}"
    elif err["type"] == "extra_forbidden":
        msg = "unknown field"
    return f"{where}: {msg}" if where else msg


def _location(loc: tuple[Any, ...]) -> str:
    out = ""
    for part in loc:
        if isinstance(part, int):
            out += f"[{part}]"
        elif not str(part).startswith(("function-", "literal[")) and part not in {
            "str",
            "dict[any,any]",
            *WORKLOAD_KINDS,  # the union's tags: where the error is, not a field
        }:
            out += f".{part}" if out else str(part)
    return out
