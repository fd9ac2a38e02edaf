"""A multimodal model's inputs are on the device (`placement-multimodal-input`): vLLM's model runner moves the
batched inputs there before it calls `get_multimodal_embeddings(**kwargs)`, unless the processor declares the
field with `keep_on_cpu=True`. The model reads them with `kwargs.pop(...)`, reshapes them in a helper
(`torch.concat(list(x))`), packs them in a `TypedDict` and reads them back by key through a union alias of the
input classes: each step must keep the placement for `grid_thw.tolist()` to be found."""

from __future__ import annotations

import textwrap

import pytest
from conftest import demo_package, messages_by_site, row_of

PROCESSING = """\
    from vllm.multimodal.inputs import MultiModalFieldConfig


    class Processor:
        def _get_mm_fields_config(self, hf_inputs, hf_processor_mm_kwargs):
            return dict(
                pixel_values=MultiModalFieldConfig.batched("image"),
                image_grid_thw=MultiModalFieldConfig.batched("image"{keep}),
            )
    """

MODEL = """\
    from typing import TypedDict, Union

    import torch
    from torch import nn


    class PixelInputs(TypedDict):
        pixel_values: torch.Tensor
        image_grid_thw: torch.Tensor


    class EmbeddingInputs(TypedDict):
        image_embeds: torch.Tensor
        image_grid_thw: torch.Tensor


    ImageInputs = Union[PixelInputs, EmbeddingInputs]


    class Model(nn.Module):
        def _validate(self, mm_input, name):
            if isinstance(mm_input, torch.Tensor):
                if mm_input.ndim == 2:
                    return mm_input
                return torch.concat(list(mm_input))
            return torch.concat(mm_input)

        def _parse_and_validate_image_input(self, **kwargs):
            pixel_values = kwargs.pop("pixel_values", None)
            image_embeds = kwargs.pop("image_embeds", None)
            image_grid_thw = kwargs.pop("image_grid_thw", None)
            if pixel_values is not None:
                image_grid_thw = self._validate(image_grid_thw, "grid")
                return PixelInputs(pixel_values=pixel_values, image_grid_thw=image_grid_thw)
            return EmbeddingInputs(image_embeds=image_embeds, image_grid_thw=image_grid_thw)

        def _process_image_input(self, image_input: ImageInputs):
            grid_thw = image_input["image_grid_thw"]
            return grid_thw.tolist()

        def get_multimodal_embeddings(self, **kwargs):
            image_input = self._parse_and_validate_image_input(**kwargs)
            return self._process_image_input(image_input)


    class Runner:
        def __init__(self):
            self.model = Model()

        def execute_model(self, mm_kwargs):
            return self.model.get_multimodal_embeddings(**mm_kwargs)
    """

SITE = "grid_thw.tolist()"


def _project(tmp_path, model: str, processing: str):
    modules = {"model": model}
    if processing:
        modules["processing"] = processing
    return demo_package(tmp_path, modules, "select = ['HTD2']\n")


def test_an_input_whose_field_another_file_declares_is_on_the_device(tmp_path, run_cli):
    project = _project(tmp_path, MODEL, PROCESSING.format(keep=""))
    message = messages_by_site(run_cli, project)[("model.py", row_of(MODEL, SITE))]
    assert "multimodal input `image_grid_thw`" in message
    assert "processing.py" in message


def test_an_input_whose_field_its_own_file_declares_is_on_the_device(tmp_path, run_cli):
    declared = textwrap.dedent(PROCESSING.format(keep="")) + "\n\n" + textwrap.dedent(MODEL)
    project = _project(tmp_path, declared, "")
    assert ("model.py", row_of(declared, SITE)) in messages_by_site(run_cli, project)


ASSIGNED = """\
    from vllm.multimodal.inputs import MultiModalFieldConfig


    def fields_config(hf_inputs):
        fields = {{}}
        fields["image_grid_thw"] = MultiModalFieldConfig.batched("image"{keep})
        return fields
    """


@pytest.mark.parametrize("processing", [PROCESSING, ASSIGNED], ids=["keywords", "assigned by key"])
def test_an_input_whose_field_another_file_declares_either_way_is_reported(tmp_path, run_cli, processing):
    project = _project(tmp_path, MODEL, processing.format(keep=""))
    assert ("model.py", row_of(MODEL, SITE)) in messages_by_site(run_cli, project)


@pytest.mark.parametrize(
    "processing", [PROCESSING.format(keep=", keep_on_cpu=True"), ASSIGNED.format(keep=", keep_on_cpu=True"), ""],
    ids=["kept on the host", "kept on the host, assigned by key", "never declared"],
)
def test_an_input_kept_on_the_host_or_never_declared_is_not_reported(tmp_path, run_cli, processing):
    project = _project(tmp_path, MODEL, processing)
    assert ("model.py", row_of(MODEL, SITE)) not in messages_by_site(run_cli, project)


def test_switched_off_the_inputs_are_not_placed(tmp_path, run_cli):
    project = _project(tmp_path, MODEL, PROCESSING.format(keep=""))
    found = messages_by_site(run_cli, project, "--disable-heuristics", "placement-multimodal-input")
    assert ("model.py", row_of(MODEL, SITE)) not in found


KEYED = """\
    import torch
    from torch import nn


    class Model(nn.Module):
        def get_multimodal_embeddings(self, **kwargs):
            sizes = kwargs["image_grid_thw"].tolist()
            for pixels, grid in zip(kwargs["pixel_values"], kwargs["image_grid_thw"]):
                grid = grid.unsqueeze(dim=0)
                if isinstance(grid, torch.Tensor):
                    grid = grid.detach().cpu().tolist()
            return sizes
    """


@pytest.mark.parametrize(("keep", "reported"), [("", True), (", keep_on_cpu=True", False)], ids=["moved", "kept"])
def test_an_input_read_by_key_is_placed_as_one_popped_and_so_is_a_loop_variable_rebound_from_it(
    tmp_path, run_cli, keep, reported
):
    found = messages_by_site(run_cli, _project(tmp_path, KEYED, PROCESSING.format(keep=keep)))
    for site in ('kwargs["image_grid_thw"].tolist()', "grid.detach().cpu()"):
        assert (("model.py", row_of(KEYED, site)) in found) is reported
