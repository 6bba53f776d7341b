"""`querybench audit`: one gold folder with a case of each finding, and the real lite gold."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from typer.testing import CliRunner

from querybench.cli import app
from querybench.evaluation.spider2_gold import Spider2Gold
from querybench.report.audit import KINDS, Finding, audit_gold
from tests.conftest import require_data

runner = CliRunner()

CONFIG = [
    {"instance_id": "fine", "condition_cols": [[0, 1]], "ignore_order": True},
    {"instance_id": "nogold", "condition_cols": [], "ignore_order": True},
    {"instance_id": "flat", "condition_cols": [0, 3], "ignore_order": True},
    {"instance_id": "nested", "condition_cols": [[0], [5]], "ignore_order": False},
    {"instance_id": "twin", "condition_cols": [], "ignore_order": True},
    {"instance_id": "header", "condition_cols": None, "ignore_order": True},
    {"instance_id": "empty", "condition_cols": [], "ignore_order": True},
    {"instance_id": "blank", "condition_cols": [], "ignore_order": True},
    {"instance_id": "shape", "condition_cols": [True], "ignore_order": "yes"},
    {"instance_id": "shadow", "condition_cols": [], "ignore_order": True},
]
FILES = {
    "fine.csv": "a,b\n1,x\n",
    "flat_a.csv": "a,b,c,d\n1,2,3,4\n",
    "flat_b.csv": "a,b\n1,2\n",  # column 3 of the flat list does not exist here
    "nested_a.csv": "a,b\n1,2\n",
    "nested_b.csv": "a,b\n1,2\n",  # its own list [5] does not fit; equal to nested_a too
    "twin_a.csv": "a,b\n1,x\n",
    "twin_b.csv": "a,b\r\n1,x\r\n",  # other bytes, same parsed content
    "twin_c.csv": "a,b\n2,x\n",
    "header.csv": "a,a\n1,2\n",
    "empty.csv": "a,b\n",
    "blank.csv": "",
    "shape.csv": "a,b\n1,2\n",
    "shadow.csv": "a\n1\n",
    "shadow_a.csv": "a\n2\n",  # shadowed by shadow.csv, not an orphan
    "orphan_a.csv": "a\n1\n",
}
EXPECTED = [
    ("blank", "unreadable_gold", "blank.csv: empty file (no header)"),
    ("empty", "header_only", "empty.csv: 2 columns, no rows"),
    ("flat", "condition_cols_out_of_range", "flat_b.csv: condition_cols [0, 3] for 2 columns"),
    ("header", "duplicate_header", "header.csv: a"),
    ("nested", "condition_cols_out_of_range", "nested_b.csv: condition_cols [5] for 2 columns"),
    ("nested", "duplicate_alternative", "nested_b.csv is identical to nested_a.csv"),
    ("nogold", "missing_gold", "no nogold.csv nor nogold_<letter>.csv"),
    ("orphan", "gold_without_config", "orphan_a.csv"),
    ("shape", "unexpected_config_shape", "condition_cols [true]"),
    ("shape", "unexpected_config_shape", 'ignore_order "yes"'),
    ("twin", "duplicate_alternative", "twin_b.csv is identical to twin_a.csv"),
]


def _gold(tmp_path: Path) -> Path:
    results = tmp_path / "exec_result"
    results.mkdir(parents=True)
    for name, text in FILES.items():
        (results / name).write_bytes(text.encode())
    lines = "".join(json.dumps(item) + "\n" for item in CONFIG)
    (tmp_path / "spider2lite_eval.jsonl").write_text(lines, encoding="utf-8")
    return tmp_path


def test_one_finding_of_each_kind(tmp_path: Path) -> None:
    findings = audit_gold(_gold(tmp_path), "spider2-lite")
    assert [(f.instance_id, f.kind, f.detail) for f in findings] == EXPECTED
    assert {f.kind for f in findings} == set(KINDS)


def test_cli_writes_jsonl_and_exits_zero_with_findings(tmp_path: Path) -> None:
    gold = _gold(tmp_path / "gold")
    out = tmp_path / "audit.jsonl"
    args = ["audit", "spider2-lite", "--gold-dir", str(gold), "--output", str(out)]
    result = runner.invoke(app, args)
    assert result.exit_code == 0, result.output
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [(r["instance_id"], r["kind"], r["detail"]) for r in rows] == EXPECTED
    stdout = runner.invoke(app, ["audit", "spider2-lite", "--gold-dir", str(gold)])
    assert stdout.exit_code == 0
    assert stdout.stdout.splitlines()[0] == Finding(*EXPECTED[0]).to_json()


def test_cli_exits_two_on_unusable_arguments(tmp_path: Path) -> None:
    assert runner.invoke(app, ["audit", "bird", "--gold-dir", str(tmp_path)]).exit_code == 2
    result = runner.invoke(app, ["audit", "spider2-snow", "--gold-dir", str(tmp_path)])
    assert result.exit_code == 2  # no spider2snow_eval.jsonl there


def test_real_lite_gold_yields_the_known_findings() -> None:
    folder = require_data("spider2", "spider2-lite", "evaluation_suite", "gold")
    gold = Spider2Gold(folder, "spider2-lite")
    findings = audit_gold(folder, "spider2-lite")
    missing = {f.instance_id for f in findings if f.kind == "missing_gold"}
    assert "bq441" in missing
    assert missing == {i for i in gold.specs if not gold.result_paths(i)[0]}
    # bq389's flat condition_cols apply to every alternative; those narrower cannot fit.
    cols = gold.specs["bq389"].condition_cols
    assert all(isinstance(c, int) for c in cols)
    narrow = []
    for path in gold.result_paths("bq389")[0]:
        with path.open(encoding="utf-8", newline="") as handle:
            width = len(next(csv.reader(handle)))
        if max(cols) >= width:
            narrow.append(f"{path.name}: condition_cols {cols} for {width} columns")
    found = [
        f.detail
        for f in findings
        if f.instance_id == "bq389" and f.kind == "condition_cols_out_of_range"
    ]
    assert narrow and found == narrow
