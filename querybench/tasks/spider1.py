"""Spider 1.0 dev: 1,034 questions over 20 SQLite databases.

`dev.json` entries carry no id: the instance id is the entry's index (`"0"` ... `"1033"`), the
line of `dev_gold.sql` the official evaluator pairs it with. Difficulty is the official hardness
of the parsed gold SQL that Spider ships as the `sql` field.
"""

from __future__ import annotations

from pathlib import Path

from querybench.engines.registry import EngineKind
from querybench.errors import DataError
from querybench.tasks.input_files import read_json_array, required_str
from querybench.tasks.model import GoldRef, Task
from querybench.tasks.spider1_hardness import spider1_hardness
from querybench.tasks.sql_functions import uses_dialect_functions


def load_spider1(spider1_dir: Path, *, path: Path | None = None) -> list[Task]:
    questions = path or spider1_dir / "dev.json"
    tasks = []
    for index, (where, item) in enumerate(read_json_array(questions, "question file")):
        parsed = item.get("sql")
        difficulty = None
        if parsed is not None:
            try:
                difficulty = spider1_hardness(parsed)
            except (KeyError, TypeError, IndexError, AttributeError) as exc:
                message = f"{where}: field 'sql' is not a parsed Spider query ({exc!r})"
                raise DataError(message) from None
        sql = required_str(item, "query", where)
        tasks.append(
            Task(
                instance_id=str(index),
                benchmark="spider1",
                question=required_str(item, "question", where),
                db=required_str(item, "db_id", where),
                engine=EngineKind.SQLITE,
                gold=GoldRef(sql=sql),
                difficulty=difficulty,
                features=("functions",) if uses_dialect_functions(sql) else (),
            )
        )
    return tasks
