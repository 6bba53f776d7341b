#!/usr/bin/env bash
# Debian packages the tests use: bubblewrap (the agent's Bash sandbox), Chromium (the HTML
# report rendered), python3-venv (the DBT environment, made with the system Python). Installed
# with apt-get when run as root; otherwise named, as the README names them (tests/setup.sh
# runs this first).
set -euo pipefail
missing=""
command -v bwrap >/dev/null || missing="$missing bubblewrap"
command -v chromium >/dev/null || missing="$missing chromium"
"${SYSTEM_PYTHON:-/usr/bin/python3}" -c 'import ensurepip, venv' 2>/dev/null || missing="$missing python3-venv"
[ -n "$missing" ] || exit 0
if [ "$(id -u)" -eq 0 ] && command -v apt-get >/dev/null; then
  apt-get update -qq
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $missing >/dev/null
else
  echo "tests/setup.sh: install$missing first (sudo apt-get install$missing): the tests" \
    "of the sandbox, the HTML report and the DBT environment need them" >&2
fi
