"""Hotness across the files of a project: the index, cold code that stays cold, `explain`, and the API the
flake8 plugin uses."""

from __future__ import annotations

import textwrap

import pytest

from h2dlint.facts.settings import Settings
from h2dlint.project.findings import check_source


def write_tree(root, files):
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"), encoding="utf-8")
    return root


BATCH = """
    import torch

    class Batch:
        def build_ids(self):
            return torch.tensor(self.ids, device=self.device)

        def cached_table(self):
            if self._table is None:
                self._table = torch.tensor(self.rows, device=self.device)
            return self._table

    def make_positions(n, device):
        return torch.tensor(list(range(n)), device=device)
"""

RUNNER = """
    from .batch import make_positions
    from .base import BaseRunner

    class Runner(BaseRunner):
        def __init__(self, batch):
            self.ids = batch.build_ids()

        def forward(self, batch):
            self.ids = batch.build_ids()
            table = batch.cached_table()
            return self.helper(batch), make_positions(4, batch.device), table
"""

BASE = """
    import torch

    class BaseRunner:
        def helper(self, batch):
            return torch.tensor([len(batch.ids)], device=batch.device)
"""


@pytest.fixture
def project(tmp_path):
    return write_tree(
        tmp_path / "src",
        {"pkg/__init__.py": "", "pkg/batch.py": BATCH, "pkg/runner.py": RUNNER, "pkg/base.py": BASE},
    )


def findings(out):
    return [line for line in out.splitlines() if ": HTD" in line]


def test_calls_across_files_and_classes_make_sites_hot_and_messages_name_the_chain(project, run_cli):
    code, out, err = run_cli("check", "--output-format", "concise", str(project))
    assert (code, err) == (1, "")
    by_line = {line.split(": HTD")[0].rsplit("/", 1)[-1]: line for line in findings(out)}
    assert set(by_line) == {"batch.py:5:16", "batch.py:13:12", "base.py:5:16"}
    assert "called from `pkg.runner.Runner.forward` (per step)" in by_line["batch.py:5:16"]  # obj.m(), by name
    assert "called from `pkg.runner.Runner.forward` (per step)" in by_line["batch.py:13:12"]  # from .batch import
    assert "called from `pkg.runner.Runner.forward` (per step)" in by_line["base.py:5:16"]  # self.m() via a base


def test_one_file_alone_shows_none_of_it(project):
    assert check_source((project / "pkg/batch.py").read_text(), Settings()) == []


def test_cold_stays_cold_constructors_and_cached_builds(project, run_cli):
    _, out, _ = run_cli("check", "--output-format", "concise", str(project))
    assert not any("batch.py:9:" in line for line in findings(out))  # under `if self._table is None:`
    runner = project / "pkg/runner.py"
    text = runner.read_text()
    assert text.count("batch.build_ids()") == 2
    runner.write_text(text.replace("        self.ids = batch.build_ids()\n        table", "        table"))
    assert runner.read_text().count("batch.build_ids()") == 1  # the constructor's call is left
    _, out, _ = run_cli("check", "--output-format", "concise", str(project))
    assert not any("batch.py:5:" in line for line in findings(out))  # only `__init__` calls it now


def test_calls_under_a_cached_build_guard_spread_no_heat(tmp_path, run_cli):
    write_tree(
        tmp_path,
        {
            "m.py": """
                import torch

                class Model:
                    def forward(self, x):
                        if not hasattr(self, "_rope"):
                            self._rope = self._build_rope()
                        return x

                    def _build_rope(self):
                        return torch.tensor([1.0, 2.0], device=self.device)
            """
        },
    )
    code, out, _ = run_cli("check", "--output-format", "concise", str(tmp_path))
    assert code == 0, out


LOADER = """
    from .tables import build_tables, _build_plan

    class Loader:
        def load_model(self, rows, device):
            return build_tables(rows, device)

        def forward(self, key, rows, device):
            plan = self._plans.get(key)
            if plan is None:
                plan = _build_plan(rows, device)
                self._plans[key] = plan
            return plan
"""

TABLES = """
    import torch

    def build_tables(rows, device):
        return [scale_row(r, device) for r in rows]

    def scale_row(row, device):
        return torch.tensor(row, device=device)

    def _build_plan(rows, device):
        return torch.tensor(rows, device=device)
"""


def test_functions_that_only_one_time_code_calls_are_one_time_across_files(tmp_path, run_cli):
    root = write_tree(tmp_path, {"pkg/__init__.py": "", "pkg/loader.py": LOADER, "pkg/tables.py": TABLES})
    code, out, _ = run_cli("check", "--output-format", "concise", str(root))
    # build_tables is called from load_model (one-time) only, so its loop does not make scale_row hot;
    # _build_plan is called only on a miss of a memo keyed on a runtime value: once per new key, per request.
    assert [line.split(": HTD")[0].rsplit("/", 1)[1] for line in findings(out)] == ["tables.py:10:12"], out
    assert "called on each cache miss in `pkg.loader.Loader.forward`" in out
    _, out, _ = run_cli("explain", f"{root}/pkg/tables.py:7")
    assert "`scale_row` is only called from one-time code: from `build_tables`, which is cold" in out


def test_a_second_caller_that_runs_per_step_keeps_the_heat(tmp_path, run_cli):
    per_step = LOADER + """
        def decode_step(self, rows, device):
            return build_tables(rows, device)
    """
    root = write_tree(tmp_path, {"pkg/__init__.py": "", "pkg/loader.py": per_step, "pkg/tables.py": TABLES})
    _, out, _ = run_cli("check", "--output-format", "concise", str(root))
    assert any("tables.py:7:" in line for line in findings(out))


def test_explain_says_why_a_site_is_hot(project, run_cli):
    code, out, _ = run_cli("explain", f"{project}/pkg/batch.py:5")
    assert code == 0
    assert "in `Batch.build_ids`, which is hot: called from `pkg.runner.Runner.forward` (per step)" in out
    assert "HTD101 is reported" in out


def test_explain_says_why_a_site_is_cold(project, run_cli):
    _, out, _ = run_cli("explain", f"{project}/pkg/batch.py:9")
    assert "HTD101 is not reported: it is inside a one-time cached build" in out
    _, out, _ = run_cli("explain", f"{project}/pkg/runner.py:6")
    assert "in `Runner.__init__`, which is cold: `Runner.__init__` runs once (one-time setup)" in out


def test_explain_takes_the_whole_package_around_a_namespace_folder(tmp_path, run_cli):
    """`pkg/kernels/` has no `__init__.py`, `pkg/` has one: explaining a line of `pkg/kernels/ops.py` without
    naming the project still sees `pkg/runner.py`, which calls it per step."""
    root = write_tree(
        tmp_path / "src",
        {
            "pkg/__init__.py": "",
            "pkg/kernels/ops.py": "import torch\n\ndef build(ids, dev):\n    return torch.tensor(ids, device=dev)\n",
            "pkg/runner.py": "from pkg.kernels.ops import build\n\ndef forward(ids, dev):\n    return build(ids, dev)\n",
        },
    )
    _, out, _ = run_cli("explain", f"{root}/pkg/kernels/ops.py:4")
    assert "in `build`, which is hot: called from `pkg.runner.forward` (per step)" in out, out


def test_explain_rejects_a_malformed_location(run_cli):
    code, _, err = run_cli("explain", "no-line-number.py")
    assert code == 2 and "PATH:LINE" in err


def test_absolute_imports_resolve_in_namespace_packages(tmp_path, run_cli):
    """sglang's `srt` folders have no `__init__.py`; imports are matched by the files' paths."""
    root = write_tree(
        tmp_path / "app",
        {
            "core/batch.py": "import torch\n\ndef build(ids, dev):\n    return torch.tensor(ids, device=dev)\n",
            "serve/loop.py": "from app.core.batch import build\n\ndef step(ids, dev):\n    return build(ids, dev)\n",
        },
    )
    _, out, _ = run_cli("check", "--output-format", "concise", str(root))
    [line] = findings(out)
    assert "batch.py:4:12" in line and "called from `app.serve.loop.step` (per step)" in line


def test_one_word_methods_are_not_linked_by_name(tmp_path, run_cli):
    """`sock.connect()` in a loop says nothing about a project class that happens to define `connect`."""
    root = write_tree(
        tmp_path / "p",
        {
            "pool.py": "import torch\n\nclass Pool:\n    def connect(self, rows):\n"
            "        self.t = torch.tensor(rows, device='cuda')\n",
            "net.py": "def serve(sockets, addr):\n    for sock in sockets:\n        sock.connect(addr)\n",
        },
    )
    code, out, _ = run_cli("check", "--output-format", "concise", str(root))
    assert code == 0, out


def test_a_memo_table_build_is_one_time(tmp_path, run_cli):
    """`t = cache.get(key)` / `if t is None:` / build / `cache[key] = t`: built once per key, not per call."""
    write_tree(
        tmp_path,
        {
            "memo.py": """
                import torch

                _TABLES = {}

                def forward(ids, device):
                    t = _TABLES.get(device)
                    if t is None:
                        t = torch.tensor([0, 1, 2], device=device)
                        _TABLES[device] = t
                    if ids is None:
                        ids = torch.tensor([0], device=device)
                    return t, ids
            """
        },
    )
    _, out, _ = run_cli("check", "--output-format", "concise", str(tmp_path))
    assert [line.split(": HTD")[0].rsplit(":", 2)[1] for line in findings(out)] == ["11"]  # only the default


def test_a_memo_table_filled_with_other_values_than_the_one_looked_up_is_one_time(tmp_path, run_cli):
    """`tables = CACHE.get(key)` / `if tables is None:` / `CACHE[key] = (a, b)`, inside a `with` block too
    (vLLM's top-k/top-p tables): the block fills the table the lookup read, so it runs once per key."""
    write_tree(
        tmp_path,
        {
            "memo.py": """
                import threading
                import torch

                _TABLES = {}
                _LOCK = threading.Lock()

                def forward(logits, rows):
                    tables = _TABLES.get(logits.device)
                    if tables is None:
                        with _LOCK:
                            low = torch.tensor(rows, device=logits.device)
                            _TABLES[logits.device] = (low, low + 1)
                    other = _TABLES.get(rows)
                    if other is None:
                        other = torch.tensor(rows, device=logits.device)
                    return tables, other
            """
        },
    )
    _, out, _ = run_cli("check", "--output-format", "concise", str(tmp_path))
    assert [line.split(": HTD")[0].rsplit(":", 2)[1] for line in findings(out)] == ["15"]  # not the memo's 11


def two_classes(first, second, method):
    """Two classes whose `method` makes an H2D copy (lines 5 and 9)."""
    body = f"    def {method}(self, n):\n        return torch.tensor([n], device='cuda')\n"
    return f"import torch\n\nclass {first}:\n{body}\nclass {second}:\n{body}"


POOL = two_classes("Pool", "Scratch", "alloc")


def typed_project(root, backend, runner):
    files = {"pkg/__init__.py": "", "pkg/pool.py": POOL, "pkg/backend.py": backend, "pkg/runner.py": runner}
    return write_tree(root / "src", files)


def reported(out):
    """`file.py:line` -> message, for every finding."""
    return {line.split(": HTD")[0].rsplit("/", 1)[-1].rsplit(":", 1)[0]: line for line in findings(out)}


def assert_only_finding(out, where, chain):
    by_line = reported(out)
    assert set(by_line) == {where}, out
    assert f"called from {chain} (per step)" in by_line[where]


def test_calls_on_attributes_of_known_class_are_followed_across_files(tmp_path, run_cli):
    """`self.backend.plan()` then `self.pool.alloc()`: one-word names the by-name fallback refuses; the
    classes come from `self.pool = Pool()` and from `self.backend = backend` with `backend: Backend`."""
    backend = """
        from .pool import Pool

        class Backend:
            def __init__(self):
                self.pool = Pool()

            def plan(self, n):
                return self.pool.alloc(n)
    """
    runner = """
        from pkg.backend import Backend

        class Runner:
            def __init__(self, backend: Backend):
                self.backend = backend

            def forward(self, n):
                return self.backend.plan(n)
    """
    code, out, _ = run_cli("check", "--output-format", "concise", str(typed_project(tmp_path, backend, runner)))
    # `Scratch.alloc` (line 9) is another class's method of the same name.
    assert_only_finding(out, "pool.py:5", "`pkg.backend.Backend.plan` ← `pkg.runner.Runner.forward`")


def test_an_annotated_parameter_and_a_factory_return_give_the_class(tmp_path, run_cli):
    backend = """
        from typing import Optional

        from . import pool

        class Backend:
            def __init__(self):
                self.scratch = self._make_scratch()

            def _make_scratch(self) -> "Optional[pool.Scratch]":
                return pool.Scratch()
    """
    runner = """
        from pkg.backend import Backend

        def forward(backend: Backend, n):
            return backend.scratch.alloc(n)
    """
    _, out, _ = run_cli("check", "--output-format", "concise", str(typed_project(tmp_path, backend, runner)))
    assert_only_finding(out, "pool.py:9", "`pkg.runner.forward`")


def test_a_local_bound_once_from_a_constructor_gives_the_class(tmp_path, run_cli):
    runner = """
        from pkg.pool import Pool, Scratch

        def forward(n, again):
            pool = Pool()
            scratch = Scratch()
            if again:
                scratch = None  # bound twice: its class is not known
            return pool.alloc(n), scratch.alloc(n)
    """
    _, out, _ = run_cli("check", "--output-format", "concise", str(typed_project(tmp_path, "", runner)))
    assert set(reported(out)) == {"pool.py:5"}, out


def test_a_local_declared_with_a_class_keeps_it_when_rebound(tmp_path, run_cli):
    """`pool: Pool = ...` declares the variable's class for the whole function (type checkers hold every
    later binding to it), so `pool.alloc()` after `pool = pool.again()` still reaches `Pool.alloc`."""
    runner = """
        from pkg.pool import Pool

        def forward(batch, n):
            pool: Pool = batch.pool
            if n:
                pool = pool.again()
            return pool.alloc(n)
    """
    _, out, _ = run_cli("check", "--output-format", "concise", str(typed_project(tmp_path, "", runner)))
    assert_only_finding(out, "pool.py:5", "`pkg.runner.forward`")


@pytest.mark.parametrize(
    "annotation, reached",
    [
        ("List[Pool]", {"pool.py:5"}),
        ('Sequence["Scratch"]', {"pool.py:9"}),
        ("Optional[tuple[Pool, ...]]", {"pool.py:5"}),
        ("Tuple[Pool, Scratch]", set()),  # elements of different classes: the variable's class is not known
        ("Dict[Pool, Scratch]", set()),  # a loop over a mapping walks its keys: not followed
    ],
)
def test_the_variable_of_a_loop_over_an_annotated_collection_has_its_element_class(
    tmp_path, run_cli, annotation, reached
):
    runner = f"""
        from typing import Dict, List, Optional, Sequence, Tuple

        from pkg.pool import Pool, Scratch

        def forward(pools: {annotation}, n):
            for pool in pools:
                pool.alloc(n)
    """
    _, out, _ = run_cli("check", "--output-format", "concise", str(typed_project(tmp_path, "", runner)))
    assert set(reported(out)) == reached, out


def test_a_base_class_receiver_reaches_the_overrides_of_its_subclasses(tmp_path, run_cli):
    backend = """
        import torch

        class Backend:
            def plan(self, n):
                raise NotImplementedError

        class FlashBackend(Backend):
            def plan(self, n):
                return torch.tensor([n], device="cuda")

        class Unrelated:
            def plan(self, n):
                return torch.tensor([n], device="cuda")
    """
    runner = """
        from pkg.backend import Backend

        class Runner:
            backend: Backend

            def forward(self, n):
                return self.backend.plan(n)
    """
    _, out, _ = run_cli("check", "--output-format", "concise", str(typed_project(tmp_path, backend, runner)))
    assert_only_finding(out, "backend.py:9", "`pkg.runner.Runner.forward`")


def test_by_name_links_prefer_classes_named_like_the_receiver(tmp_path, run_cli):
    """`head.init_state()` on a parameter of unknown class: of the classes defining `init_state`, the one
    named like `head` is meant, not the LoRA manager's setup method."""
    backend = two_classes("MarkovHead", "LoraManager", "init_state")
    runner = "def forward(head, n):\n    return head.init_state(n)\n"
    _, out, _ = run_cli("check", "--output-format", "concise", str(typed_project(tmp_path, backend, runner)))
    assert set(reported(out)) == {"backend.py:5"}, out


@pytest.mark.parametrize(
    "receiver, reached",
    [("audio_tokenizer_encoder", {"backend.py:5"}), ("text_tokenizer", {"backend.py:9"}), ("model", set())],
)
def test_a_one_word_method_links_only_to_the_class_of_its_module_named_like_the_receiver(
    tmp_path, run_cli, receiver, reached
):
    """`encode` is a name strings and libraries have too: on a receiver of unknown class it is linked only to
    the one class of the caller's own module that is named like the receiver or its last word."""
    module = two_classes("AudioEncoder", "TextTokenizer", "encode") + (
        f"\n\ndef step(items, {receiver}):\n    for item in items:\n        {receiver}.encode(item)\n"
    )
    elsewhere = f"def step(items, {receiver}):\n    for item in items:\n        {receiver}.encode(item)\n"
    _, out, _ = run_cli("check", "--output-format", "concise", str(typed_project(tmp_path, module, elsewhere)))
    assert set(reported(out)) == reached, out


def test_the_rest_of_a_lazy_build_after_its_early_return_is_one_time(tmp_path, run_cli):
    write_tree(
        tmp_path,
        {
            "lazy.py": """
                import torch

                def ensure_wrapper(layer):
                    if layer._wrapper is not None:
                        return
                    layer.scales = torch.tensor([1.0], device="cuda")
                    layer._wrapper = object()

                def forward(layer, n):
                    ensure_wrapper(layer)
                    return torch.tensor([n], device="cuda")
            """
        },
    )
    _, out, _ = run_cli("check", "--output-format", "concise", str(tmp_path))
    assert set(reported(out)) == {"lazy.py:11"}, out


def test_a_lazy_build_guarded_through_a_local_copy_is_one_time(tmp_path, run_cli):
    """vllm's `context = self.recoverssm_context` / `if context is not None: return context` / build / store."""
    write_tree(
        tmp_path,
        {
            "lazy.py": """
                import torch

                class Builder:
                    def _context(self, n):
                        context = self._context_cache
                        if context is not None:
                            return context
                        context = torch.tensor([n], device="cuda")
                        self._context_cache = context
                        return context

                    def forward(self, n):
                        self._context(n)
                        return torch.tensor([n], device="cuda")
            """
        },
    )
    _, out, _ = run_cli("check", "--output-format", "concise", str(tmp_path))
    assert set(reported(out)) == {"lazy.py:14"}, out


def test_a_local_rebound_after_copying_the_attribute_guards_nothing(tmp_path, run_cli):
    """The guard must read the attribute's copy: `context = other()` in between makes it an ordinary check."""
    write_tree(
        tmp_path,
        {
            "lazy.py": """
                import torch

                class Builder:
                    def forward(self, n):
                        context = self._context_cache
                        context = self.lookup(n)
                        if context is not None:
                            return context
                        context = torch.tensor([n], device="cuda")
                        self._context_cache = context
                        return context
            """
        },
    )
    _, out, _ = run_cli("check", "--output-format", "concise", str(tmp_path))
    assert set(reported(out)) == {"lazy.py:9"}, out


def test_attention_metadata_builders_build_per_forward_and_capture_stays_cold(tmp_path, run_cli):
    """vllm's model runner calls `build` of each `*MetadataBuilder` once per forward batch, on a receiver whose
    class is not known (`self.get_metadata_builder(i).build(...)`); capture builds once."""
    write_tree(
        tmp_path,
        {
            "backend.py": """
                import torch

                class FlashMetadataBuilder:
                    def build(self, lens, device):
                        return torch.tensor(lens, device=device)

                    def build_for_cudagraph_capture(self, lens, device):
                        return torch.tensor(lens, device=device)

                class DecodeTable:
                    def build(self, lens, device):
                        return torch.tensor(lens, device=device)

                def build(lens, device):
                    return torch.tensor(lens, device=device)
            """
        },
    )
    _, out, _ = run_cli("check", "--output-format", "concise", str(tmp_path))
    assert set(reported(out)) == {"backend.py:5"}, out
    assert "`FlashMetadataBuilder.build` runs per step" in out


def test_dotted_hot_names_match_the_class_and_plain_ones_only_the_name():
    settings = Settings(extend_hot_functions=("Runner.go",))
    assert settings.is_hot_name("go", "Runner") and not settings.is_hot_name("go", "Other")
    assert not settings.is_hot_name("go") and not settings.is_hot_name("init", "DecodeCache")
    assert settings.is_hot_name("build", "_PagedMetadataBuilder")


def test_names_re_exported_by_a_star_import_resolve(tmp_path, run_cli):
    """sglang's `srt/utils/__init__.py` is `from sglang.srt.utils.common import *`."""
    root = write_tree(
        tmp_path / "app",
        {
            "utils/__init__.py": "from app.utils.common import *\n",
            "utils/common.py": "import torch\n\ndef build(ids, dev):\n    return torch.tensor(ids, device=dev)\n",
            "serve.py": "from app.utils import build\n\ndef step(ids, dev):\n    return build(ids, dev)\n",
        },
    )
    _, out, _ = run_cli("check", "--output-format", "concise", str(root))
    assert_only_finding(out, "common.py:4", "`app.serve.step`")


def test_a_lazy_import_in_a_function_means_its_own_target_there(tmp_path, run_cli):
    """Two methods import `dispatch` lazily from two backends (torchtitan's token dispatchers): each call reaches
    the function its own method imported, not whichever import the file happens to hold last."""
    build = "import torch\n\ndef dispatch(ids, dev):\n    return torch.tensor(ids, device=dev)\n"
    root = write_tree(
        tmp_path / "app",
        {
            "deepep.py": build,
            "hybrid.py": build,
            "moe.py": "class Dispatcher:\n    def forward(self, ids, dev):\n"
            "        from app.deepep import dispatch\n        return dispatch(ids, dev)\n\n"
            "    def load_weights(self, ids, dev):\n"
            "        from app.hybrid import dispatch\n        return dispatch(ids, dev)\n",
        },
    )
    _, out, _ = run_cli("check", "--output-format", "concise", str(root))
    assert_only_finding(out, "deepep.py:4", "`app.moe.Dispatcher.forward`")


def test_explain_says_a_compiled_function_builds_its_tensors_in_the_graph(tmp_path, run_cli):
    write_tree(
        tmp_path,
        {
            "m.py": """
                import torch as th

                @th.compile(dynamic=True)
                def forward(x):
                    return x * th.tensor([0.5], device=x.device)
            """
        },
    )
    code, out, _ = run_cli("check", "--output-format", "concise", str(tmp_path))
    assert code == 0, out
    _, out, _ = run_cli("explain", f"{tmp_path}/m.py:5")
    assert "`forward` is compiled by `@torch.compile`, which builds its tensors in the graph" in out
    assert "HTD101 is not reported: the code around it is compiled, not run eagerly" in out


@pytest.mark.parametrize(
    "caller, hot",
    [
        ("torch.ops.vllm.gather_ids(ids, dev)", True),  # by the name it is registered under
        ("gather_ids(ids, dev)", True),  # through the alias the module binds
        ("len(ids)", False),  # nothing calls the op: it is not known to run
    ],
)
def test_a_custom_op_is_hot_where_the_project_calls_it_by_its_registered_name(tmp_path, run_cli, caller, hot):
    """vLLM registers `_gather_ids` as the op `gather_ids` and calls `torch.ops.vllm.gather_ids(...)`; an op no
    file calls (a registered kernel nothing uses) runs nowhere. One file alone cannot see the calls of others,
    so there every custom op stays hot."""
    ops = """
        import torch

        def _gather_ids(ids, dev):
            return torch.tensor(ids, device=dev)

        direct_register_custom_op(op_name="gather_ids", op_func=_gather_ids)
        gather_ids = torch.ops.vllm.gather_ids
    """
    runner = f"import torch\n\nfrom pkg.ops import gather_ids\n\ndef run(ids, dev):\n    return {caller}\n"
    root = write_tree(tmp_path, {"pkg/__init__.py": "", "pkg/ops.py": ops, "pkg/runner.py": runner})
    _, out, _ = run_cli("check", "--output-format", "concise", str(root))
    assert (set(reported(out)) == {"ops.py:4"}) is hot, out
    alone = check_source(textwrap.dedent(ops), Settings())  # the flake8 plugin without a project index
    assert [d.span.row for d in alone] == [5]  # the dedented text keeps its leading blank line
