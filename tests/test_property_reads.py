"""Reading a property runs its body: a per-step read of `meta.seq_lens_cpu`, lazily computed by a `.cpu()` of the
device tensor, syncs per step (issue 18 lists such properties among the removed syncs). A cached property, a
field, or a method passed on without a call runs nothing per read."""

from __future__ import annotations

import json
import textwrap

from conftest import write

from h2dlint.facts.settings import Settings
from h2dlint.project.findings import check_source

META = """
import functools
import torch

class Meta:
    def __init__(self, n, dev):
        self.seq_lens = torch.zeros(n, device=dev)

    @property
    def seq_lens_cpu(self):
        return self.seq_lens.cpu()

    @functools.cached_property
    def max_len_cpu(self):
        return self.seq_lens.max().cpu()

    def _check(self):
        return self.seq_lens.sum().item()

    @property
    def total(self):
        return int(self.seq_lens.sum())
"""


def codes(source, select=("HTD2",)):
    found = check_source(textwrap.dedent(source), Settings(select=select))
    return [(d.code, d.span.row) for d in found]


def row_of(text, source=META):
    """The row of the line of `source` holding `text`, as findings number them."""
    lines = textwrap.dedent(source).splitlines()
    return next(i for i, line in enumerate(lines, 1) if text in line)


def project_codes(run_cli, root, files):
    write(root, "pyproject.toml", "[project]\nname = 'demo'\n[tool.h2dlint]\nselect = ['HTD2']\n")
    for name, text in files.items():
        write(root, name, text)
    code, out, err = run_cli("check", "--no-cache", "--output-format", "json", ".", cwd=root)
    assert code in (0, 1), err
    return [(d["filename"].rpartition("/")[2], d["location"]["row"], d["code"]) for d in json.loads(out)]


def test_a_property_read_per_step_runs_per_step(tmp_path, run_cli):
    source = META + textwrap.dedent(
        """
        def forward(meta: Meta):
            return meta.seq_lens_cpu
        """
    )
    found = project_codes(run_cli, tmp_path / "demo", {"meta.py": source})
    assert found == [("meta.py", row_of("return self.seq_lens.cpu()"), "HTD205")]


def test_a_property_read_through_self_runs_where_the_read_does():
    source = META + textwrap.dedent(
        """
        class Batch(Meta):
            def prepare_for_decode(self):
                return self.total
        """
    )
    assert codes(source) == [("HTD201", row_of("return int(self.seq_lens.sum())"))]


def test_a_property_read_only_in_setup_code_stays_quiet():
    source = META + textwrap.dedent(
        """
        def load_model(meta: Meta):
            return meta.seq_lens_cpu
        """
    )
    assert codes(source) == []


def test_a_cached_property_runs_once_per_object_and_a_bound_method_is_not_called():
    source = META + textwrap.dedent(
        """
        class Batch(Meta):
            def forward(self, hooks):
                hooks.append(self._check)
                return self.max_len_cpu
        """
    )
    assert codes(source) == []


def test_a_property_read_on_the_class_runs_nothing():
    source = META + textwrap.dedent(
        """
        class Batch(Meta):
            @classmethod
            def forward(cls):
                return cls.total
        """
    )
    assert codes(source) == []


def test_an_object_of_unknown_class_is_not_matched_to_a_property_by_name():
    source = META + textwrap.dedent(
        """
        def forward(batch):
            return batch.total, batch.seq_lens_cpu
        """
    )
    assert codes(source) == []


def test_a_property_of_a_class_in_another_file_is_reached(tmp_path, run_cli):
    runner = """
        from pkg.meta import Meta

        class Runner:
            def forward(self, meta: Meta):
                return meta.seq_lens_cpu
        """
    files = {"pkg/__init__.py": "", "pkg/meta.py": META, "pkg/runner.py": runner}
    assert project_codes(run_cli, tmp_path / "demo", files) == [("meta.py", row_of("return self.seq_lens.cpu()"), "HTD205")]


# Where a property's value lives is where its body's return does: `self.lens` reads `self._lens`.
LENS = """
import torch

class Lens:
    def __init__(self, n):
        self._lens = torch.zeros(n, device="cuda")
        self._bank = None

    @property
    def lens(self):
        return self._lens

    @property
    def bank(self):
        if self._bank is None:
            self._bank = Bank().to("cuda")
        return self._bank
"""


def test_a_property_holds_what_its_body_returns():
    source = LENS + textwrap.dedent(
        """
        class Step(Lens):
            def forward(self):
                return self.lens.tolist()
        """
    )
    assert codes(source) == [("HTD201", row_of("return self.lens.tolist()", source))]


def test_a_property_of_a_class_in_another_file_holds_what_its_body_returns(tmp_path, run_cli):
    step = """
        import torch
        from pkg.lens import Lens

        class Step:
            def forward(self, lens: Lens):
                return lens.lens.tolist()
        """
    files = {"pkg/__init__.py": "", "pkg/lens.py": LENS, "pkg/step.py": step}
    assert project_codes(run_cli, tmp_path / "demo", files) == [("step.py", row_of("lens.lens.tolist()", step), "HTD201")]


def test_calling_what_a_property_returns_is_not_its_return(tmp_path, run_cli):
    """`self.bank(audio)` calls the module `bank` returns: what that call gives is not known, here or in
    another file (vllm transformers_utils/processors/cohere_asr.py:531 was reported for it)."""
    step = """
        import torch
        from pkg.lens import Lens

        class Step(Lens):
            def forward(self, audio):
                return self.bank(audio).cpu()

        class Other:
            def forward(self, lens: Lens, audio):
                return lens.bank(audio).cpu(), lens.lens.cpu()
        """
    files = {"pkg/__init__.py": "", "pkg/lens.py": LENS, "pkg/step.py": step}
    assert project_codes(run_cli, tmp_path / "demo", files) == [("step.py", row_of("lens.lens.cpu()", step), "HTD205")]


# A lazily computed host mirror names the device copy it shadows, as a declared one does.
MIRRORED = """
import torch

class Meta:
    def __init__(self, seq_lens):
        self.seq_lens = seq_lens
        self._seq_lens_cpu = None

    @property
    def seq_lens_cpu(self):
        if self._seq_lens_cpu is None:
            self._seq_lens_cpu = self.seq_lens.to("cpu")
        return self._seq_lens_cpu
"""


def test_a_property_mirror_names_the_device_copy_in_the_same_file():
    source = MIRRORED + textwrap.dedent(
        """
        class Backend:
            def forward(self, meta: Meta):
                return meta.seq_lens.tolist()
        """
    )
    assert codes(source) == [("HTD201", row_of("return meta.seq_lens.tolist()", source))]


def test_a_property_mirror_names_the_device_copy_in_another_file(tmp_path, run_cli):
    backend = """
        import torch
        from pkg.meta import Meta

        class Backend:
            def forward(self, meta: Meta):
                return meta.seq_lens.tolist()
        """
    files = {"pkg/__init__.py": "", "pkg/meta.py": MIRRORED, "pkg/backend.py": backend}
    found = project_codes(run_cli, tmp_path / "demo", files)
    assert found == [("backend.py", row_of("meta.seq_lens.tolist()", backend), "HTD201")]
