"""BIRD: dev (1,534 questions), mini-dev (500) and train when present; SQLite databases.

Entries are `{question_id, db_id, question, evidence, SQL, difficulty}`; the instance id is the
`question_id` (as the official prediction JSON keys it), or the entry's position in the file
when it has none (the official train.json has only db_id, question, evidence and SQL), the
difficulty BIRD's own label (simple / moderate / challenging) and the evidence the task's
external knowledge.
"""

from __future__ import annotations

from pathlib import Path

from querybench.errors import DataError
from querybench.tasks.input_files import optional_str, read_json_array, required_str, unique_ids
from querybench.tasks.model import GoldRef, Task
from querybench.tasks.sql_functions import uses_dialect_functions

DIFFICULTIES = ("simple", "moderate", "challenging")

# benchmark name -> candidate files under the bird/ folder, the official names first
SPLIT_FILES = {
    "bird": ("dev.json", "dev/dev.json"),
    "bird-mini-dev": ("mini_dev_sqlite.json", "mini_dev/mini_dev_sqlite.json"),
    "bird-train": ("train.json", "train/train.json"),
}


def bird_file(benchmark: str, bird_dir: Path) -> Path:
    candidates = [bird_dir / name for name in SPLIT_FILES[benchmark]]
    return next((p for p in candidates if p.is_file()), candidates[0])


def mini_dev_file(dialect: str, bird_dir: Path) -> Path:
    """The mini-dev questions for `dialect` (sqlite, mysql, postgresql), official names first:
    `mini_dev_<dialect>.json` as the official MINIDEV folder and the Hugging Face copy hold it."""
    name = f"mini_dev_{dialect}.json"
    candidates = [bird_dir / name, bird_dir / "mini_dev" / name, bird_dir / "MINIDEV" / name]
    return next((p for p in candidates if p.is_file()), candidates[0])


def mini_dev_dir(bird_dir: Path) -> Path:
    """The folder of `<db_id>/<db_id>.sqlite`: `dev_databases/` as the releases unpack, else
    the BIRD folder itself."""
    candidates = [bird_dir / "dev_databases", bird_dir / "MINIDEV" / "dev_databases"]
    return next((p for p in candidates if p.is_dir()), bird_dir)


def load_bird(benchmark: str, bird_dir: Path, *, path: Path | None = None) -> list[Task]:
    questions = path or bird_file(benchmark, bird_dir)
    tasks = []
    for position, (where, item) in enumerate(read_json_array(questions, "question file")):
        # The official train.json has no question_id: a question is its position in the file.
        if "question_id" in item:
            instance_id = required_str(item, "question_id", where, int_ok=True)
        else:
            instance_id = str(position)
        difficulty = optional_str(item, "difficulty", where)
        if difficulty is not None and difficulty not in DIFFICULTIES:
            allowed = ", ".join(DIFFICULTIES)
            raise DataError(f"{where}: field 'difficulty' is {difficulty!r}, not one of {allowed}")
        evidence = optional_str(item, "evidence", where)
        sql = required_str(item, "SQL", where)
        features: tuple[str, ...] = ("documentation",) if evidence else ()
        if uses_dialect_functions(sql):
            features += ("functions",)
        tasks.append(
            Task(
                instance_id=instance_id,
                benchmark=benchmark,
                question=required_str(item, "question", where),
                db=required_str(item, "db_id", where),
                engine="sqlite",
                external_knowledge=evidence,
                gold=GoldRef(sql=sql),
                difficulty=difficulty,
                features=features,
            )
        )
    unique_ids([t.instance_id for t in tasks], questions)
    return tasks
