"""The Python payload types are generated from schema.json; this fails when they drift from it."""

import json
import subprocess
import sys
import typing
from pathlib import Path

from workbench.ir import schema_types
from workbench.report import load_schema

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "extension" / "scripts" / "schema_types.py"


def test_schema_types_is_what_the_schema_generates():
    out = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr


def test_every_payload_of_the_schema_has_a_type():
    defs = load_schema()["$defs"]
    for name in ("timing", "bench", "roofline", "check", "timeline", "capture", "diff", "finding", "task",
                 "linearLayout", "declaredLayout", "valueLayout", "search"):
        assert name in defs
        assert hasattr(schema_types, name[0].upper() + name[1:]), name


def test_a_types_keys_are_the_schemas_properties():
    """The generated TypedDicts have exactly the schema's properties, required ones required."""
    defs = load_schema()["$defs"]
    for name in ("bench", "linearLayout", "valueLayout"):
        td = getattr(schema_types, name[0].upper() + name[1:])
        hints = typing.get_type_hints(td, include_extras=True)
        assert set(hints) == set(defs[name]["properties"]), name
        # the module's annotations are strings: NotRequired shows in the evaluated hints, not __required_keys__
        required = {k for k, h in hints.items() if typing.get_origin(h) is not typing.NotRequired}
        assert required == set(defs[name].get("required", [])), name


def test_an_example_reports_layouts_read_as_the_types_say():
    example = json.loads((ROOT / "workbench/report/examples/vector_add.json").read_text())
    hints = typing.get_type_hints(schema_types.ValueLayout, include_extras=True)
    required = {k for k, h in hints.items() if typing.get_origin(h) is not typing.NotRequired}
    for v in example["layouts"]["values"]:
        assert required <= set(v) <= set(hints)
