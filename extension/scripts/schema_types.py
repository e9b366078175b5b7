"""Generate workbench/ir/schema_types.py (the Report's payloads as Python TypedDicts) from
workbench/report/schema.json with datamodel-code-generator, as schema-types.mjs generates src/schema.d.ts
for the viewer. Run it after editing the schema:

    .venv/bin/python extension/scripts/schema_types.py           # writes the module
    .venv/bin/python extension/scripts/schema_types.py --check   # exits 1 when the committed one differs

tests/report/test_schema_types.py runs the check.
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = ROOT / "workbench" / "report" / "schema.json"
OUT = ROOT / "workbench" / "ir" / "schema_types.py"

HEADER = '''"""The Report's payloads as TypedDicts, generated from workbench/report/schema.json by
extension/scripts/schema_types.py (datamodel-code-generator): do not edit. tests/report/test_schema_types.py
fails when it drifts."""

'''

OPTIONS = [
    "--input-file-type", "jsonschema",
    "--output-model-type", "typing.TypedDict",
    "--target-python-version", "3.11",
    "--formatters", "builtin",
    "--disable-timestamp",
    "--enum-field-as-literal", "all",
    "--use-title-as-name",
]


def generate(schema: Path = SCHEMA) -> str:
    """The module's text as the pinned generator writes it for ``schema``."""
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "schema_types.py"
        subprocess.run([sys.executable, "-m", "datamodel_code_generator", "--input", str(schema), "--output",
                        str(out), *OPTIONS], check=True, capture_output=True, text=True)
        body = out.read_text()
    # the generator's own banner names a temporary path: the header above replaces it
    lines = body.splitlines(keepends=True)
    while lines and (lines[0].startswith("#") or not lines[0].strip()):
        lines.pop(0)
    return HEADER + "".join(lines)


def main(argv: list[str]) -> int:
    text = generate(Path(argv[argv.index("--schema") + 1]) if "--schema" in argv else SCHEMA)
    if "--stdout" in argv:
        sys.stdout.write(text)
        return 0
    if "--check" in argv:
        if OUT.read_text() != text:
            print("workbench/ir/schema_types.py is out of date: run extension/scripts/schema_types.py",
                  file=sys.stderr)
            return 1
        return 0
    OUT.write_text(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
