"""`python -m bird_sql.skiplist --data <train folder>`: build the BIRD train skip list for this
SQLite (`querybench.envs.skiplist`)."""

from querybench.envs.skiplist import main

__all__ = ["main"]

if __name__ == "__main__":
    raise SystemExit(main())
