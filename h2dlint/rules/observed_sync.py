"""HTD301: a synchronisation a traced CUDA run saw at a project line that no rule explains.

It matches nothing in source: `check --profile FILE` reports it from the sync records `h2dlint trace` made
on CUDA (`h2dlint/trace_syncs.py`), at the innermost project frame of each synchronising call.
"""

from __future__ import annotations

from h2dlint.rules.base import Rule


class ObservedSync(Rule):
    code = "HTD301"
    name = "observed-sync"
    summary = "The traced run synchronised with the GPU here, and no rule explains why"
    what_it_does = """
        Reports, from a traced run's records (`h2dlint trace` on a machine with CUDA, then
        `h2dlint check --profile FILE`), each project line where the run synchronised with the GPU (what
        `torch.cuda.set_sync_debug_mode("warn")` reports, and non-blocking copies from pageable memory)
        that no other rule reports, where that line runs hot: in a hot function, at its level; elsewhere only
        when the run saw the line sync at least `profile-min-calls` times (a loop in a function that ran once,
        or at module level), as "observed-hot". Syncs in one-time code (a constructor, a warmup, a function
        the run saw run once) stay quiet. Nothing in the source alone triggers it.
    """
    why_bad = """
        Each synchronisation stalls the host until the GPU has drained its queue, so the next kernels are
        launched late. A sync the static rules do not explain is often a `.item()`, `.tolist()`, a
        boolean test of a GPU tensor, or an operation with a data-dependent output size.
    """
    example = """
        def decode_step(logits):
            return logits.argmax(-1).tolist()  # reported when a traced run saw it sync
    """
    use_instead = """
        def decode_step(logits, out):
            out.copy_(logits.argmax(-1), non_blocking=True)  # read it on the host one step later
    """
    triggers = ((),)  # never a candidate for the walk: nothing in source triggers it
    looks_at = frozenset()
    fix_availability = "never"
    fix_safety = """
        There is no automatic fix: the record says that the line synchronised, not which construct did or
        what the code should read instead.
        """
    known_problems = (
        """
        It sees only what the traced run reached, on the machine it ran on: a sync on a path the workload did
        not take, or one that the driver made only on another GPU, is not reported. Without CUDA the trace
        records no syncs, so the rule reports nothing.
        """,
        """
        A line is attributed by the innermost project frame of the warning's stack; a sync inside a library
        that project code calls is reported at the project's calling line.
        """,
    )
    options = ("profile",)
    references = ("sync-debug-mode", "cuda-sync")
