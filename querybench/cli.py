"""The `querybench` command line: a thin layer over the library functions."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Collection, Sequence
from pathlib import Path
from typing import Annotated, Any

import typer

from querybench.benchmarks import spec, specs
from querybench.commands import eval_run
from querybench.commands.plain_options import PlainGroup
from querybench.evaluation.prediction_file import ReadLimits

# The root command; `app` (below, PEP 562) is it with every command group registered.
_root = typer.Typer(
    help="Benchmark, evaluate and train text-to-SQL systems (Spider 2.0, BIRD, Spider 1.0).",
    no_args_is_help=True,
    rich_markup_mode="markdown",
    cls=PlainGroup,
)
eval_app = typer.Typer(
    help=(
        "Score predictions against a benchmark's gold.\n\n"
        "Examples:\n\n"
        "    querybench eval spider2-lite --predictions my_csvs/\n\n"
        "    querybench eval spider2-lite --predictions my_sqls/ --mode sql --db-dir dbs/\n\n"
        "    querybench eval spider1 --predictions pred.txt\n\n"
        "    querybench eval bird --predictions predict_dev.json --db-dir dev_databases/\n\n"
        "    querybench eval spider2-dbt --predictions RUNDIR/predictions\n\n"
        "    querybench eval spider2 --predictions RUNDIR/submission"
    ),
    no_args_is_help=True,
    rich_markup_mode="markdown",
    cls=PlainGroup,
)
_root.add_typer(eval_app, name="eval")


@_root.callback()
def _options(
    verbose: Annotated[
        bool, typer.Option("--verbose", "-v", help="Also log what the library skips and why.")
    ] = False,
) -> None:
    if verbose:
        eval_run.verbose()


Workers = Annotated[int, typer.Option(min=1, help="Queries run in parallel.")]
Output = Annotated[Path | None, typer.Option(help="Write one JSON line per instance to this file.")]
Executor = Annotated[
    str,
    typer.Option(
        help="local (this process) or ray (shards on a Ray cluster; "
        "pip install 'querybench[ray]'); --workers then caps each engine cluster-wide."
    ),
]
Address = Annotated[
    str | None,
    typer.Option(help="Ray cluster to join (auto, ray://host:10001); default a local Ray."),
]

Runnable = Annotated[
    bool,
    typer.Option(
        "--runnable",
        help="Only the data's tasks that can run here (`querybench data status`): the others "
        "are left out instead of scored engine_unavailable.",
    ),
]

_LIMITS = ReadLimits()  # the defaults the eval flags show


def _spider2_command(benchmark: str) -> Callable[..., None]:
    def command(
        predictions: Annotated[
            Path, typer.Option(help="Folder of `<instance_id>.csv` (or `.sql` in sql mode).")
        ],
        mode: Annotated[str, typer.Option(help="exec_result (CSV results) or sql.")] = (
            "exec_result"
        ),
        gold_dir: Annotated[
            Path | None,
            typer.Option(help="Gold folder (exec_result/, sql/, eval jsonl); default: the data."),
        ] = None,
        db_dir: Annotated[
            Path | None,
            typer.Option(
                help="sql mode: folder of `<db>.sqlite` for local tasks (default: the Spider "
                "2.0 database folders of the data roots; see `querybench data status`)."
            ),
        ] = None,
        scoring: Annotated[
            str, typer.Option(help="Which score is `score`: official or strict (both reported).")
        ] = "official",
        workers: Workers = 2,
        timeout: Annotated[
            float, typer.Option(help="Seconds per query (sql mode).", min=0.001)
        ] = 60.0,
        output: Output = None,
        tasks_file: Annotated[
            Path | None, typer.Option(help="sql mode: task jsonl naming each task's database.")
        ] = None,
        executor: Executor = "local",
        address: Address = None,
        max_bytes: Annotated[
            int, typer.Option(help="Bytes one prediction file may have (else too_large).", min=1)
        ] = _LIMITS.max_bytes,
        max_columns: Annotated[
            int, typer.Option(help="Columns one prediction may have (else too_large).", min=1)
        ] = _LIMITS.max_columns,
        max_cells: Annotated[
            int, typer.Option(help="Cells (rows x columns) one prediction may have.", min=1)
        ] = _LIMITS.max_cells,
        max_line_bytes: Annotated[
            int, typer.Option(help="Bytes one line of a prediction file may have.", min=1)
        ] = _LIMITS.max_line_bytes,
        read_timeout: Annotated[
            float,
            typer.Option(
                help="Seconds reading one prediction file may take (on a network or FUSE mount; "
                "a local disk's read always returns).",
                min=0.001,
            ),
        ] = _LIMITS.seconds,
        runnable: Runnable = False,
    ) -> None:
        eval_run.COMMANDS[benchmark](
            predictions=predictions,
            mode=mode,
            gold_dir=gold_dir,
            db_dir=db_dir,
            scoring=scoring,
            workers=workers,
            timeout=timeout,
            output=output,
            tasks_file=tasks_file,
            executor=executor,
            address=address,
            max_bytes=max_bytes,
            max_columns=max_columns,
            max_cells=max_cells,
            max_line_bytes=max_line_bytes,
            read_timeout=read_timeout,
            runnable=runnable,
        )

    command.__doc__ = (
        f"Score {benchmark} predictions; both official and strict scores are reported.\n\n"
        f"Example: `querybench eval {benchmark} --predictions "
        f"$QUERYBENCH_DATA/spider2/{benchmark}/evaluation_suite/example_submission_folder_csv`"
        "\n\nVerdicts are kept by the content of each prediction and gold file under "
        "$QUERYBENCH_CACHE: QUERYBENCH_VERDICT_CACHE=0 scores every instance again."
    )
    return command


def _spider1_command(benchmark: str) -> Callable[..., None]:
    def eval_spider1(
        predictions: Annotated[Path, typer.Option(help="One predicted SQL per line.")],
        gold: Annotated[
            Path | None,
            typer.Option(
                help="Gold file: `SQL<TAB>db_id` per line; default the data's dev_gold.sql."
            ),
        ] = None,
        db_dir: Annotated[
            Path | None,
            typer.Option(help="Databases at `DIR/<db_id>/<db_id>.sqlite`; default the data's."),
        ] = None,
        questions: Annotated[
            Path | None,
            typer.Option(
                help="dev.json matching the gold lines: adds each question's hardness (default: "
                "the data's, with its gold)."
            ),
        ] = None,
        timeout: Annotated[float, typer.Option(help="Seconds per query.", min=0.001)] = 30.0,
        workers: Workers = 2,
        output: Output = None,
        executor: Executor = "local",
        address: Address = None,
        metrics: Annotated[
            str,
            typer.Option(
                help="Comma-separated: ex (execution match, the score; always computed), em (exact "
                "set match with its partial scores, as the official evaluation.py --etype match; "
                "prints the official tables)."
            ),
        ] = "ex",
        tables: Annotated[
            Path | None,
            typer.Option(help="Spider's tables.json for em (default: beside --gold or --db-dir)."),
        ] = None,
        plug_value: Annotated[
            bool,
            typer.Option(
                "--plug_value",
                help="As the official flag: a prediction also passes when it passes with the "
                "gold's values plugged into its value slots (for models that predict no values).",
            ),
        ] = False,
        keep_distinct: Annotated[
            bool,
            typer.Option(
                "--keep_distinct",
                help="As the official flag: keep DISTINCT when executing (by default both queries "
                "lose it).",
            ),
        ] = False,
        runnable: Runnable = False,
    ) -> None:
        eval_run.COMMANDS[benchmark](
            gold=gold,
            predictions=predictions,
            db_dir=db_dir,
            questions=questions,
            timeout=timeout,
            workers=workers,
            output=output,
            executor=executor,
            address=address,
            metrics=metrics,
            tables=tables,
            plug_value=plug_value,
            keep_distinct=keep_distinct,
            runnable=runnable,
        )

    eval_spider1.__doc__ = (
        f"{spec(benchmark).title}: Spider 1.0 execution match (official test-suite semantics, "
        "and strict), and exact match.\n\n"
        f"Example: `querybench eval {benchmark} --predictions pred.txt --metrics ex,em` (gold "
        "and databases: the data's; `--gold FILE --db-dir DIR` name others)"
    )
    return eval_spider1


Metrics = Annotated[
    str,
    typer.Option(
        help="Comma-separated, as BIRD mini-dev's official scripts: ex (execution match, the "
        "score; always computed), soft_f1 (Soft-F1), r_ves (reward-based VES: each matched pair "
        "is timed --ves-repeats times, so it is SLOW and its figures depend on the machine's "
        "load; use --workers 1 on an idle host)."
    ),
]
BirdPredictions = Annotated[
    Path,
    typer.Option(
        help='Prediction JSON: {"<question_id>": "SQL\\t----- bird -----\\t<db_id>"}, keyed by '
        'question_id or, as the official mini-dev files, by position ("0", "1", ...).'
    ),
]
VesRepeats = Annotated[
    int, typer.Option(min=1, help="r_ves: timed runs of each matched pair (official: 100).")
]


def _bird_command(benchmark: str) -> Callable[..., None]:
    def eval_bird(
        predictions: BirdPredictions,
        questions: Annotated[
            Path | None, typer.Option(help="BIRD question file (dev.json); default the data's.")
        ] = None,
        db_dir: Annotated[
            Path | None,
            typer.Option(help="Databases at `DIR/<db_id>/<db_id>.sqlite`; default the data's."),
        ] = None,
        metrics: Metrics = "ex",
        ves_repeats: VesRepeats = 100,
        timeout: Annotated[float, typer.Option(help="Seconds per query.", min=0.001)] = 30.0,
        workers: Workers = 2,
        output: Output = None,
        executor: Executor = "local",
        address: Address = None,
        runnable: Runnable = False,
    ) -> None:
        """BIRD execution match (set semantics) with error / trivial / gold_error metrics, and
        optionally the official Soft-F1 and R-VES; tables by difficulty as the official scripts.

        Example: `querybench eval bird --questions dev.json --predictions predict_dev.json
        --db-dir dev_databases/ --metrics ex,soft_f1`
        """
        eval_run.COMMANDS[benchmark](
            questions=questions,
            predictions=predictions,
            db_dir=db_dir,
            metrics=metrics,
            ves_repeats=ves_repeats,
            timeout=timeout,
            workers=workers,
            output=output,
            executor=executor,
            address=address,
            runnable=runnable,
        )

    return eval_bird


def _mini_dev_command(benchmark: str) -> Callable[..., None]:
    def eval_bird_mini_dev(
        predictions: BirdPredictions,
        dialect: Annotated[
            str, typer.Option(help="sqlite, mysql or postgresql: which mini-dev file and engine.")
        ] = "sqlite",
        questions: Annotated[
            Path | None,
            typer.Option(help="Questions file; default the data's mini_dev_DIALECT.json."),
        ] = None,
        db_dir: Annotated[
            Path | None,
            typer.Option(
                help="sqlite: databases at `DIR/<db_id>/<db_id>.sqlite`; default the data."
            ),
        ] = None,
        db_url: Annotated[
            str | None,
            typer.Option(
                help="mysql/postgresql: the server database, e.g. mysql://root@127.0.0.1:3306/BIRD "
                "(every table in one database, as the official dumps) or …/bird_{db_id} (one per "
                "db_id); load it from the SQLite files with `querybench db load`."
            ),
        ] = None,
        metrics: Metrics = "ex",
        ves_repeats: VesRepeats = 100,
        timeout: Annotated[float, typer.Option(help="Seconds per query.", min=0.001)] = 30.0,
        workers: Workers = 2,
        output: Output = None,
        executor: Executor = "local",
        address: Address = None,
    ) -> None:
        """BIRD mini-dev (500 questions) on SQLite, MySQL/MariaDB or PostgreSQL: EX, and Soft-F1 /
        R-VES with --metrics, in the official by-difficulty tables.

        Examples:

        `querybench eval bird-mini-dev --predictions predict_mini_dev_sqlite.json --metrics
        ex,soft_f1,r_ves`

        `querybench eval bird-mini-dev --dialect mysql --db-url mysql://root@127.0.0.1:3306/BIRD
        --predictions predict_mini_dev_mysql.json --questions mini_dev_mysql.json`
        """
        eval_run.COMMANDS[benchmark](
            predictions=predictions,
            dialect=dialect,
            questions=questions,
            db_dir=db_dir,
            db_url=db_url,
            metrics=metrics,
            ves_repeats=ves_repeats,
            timeout=timeout,
            workers=workers,
            output=output,
            executor=executor,
            address=address,
        )

    return eval_bird_mini_dev


# The commands beside `eval`, in the order `querybench --help` lists them: (name, module,
# attribute, a group or a command). Each module is imported only when its command is named on
# the command line (or for help and completion): `querybench eval bird` imports none of them.
_COMMANDS = (
    ("context", "querybench.commands.context", "context", False),
    ("tasks", "querybench.commands.tasks", "tasks_app", True),
    ("data", "querybench.commands.data", "data_app", True),
    ("db", "querybench.commands.db", "app", True),
    ("run", "querybench.commands.run", "run", False),
    ("report", "querybench.commands.report", "report", False),
    ("audit", "querybench.commands.audit", "audit", False),
    ("verify", "querybench.commands.verify", "verify", False),
)
_registered: set[str] = set()


def _register(names: Collection[str]) -> None:
    """Register the named commands of `_COMMANDS` (once each, in their listed order)."""
    import importlib

    for name, module, attribute, group in _COMMANDS:
        if name in names and name not in _registered:
            _registered.add(name)
            target = getattr(importlib.import_module(module), attribute)
            if group:
                _root.add_typer(target, name=name)
            else:
                _root.command(name)(target)


def _named(argv: Sequence[str]) -> Collection[str]:
    """The commands a command line needs: the one it names, or every one (help, completion,
    an unknown name: typer's listing and suggestions then see them all)."""
    every = [name for name, *_ in _COMMANDS]
    if _completing():
        return every
    first = next((arg for arg in argv if not arg.startswith("-")), None)
    if first == "eval":
        return ()
    return [first] if first in every else every


def _completing() -> bool:
    """Shell completion is asking (typer's `_<PROG>_COMPLETE`): it needs every command."""
    return any(key.startswith("_") and key.endswith("_COMPLETE") for key in os.environ)


def _only_the_named_eval(argv: Sequence[str]) -> None:
    """`querybench eval <name> …` builds that one eval command: typer builds the options of
    every command of a group before it runs one (an unknown name keeps them all)."""
    if _completing():
        return
    words = [arg for arg in argv if not arg.startswith("-")]
    if len(words) >= 2 and words[0] == "eval":
        named = [c for c in eval_app.registered_commands if c.name == words[1]]
        if named:
            eval_app.registered_commands = named


def __getattr__(name: str) -> Any:
    """`app`: the root command with every command registered (for tests and library users;
    the console script registers only what its command line names)."""
    if name == "app":
        _register([name for name, *_ in _COMMANDS])
        return _root
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _dbt_command(benchmark: str) -> Callable[..., None]:
    def eval_spider2_dbt(
        predictions: Annotated[
            Path, typer.Option(help="Folder of `<instance_id>/<db>.duckdb`, the databases left.")
        ],
        data_dir: Annotated[
            Path | None, typer.Option(help="Data root holding spider2/spider2-dbt (tasks, gold).")
        ] = None,
        gold_dir: Annotated[
            Path | None, typer.Option(help="Gold folder `<instance_id>/<file>`; default: the data.")
        ] = None,
        workers: Workers = 2,
        timeout: Annotated[
            float,
            typer.Option(help="Seconds to open one database and read its tables.", min=0.001),
        ] = 120.0,
        output: Output = None,
        runnable: Runnable = False,
    ) -> None:
        """Score Spider 2.0-DBT outputs with `duckdb_match` (official and strict), over every task
        (a missing gold file counts 0) and over the tasks whose gold is present.

        Example: `querybench eval spider2-dbt --predictions RUNDIR/predictions`
        """
        eval_run.COMMANDS[benchmark](
            predictions=predictions,
            data_dir=data_dir,
            gold_dir=gold_dir,
            workers=workers,
            timeout=timeout,
            output=output,
            runnable=runnable,
        )

    return eval_spider2_dbt


def _agentic_command(benchmark: str) -> Callable[..., None]:
    def eval_spider2(
        predictions: Annotated[
            Path,
            typer.Option(
                help="Submission folder: results_metadata.jsonl and one folder per instance."
            ),
        ],
        gold_dir: Annotated[
            Path | None,
            typer.Option(help="Gold folder `<instance_id>/<file>` (with spider2_eval.jsonl)."),
        ] = None,
        scoring: Annotated[
            str, typer.Option(help="Which score is `score`: official or strict (both reported).")
        ] = "official",
        data_dir: Annotated[
            Path | None, typer.Option(help="Data root holding spider2/spider2 (tasks, gold).")
        ] = None,
        workers: Workers = 2,
        timeout: Annotated[
            float,
            typer.Option(
                help="Seconds per query of a .sql answer, and to read one .duckdb answer.",
                min=0.001,
            ),
        ] = 120.0,
        output: Output = None,
        runnable: Runnable = False,
    ) -> None:
        """Score an agentic Spider 2.0 submission (the official layout), official and strict, over
        all 632 tasks, the DBT part and the tasks whose gold is here.

        Example: `querybench eval spider2 --predictions
        $QUERYBENCH_DATA/spider2/spider2/evaluation_suite/example_submission_folder`
        """
        eval_run.COMMANDS[benchmark](
            predictions=predictions,
            gold_dir=gold_dir,
            scoring=scoring,
            data_dir=data_dir,
            workers=workers,
            timeout=timeout,
            output=output,
            runnable=runnable,
        )

    return eval_spider2


# Each eval command's typer declaration, by the command body its benchmark's spec names.
_DECLARATIONS: dict[str, Callable[[str], Callable[..., None]]] = {
    "querybench.commands.eval_run:spider2": _spider2_command,
    "querybench.commands.eval_run:spider2_dbt": _dbt_command,
    "querybench.commands.eval_run:spider2_agentic": _agentic_command,
    "querybench.commands.eval_execution:bird": _bird_command,
    "querybench.commands.eval_execution:bird_mini_dev": _mini_dev_command,
    "querybench.commands.eval_execution:spider1": _spider1_command,
}
for _spec in specs():
    if _spec.command is not None:
        eval_app.command(_spec.name.value)(_DECLARATIONS[_spec.command](_spec.name.value))


def main() -> None:
    _register(_named(sys.argv[1:]))
    _only_the_named_eval(sys.argv[1:])
    _root()
