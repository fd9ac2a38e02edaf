"""The bundled reference before and after `h2dlint check --fix`, measured on a CUDA device.

    python benchmarks/reference_cuda.py [--json PATH] [--batch-sizes 1,8,64] [--steps 300]
                                        [--gpu-forward-us 2000] [--cpu-work-us 500] [--fixed-reference DIR]
    python benchmarks/reference_cuda.py --device cpu --dry-run --steps 10    (checks the script without CUDA)

A copy of fixtures/reference/ is fixed with `python -m h2dlint check --fix` (or `--fixed-reference DIR` is used
as is). Each variant runs in its own process (the reference's modules import each other by plain name), and for
each decode path (`normal`: the HTD104 site in ScheduleBatch.prepare_for_decode; `eagle`: the HTD101 site in
EagleDraftInput.prepare_for_decode) and batch size it measures:

- synchronising calls per decode step inside prepare_for_decode: warnings of
  `torch.cuda.set_sync_debug_mode("warn")`, and `cudaStreamSynchronize` calls seen by the profiler;
- host-to-device memcpys per decode step by source (`Pageable -> Device` / `Pinned -> Device`, profiler);
- the host time of prepare_for_decode while the GPU still runs a forward pass (`--gpu-forward-us` of queued
  GPU work, `torch.cuda._sleep`);
- the decode step time of an overlapped loop: per step prepare_for_decode, `--cpu-work-us` of other host
  scheduling work, the model's forward plus `--gpu-forward-us` of GPU work, sampling, and a non-blocking read
  of the new ids that the host waits for one step later (as overlap schedulers do: the host runs one step
  ahead of the GPU unless something syncs). That loop feeds back tokens one step late, so its outputs are not
  compared; run_decode.py's digests are (tests/test_reference_cuda.py).

Prints progress lines on stderr, then a table on stdout, and writes everything as JSON with `--json`.
Exit status: 0 done, 1 a step failed (its output is shown), 2 no CUDA (or bad options).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "fixtures" / "reference"
PATHS = {"normal": "HTD104 schedule_batch.py", "eagle": "HTD101 eagle_info.py"}
WORKER_TIMEOUT_S = 80  # two workers and the fix stay under 3 minutes
PROBE_STEPS = 20  # decode steps over which syncs, memcpys and host times are counted
WARMUP_STEPS = 3


# ------------------------------------------------------------------------------------------- the driver


def main(argv=None) -> int:
    args = _parse_args(argv)
    if args.worker:
        return _worker(args)
    problem = _device_problem(args)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="h2dlint-reference-") as scratch:
        variants = _prepare_variants(Path(scratch), args.fixed_reference)
        if variants is None:
            return 1
        results = {}
        for name, folder in variants.items():
            results[name] = _run_worker(name, folder, args, Path(scratch) / f"{name}.json")
            if results[name] is None:
                return 1
    rows = _rows(results)
    print(_table(rows, args))
    report = {"environment": results["original"]["environment"], "settings": _settings(args), "rows": rows,
              "seconds": round(time.perf_counter() - started, 1)}
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        _progress(f"wrote {args.json}")
    _progress(f"done in {report['seconds']} s")
    return 0


def _parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the results to this file")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    parser.add_argument("--dry-run", action="store_true", help="with --device cpu: check the script, no timing")
    parser.add_argument("--batch-sizes", default="1,8,64", type=lambda text: [int(n) for n in text.split(",")])
    parser.add_argument("--steps", type=_positive, default=300, help="decode steps of the overlapped loop")
    parser.add_argument("--gpu-forward-us", type=float, default=2000.0, help="GPU work per forward pass")
    parser.add_argument("--cpu-work-us", type=float, default=500.0, help="other host scheduling work per step")
    parser.add_argument("--fixed-reference", help="use this already fixed copy instead of running --fix")
    parser.add_argument("--worker", help=argparse.SUPPRESS)  # internal: measure the reference in this folder
    parser.add_argument("--worker-json", help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def _positive(text):
    if int(text) < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return int(text)


def _device_problem(args):
    if args.device == "cpu":
        return None if args.dry_run else "--device cpu only checks the script: add --dry-run"
    if args.dry_run:
        return "--dry-run needs --device cpu"
    import torch

    if not torch.cuda.is_available():
        return "CUDA is not available (this benchmark measures GPU stalls); use --device cpu --dry-run to check it"
    return None


def _settings(args):
    return {"device": args.device, "dry_run": args.dry_run, "batch_sizes": args.batch_sizes,
            "steps": args.steps, "probe_steps": PROBE_STEPS, "gpu_forward_us": args.gpu_forward_us,
            "cpu_work_us": args.cpu_work_us}


def _progress(message):
    print(f"[reference_cuda] {message}", file=sys.stderr, flush=True)


def _subprocess_env():
    # The fixed copy imports h2dlint.runtime: make this checkout importable even where it is not installed.
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def _h2dlint(*args):
    return subprocess.run([sys.executable, "-m", "h2dlint", *args], capture_output=True, text=True,
                          env=_subprocess_env(), timeout=120)


def _prepare_variants(scratch: Path, fixed_reference):
    original = scratch / "original"
    shutil.copytree(REFERENCE, original, ignore=shutil.ignore_patterns("__pycache__"))
    if fixed_reference:
        _progress(f"using the fixed reference {fixed_reference} as given")
        return {"original": original, "fixed": Path(fixed_reference).resolve()}
    fixed = scratch / "fixed"
    shutil.copytree(REFERENCE, fixed, ignore=shutil.ignore_patterns("__pycache__"))
    _progress(f"running h2dlint check --fix on a copy of {REFERENCE}")
    fix = _h2dlint("check", "--fix", "--unsafe-fixes", str(fixed))
    after = _h2dlint("check", str(fixed))
    print(fix.stdout + fix.stderr, file=sys.stderr, end="")
    if fix.returncode == 2 or after.returncode != 0:
        print(f"error: `h2dlint check --fix` exited {fix.returncode} and left findings "
              f"(check exited {after.returncode}):\n{after.stdout}{after.stderr}", file=sys.stderr)
        return None
    _progress("the fixed copy has no findings left")
    return {"original": original, "fixed": fixed}


def _run_worker(name, folder, args, result_path):
    _progress(f"measuring the {name} reference ({folder})")
    command = [sys.executable, str(Path(__file__).resolve()), "--worker", str(folder),
               "--worker-json", str(result_path), "--device", args.device,
               "--batch-sizes", ",".join(map(str, args.batch_sizes)), "--steps", str(args.steps),
               "--gpu-forward-us", str(args.gpu_forward_us), "--cpu-work-us", str(args.cpu_work_us)]
    if args.dry_run:
        command.append("--dry-run")
    try:
        done = subprocess.run(command, cwd=folder, env=_subprocess_env(), timeout=WORKER_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        print(f"error: measuring the {name} reference took over {WORKER_TIMEOUT_S} s; stopped", file=sys.stderr)
        return None
    if done.returncode != 0:
        print(f"error: measuring the {name} reference failed (exit {done.returncode}); see above",
              file=sys.stderr)
        return None
    return json.loads(result_path.read_text(encoding="utf-8"))


# ------------------------------------------------------------------------------------------- the report


METRICS = [
    ("syncs_debug_mode", "syncs/step (debug mode)", "{:.2f}"),
    ("stream_syncs_profiler", "cudaStreamSynchronize/step", "{:.2f}"),
    ("htod_pageable", "pageable H2D/step", "{:.2f}"),
    ("htod_pinned", "pinned H2D/step", "{:.2f}"),
    ("prepare_host_ms_median", "prepare host ms, GPU busy (median)", "{:.3f}"),
    ("prepare_host_ms_max", "prepare host ms, GPU busy (max)", "{:.3f}"),
    ("overlapped_step_ms", "overlapped decode step ms", "{:.3f}"),
]


def _rows(results):
    rows = []
    for key, fixed in results["fixed"]["measurements"].items():
        original = results["original"]["measurements"][key]
        rows.append({"path": fixed["path"], "site": PATHS[fixed["path"]], "batch_size": fixed["batch_size"],
                     "original": original["metrics"], "fixed": fixed["metrics"]})
    return rows


def _table(rows, args):
    header = "dry run on the CPU: counts and times are not GPU measurements" if args.dry_run else (
        f"GPU forward {args.gpu_forward_us:.0f} us/step, other host work {args.cpu_work_us:.0f} us/step, "
        f"{PROBE_STEPS} probed steps, {args.steps} overlapped steps")
    lines = [header, f"{'path':<7} {'batch':>5}  {'metric':<36} {'original':>10} {'fixed':>10}"]
    for row in rows:
        for key, label, number in METRICS:
            before, after = row["original"][key], row["fixed"][key]
            lines.append(f"{row['path']:<7} {row['batch_size']:>5}  {label:<36} "
                         f"{_cell(before, number):>10} {_cell(after, number):>10}")
        lines.append("")
    return "\n".join(lines)


def _cell(value, number):
    return "n/a" if value is None else number.format(value)


# ------------------------------------------------------------------------------------------- the worker


def _worker(args) -> int:
    """Runs inside one variant's folder; measures every path and batch size and writes JSON."""
    import torch

    sys.path.insert(0, args.worker)
    gpu = CudaTimeline() if args.device == "cuda" else CpuStandIn()
    model = _load_model(gpu.device, args.batch_sizes)
    measurements = {}
    for path in PATHS:
        for batch_size in args.batch_sizes:
            _progress(f"  {Path(args.worker).name}: {path} path, batch size {batch_size}")
            metrics = _measure(model, gpu, path, batch_size, args)
            _progress("    " + ", ".join(f"{key}={_cell(value, '{:.3f}') if isinstance(value, float) else value}"
                                       for key, value in metrics.items()))
            measurements[f"{path}/{batch_size}"] = {"path": path, "batch_size": batch_size, "metrics": metrics}
    environment = {"torch": torch.__version__, "python": platform.python_version(), "device": gpu.name(),
                   "cuda_cycles_per_us": gpu.cycles_per_us}
    Path(args.worker_json).write_text(json.dumps({"environment": environment, "measurements": measurements}))
    return 0


def _load_model(device, batch_sizes):
    from model import TinyModel

    model = TinyModel(device, seed=0)
    model.warmup(sorted(set(batch_sizes)))
    return model


def _new_batch(model, path, batch_size):
    """A batch of `batch_size` requests right after prefill, ready for its first decode step."""
    import torch
    from run_decode import forward_and_sample, make_reqs
    from schedule_batch import ScheduleBatch

    reqs = make_reqs(batch_size, 0 if path == "normal" else 11, model.vocab_size)
    batch = ScheduleBatch.init_new(reqs, model.device, model.vocab_size, speculative=path == "eagle")
    orchestrator = batch.sampling_info.penalizer_orchestrator
    batch.prepare_for_extend(torch.tensor([r.origin_input_ids[-1] for r in reqs], dtype=torch.int64)
                             .to(model.device))
    forward_and_sample(model, batch, orchestrator)
    return batch, orchestrator


def _measure(model, gpu, path, batch_size, args):
    metrics = {}
    metrics.update(_count_syncs_and_copies(model, gpu, path, batch_size))
    metrics.update(_prepare_host_times(model, gpu, path, batch_size, args.gpu_forward_us))
    metrics["overlapped_step_ms"] = _overlapped_step_ms(model, gpu, path, batch_size, args)
    return metrics


def _warm_batch(model, path, batch_size):
    """A batch after prefill and a few decode steps, so that setup copies and first-call costs are behind it."""
    from run_decode import forward_and_sample

    batch, orchestrator = _new_batch(model, path, batch_size)
    for _ in range(WARMUP_STEPS):
        batch.prepare_for_decode()
        forward_and_sample(model, batch, orchestrator)
    return batch, orchestrator


def _sequential_steps(model, batch, orchestrator, steps, around_prepare):
    """`steps` decode steps as run_decode.py runs them, with prepare_for_decode wrapped by `around_prepare`."""
    from run_decode import forward_and_sample

    for _ in range(steps):
        around_prepare(batch.prepare_for_decode)
        forward_and_sample(model, batch, orchestrator)


def _count_syncs_and_copies(model, gpu, path, batch_size):
    debug_mode_syncs = []
    _sequential_steps(model, *_warm_batch(model, path, batch_size), PROBE_STEPS,
                      lambda prepare: debug_mode_syncs.append(gpu.debug_mode_syncs(prepare)))
    syncs = None if None in debug_mode_syncs else sum(debug_mode_syncs) / PROBE_STEPS
    batch, orchestrator = _warm_batch(model, path, batch_size)
    try:
        counts = gpu.profile(lambda around: _sequential_steps(model, batch, orchestrator, PROBE_STEPS, around))
    except RuntimeError as error:  # the profiler's counts are shown as n/a; the other measurements stand
        _progress(f"WARNING: the profiler failed, its counts are left out: {error}")
        return {"syncs_debug_mode": syncs, "stream_syncs_profiler": None, "htod_pageable": None,
                "htod_pinned": None, "profiler_error": str(error)}
    memcpy_kinds = counts.pop("memcpy_kinds")
    per_step = {key: value / PROBE_STEPS for key, value in counts.items()}
    return {"syncs_debug_mode": syncs, **per_step, "memcpy_kinds_seen": memcpy_kinds}


def _prepare_host_times(model, gpu, path, batch_size, gpu_forward_us):
    seconds = []

    def timed(prepare):
        gpu.synchronize()
        gpu.busy(gpu_forward_us)  # a forward pass still running when the scheduler prepares the next step
        start = time.perf_counter()
        prepare()
        seconds.append(time.perf_counter() - start)

    _sequential_steps(model, *_warm_batch(model, path, batch_size), PROBE_STEPS, timed)
    return {"prepare_host_ms_median": statistics.median(seconds) * 1e3,
            "prepare_host_ms_max": max(seconds) * 1e3}


def _overlapped_step_ms(model, gpu, path, batch_size, args):
    batch, orchestrator = _warm_batch(model, path, batch_size)
    pending = None
    gpu.synchronize()
    start = time.perf_counter()
    for _ in range(args.steps):
        batch.prepare_for_decode()
        _spin(args.cpu_work_us)
        logits = model.forward(batch.input_ids, batch.seq_lens - 1)
        gpu.busy(args.gpu_forward_us)
        orchestrator.apply(logits)
        batch.output_ids = logits.argmax(-1)
        if pending is not None:
            _append_tokens(batch.reqs, *pending)
        pending = gpu.read_back(batch.output_ids)
    _append_tokens(batch.reqs, *pending)
    gpu.synchronize()
    return (time.perf_counter() - start) / args.steps * 1e3


def _append_tokens(reqs, host_ids, ready):
    ready.synchronize()  # waits for the step that produced host_ids, not for the steps queued after it
    for req, token in zip(reqs, host_ids.tolist()):
        req.output_ids.append(token)


def _spin(microseconds):
    end = time.perf_counter() + microseconds / 1e6
    while time.perf_counter() < end:
        pass


class CudaTimeline:
    """The CUDA side of the measurements."""

    def __init__(self):
        import torch

        self.torch = torch
        self.device = torch.device("cuda")
        self.cycles_per_us = self._calibrate_sleep()

    def name(self):
        return self.torch.cuda.get_device_name()

    def _calibrate_sleep(self, cycles=20_000_000):
        torch = self.torch
        rates = []
        for _ in range(4):
            begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            begin.record()
            torch.cuda._sleep(cycles)
            end.record()
            end.synchronize()
            rates.append(cycles / (begin.elapsed_time(end) * 1e3))
        rate = statistics.median(rates[1:])
        _progress(f"torch.cuda._sleep: {rate:.0f} cycles/us on {self.name()}")
        return rate

    def busy(self, microseconds):
        self.torch.cuda._sleep(int(microseconds * self.cycles_per_us))

    def synchronize(self):
        self.torch.cuda.synchronize()

    def read_back(self, ids):
        host = self.torch.empty(ids.shape, dtype=ids.dtype, pin_memory=True)
        host.copy_(ids, non_blocking=True)
        ready = self.torch.cuda.Event()
        ready.record()
        return host, ready

    def debug_mode_syncs(self, call):
        """How many synchronising calls `call()` makes, by the warnings of sync debug mode "warn"."""
        self.synchronize()
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            self.torch.cuda.set_sync_debug_mode("warn")
            try:
                call()
            finally:
                self.torch.cuda.set_sync_debug_mode("default")
        return sum("synchroniz" in str(w.message) for w in caught)

    def profile(self, run):
        """Per-run counts of cudaStreamSynchronize inside prepare_for_decode and of H2D memcpys by source."""
        from torch.profiler import profile, record_function

        def around(prepare):
            with record_function("prepare_for_decode"):
                prepare()

        with profile(activities=self._profiled_activities()) as profiler:
            run(around)
            self.synchronize()
        return _profile_counts(profiler.events(), expect_cuda=self.device.type == "cuda")

    def _profiled_activities(self):
        from torch.profiler import ProfilerActivity

        return [ProfilerActivity.CPU, ProfilerActivity.CUDA]


class CpuStandIn(CudaTimeline):
    """--dry-run: the same calls on the CPU, with the CUDA-only parts made no-ops, to check the script."""

    def __init__(self):
        import torch

        self.torch = torch
        self.device = torch.device("cpu")
        self.cycles_per_us = None

    def name(self):
        return "cpu (dry run)"

    def busy(self, microseconds):
        pass

    def synchronize(self):
        pass

    def read_back(self, ids):
        return ids.clone(), _AlreadyDone()

    def debug_mode_syncs(self, call):
        call()
        return None

    def _profiled_activities(self):
        from torch.profiler import ProfilerActivity

        return [ProfilerActivity.CPU]


class _AlreadyDone:
    def synchronize(self):
        pass


def _profile_counts(events, expect_cuda):
    prepares = [event.time_range for event in events if event.name == "prepare_for_decode"]
    memcpy_kinds = sorted({event.name for event in events if event.name.startswith("Memcpy ")})
    if not prepares:
        raise RuntimeError("the profiler recorded no prepare_for_decode ranges")
    if expect_cuda and not memcpy_kinds:
        # Every step reads its ids back (a DtoH memcpy): none seen means the profiler sees no GPU activity.
        raise RuntimeError("the profiler recorded no memcpy at all (is CUPTI available?)")
    stream_syncs = [event for event in events if event.name.startswith("cudaStreamSynchronize")
                    and any(r.start <= event.time_range.start <= r.end for r in prepares)]
    names = [event.name for event in events]
    return {"stream_syncs_profiler": len(stream_syncs),
            # prepare_for_decode makes the only host-to-device copies of a decode step
            "htod_pageable": names.count("Memcpy HtoD (Pageable -> Device)"),
            "htod_pinned": names.count("Memcpy HtoD (Pinned -> Device)"),
            "memcpy_kinds": memcpy_kinds}


if __name__ == "__main__":
    sys.exit(main())
