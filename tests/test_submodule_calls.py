"""A module's `forward` runs with what the calls of the module pass (`placement-parameter-from-submodule-calls`):
`self.visual(pixel_values, grid_thw=grid_thw)` where `self.visual = VisionTransformer(...)`, and `blk(x,
cu_seqlens)` in `for blk in self.blocks:` over a `ModuleList`. A parameter of `forward` is placed by those calls
only where they are all its calls in sight: every other use of the module, of the attribute holding it, or of the
class's name, may call it with other arguments."""

from __future__ import annotations


import pytest
from conftest import demo_package, messages_by_site, row_of

ENCODER = """\
    import torch
    from torch import nn


    class VisionAttention(nn.Module):
        def forward(self, x, cu_seqlens):
            max_seqlen = (cu_seqlens[1:] - cu_seqlens[:-1]).max().item()
            return x[:max_seqlen]


    class VisionBlock(nn.Module):
        def __init__(self):
            super().__init__()
            self.attn = VisionAttention()

        def forward(self, x, cu_seqlens):
            return x + self.attn(x, cu_seqlens=cu_seqlens)


    class VisionTransformer(nn.Module):
        def __init__(self, depth):
            super().__init__()
            self.blocks = nn.ModuleList([VisionBlock() for _ in range(depth)])
            self.merge_size = 2

        def forward(self, x, grid_thw):
            sizes = grid_thw.tolist()
            cu_seqlens = (grid_thw[:, 1] * grid_thw[:, 2]).cumsum(0)
            for i, blk in enumerate(self.blocks):
                x = blk(x, cu_seqlens)
            return x, sizes


    class Model(nn.Module):
        def __init__(self):
            super().__init__()
            self.visual = VisionTransformer(2)

        def embed_image(self, pixel_values, dev):
            grid_thw = GRID
            merge = self.visual.merge_size
            if self.visual is None:
                return None
            return self.visual(pixel_values, grid_thw=grid_thw)
    """

ON_DEVICE = "torch.tensor([[1, 2, 2]], device=dev)"
SIZES, MAX_SEQLEN = "grid_thw.tolist()", ".max().item()"


def _check(tmp_path, run_cli, model: str, *args, **others: str) -> dict:
    project = demo_package(tmp_path, {"model": model, **others}, "select = ['HTD2']\n")
    return messages_by_site(run_cli, project, *args)


def _model(grid: str = ON_DEVICE, edit=lambda source: source) -> str:
    return edit(ENCODER.replace("GRID", grid))


def test_a_parameter_of_forward_lives_where_the_calls_of_the_module_pass_it(tmp_path, run_cli):
    model = _model()
    found = _check(tmp_path, run_cli, model)
    message = found[("model.py", row_of(model, SIZES))]
    assert "at every call of `self.visual(...)` in this file" in message
    assert "no other file of the project builds or imports `VisionTransformer`" in message
    # through the loop over the `ModuleList` and the block's own submodule, three calls deep
    deep = found[("model.py", row_of(model, MAX_SEQLEN))]
    assert "`self.attn(...)`" in deep and "`blk(...)`" in deep and "`self.visual(...)`" in deep


def test_a_host_argument_makes_no_device_parameter(tmp_path, run_cli):
    model = _model(grid="torch.tensor([[1, 2, 2]])")
    found = _check(tmp_path, run_cli, model)
    assert ("model.py", row_of(model, SIZES)) not in found
    assert ("model.py", row_of(model, MAX_SEQLEN)) not in found


def test_an_argument_another_file_places_is_asked_of_it(tmp_path, run_cli):
    imports = "from torch import nn\n\n    from pkg.grids import make_grid\n"
    model = _model(grid="make_grid(dev)", edit=lambda s: s.replace("from torch import nn\n", imports))
    grids = "import torch\n\n\ndef make_grid(dev):\n    return torch.tensor([[1, 2, 2]], device=dev)\n"
    found = _check(tmp_path, run_cli, model, grids=grids)
    message = found[("model.py", row_of(model, SIZES))]
    assert "at every call of `self.visual(...)` in model.py (line" in message and "grids.py" in message


UNSEEN_CALLS = {
    "another file imports the class": None,
    "the module is passed on": ("return self.visual(pixel_values, grid_thw=grid_thw)",
                                "return run_sharded(self.visual, pixel_values, grid_thw)"),
    "it is looked up by name": ("merge = self.visual.merge_size", "merge = getattr(self, 'visual').merge_size"),
    "its forward is called by name": ("return self.visual(pixel_values, grid_thw=grid_thw)",
                                      "return self.visual.forward(pixel_values, grid_thw)"),
    "the class is subclassed": (
        "class Model(nn.Module):", "class Bigger(VisionTransformer):\n    pass\n\n\nclass Model(nn.Module):"
    ),
}


@pytest.mark.parametrize("case", sorted(UNSEEN_CALLS))
def test_a_module_that_may_be_called_out_of_sight_places_nothing(tmp_path, run_cli, case):
    change = UNSEEN_CALLS[case]
    if change is None:
        model = _model()
        others = {"other": "from pkg.model import VisionTransformer\n"}
    else:
        model = _model(edit=lambda s: s.replace(change[0], change[1].replace("\n", "\n    ")))
        others = {}
    found = _check(tmp_path, run_cli, model, **others)
    assert ("model.py", row_of(model, SIZES)) not in found


def test_a_loop_that_lets_its_modules_out_places_nothing_through_it(tmp_path, run_cli):
    kept = "x = blk(x, cu_seqlens)\n                kept = [blk]"
    model = _model(edit=lambda s: s.replace("x = blk(x, cu_seqlens)", kept))
    found = _check(tmp_path, run_cli, model)
    assert ("model.py", row_of(model, SIZES)) in found  # the outer call is still all in sight
    assert ("model.py", row_of(model, MAX_SEQLEN)) not in found


def test_switched_off_the_calls_place_nothing(tmp_path, run_cli):
    model = _model()
    found = _check(tmp_path, run_cli, model, "--disable-heuristics", "placement-parameter-from-submodule-calls")
    assert ("model.py", row_of(model, SIZES)) not in found


def test_a_public_helper_whose_calls_pass_a_question_is_placed_when_it_is_answered(tmp_path, run_cli):
    """`self.seqlens(cu_seqlens)` in `forward` passes what the module's calls place; another file calls its own
    method of the same name, which is no call of this one."""
    helper = "def seqlens(self, cu_seqlens):\n            return (cu_seqlens[1:] - cu_seqlens[:-1]).tolist()"
    model = _model(edit=lambda s: s.replace(
        "sizes = grid_thw.tolist()\n            cu_seqlens = (grid_thw[:, 1] * grid_thw[:, 2]).cumsum(0)\n",
        "cu_seqlens = (grid_thw[:, 1] * grid_thw[:, 2]).cumsum(0)\n            sizes = self.seqlens(cu_seqlens)\n",
    ).replace("return x, sizes\n", f"return x, sizes\n\n        {helper}\n"))
    other = "class Other:\n    def seqlens(self, x):\n        return x\n\n"
    other += "    def run(self, x):\n        return self.seqlens(x)\n"
    site = "return (cu_seqlens[1:] - cu_seqlens[:-1]).tolist()"
    message = _check(tmp_path, run_cli, model, other=other)[("model.py", row_of(model, site))]
    through = "at every call of `seqlens(...)` in this file, a tensor that is, at every call of `self.visual(...)`"
    assert through in message
    assert "every call of `seqlens` in the other files reaches another function of that name" in message
    # a call on an object of unknown class may reach it: the helper's callers are no longer all in sight
    unseen = other.replace("def run(self, x):", "def run(self, obj, x):").replace("self.seqlens(x)", "obj.seqlens(x)")
    assert ("model.py", row_of(model, site)) not in _check(tmp_path / "unseen", run_cli, model, other=unseen)



_MODEL_CLASS = "    class Model(nn.Module):"
TOWER = ENCODER.split(_MODEL_CLASS)[0]
_BUILDER_HEAD = "    import torch\n    from torch import nn\n    from pkg.tower import VisionTransformer\n\n\n"


def _builder(model: str) -> str:
    """`model`'s `Model` class alone, in a file that imports the tower classes."""
    return _BUILDER_HEAD + _MODEL_CLASS + model.split(_MODEL_CLASS)[1]


@pytest.mark.parametrize(
    ("builders", "reported"),
    [
        ({"model": _model()}, True),
        ({"model": _model(grid="torch.tensor([[1, 2, 2]])")}, False),
        ({"model": _model(edit=lambda s: s.replace(*UNSEEN_CALLS["the module is passed on"]))}, False),
        ({name: _model() for name in ("model", "second", "third")}, False),
    ],
    ids=["built in one other file", "which passes a host tensor", "which passes the module on", "in three files"],
)
def test_a_module_its_own_file_never_builds_is_placed_by_the_files_that_build_it(
    tmp_path, run_cli, builders, reported
):
    modules = {"tower": TOWER, **{name: _builder(model) for name, model in builders.items()}}
    found = messages_by_site(run_cli, demo_package(tmp_path, modules, "select = ['HTD2']\n"))
    assert (("tower.py", row_of(TOWER, SIZES)) in found) is reported
    assert (("tower.py", row_of(TOWER, MAX_SEQLEN)) in found) is reported
    if reported:
        message = found[("tower.py", row_of(TOWER, SIZES))]
        assert "at every call of a `VisionTransformer` module in `model.py`" in message
