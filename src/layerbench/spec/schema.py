"""The JSON Schema of a spec (`layerbench schema`), generated from the pydantic models, for editors.

pydantic writes the models' shape after validation; a spec as people write it is a little looser, and
the schema says so where the models accept more than their fields: a filesystem, engine, placement or
server given by its name (``ext4``, ``docker:overlay2``, ``volume``, ``postgres``), and a stack entry's
fields given as lists (each list an axis of the matrix). Sizes, delays and rates carry their own schemas
(spec/sizes.py, spec/link.py). docs/reference/spec.schema.json is this output, committed (a test keeps
them identical), and every preset names it in its first line for the YAML language server.
"""

from __future__ import annotations

import json
from typing import Any, get_args

from layerbench.spec.databases import Profile, ServerKind, Tuning
from layerbench.spec.models import (
    DRIVERS,
    WORKLOAD_KINDS,
    EngineKind,
    Experiment,
    FsType,
    PlacementKind,
    StackEntry,
    StackSpec,
)

DEFAULT_WORKLOAD = WORKLOAD_KINDS[0]  # what models._workload_kind takes a workload without a kind for
DOCS_PATH = "docs/reference/spec.schema.json"  # where the repository keeps it (relative to the repository's root)


def _engine_names() -> list[str]:
    kinds = list(get_args(EngineKind))
    return kinds + [f"{k}:{d}" for k, drivers in DRIVERS.items() for d in drivers]


# A model that also takes its name as a string: the strings it takes.
SHORTHANDS: dict[str, list[str]] = {
    "FilesystemSpec": list(get_args(FsType)),
    "EngineSpec": _engine_names(),
    "PlacementSpec": list(get_args(PlacementKind)),
    "ServerSpec": list(get_args(ServerKind)),
}


def _one_or_list(item: dict[str, Any]) -> dict[str, Any]:
    return {"anyOf": [item, {"type": "array", "items": item, "minItems": 1}]}


def spec_schema() -> dict[str, Any]:
    """The schema of an experiment spec as YAML writes it."""
    schema = Experiment.model_json_schema(mode="validation")
    stack = StackSpec.model_json_schema(mode="validation")
    defs: dict[str, Any] = {**stack.pop("$defs", {}), **schema.get("$defs", {})}
    for name, names in SHORTHANDS.items():
        if name in defs:
            model = dict(defs[name])
            if name == "ServerSpec":  # a server with an image is of kind image without saying so
                model["required"] = [f for f in model.get("required", []) if f != "kind"]
            defs[name] = {
                "title": model.get("title", name),
                "anyOf": [{"type": "string", "enum": names}, {k: v for k, v in model.items() if k != "title"}],
            }
    if "ClientsSpec" in defs:  # clients: 4 is {count: 4}
        model = dict(defs["ClientsSpec"])
        count = {k: v for k, v in model["properties"]["count"].items() if k != "title"}
        defs["ClientsSpec"] = {
            "title": model.get("title", "ClientsSpec"),
            "anyOf": [count, {k: v for k, v in model.items() if k != "title"}],
        }
    entry = {
        "type": "object",
        "description": "One entry of stacks: any field given as a list becomes an axis (one stack per value).",
        "properties": {f: _one_or_list(stack["properties"][f]) for f in StackEntry.model_fields},
        "additionalProperties": False,
    }
    for field, values in (("profile", Profile), ("tuning", Tuning)):
        entry["properties"][field] = _one_or_list({"type": "string", "enum": list(get_args(values))})
    defs["StackEntry"] = entry
    for ref in schema["properties"]["workloads"]["items"]["oneOf"]:
        workload = defs[ref["$ref"].rsplit("/", 1)[1]]
        if workload["properties"]["kind"].get("const") != DEFAULT_WORKLOAD:  # a workload without a kind is fio's
            workload["required"] = sorted({*workload.get("required", []), "kind"})
    schema["properties"]["stacks"]["items"] = {"$ref": "#/$defs/StackEntry"}
    schema["$defs"] = dict(sorted(defs.items()))
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}


def schema_text() -> str:
    return json.dumps(spec_schema(), indent=2, ensure_ascii=False) + "\n"
