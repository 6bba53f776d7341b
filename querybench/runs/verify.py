"""`querybench verify PATH`: the verdicts of a results file (with its manifest) or a run folder
scored again here, with empty caches, and each one that differs explained by what differs from
the manifest: an input file (named), a library's version, the scorer's code, the timeout policy;
or nothing, which makes the verdict non-deterministic, a defect.

Nothing is written: the re-score reads the same files, with its caches in a temporary folder
and a run's `<id>.csv` results not rewritten.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from querybench import json_input
from querybench.benchmarks import Family, spec
from querybench.errors import DataError
from querybench.evaluation.record import InstanceResult
from querybench.runs.manifest import (
    MANIFEST_NAME,
    UNRECORDED,
    InputFile,
    Manifest,
    deciding_ids,
    decode,
    input_files,
    library_versions,
    located_inputs,
    manifest_path,
    policy_of,
    scorer_identity,
)
from querybench.tasks.input_files import read_text, text_lines

# A verdict as `verify` compares it: what scoring decided, not the words or the timings.
VerdictKey = tuple[float, str | None, float | None, float | None]
NON_DETERMINISTIC = (
    "non-deterministic: no input, library, scorer code or timeout policy differs from the "
    "manifest (a defect: please report it)"
)


@dataclass(frozen=True)
class Change:
    """One thing that differs from the manifest, and the instances it can explain (empty:
    every instance)."""

    reason: str
    instances: frozenset[str] = frozenset()

    def explains(self, instance_id: str) -> bool:
        return not self.instances or instance_id in self.instances


@dataclass(frozen=True)
class Differing:
    instance_id: str
    recorded: VerdictKey | None  # None: not in that results file
    now: VerdictKey | None
    reasons: tuple[str, ...]


@dataclass(frozen=True)
class Verification:
    changes: tuple[Change, ...]
    differing: tuple[Differing, ...]
    reproduced: int

    @property
    def ok(self) -> bool:
        return not self.differing


def locate(path: Path) -> tuple[Path, Path]:
    """The results file and manifest of `path`: a run folder's `results.jsonl` and
    `manifest.json`, or a results file and `<file>.manifest.json` beside it."""
    if path.is_dir():
        results, manifest = path / "results.jsonl", path / MANIFEST_NAME
    else:
        results, manifest = path, manifest_path(path)
    for needed in (results, manifest):
        if not needed.is_file():
            raise DataError(f"{needed} not found: verify reads a results file with its manifest")
    return results, manifest


def read_results(path: Path) -> dict[str, InstanceResult]:

    out: dict[str, InstanceResult] = {}
    for n, line in enumerate(text_lines(read_text(path, "results", path.parent)), 1):
        if line.strip():
            try:
                result = InstanceResult.from_json(json_input.loads(line))
            except ValueError as exc:
                raise DataError(f"{path}:{n}: {exc}") from exc
            out[result.instance_id] = result
    return out


def verdict_key(result: InstanceResult) -> VerdictKey:
    error = None if result.error is None else str(result.error)
    return (result.score, error, result.official_score, result.strict_score)


def verify(path: Path) -> Verification:
    """Score `path`'s predictions again as its manifest says they were scored, and compare."""
    results_file, manifest_file = locate(path)
    manifest = Manifest.read(manifest_file)
    recorded = read_results(results_file)
    options = _options(manifest)
    from querybench.runs.evaluate import resolved_options

    resolved = resolved_options(manifest.benchmark, options)
    predictions = Path(manifest.predictions_path)
    with _cold_caches():
        now = _rescored(manifest, predictions, resolved, path)
    # the instances whose files decided: the results file's, and the re-score's (which the
    # results file cannot hide by claiming no prediction was there)
    decided = sorted({*deciding_ids(recorded.values()), *deciding_ids(now.values())})
    changes = _changes(manifest, predictions, resolved, path, decided)
    differing = []
    for instance_id in sorted(set(recorded) | set(now)):
        before = recorded.get(instance_id)
        after = now.get(instance_id)
        key_before = None if before is None else verdict_key(before)
        key_after = None if after is None else verdict_key(after)
        if key_before != key_after:
            reasons = tuple(c.reason for c in changes if c.explains(instance_id))
            differing.append(
                Differing(instance_id, key_before, key_after, reasons or (NON_DETERMINISTIC,))
            )
    reproduced = len(set(recorded) & set(now)) - sum(
        1 for d in differing if d.recorded is not None and d.now is not None
    )
    return Verification(tuple(changes), tuple(differing), reproduced)


def _options(manifest: Manifest) -> dict[str, Any]:
    """The recorded options, less what cannot be recorded (the layout fills it again) and
    anything that would write (a run's `<id>.csv` results)."""
    decoded = decode(manifest.options)
    options = {k: v for k, v in decoded.items() if v is not UNRECORDED}
    if "write_csv" in options:
        options["write_csv"] = False
    return options


def _changes(
    manifest: Manifest,
    predictions: Path,
    resolved: Mapping[str, Any],
    path: Path,
    ids: list[str],
) -> list[Change]:
    located = located_inputs(predictions, resolved)
    if manifest.kind == "run":
        located["records"] = path / "records.jsonl"
    task_ids = manifest.run.get("task_ids", ids) if manifest.run else ids
    recorded_databases = [k for k, f in manifest.inputs.items() if f.role == "database"]
    found = input_files(located, task_ids, recorded_databases)
    changes = [
        Change(
            _file_change(key, manifest.inputs.get(key), found.get(key)),
            _owners(key, manifest, found),
        )
        for key in sorted(set(manifest.inputs) | set(found))
        if (manifest.inputs.get(key) or _NONE).sha256 != (found.get(key) or _NONE).sha256
    ]
    libraries = library_versions(resolved)
    for name in sorted(set(manifest.libraries) | set(libraries)):
        was, here = manifest.libraries.get(name), libraries.get(name)
        if was != here:
            changes.append(Change(f"{name} differs: recorded {was}, here {here}"))
    scorer = scorer_identity()
    if scorer.get("sha256") != manifest.scorer.get("sha256"):
        changes.append(
            Change(
                f"the scorer's code differs: recorded {manifest.scorer.get('version')} "
                f"({manifest.scorer.get('commit')}), here {scorer.get('version')} "
                f"({scorer.get('commit')})"
            )
        )
    policy = policy_of(manifest.benchmark, resolved)
    if policy != manifest.timeout_policy:
        changes.append(
            Change(
                f"the timeout policy differs: recorded {_policy(manifest.timeout_policy)}, "
                f"here {_policy(policy)}"
            )
        )
    return changes


_NONE = InputFile("", "")


def _owners(key: str, manifest: Manifest, found: Mapping[str, InputFile]) -> frozenset[str]:
    entry = manifest.inputs.get(key) or found.get(key) or _NONE
    return frozenset(entry.instances)


def _file_change(key: str, was: InputFile | None, here: InputFile | None) -> str:
    named = f"{key} ({(was or here or _NONE).role.replace('_', ' ')})"
    if was is None:
        return f"{named} is new (not in the manifest)"
    if here is None:
        return f"{named} is missing (recorded sha256 {was.sha256[:12]})"
    return f"{named} changed (sha256 {was.sha256[:12]} recorded, {here.sha256[:12]} here)"


def _policy(policy: Mapping[str, Any] | None) -> str:
    if policy is None:
        return "none (no query runs)"
    return ", ".join(f"{k} {v}" for k, v in sorted(policy.items()))


def _rescored(
    manifest: Manifest, predictions: Path, resolved: Mapping[str, Any], path: Path
) -> dict[str, InstanceResult]:
    from querybench.runs.evaluate import score

    results = score(manifest.benchmark, predictions, dict(resolved))
    if manifest.kind == "run" and manifest.run is not None:
        results = _as_run(manifest, results, path)
    return {r.instance_id: r for r in results}


def _as_run(manifest: Manifest, results: list[InstanceResult], path: Path) -> list[InstanceResult]:
    """The re-scored verdicts as the run wrote them: its task ids, its tasks only, the
    instances the model failed on keeping the model's error."""
    from dataclasses import replace

    from querybench.runs.outputs import with_record_errors
    from querybench.runs.store import RecordStore

    assert manifest.run is not None
    ids = [str(i) for i in manifest.run.get("task_ids", [])]
    if spec(manifest.benchmark).family is Family.SPIDER1:  # numbered by gold line
        results = [replace(r, instance_id=i) for r, i in zip(results, ids, strict=False)]
    wanted = set(ids)
    kept = [r for r in results if r.instance_id in wanted]
    return with_record_errors(kept, RecordStore(path).load(), manifest.unavailable)


@contextlib.contextmanager
def _cold_caches() -> Iterator[None]:
    """Every cache in an empty temporary folder for the re-score: a kept verdict or result
    would only repeat what was recorded."""
    names = ("QUERYBENCH_CACHE", "QUERYBENCH_VERDICT_CACHE", "QUERYBENCH_CSV_CACHE")
    saved = {name: os.environ.get(name) for name in names}
    with tempfile.TemporaryDirectory(prefix="querybench-verify-") as folder:
        os.environ["QUERYBENCH_CACHE"] = folder
        os.environ["QUERYBENCH_VERDICT_CACHE"] = "0"
        os.environ["QUERYBENCH_CSV_CACHE"] = "0"
        try:
            yield
        finally:
            for name, value in saved.items():
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value
