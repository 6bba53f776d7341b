"""The agent sandbox's bounds, measured: what each attack of issue 12 costs the host now.

Each case runs one `Bash` action (or host-side action) with the default `Limits` in a fresh
workspace and reports its wall time, what the host folder holds afterwards, and the outcome
(the note or the observation's last line, or the error that ended the task). The tmpfs bounds
themselves are the kernel's (`df` in the sandbox shows them). Needs bubblewrap; run as the CI
runs (root).

    .venv/bin/python bench/bench_sandbox_bounds.py
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from querybench.agent import files
from querybench.agent.sandbox import Limits, run_shell, sandbox_available

CASES = [
    ("empty action (pack in + out)", "true"),
    ("100 MB workspace, one action", "head -c 100000000 /dev/urandom > w; true"),
    ("12 x 250 MB into the workspace", "for i in $(seq 12); do head -c 250M /dev/zero > f$i; done"),
    ("3 GB into /tmp", "for i in $(seq 12); do head -c 250M /dev/zero > /tmp/f$i; done"),
    ("six 200 MB sparse files", "for i in 1 2 3 4 5 6; do truncate -s 200M s$i; done"),
    ("30,000 empty files", "seq 30000 | xargs touch"),
    ("fork bomb (60 s limit)", "b() { b | b & }; b; sleep 1; echo end"),
    ("mkfifo out.csv, then a host write to it", "mkfifo out.csv"),
]


def measure(code: str, limits: Limits) -> tuple[float, float, str]:
    with tempfile.TemporaryDirectory() as folder:
        workspace = Path(folder) / "ws"
        workspace.mkdir()
        start = time.perf_counter()
        try:
            result = run_shell(workspace, code, timeout=60, limits=limits)
            outcome = (result.note or result.output.strip().splitlines()[-1:] or [""])[-1]
            if "mkfifo" in code:
                files.write_bytes(workspace, "out.csv", b"a\n1\n")
                outcome = "host write: a regular file written (the FIFO was not kept)"
        except files.WorkspaceFull as exc:
            outcome = f"task ends: {exc}"
        except files.UnsafePath as exc:
            outcome = f"refused: {exc}"
        elapsed = time.perf_counter() - start
        held = files.usage(workspace).bytes if workspace.exists() else 0
    return elapsed, held / 1024**2, outcome[:110]


def main() -> None:
    if not sandbox_available():
        sys.exit("bubblewrap (0.8 or later) is needed")
    limits = Limits()
    print(
        f"limits: workspace {limits.workspace_bytes / 1024**2:g} MiB, /tmp "
        f"{limits.tmp_bytes / 1024**2:g} MiB, {limits.workspace_files} files, file "
        f"{limits.file_bytes / 1024**2:g} MiB, {limits.processes} processes; {os.cpu_count()} CPUs"
    )
    print("| case | wall s | host folder after, MiB | outcome |")
    print("|---|---|---|---|")
    for name, code in CASES:
        elapsed, held, outcome = measure(code, limits)
        print(f"| {name} | {elapsed:.2f} | {held:.1f} | {outcome or '(kept)'} |")


if __name__ == "__main__":
    main()
