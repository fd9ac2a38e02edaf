"""The heuristic registry: every heuristic has an id that the output names and that can switch it off."""

from __future__ import annotations

import ast
import json
import re
import textwrap
from pathlib import Path
from typing import Dict, Tuple

import pytest
from conftest import HOT, ROOT, write

from h2dlint.facts.heuristics import BY_ID, HEURISTICS, HOT_NAMES, LEVEL_HEURISTICS, Effect, Group, Heuristic
from h2dlint.facts.settings import Settings, UsageError
from h2dlint.project.findings import check_source
from h2dlint.project.run import check_paths

# One module per heuristic, with one H2D site whose verdict that heuristic decides: (id, source, reported
# with every heuristic on). Switching the heuristic off must flip the verdict.
CASES: Tuple[Tuple[str, str, bool], ...] = (
    ("hot-name-forward", HOT, True),
    (
        "cold-name-cpu-backend",
        """
        import torch

        class RmsNorm:
            def forward_cpu(self, ids, dev):
                return torch.tensor(ids, device=dev)
        """,
        False,
    ),
    (
        "one-time-guard-cpu-platform",
        """
        import torch

        def forward(ids, dev, platform):
            if platform.is_cpu():
                ids = torch.tensor([1, 2], device=dev)
            return ids
        """,
        False,
    ),
    (
        "one-time-guard-rescaling",
        """
        import torch

        def forward(ids, dev, elastic):
            if not elastic.is_scaling():
                return ids
            return torch.tensor([1, 2], device=dev)
        """,
        False,
    ),
    (
        "placement-multimodal-input",
        """
        import torch

        class Processor:
            def _get_mm_fields_config(self, hf_inputs, hf_processor_mm_kwargs):
                return dict(image_grid_thw=MultiModalFieldConfig.batched("image"))

        class Model:
            def _parse_and_validate_image_input(self, **kwargs):
                grid_thw = kwargs.pop("image_grid_thw")
                return grid_thw.tolist()

            def forward(self, **kwargs):
                return self._parse_and_validate_image_input(**kwargs)
        """,
        True,
    ),
    (
        "placement-name-activation",
        """
        import torch

        class DecoderLayer:
            def forward(self, hidden_states, mask):
                return hidden_states[mask]
        """,
        True,
    ),
    (
        "placement-name-model-input",
        """
        import torch

        class Model:
            def forward(self, input_ids, positions):
                return int(positions.max())
        """,
        True,
    ),
    (
        "placement-name-model-mask",
        """
        import torch

        class DecoderLayer:
            def forward(self, hidden, visual_token_mask):
                if visual_token_mask.any():
                    return hidden
        """,
        True,
    ),
    (
        "placement-name-routing",
        """
        import torch

        def forward(topk_ids):
            return topk_ids.tolist()
        """,
        True,
    ),
    (
        "cold-sync-on-request-arrival",
        """
        import torch

        def tokenize_with_images(ids, images):
            positions = torch.arange(len(ids), device=ids.device)
            return int(positions.max().item())
        """,
        False,
    ),
    (
        "placement-sibling-host-mirror",
        """
        import torch

        def forward(batch, n):
            total = int(batch.seq_lens_cpu.sum())
            return batch.seq_lens.new_tensor([total])
        """,
        True,
    ),
    (
        "placement-parameter-named-like-class",
        """
        import torch

        class ForwardBatch:
            def __init__(self, ids):
                self.input_ids = torch.tensor(ids)

        def forward(forward_batch, dev):
            return forward_batch.input_ids.to(dev)
        """,
        True,
    ),
    (
        "placement-parameter-from-callers",
        """
        import torch

        def forward(ids, dev):
            return _copy(torch.tensor(ids), dev)

        def _copy(host, dev):
            return host.to(dev)
        """,
        True,
    ),
    (
        "cold-always-raises",
        """
        import torch

        class Pool:
            def forward(self, ids, dev):
                if ids is None:
                    self._raise_missing(dev)
                return ids

            def _raise_missing(self, dev):
                held = torch.tensor([1, 2], device=dev)
                raise RuntimeError(f"missing ids, held {held}")
        """,
        False,
    ),
    ("placement-name-device", "import torch\n\ndef forward(ids_gpu):\n    return ids_gpu.new_tensor([1])\n", True),
    ("placement-name-host", "import torch\n\ndef forward(lens_cpu, dev):\n    return lens_cpu.to(dev)\n", True),
    ("placement-name-model-output", "import torch\n\ndef forward(logits):\n    return logits.new_tensor([1])\n", True),
    ("hot-name-step", HOT.replace("forward", "step"), True),
    ("hot-marker", HOT.replace("def forward(ids, dev):", "def run(ids, dev):  # h2dlint: hot"), True),
    ("cold-marker", HOT.replace("def forward(ids, dev):", "def forward(ids, dev):  # h2dlint: cold"), False),
    (
        "cold-name-construction",
        """
        import torch

        class Pool:
            def __init__(self, sizes, dev):
                for size in sizes:
                    torch.tensor([size], device=dev)
        """,
        False,
    ),
    (
        "cold-name-warmup",
        "import torch\n\ndef warmup_forward(ids, dev):\n    return torch.tensor(ids, device=dev)\n",
        False,
    ),
    (
        "hot-custom-op",
        """
        import torch

        @torch.library.custom_op("h2d::gather", mutates_args=())
        def gather(ids, dev):
            return torch.tensor(ids, device=dev)
        """,
        True,
    ),
    (
        "hot-called-in-loop",
        """
        import torch

        def upload(ids, dev):
            return torch.tensor(ids, device=dev)

        def run(batches, dev):
            for batch in batches:
                upload(batch, dev)
        """,
        True,
    ),
    (
        "cold-only-called-once",
        """
        import torch

        class Pool:
            def __init__(self, sizes, dev):
                self._fill(sizes, dev)

            def _fill(self, sizes, dev):
                for size in sizes:
                    torch.tensor([size], device=dev)
        """,
        False,
    ),
    (
        "hot-public-entry-point",
        """
        import torch

        class Model:
            def __init__(self, dev):
                self.forward([0], dev)

            def forward(self, ids, dev):
                return torch.tensor(ids, device=dev)
        """,
        True,
    ),
    (
        "cold-decorator-cache",
        """
        import functools
        import torch

        @functools.lru_cache(maxsize=None)
        def forward_table(dev):
            return torch.tensor([1, 2], device=dev)
        """,
        False,
    ),
    (
        "cold-decorator-compile",
        """
        import torch

        @torch.compile
        def forward(ids, dev):
            return torch.tensor(ids, device=dev)
        """,
        False,
    ),
    (
        "hot-in-loop",
        "import torch\n\ndef run(xs, dev):\n    for x in xs:\n        torch.tensor([x], device=dev)\n",
        True,
    ),
    (
        "one-time-fixed-iteration",
        "import torch\n\ndef run(dev):\n    for n in (1, 2, 4):\n        torch.tensor([n], device=dev)\n",
        False,
    ),
    ("cold-marker", HOT.replace("device=dev)", "device=dev)  # h2dlint: cold"), False),
    (
        "one-time-guard-none",
        """
        import torch

        class Table:
            def forward(self, dev):
                if self._t is None:
                    self._t = torch.tensor([1], device=dev)
                return self._t
        """,
        False,
    ),
    (
        "one-time-guard-debug",
        """
        import torch

        class Pool:
            def forward(self, ids, dev):
                if self.debug_mode:
                    ids = torch.tensor([1, 2], device=dev)
                return ids
        """,
        False,
    ),
    (
        "placement-submodule-output",
        """
        import torch
        from torch import nn

        class Pooler(nn.Module):
            def __init__(self):
                super().__init__()
                self.score = nn.Linear(8, 1)

            def forward(self, hidden):
                keep = self.score(hidden).squeeze(-1) > 0
                return hidden[:, : int(keep.sum())]
        """,
        True,
    ),
    (
        "one-time-error-path",
        """
        import torch

        def forward(ids, dev):
            if len(ids) > 4096:
                lens = torch.tensor([len(ids)], device=dev)
                raise ValueError(f"too long: {lens}")
            return ids
        """,
        False,
    ),
    (
        "one-time-guard-capture",
        """
        import torch

        def forward(ids, dev, in_capture=False):
            return torch.tensor([1, 2], device=dev) if in_capture else ids
        """,
        False,
    ),
    (
        "one-time-guard-hasattr",
        """
        import torch

        class Table:
            def forward(self, dev):
                if not hasattr(self, "_t"):
                    self._t = torch.tensor([1], device=dev)
                return self._t
        """,
        False,
    ),
    (
        "one-time-guard-memo",
        """
        import torch

        class Table:
            def forward(self, dev):
                # keyed on the device, not on runtime data: built once per device (`facts.memo`)
                if dev not in self._cache:
                    self._cache[dev] = torch.tensor([1, 2], device=dev)
                return self._cache[dev]
        """,
        False,
    ),
    (
        "one-time-guard-grows-on-demand",
        """
        import torch

        class Table:
            def forward(self, n, dev):
                if n > self.max_n:
                    self.max_n = n
                    self._ids = torch.tensor(list(range(n)), device=dev)
                return self._ids
        """,
        False,
    ),
    (
        "one-time-guard-once-flag",
        """
        import torch

        class Table:
            def forward(self, dev):
                if not self.done:
                    self._t = torch.tensor([1], device=dev)
                    self.done = True
        """,
        False,
    ),
    (
        "one-time-lazy-build",
        """
        import torch

        class Table:
            def forward(self, dev):
                if self._t is not None:
                    return self._t
                self._t = torch.tensor([1], device=dev)
                return self._t
        """,
        False,
    ),
    (
        "one-time-memo-lookup",
        """
        import torch

        _TABLES = {}

        def forward(dev):
            # keyed on the device, not on runtime data: built once per device (`facts.memo`)
            if (table := _TABLES.get(dev)) is not None:
                return table
            table = torch.tensor([1, 2], device=dev)
            _TABLES[dev] = table
            return table
        """,
        False,
    ),
    (
        "cold-name-rebalance",
        """
        import torch

        def forward(ids, dev):
            return rebalance_experts(ids, dev)

        def rebalance_experts(ids, dev):
            return torch.tensor(ids, device=dev)
        """,
        False,
    ),
    (
        "cold-nested-in-cold",
        """
        import torch

        def load_model(dev):
            def forward(ids):
                return torch.tensor(ids, device=dev)
            return forward
        """,
        False,
    ),
)

CASE_IDS = [case[0] + ("-site" if "device=dev)  # h2dlint" in case[1] else "") for case in CASES]
CONFIGURED = "import torch\n\ndef run_batch(ids, dev):\n    return torch.tensor(ids, device=dev)\n"


def count(source: str, **settings: object) -> int:
    """Findings of the H2D and D2H families (the D2H ones are selected on request)."""
    settings = {"select": ("HTD1", "HTD2"), **settings}
    return len(check_source(textwrap.dedent(source), Settings(**settings)))  # type: ignore[arg-type]


@pytest.mark.parametrize("heuristic, source, reported", CASES, ids=CASE_IDS)
def test_switching_a_heuristic_off_flips_the_verdict_it_decides(heuristic, source, reported):
    assert count(source) == int(reported)
    assert count(source, disable_heuristics=(heuristic,)) == int(not reported)


HEAT_CASES = [c for c in CASES if c[2] and BY_ID[c[0]].effect is not Effect.PLACEMENT]


@pytest.mark.parametrize("heuristic, source, reported", HEAT_CASES, ids=[c[0] for c in HEAT_CASES])
def test_a_finding_names_the_heuristic_that_made_it_hot(heuristic, source, reported):
    (found,) = check_source(textwrap.dedent(source), Settings())
    # An entry point keeps the heat its name gives it: the name is what made it hot.
    assert found.heuristic == {"hot-public-entry-point": "hot-name-forward"}.get(heuristic, heuristic)


def test_configured_names_have_their_own_id_and_switch_off_too():
    assert count(CONFIGURED) == 0
    (found,) = check_source(CONFIGURED, Settings(extend_hot_functions=("run_*",)))
    assert found.heuristic == "hot-name-configured"
    assert count(CONFIGURED, extend_hot_functions=("run_*",), disable_heuristics=("hot-name-configured",)) == 0


@pytest.mark.parametrize(
    "name, hot",
    [("prepare_for_decode", True), ("_decode_one", True), ("speculative_decoding_step", True), ("decode", True),
     ("get_decoder", False), ("make_torchcodec_decoder", False), ("_join_decoded_text", False)],
)
def test_a_decode_step_is_hot_and_a_decoder_is_not(name, hot):
    assert (Settings().hot_name_heuristic(name) is not None) is hot


def test_the_first_heuristic_whose_names_match_is_named():
    settings = Settings()
    assert settings.hot_name_heuristic("forward_decode") == "hot-name-forward"  # also *decode*
    assert settings.hot_name_heuristic("_run_decode") == "hot-name-decode"
    assert settings.hot_name_heuristic("build", "FlashMetadataBuilder") == "hot-name-metadata"
    assert settings.hot_name_heuristic("build", "Pool") is None
    assert settings.cold_name_heuristic("capture_graphs") == "cold-name-capture"
    off = Settings(disable_heuristics=("hot-name-forward",))
    assert off.hot_name_heuristic("forward_decode") == "hot-name-decode"
    assert not off.is_hot_name("forward") and Settings().is_hot_name("forward")


def test_a_preset_may_replace_a_name_table_and_its_ids_become_known():
    mine = Heuristic("hot-name-mine", Effect.HOT, Group.NAME, "our serving loop", ("serve_*",))
    settings = Settings(hot_names=HOT_NAMES + (mine,))
    assert settings.hot_name_heuristic("serve_batch") == "hot-name-mine"
    assert not Settings(hot_names=(mine,), disable_heuristics=("hot-name-mine",)).is_hot_name("serve_batch")
    assert not Settings(hot_names=(mine,)).is_hot_name("forward")


def test_unknown_heuristic_is_a_usage_error():
    with pytest.raises(UsageError, match="unknown heuristic 'hot-name-nope'"):
        Settings(disable_heuristics=("hot-name-nope",))


def test_ids_are_unique_kebab_case_and_start_with_their_effect():
    ids = [h.id for h in HEURISTICS]
    assert len(ids) == len(set(ids))
    for h in HEURISTICS:
        assert re.fullmatch(r"[a-z]+(-[a-z]+)+", h.id), h.id
        assert h.id.startswith(h.effect.value + "-"), h.id
        assert h.rationale and "\n" not in h.rationale


# The blind censuses an evidence row may cite: host-to-device sites, device-to-host sites, the blind samples of
# device-to-host findings and of the findings on trees never tuned on, and the samples of older releases; one label vocabulary (not-h2d and not-sync both say no copy or sync happens).
CENSUS_FILES = (
    "engine_labels.tsv", "d2h_labels.tsv", "d2h_finding_labels.tsv", "d2h_fresh_labels.tsv", "fresh_tree_labels.tsv",
    "d2h_history_labels.tsv",
)


def _census() -> Dict[Tuple[str, str], str]:
    census: Dict[Tuple[str, str], str] = {}
    for name in CENSUS_FILES:
        rows = (line.split("\t") for line in (ROOT / "benchmarks" / name).read_text().splitlines())
        for row in rows:
            if len(row) >= 3 and not row[0].startswith("#"):
                census.setdefault((row[0], row[1]), row[2])
    return census


def test_evidence_rows_are_census_rows_whose_label_the_heuristic_explains():
    census = _census()
    hot_labels = {"per-step", "per-request"}
    for h in HEURISTICS:
        for row in h.evidence:
            engine, _, site = row.partition(" ")
            assert (engine, site) in census, f"{h.id}: {row} is not a row of {' or '.join(CENSUS_FILES)}"
            is_hot = census[(engine, site)] in hot_labels
            # A placement heuristic, switched off, leaves real copies unreported, as a hot one does.
            expected = h.effect in (Effect.HOT, Effect.PLACEMENT)
            assert is_hot == expected, f"{h.id}: {row} is labelled {census[(engine, site)]}"


def test_json_and_sarif_carry_the_heuristic(tmp_path, run_cli):
    write(tmp_path, "hot.py", HOT)
    code, out, _ = run_cli("check", "--output-format", "json", str(tmp_path))
    assert code == 1 and [e["heuristic"] for e in json.loads(out)] == ["hot-name-forward"]
    code, out, _ = run_cli("check", "--output-format", "sarif", str(tmp_path))
    (result,) = json.loads(out)["runs"][0]["results"]
    assert result["properties"] == {"heuristic": "hot-name-forward"}


def test_explain_names_the_heuristic(tmp_path, run_cli):
    path = write(tmp_path, "hot.py", HOT)
    code, out, _ = run_cli("explain", f"{path}:4", str(tmp_path))
    assert code == 0
    assert out.count("[heuristic: hot-name-forward]") == 2  # the function's verdict and the site's


def test_explain_names_the_placement_convention_a_finding_rests_on(tmp_path, run_cli):
    source = dict((case[0], case[1]) for case in CASES)["placement-sibling-host-mirror"]
    path = write(tmp_path, "mirror.py", source)
    code, out, _ = run_cli("explain", f"{path}:6", str(tmp_path))
    assert code == 0 and "placement: `batch.seq_lens` is on the device: has a host mirror `seq_lens_cpu`" in out
    assert "[heuristic: placement-sibling-host-mirror]" in out


def test_explain_says_a_tensor_of_unknown_placement_is_never_reported(tmp_path, run_cli):
    path = write(tmp_path, "unknown.py", "import torch\n\n\ndef step(x, dev):\n    return x.to(dev)\n")
    off = ("--disable-heuristics", "placement-parameter-from-project-callers")
    code, out, _ = run_cli("explain", *off, f"{path}:5", str(tmp_path))
    assert code == 0 and "which is hot" in out
    assert "unknown is never reported" in out
    code, out, _ = run_cli("explain", f"{path}:5", str(tmp_path))  # asked of the project, which has no call
    assert code == 0 and "depends on what the calls of `step()` pass for `x`, in this file and the others" in out


def test_explain_names_the_guard_that_makes_a_site_one_time(tmp_path, run_cli):
    source = dict((case[0], case[1]) for case in CASES)["one-time-guard-hasattr"]
    path = write(tmp_path, "table.py", source)
    code, out, _ = run_cli("explain", f"{path}:7", str(tmp_path))
    assert code == 0 and "is not reported: it is inside a one-time cached build" in out
    assert out.rstrip().endswith("[heuristic: one-time-guard-hasattr]")


def test_every_heuristic_is_exercised_by_a_case():
    structural = {"hot-name-configured", "cold-name-configured"}  # exercised with settings of their own
    structural.add("placement-parameter-from-module-callers")  # needs a project: tests/test_placement_callers.py
    structural.add("placement-parameter-from-project-callers")  # so does this one
    structural.add("placement-parameter-from-submodule-calls")  # and this: tests/test_submodule_calls.py
    structural.add("placement-parameter-training-forward")  # needs the training preset: tests/test_presets.py
    names = {h.id for h in HEURISTICS if h.patterns}
    levels = {h.id for h in LEVEL_HEURISTICS}  # they change a finding's level, not its verdict: test_levels.py
    uncovered = {h.id for h in HEURISTICS} - {case[0] for case in CASES} - structural - names - levels
    assert not uncovered


def test_the_flag_switches_a_heuristic_off_and_extends_the_configuration(tmp_path, run_cli):
    write(tmp_path, "pyproject.toml", "[tool.h2dlint]\ndisable-heuristics = ['hot-name-step']\n")
    write(tmp_path, "hot.py", HOT)
    write(tmp_path, "step.py", "import torch\n\ndef step(ids, dev):\n    return torch.tensor(ids, device=dev)\n")
    code, out, _ = run_cli("check", "--output-format", "json", str(tmp_path))
    assert code == 1 and [e["heuristic"] for e in json.loads(out)] == ["hot-name-forward"]
    code, out, _ = run_cli("check", "--disable-heuristics", "hot-name-forward", str(tmp_path))
    assert code == 0, out


def test_an_unknown_id_on_the_command_line_is_one_line_exit_2(tmp_path, run_cli):
    write(tmp_path, "hot.py", HOT)
    for command in (["check"], ["explain", f"{tmp_path / 'hot.py'}:4"]):
        flag = ("--disable-heuristics", "hot-name-forward,nope")
        code, out, err = run_cli(command[0], *flag, *command[1:], str(tmp_path))
        assert (code, out) == (2, "")
        assert err == "h2dlint: error: unknown heuristic 'nope' (`h2dlint heuristics` lists them)\n"


def test_an_unknown_id_in_the_configuration_names_the_file_exit_2(tmp_path, run_cli):
    config = write(tmp_path, "pyproject.toml", "[tool.h2dlint]\ndisable-heuristics = ['nope']\n")
    write(tmp_path, "hot.py", HOT)
    code, out, err = run_cli("check", str(tmp_path))
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and str(config) in err and "`disable-heuristics`" in err and "'nope'" in err


def test_heuristics_command_lists_and_describes(run_cli):
    code, out, _ = run_cli("heuristics")
    assert code == 0 and [line.split()[0] for line in out.splitlines()] == [h.id for h in HEURISTICS]
    code, out, _ = run_cli("heuristics", "hot-name-forward")
    assert code == 0 and "forward_*" in out and BY_ID["hot-name-forward"].rationale in out
    assert run_cli("heuristics", "nope")[0] == 2
    _, out, _ = run_cli("heuristics", "placement-name-training-scalar")  # its evidence is of the D2H census
    assert "evidence: torchtitan trainer.py:1008" in out and "engine_labels.tsv" not in out


def test_a_flag_whose_name_turns_its_sense_round_guards_nothing():
    source = textwrap.dedent("""
        import torch

        class Pool:
            def forward(self, ids, dev):
                if self.disable_debug:
                    ids = torch.tensor([1, 2], device=dev)
                if self.debug_mode:
                    ids = torch.tensor([3, 4], device=dev)
                return ids
        """)
    assert [d.span.row for d in check_source(source, Settings())] == [7]  # not 9: under the debug switch


@pytest.mark.parametrize("flag", ["envs.SGLANG_DEBUG_POOL.get()", "envs.VLLM_DEBUG_POOL", "self.debug_mode"])
def test_a_debug_flag_read_through_its_getter_guards_its_branch(flag):
    source = f"""
        import torch

        def forward(ids, dev, envs):
            if {flag}:
                ids = torch.tensor([1, 2], device=dev)
            return ids
        """
    assert count(source) == 0
    assert count(source, disable_heuristics=("one-time-guard-debug",)) == 1


@pytest.mark.parametrize(
    "guard, reported",
    [
        ("if not envs.SGLANG_DEBUG_METRICS.get():\n        return", 0),
        ("if not self.debug_mode:\n        return None", 0),
        ("if self.debug_mode:\n        return", 1),  # the rest runs with debugging off
        ("if not self.disable_debug:\n        return", 1),  # a switch whose sense is the other way round
        ("if not envs.SGLANG_DEBUG_METRICS.get():\n        log()\n        return", 1),  # not a bare return
    ],
)
def test_the_rest_of_a_function_after_returning_unless_debugging_is_one_time(guard, reported):
    source = f"""
import torch

def observe(self, dev, envs):
    {guard}
    return report(dev)

def report(dev):
    return torch.tensor([1, 2], device=dev)

def forward(self, dev, envs):
    return observe(self, dev, envs)
"""
    assert count(source) == reported
    assert count(source, disable_heuristics=("one-time-guard-debug",)) == 1


@pytest.mark.parametrize(
    "body, raises",
    [
        ("    msg = str(x)\n    raise ValueError(msg)", True),
        ("    raise NotImplementedError", False),  # an interface for subclasses to define
        ("    if x:\n        return x\n    raise ValueError(x)", False),  # it may return
        ("    raise", False),  # a bare re-raise, inside an `except` of the caller's making
        ("    return x", False),
    ],
)
def test_a_function_that_always_raises_is_an_error_path(body, raises):
    from h2dlint.facts.error_paths import always_raises

    function = ast.parse(f"def f(x):\n{body}\n").body[0]
    assert always_raises(function) is raises


def test_explain_looks_for_the_rules_it_is_asked_to_and_says_which_it_did_not(tmp_path, run_cli):
    source = "import torch\n\n\ndef forward(n, dev):\n    t = torch.zeros(n, device=dev)\n    return t.sum().item()\n"
    path = write(tmp_path, "step.py", source)
    code, out, _ = run_cli("explain", f"{path}:6", str(tmp_path))
    assert code == 0 and "not looked for: HTD2xx" in out and "HTD201" not in out
    code, out, _ = run_cli("explain", "--select", "HTD2", f"{path}:6", str(tmp_path))
    assert code == 0 and "HTD201 is reported" in out and "not looked for: HTD2xx" not in out


# Module heuristics: the same per-step copy in modules whose dotted names say what they are.
_MODULE_CASES = {
    "pkg/debug_utils/dump_hook.py": "cold-module-debugging",
    "pkg/kv_canary/checker.py": "cold-module-debugging",
    "pkg/backends/mlx/runner.py": "cold-module-host-platform",
    "pkg/attention/intel_amx_backend.py": "cold-module-host-platform",
    "pkg/attention/flash_backend.py": None,  # serving code: reported
    "pkg/debugger_free/model.py": "cold-module-debugging",  # a part that says debug, wherever in the name
}


def _reported_modules(tmp_path, **settings: object) -> Dict[str, str]:
    write(tmp_path, "pyproject.toml", "")
    for name in _MODULE_CASES:
        write(tmp_path, name, HOT)
        for folder in Path(name).parents:
            if str(folder) != ".":
                write(tmp_path, f"{folder}/__init__.py", "")
    results = check_paths([str(tmp_path / "pkg")], Settings(**settings), use_cache=False)  # type: ignore[arg-type]
    return {
        str(Path(r.path).relative_to(tmp_path)).replace("\\", "/"): d.code for r in results for d in r.diagnostics
    }


def test_a_module_named_for_debugging_or_a_host_only_platform_is_cold(tmp_path):
    reported = _reported_modules(tmp_path)
    assert set(reported) == {name for name, heuristic in _MODULE_CASES.items() if heuristic is None}


@pytest.mark.parametrize("heuristic", ["cold-module-debugging", "cold-module-host-platform"])
def test_switching_a_module_heuristic_off_reports_its_modules(tmp_path, heuristic):
    reported = _reported_modules(tmp_path, disable_heuristics=(heuristic,))
    assert set(reported) == {name for name, h in _MODULE_CASES.items() if h in (None, heuristic)}


@pytest.mark.parametrize("package", [False, True])
def test_the_folder_the_files_share_counts_only_as_a_package(tmp_path, package):
    # A checkout called `my_debug_checkout` says nothing of its modules; a package `debug_tools` does.
    root = "debug_tools" if package else "my_debug_checkout"
    write(tmp_path, f"{root}/pyproject.toml", "")
    write(tmp_path, f"{root}/model.py", HOT)
    write(tmp_path, f"{root}/serve/step.py", HOT)
    if package:
        write(tmp_path, f"{root}/__init__.py", "")
        write(tmp_path, f"{root}/serve/__init__.py", "")
    results = check_paths([str(tmp_path / root)], Settings(), use_cache=False)
    assert sum(len(r.diagnostics) for r in results) == (0 if package else 2)


def test_explain_says_why_a_module_heuristic_leaves_a_site_unreported(tmp_path, run_cli):
    write(tmp_path, "pyproject.toml", "")
    write(tmp_path, "pkg/__init__.py", "")
    write(tmp_path, "pkg/mlx/__init__.py", "")
    path = write(tmp_path, "pkg/mlx/runner.py", HOT)
    _, out, _ = run_cli("explain", f"{path}:4", str(tmp_path / "pkg"))
    assert "runs on a host-only platform, with its tensors on the CPU" in out
    assert "[heuristic: cold-module-host-platform]" in out


_DROPPED_CACHE = """
import torch

class Backend:
    def __init__(self):
        self._meta = None

    def {dropper}(self):
        self._meta = None

    def forward(self, ids, dev):
        if self._meta is None:
            self._meta = torch.tensor(ids, device=dev)
        return self._meta
"""


@pytest.mark.parametrize("dropper, reported", [("init_forward_metadata", 1), ("reset_cache", 0), ("__del__", 1)])
def test_a_cache_that_per_call_code_drops_is_rebuilt_each_time(dropper, reported):
    # Dropped per forward (`init_forward_metadata`), the cached build runs per forward; dropped only by a
    # one-time function (`reset_*`) or only in `__init__`, once.
    assert count(_DROPPED_CACHE.format(dropper=dropper)) == reported
    assert count(_DROPPED_CACHE.replace("    def {dropper}(self):\n        self._meta = None\n\n", "")) == 0


@pytest.mark.parametrize(
    "test, reported",
    [("_is_cpu", 0), ("is_cpu()", 0), ("current_platform.is_cpu()", 0), ("ids.is_cpu", 1), ("not _is_cpu", 1)],
)
def test_a_cpu_platform_branch_is_quiet_and_a_tensor_on_the_cpu_is_not(test, reported):
    """`t.is_cpu` says where a tensor is: moving it from there is the copy the rules are for."""
    source = f"""
        import torch

        def forward(ids, dev, _is_cpu, is_cpu, current_platform):
            if {test}:
                ids = torch.tensor(ids).to(dev)
            return ids
        """
    assert count(source) == reported


def test_glob_matcher_agrees_with_fnmatchcase_on_every_kind_of_glob():
    import fnmatch
    import itertools

    from h2dlint.facts.syntax import glob_matcher

    globs = ["*", "", "a", "a*", "*a", "*a*", "a*b", "*a?", "[ab]*", "*_b*", "_*", "a.b", "*A.b", "a**", "*.*"]
    names = ["", "a", "b", "ab", "ba", "_a", "a_b", "a.b", "xa.b", "aab", "A.b", "a\n", "_", "abc", "bab"]
    for count in (1, 2, 3):
        for patterns in itertools.combinations(globs, count):
            matches = glob_matcher(patterns)
            for name in names:
                expected = any(fnmatch.fnmatchcase(name, p) for p in patterns)
                assert (matches(name) is not None) == expected, (patterns, name)


RECORD_CACHE = """\
import dataclasses

import torch


@dataclasses.dataclass
class Metadata:
    seq_lens: torch.Tensor
    _seq_lens_cpu: torch.Tensor = None

    @property
    def seq_lens_cpu(self):
        if self._seq_lens_cpu is None:
            self._seq_lens_cpu = self.seq_lens.to("cpu")
        return self._seq_lens_cpu


class Runner:
    def __init__(self):
        self._lens_cpu = None

    def lens_cpu(self, lens):
        if self._lens_cpu is None:
            self._lens_cpu = lens.cuda().to("cpu")
        return self._lens_cpu


class FlashMetadataBuilder:
    def build(self, meta: Metadata, runner: Runner, lens):
        return meta.seq_lens_cpu, runner.lens_cpu(lens)
"""


def test_a_records_cached_copy_is_built_once_per_record_so_per_step(tmp_path, run_cli):
    # engines build metadata records per step: the property copies each step; a runner's cache stays one-time
    write(tmp_path, "meta.py", RECORD_CACHE)
    code, out, err = run_cli("check", "--select", "HTD2", "--output-format", "json", "--no-cache", str(tmp_path))
    assert code == 1, err
    row = RECORD_CACHE.splitlines().index('            self._seq_lens_cpu = self.seq_lens.to("cpu")') + 1
    assert [(d["code"], d["location"]["row"], d["level"]) for d in json.loads(out)] == [("HTD205", row, "per-step")]
