#!/usr/bin/env bash
# Everything the tests need beyond the core install of the README's first command: the extras
# (engines, RL, Ray, plotting, test tools), the verifiers environment packages, the DBT
# environment and the local PostgreSQL/MariaDB servers. Idempotent; the README's test command
# (and so .ci/run) runs it before pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
# Debian packages the tests use (tests/system_packages.sh): apt-get as root, else named.
bash tests/system_packages.sh
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/pip install --quiet -e '.[all,dev]'
# the bytecode an editable install never writes under PYTHONDONTWRITEBYTECODE (README)
.venv/bin/python -m compileall -q querybench
# The verifiers environments are small packages of their own, as `vf-eval <id>` imports them by name.
# --no-deps: their one dependency, querybench[rl] from this checkout, is installed (editable) above.
.venv/bin/pip install --quiet --no-deps -e environments/querybench_sql \
  -e environments/querybench_sql_tools -e environments/bird_sql
# DBT tasks: dbt-core 1.10 with dbt-duckdb in an environment of their own (dbt 1.10 pins
# libraries below what mypy needs), made with the system Python, which every user (the sandbox's
# too) can read; the agent finds it through QUERYBENCH_DBT or, in the tests, at .venv-dbt.
if [ ! -x .venv-dbt/bin/dbt ]; then
  /usr/bin/python3 -m venv .venv-dbt
  .venv-dbt/bin/pip install --quiet 'dbt-core~=1.10.0' 'dbt-duckdb~=1.10.0'
fi
# The engine tests talk to real PostgreSQL and MariaDB servers: start them if they are down.
bash tests/services.sh
