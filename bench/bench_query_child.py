"""What a query costs layer by layer on the BIRD bench's queries: why a cold `eval bird` cannot
be 5x the official `evaluation_ex.py` on stand-in databases.

The distinct (database, SQL) pairs of Spider 1.0 dev's gold (the queries `bench_official`'s
bird work runs, 533 of them), run in database order, the minimum of `--rounds`:

* `sqlite3`: a kept read-only `sqlite3` connection per database, `fetchall`, in this process
  (what the official script does, and the floor of any scorer);
* `engine`: querybench's `SQLiteEngine` in this process (authorizer, one-statement rule, row
  and byte caps, the deadline, error mapping);
* `child`: the same engine in a `QueryProcess` (the killable child the per-query timeout
  contract needs), batches of up to 16 queries a message, as `evaluation/execution.py` sends
  them; wall seconds, the parent's CPU and the child's CPU.

    .venv/bin/python -m bench.bench_query_child [--rounds 5]
"""

from __future__ import annotations

import argparse
import resource
import sqlite3
import time

from querybench.data.roots import data_root

BATCH = 16  # evaluation/execution.py's BATCH


def _queries() -> list[tuple[str, str]]:
    spider1 = data_root() / "spider1"
    pairs = set()
    for line in (spider1 / "dev_gold.sql").read_text().splitlines():
        if not line.strip():
            continue
        sql, db_id = line.rsplit("\t", 1)
        path = spider1 / db_id / f"{db_id}.sqlite"
        if path.is_file():
            pairs.add((str(path), sql))
    return sorted(pairs)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _raw(queries: list[tuple[str, str]]) -> tuple[float, float]:
    start, cpu = time.perf_counter(), time.process_time()
    connections: dict[str, sqlite3.Connection] = {}
    for path, sql in queries:
        if path not in connections:
            connections[path] = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        connections[path].execute(sql).fetchall()
    for connection in connections.values():
        connection.close()
    return time.perf_counter() - start, time.process_time() - cpu


def _engine(queries: list[tuple[str, str]]) -> tuple[float, float]:
    from querybench.engines import connect

    start, cpu = time.perf_counter(), time.process_time()
    engines = {}
    for path, sql in queries:
        if path not in engines:
            engines[path] = connect(path)
        engines[path].execute(sql, timeout=30, max_rows=1_000_000)
    for engine in engines.values():
        engine.close()
    return time.perf_counter() - start, time.process_time() - cpu


def _child(queries: list[tuple[str, str]]) -> tuple[float, float, float]:
    from querybench.engines.isolated import QueryProcess

    start, cpu, children = time.perf_counter(), time.process_time(), _children_cpu()
    with QueryProcess() as process:
        process.start()
        done = 0
        while done < len(queries):
            path = queries[done][0]
            end = done + 1
            while end < min(len(queries), done + BATCH) and queries[end][0] == path:
                end += 1
            process.engine(path)
            sqls = [sql for _, sql in queries[done:end]]
            process.execute_many(path, sqls, timeout=30, max_rows=1_000_000)
            done = end
    wall, parent = time.perf_counter() - start, time.process_time() - cpu
    return wall, parent, _children_cpu() - children


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])  # its first sentence
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    queries = _queries()
    raw, engine, child = [], [], []
    for _ in range(args.rounds):  # interleaved
        raw.append(_raw(queries))
        engine.append(_engine(queries))
        child.append(_child(queries))
    n = len(queries)
    print(f"{n} distinct queries, minimum of {args.rounds} rounds")
    wall, cpu = min(raw)
    print(
        f"sqlite3, in process:   wall {wall:.4f} s  cpu {cpu:.4f} s  {cpu / n * 1e6:.0f} us/query"
    )
    wall, cpu = min(engine)
    print(
        f"engine, in process:    wall {wall:.4f} s  cpu {cpu:.4f} s  {cpu / n * 1e6:.0f} us/query"
    )
    wall, parent, kid = min(child)
    print(
        f"engine, in a child:    wall {wall:.4f} s  parent cpu {parent:.4f} s  "
        f"child cpu {kid:.4f} s  {(parent + kid) / n * 1e6:.0f} us/query"
    )


if __name__ == "__main__":
    main()
