"""A rule's documentation page, in the sections of ruff's rule pages, rendered from the rule's fields."""

from __future__ import annotations

import textwrap
from typing import Dict, List, Tuple, Union

from h2dlint.facts.settings import OPT_IN_PREFIXES

# What each `[tool.h2dlint]` key does to a rule that reads it; a rule lists the keys it reads in `options`.
OPTION_HELP: Dict[str, str] = {
    "extend-hot-functions": "more function names that run per step or per request (fnmatch globs; `Class.method`;"
    " also `--extend-hot-functions`): sites there, and in what they call, are reported",
    "extend-cold-functions": "more function names that run once (fnmatch globs; also `--extend-cold-functions`):"
    " sites there are not reported, and pass no heat on",
    "helper-module": "the module fixes import `h2d_tensor` / `h2d_as_tensor` from (default `h2dlint.runtime`;"
    " `h2dlint vendor-helper` writes a copy into your package)",
    "accelerator-tensors": "tensors known to be on an accelerator, as written (`*_gpu`, `self.input_ids`;"
    " fnmatch globs): a receiver or buffer matching one counts as on the device",
    "host-tensors": "tensors known to be on the host, as written or by last name (`*_staging`, `self.lens_host`;"
    " fnmatch globs), in addition to the `*_cpu`-style conventions: a match is never a device operand",
    "sync-allowed-contexts": "context managers whose blocks keep syncs on purpose (default"
    " `[\"gpu_sync_allowed\"]`, vLLM's; a name or a dotted attribute ending in one; the list replaces the"
    " default): the HTD2xx rules, and the HTD1xx rules of blocking copies, are quiet inside `with <name>(...):`",
    "profile": "the traced run (`h2dlint trace`) whose call counts decide heat and whose CUDA records"
    " confirm findings (also `--profile`)",
}

# The sources a rule page cites, by the key a rule lists in `references`: (title, URL or path in this repository).
REFERENCES: Dict[str, Tuple[str, str]] = {
    "cuda-sync": (
        "CUDA Runtime API: API synchronization behavior",
        "https://docs.nvidia.com/cuda/cuda-runtime-api/api-sync-behavior.html",
    ),
    "pin-memory": (
        "A guide on good usage of `non_blocking` and `pin_memory()` in PyTorch",
        "https://docs.pytorch.org/tutorials/intermediate/pinmem_nonblock.html",
    ),
    "sync-debug-mode": (
        "`torch.cuda.set_sync_debug_mode`",
        "https://docs.pytorch.org/docs/stable/generated/torch.cuda.set_sync_debug_mode.html",
    ),
    "cuda-graphs": (
        "PyTorch CUDA semantics: CUDA Graphs",
        "https://docs.pytorch.org/docs/stable/notes/cuda.html#cuda-graphs",
    ),
    "runtime": (
        "The fix's helpers: `h2dlint/runtime.py`",
        "h2dlint/runtime.py",
    ),
    "reference": (
        "The bundled reference (sglang's decode path before PR #28500)",
        "fixtures/reference/README.md",
    ),
    "hotness": (
        "How hot and cold are decided",
        "README.md#how-hot-and-cold-are-decided",
    ),
}

# Fix-safety text shared by rules whose fix is the same rewrite; `{helper}`, `{original}` and `{copy}` name
# the rule's own construct.
HELPER_FIX_SAFETY = """
    The fix replaces the call with `{helper}(...)` from `h2dlint.runtime` (or your `helper-module`), with the
    same arguments. The helper returns exactly what `{original}` returns for every input: values, dtype, device,
    strides, `requires_grad` and leaf status, warnings and exception types. It takes the pinned, `non_blocking`
    path only for plain Python data going to the current CUDA device, and makes the original call otherwise
    (another device, no CUDA, tensors or NumPy data, CUDA-graph capture, `torch.compile` tracing). A literal
    scalar (`{original}(0, device=d)`) becomes `torch.zeros`/`torch.ones`/`torch.full` on the device instead,
    a fill kernel with no copy at all, when that builds the same value, dtype, shape and `requires_grad`.

    The fix is safe (`--fix` makes it) when the data is certainly a Python list, tuple or number (a display, a
    comprehension, `list(...)`, `len(...)`, a literal) and the function does no stream work. It is unsafe
    (`--fix --unsafe-fixes` makes it) when the data may be a NumPy array or a tensor: there the helper only
    falls back to the blocking call, so the fix has no effect for array or tensor data. It is unsafe too when
    the same function also switches streams, calls `wait_stream`/`record_stream`/`wait_event`, or starts a
    `non_blocking` device-to-host copy or `.copy_`: the original, by accident, leaves the current stream
    drained, and such code may depend on that.

    There is no fix, and the finding says why, when the call passes arguments the helper does not take
    (`pin_memory=`, `*args`/`**kwargs`) or its data as anything but one positional argument, when it runs under
    CUDA-graph capture, inside TorchScript code (`@torch.jit.script`, `torch.jit.script(f)`: it cannot compile
    the helper), where torch is imported only inside functions, and for other constant data (build it once
    outside the loop instead).
    """
COPY_FIX_SAFETY = """
    The fix applies when the copy directly follows the constructor, {copy}: it becomes
    `h2d_tensor(d, dtype=x, device=dev)` (and `torch.as_tensor` becomes `h2d_as_tensor`), with the same
    guarantees and the same safe/unsafe split as HTD101's fix: the helper returns exactly what the original pair
    returns, and makes the original call wherever the pinned path could differ.

    There is no fix, and the finding says why, when the tensor is built in another statement, when host-side
    methods run between the constructor and the copy, for `torch.from_numpy` and `torch.asarray` (they share the
    caller's memory, which cannot be pinned at construction), when the copy also converts the dtype, when `.to(x)`
    may name a dtype or tensor rather than a device (write `.to(device=x)`), for `.cuda(x)` with a variable `x`
    (it may be `None`), with `requires_grad`, when the constructor already names a device, under CUDA-graph
    capture, and in TorchScript code (see HTD101).
    """

# Known problems shared by the rules that rest on the hot/cold model, and by those whose fix removes a drain.
# How the rules that read placement know where a tensor lives (`facts.placement`), for their "What it does".
PLACEMENT_SOURCES = """
        Where a tensor lives is followed back from the copy through what the file shows: constructors and
        factories (`device=`, `pin_memory=True`, a `with torch.device(...)` block, `torch.set_default_device`),
        `.cpu()`, `.cuda()`, `.to(...)`, `.pin_memory()`, views and placement-preserving methods (`view`,
        slicing, `.long()`, `.contiguous()`, arithmetic with numbers), elementwise torch functions and operators
        (where a device operand is; a host operand with a dimension keeps them on the host, since PyTorch mixes only
        0-dim host tensors with device ones), `torch.cat`/`stack` (any joined tensor whose placement is known: a join needs one device),
        `device=t.device` (where `t` is, when known), local names (tuple unpacking, names unpacked from a call such
        as `rows, cols = torch.meshgrid(a, b)` or `vals, ids = x.topk(k)`, loop and comprehension variables
        (`for part in parts:`, `[p.item() for p in parts]`, through `enumerate` and `zip`), `+=`, and a name bound in
        branches, when every binding that may reach the use agrees), `self.x` through every assignment in the class's
        methods, a field of a dataclass or `NamedTuple` through the constructor calls of its file (where no other
        file stores the field, and every call of the class in the other files that import it passes the field by
        keyword and agrees), the return values of the module's functions and methods,
        what a submodule the class builds returns (`self.proj(x)` with `self.proj = Linear(...)`: on the device), a
        parameter of a private function (`_pack`, `self._pack`) where every call of it in the module passes it (of a
        public one too, where no other file of the project calls or imports its name, or where every call of it in
        the other files resolves to it and shows what it passes), and a
        branch that tests the device
        (inside `if x.is_cuda:` or `... if x.device.type != "cpu" else ...`, `x` is on the device; where a test
        names the CPU, on the host; the `else` of `x.is_cuda` says nothing, since XPU and NPU tensors are not CUDA
        ones). Names are evidence too:
        `*_cpu`, `*_host`, `*_np`, `cpu_*` and a buffer pair's `.cpu`/`.np` are on the host (memory unknown),
        `*_gpu`, `*_cuda` and `.gpu` on the device, and a tensor whose `<name>_cpu` sibling is in sight is the
        device copy, unless the function makes that mirror of it (`self.x_cpu = x`) or the tensor is seen built
        (`x = torch.full(...)` is on the host, sibling or not) (`placement-*` heuristics;
        `host-tensors` and `accelerator-tensors` add globs). Evidence that conflicts, or none, is unknown, and
        unknown is never reported.
        """

# Why copies of host tensors built elsewhere have no fix, for "Fix safety".
FIX_BUILT_ELSEWHERE = """
        A copy of a host tensor built elsewhere (in another statement, an attribute, a return value, or known
        only by its name) is report-only: the fix would have to change where the tensor is built, and that code
        may have other readers.
        """

# What placement cannot see, for "Known problems".
KNOWN_PLACEMENT_LIMITS = """
        Placement is known only from this file: a tensor passed in as a parameter (except to a function whose
        calls in the module all show it, and are, for a public one, all the project's), a dataclass field, or an
        attribute or return value defined in another module is unknown unless a name convention or the
        `host-tensors` / `accelerator-tensors` settings say where it lives, so such copies are missed.
        Placement decided by configuration (a `device` option that may be the CPU) is not seen either, except a
        `device` parameter that defaults to the CPU (`def f(x, device="cpu")`), or an attribute the class sets
        only from one (`self.device = torch.device(device)`), which is never taken for an accelerator, and a
        device that a name or a function of the module sets to the CPU in some branch (`device = "cpu"`;
        `device, group = _pick(cfg)` whose `return` may give one), which leaves the tensor unknown.
        """

KNOWN_HEAT_LIMITS = """
    Hot and cold are guessed from loops, names and calls (see References); a per-step function reached only
    through calls the analysis cannot follow (callbacks, registries, dynamic dispatch) is missed unless named in
    `extend-hot-functions` or marked `# h2dlint: hot`.
    """
KNOWN_DRAIN_LIMITS = """
    The stream-drain check looks only at the function holding the site. A caller that reads a buffer filled by an
    earlier `non_blocking` device-to-host copy after calling it, relying on the drain the blocking copy made, is
    not seen: review fixes in code that moves data between streams.
    """

# ruff's wording for how often a rule's findings can be fixed by `--fix`.
FIX_AVAILABILITY = {
    "sometimes": "Fix is sometimes available.",
    "never": "Fix is not available.",
}


def dedent(text: str) -> str:
    return textwrap.dedent(text).strip("\n")


def render_documentation(rule) -> str:
    sections = [
        f"# {rule.name} ({rule.code})",
        rule.summary + _opt_in_note(rule.code),
        "## What it does\n" + dedent(rule.what_it_does),
        "## Why is this bad?\n" + dedent(rule.why_bad),
        "## Example\n```python\n" + dedent(rule.example) + "\n```",
        "## Use instead\n```python\n" + dedent(rule.use_instead) + "\n```",
        "## Fix safety\n" + FIX_AVAILABILITY[rule.fix_availability] + "\n\n" + _paragraphs(rule.fix_safety),
        "## Known problems\n" + _paragraphs(rule.known_problems),
        "## Options\n" + _options(rule.options),
        "## References\n" + "\n".join(f"- [{REFERENCES[key][0]}]({REFERENCES[key][1]})" for key in rule.references),
    ]
    return "\n\n".join(sections) + "\n"


def _opt_in_note(code: str) -> str:
    """For a rule of an opt-in family (`settings.OPT_IN_PREFIXES`), how to turn it on."""
    if not code.startswith(OPT_IN_PREFIXES):
        return ""
    return f"\n\nOff unless selected: `select = [\"HTD1\", \"{code[:4]}\"]` in `[tool.h2dlint]`, or `--select {code[:4]}`."


def _paragraphs(text: Union[str, Tuple[str, ...]]) -> str:
    """A section's text: one block, or several (shared and the rule's own), each dedented."""
    return "\n\n".join(dedent(block) for block in ((text,) if isinstance(text, str) else text))


def _options(keys) -> str:
    if not keys:
        return "None: this rule reads no `[tool.h2dlint]` key beyond `select`, `ignore` and `per-file-ignores`."
    lines: List[str] = [f"- `{key}`: {OPTION_HELP[key]}." for key in keys]
    return "\n".join(lines)
