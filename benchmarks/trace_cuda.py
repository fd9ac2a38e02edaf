"""Runtime confirmation on CUDA: trace the reference's decode loop, then `check --profile`.

    python benchmarks/trace_cuda.py [--steps 24] [--json PATH]

Runs `h2dlint trace -- python run_decode.py --device cuda --steps N` on a copy of fixtures/reference/ (the
tracer records `set_sync_debug_mode("warn")` warnings and pageable non-blocking copies, see
h2dlint/trace_syncs.py), then `h2dlint check --profile` on it, and prints one row per finding: its place,
code, level, and how many syncs the run saw there ("-" for none), then the HTD301 rows (syncs no rule
explains). Expected on the reference: HTD101 at eagle_info.py:19 and HTD104 at schedule_batch.py:58, both
confirmed (about one sync per decode step of their batch), and one HTD301 row, run_decode.py:59 (the driver's
per-step `.tolist()`); the one-time syncs of constructors and warmup are not reported. Exit status: 0 done, 1 a step failed, 2 no CUDA.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REFERENCE = Path(__file__).resolve().parent.parent / "fixtures" / "reference"
H2DLINT = [sys.executable, "-m", "h2dlint"]


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--steps", type=int, default=24)
    parser.add_argument("--json", default=None, metavar="PATH")
    args = parser.parse_args()
    probe = subprocess.run([sys.executable, "-c", "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 2)"])
    if probe.returncode != 0:
        print("error: CUDA is not available", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as folder:
        copy = Path(folder) / "reference"
        shutil.copytree(REFERENCE, copy)
        profile = copy / "trace.json"
        program = [sys.executable, "run_decode.py", "--device", "cuda", "--steps", str(args.steps)]
        traced = subprocess.run([*H2DLINT, "trace", "--root", str(copy), "-o", str(profile), "--", *program], cwd=copy)
        if traced.returncode != 0:
            return 1
        checked = subprocess.run(
            [*H2DLINT, "check", ".", "--no-cache", "--profile", str(profile), "--output-format", "json"],
            cwd=copy, capture_output=True, text=True,
        )
        findings = json.loads(checked.stdout or "[]")
        syncs = json.loads(profile.read_text())["syncs"]
    print(f"{'place':<28} {'code':<7} {'level':<12} syncs")
    for entry in findings:
        place = f"{Path(entry['filename']).name}:{entry['location']['row']}"
        print(f"{place:<28} {entry['code']:<7} {entry['level']:<12} {entry.get('confirmed') or '-'}")
    print(f"sync records in the trace: {len(syncs)} sites, {sum(s['count'] for s in syncs)} syncs")
    if args.json:
        Path(args.json).write_text(json.dumps({"findings": findings, "syncs": syncs}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
