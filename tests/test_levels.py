"""Levels: every finding says how often its code runs (per step, per request), truthfully, in every format."""

from __future__ import annotations

import ast
import json

import pytest
from conftest import write

from h2dlint.facts.iteration import iterates_requests
from h2dlint.facts.settings import Settings
from h2dlint.project.findings import check_source

PIPELINE = """\
import torch

class ImagePipeline:
    def __call__(self, prompt, steps, dev):
        ids = torch.tensor(prompt, device=dev)  # once per request
        for t in range(steps):
            self.denoise(t, dev)
        return ids

    def denoise(self, t, dev):
        return torch.tensor([t], device=dev)  # per denoising step: called in the loop
"""


def test_a_pipeline_call_is_per_request_and_its_loop_per_step():
    found = {d.span.row: d for d in check_source(PIPELINE, Settings())}
    assert set(found) == {5, 11}
    assert found[5].level == "per-request"
    assert "`ImagePipeline.__call__` runs once per request" in found[5].message
    assert "per step" not in found[5].message
    assert found[11].level == "per-step"
    assert "called in a loop at line 6 of `ImagePipeline.__call__`" in found[11].message


def test_a_site_in_a_loop_of_a_per_request_function_is_per_step():
    source = PIPELINE.replace("self.denoise(t, dev)", "torch.tensor([t], device=dev)")
    found = {d.span.row: d for d in check_source(source, Settings())}
    assert found[7].level == "per-step"
    expected = "in a loop at line 6 (once per iteration); `ImagePipeline.__call__` runs once per request"
    assert expected in found[7].message


def test_what_a_step_and_a_request_both_reach_is_per_step():
    source = PIPELINE + (
        "\n\ndef forward(x, dev):\n    return helper(x, dev)\n\n\ndef helper(x, dev):\n"
        "    return torch.tensor(x, device=dev)\n\n\nclass Other:\n    def get_image_feature(self, x, dev):\n"
        "        return helper(x, dev)\n"
    )
    found = {d.span.row: d for d in check_source(source, Settings())}
    helper_site = max(found)
    assert found[helper_site].level == "per-step"
    assert "called from `forward` (per step)" in found[helper_site].message


def test_other_calls_stay_per_step():
    source = "import torch\n\nclass Model:\n    def __call__(self, x, dev):\n"
    source += "        return torch.tensor(x, device=dev)\n"
    (finding,) = check_source(source, Settings())
    assert finding.level == "per-step" and "`Model.__call__` runs per step" in finding.message


def test_min_level_per_step_drops_per_request_findings():
    found = check_source(PIPELINE, Settings(min_level="per-step"))
    assert [d.span.row for d in found] == [11]


def test_level_in_json_and_sarif_and_min_level_on_the_command_line(tmp_path, run_cli):
    path = write(tmp_path, "pipe.py", PIPELINE)
    code, out, _ = run_cli("check", str(path), "--output-format", "json")
    assert code == 1
    assert sorted((e["location"]["row"], e["level"]) for e in json.loads(out)) == [(5, "per-request"), (11, "per-step")]
    _, out, _ = run_cli("check", str(path), "--output-format", "sarif")
    results = json.loads(out)["runs"][0]["results"]
    levels = {r["locations"][0]["physicalLocation"]["region"]["startLine"]: r["level"] for r in results}
    assert levels == {5: "note", 11: "warning"}
    _, out, _ = run_cli("check", str(path), "--min-level", "per-step", "--output-format", "concise")
    assert [line.split(":")[1] for line in out.splitlines()] == ["11"]


def test_min_level_in_the_configuration(tmp_path, run_cli):
    write(tmp_path, "pyproject.toml", '[tool.h2dlint]\nmin-level = "per-step"\n')
    path = write(tmp_path, "pipe.py", PIPELINE)
    _, out, _ = run_cli("check", str(path), "--output-format", "concise")
    assert [line.split(":")[1] for line in out.splitlines()] == ["11"]
    write(tmp_path, "pyproject.toml", '[tool.h2dlint]\nmin-level = "often"\n')
    code, _, err = run_cli("check", str(path))
    assert code == 2 and "`min-level`" in err and "'per-step'" in err


ENCODER = """\
import torch

class Qwen2VisionTransformer:
    def forward(self, grid, dev):
        cu_seqlens = torch.tensor(grid, device=dev)  # once per image batch
        return self.rot_pos_emb(grid, dev), cu_seqlens

    def rot_pos_emb(self, grid, dev):
        return torch.tensor(grid, device=dev)

class Qwen2VisionForConditionalGeneration:
    def forward(self, ids, dev):
        return torch.tensor(ids, device=dev)  # the language model: per step
"""


def test_a_vision_encoder_of_a_serving_engine_runs_once_per_request():
    found = {d.span.row: d for d in check_source(ENCODER, Settings())}
    assert {row: d.level for row, d in found.items()} == {5: "per-request", 9: "per-request", 13: "per-step"}
    assert "`Qwen2VisionTransformer.forward` runs once per request (a multimodal encoder or projector)" in found[5].message
    assert "called from `Qwen2VisionTransformer.forward` (per request)" in found[9].message
    assert found[5].heuristic == "hot-per-request-encoder"


@pytest.mark.parametrize(
    "encoder", ["SenseVoiceEncoderSmall", "WhisperEncoder", "Qwen3OmniMoeAudioEncoder", "Lfm2VLMultiModalProjector"]
)
def test_an_encoder_or_projector_class_whose_name_says_only_that_runs_once_per_request(encoder):
    found = {d.span.row: d.level for d in check_source(ENCODER.replace("Qwen2VisionTransformer", encoder), Settings())}
    assert found == {5: "per-request", 9: "per-request", 13: "per-step"}


def test_an_encoder_runs_per_step_in_training_and_with_the_heuristic_off():
    for settings in (Settings(preset="training"), Settings(disable_heuristics=("hot-per-request-encoder",))):
        found = {d.span.row: d.level for d in check_source(ENCODER, settings)}
        assert found == {5: "per-step", 9: "per-step", 13: "per-step"}, settings.preset


def test_what_a_step_reaches_through_an_encoder_is_per_step():
    source = ENCODER.replace("return self.rot_pos_emb(grid, dev)", "return pos_ids(grid, dev)") + (
        "\n\ndef pos_ids(grid, dev):\n    return torch.tensor(grid, device=dev)\n"
    )
    found = {d.span.row: d for d in check_source(source, Settings())}
    assert found[17].level == "per-request"
    assert "called from `Qwen2VisionTransformer.forward` (per request)" in found[17].message
    stepped = source.replace("return torch.tensor(ids, device=dev)", "return pos_ids(ids, dev)")
    found = {d.span.row: d for d in check_source(stepped, Settings())}
    assert found[17].level == "per-step"
    assert "called from `Qwen2VisionForConditionalGeneration.forward` (per step)" in found[17].message


def test_a_loop_in_code_run_once_per_request_repeats_per_request():
    source = """\
import torch

class Model:
    def get_image_feature(self, items, dev):
        out = [torch.tensor(item, device=dev) for item in items]  # once per image of the request
        for item in items:
            self.embed(item, dev)
        return out

    def embed(self, item, dev):
        return torch.tensor(item, device=dev)
"""
    found = {d.span.row: d for d in check_source(source, Settings())}
    assert {row: d.level for row, d in found.items()} == {5: "per-request", 11: "per-request"}
    assert "in a comprehension at line 5 (once per iteration); `Model.get_image_feature` runs once per request" \
        in found[5].message
    assert "called in a loop at line 6 of `Model.get_image_feature`" in found[11].message
    diffusion = Settings(preset="diffusion", extend_hot_functions=("get_image_feature",))
    assert {d.span.row: d.level for d in check_source(source, diffusion)} == {5: "per-request", 11: "per-request"}
    switched_off = Settings(disable_heuristics=("hot-per-request-loop",))
    assert {d.span.row: d.level for d in check_source(source, switched_off)} == {5: "per-step", 11: "per-step"}


DIFFUSION_PIPELINE = """\
import torch

class ImagePipeline:
    def encode_prompt(self, prompts, dev):
        return [torch.tensor(p, device=dev) for p in prompts]  # once per prompt of the request

    def __call__(self, prompts, steps, dev):
        embeds = self.encode_prompt(prompts, dev)
        for t in range(steps):
            self.scheduler_step(t, dev)
        return embeds

    def scheduler_step(self, t, dev):
        return torch.tensor([t], device=dev)  # per denoising step
"""


def test_with_the_diffusion_preset_only_a_pipelines_call_loops_over_steps():
    """`encode_prompt` runs once per request and loops over the request's prompts; the pipeline's `__call__`
    loops over the denoising steps (`hot-per-request-loop` and its exception)."""
    found = {d.span.row: d for d in check_source(DIFFUSION_PIPELINE, Settings(preset="diffusion"))}
    assert {row: d.level for row, d in found.items()} == {5: "per-request", 14: "per-step"}
    assert "`ImagePipeline.encode_prompt` runs once per request" in found[5].message
    assert "called in a loop at line 9 of `ImagePipeline.__call__`" in found[14].message
    switched_off = Settings(preset="diffusion", disable_heuristics=("hot-per-request-loop",))
    assert check_source(DIFFUSION_PIPELINE, switched_off)[0].level == "per-step"


def test_a_loop_in_a_function_only_per_request_code_reaches_repeats_per_request():
    source = """\
import torch

class Processor:
    def get_image_feature(self, images, dev):
        return self.resize_images(images, dev)

    def resize_images(self, images, dev):
        for image in images:
            self.pad(image, dev)

    def pad(self, image, dev):
        return torch.tensor(image, device=dev)

def forward(batch, dev):
    for req in batch:
        leaf(req, dev)

def leaf(req, dev):
    return torch.tensor(req, device=dev)
"""
    found = {d.span.row: d for d in check_source(source, Settings())}
    assert {row: d.level for row, d in found.items()} == {12: "per-request", 19: "per-step"}
    assert "called in a loop at line 8 of `Processor.resize_images` (per request)" in found[12].message
    stepped = source.replace("return self.resize_images(images, dev)", "pass") + (
        "\n\ndef forward_step(proc, images, dev):\n    return proc.resize_images(images, dev)\n"
    )
    found = {d.span.row: d for d in check_source(stepped, Settings())}
    assert found[12].level == "per-step"  # a loop in code that no per-request root reaches stays per step
    assert "(per request)" not in found[12].message
    for settings in (Settings(preset="diffusion"), Settings(disable_heuristics=("hot-per-request-loop",))):
        assert check_source(source, settings)[0].level == "per-step"


MULTIMODAL_FORWARD = """\
import torch

class InternVLChatModel:
    def forward(self, input_ids, pixel_values, dev):
        if input_ids is not None and pixel_values is not None:
            lens = torch.tensor([len(p) for p in pixel_values], device=dev)  # with the request's images
            self.extract(pixel_values, dev)
        return torch.tensor(input_ids, device=dev)  # every step

    def extract(self, pixel_values, dev):
        return torch.tensor(pixel_values, device=dev)
"""


def test_a_branch_taken_only_with_images_runs_once_per_request():
    found = {d.span.row: d for d in check_source(MULTIMODAL_FORWARD, Settings())}
    assert {row: d.level for row, d in found.items()} == {6: "per-request", 8: "per-step", 11: "per-request"}
    assert "it runs only with images, audio or video (the branch at line 5)" in found[6].message
    assert "called only with images, audio or video in `InternVLChatModel.forward`" in found[11].message
    assert found[11].heuristic == "hot-per-request-multimodal-branch"
    off = Settings(disable_heuristics=("hot-per-request-multimodal-branch",))
    for settings in (Settings(preset="training"), off):
        assert {d.span.row: d.level for d in check_source(MULTIMODAL_FORWARD, settings)} == {
            6: "per-step", 8: "per-step", 11: "per-step"
        }


# A presence test of a local named as multimodal data makes the branch per request; a config flag, a request's
# field (set for its whole life) and an absence test do not.
BRANCH_TESTS = [
    ("len(images) > 0", "per-request"),
    ("need_vision.any()", "per-request"),
    ("mm_inputs", "per-request"),
    ("len(audio_features) != 0", "per-request"),
    ("forward_batch.contains_mm_inputs()", "per-request"),
    ("forward_batch.contains_image_inputs()", "per-request"),
    ("forward_batch.contains_mm_inputs(modality)", "per-step"),
    ("self.image_token_id is not None", "per-step"),
    ("req.mm_inputs is not None", "per-step"),
    ("pixel_values is None", "per-step"),
]


@pytest.mark.parametrize("test, level", BRANCH_TESTS)
def test_which_tests_make_a_multimodal_branch(test, level):
    source = MULTIMODAL_FORWARD.replace("input_ids is not None and pixel_values is not None", test)
    assert {d.span.row: d.level for d in check_source(source, Settings())}[6] == level


EARLY_RETURN = """\
import torch

class Model:
    def forward(self, ids, dev, **kwargs):
        self._parse_and_validate_image_input(dev, **kwargs)
        return torch.tensor(ids, device=dev)

    def _parse_and_validate_image_input(self, dev, **kwargs):
        pixel_values = kwargs.pop("pixel_values", None)
        image_embeds = kwargs.pop("image_embeds", None)
        if pixel_values is None and image_embeds is None:
            return None
        sizes = torch.tensor(kwargs["sizes"], device=dev)
        return self.embed(sizes, dev)

    def embed(self, sizes, dev):
        return torch.tensor(sizes.shape, device=dev)
"""


def test_what_follows_an_early_return_without_images_runs_once_per_request():
    found = {d.span.row: d for d in check_source(EARLY_RETURN, Settings())}
    assert {row: d.level for row, d in found.items()} == {6: "per-step", 13: "per-request", 17: "per-request"}
    assert "it runs only with images, audio or video (the branch at line 11)" in found[13].message
    assert "called only with images, audio or video in `Model._parse_and_validate_image_input`" in found[17].message
    off = Settings(disable_heuristics=("hot-per-request-multimodal-branch",))
    for settings in (Settings(preset="training"), off):
        assert {d.span.row: d.level for d in check_source(EARLY_RETURN, settings)}[13] == "per-step"


# An early return taken when no multimodal input is there: all operands of an `and` must say so, one of an `or`
# is enough; a return when it is there and a config flag alone say nothing.
EARLY_RETURNS = [
    ("pixel_values is None or self.text_only", "per-request"),
    ("not image_embeds", "per-request"),
    ("len(pixel_values) == 0", "per-request"),
    ("not forward_batch.contains_mm_inputs()", "per-request"),
    ("pixel_values is None and self.text_only", "per-step"),
    ("pixel_values is not None", "per-step"),
    ("self.text_only", "per-step"),
]


@pytest.mark.parametrize("test, level", EARLY_RETURNS)
def test_which_early_returns_leave_the_rest_to_multimodal_input(test, level):
    source = EARLY_RETURN.replace("pixel_values is None and image_embeds is None", test, 1)
    assert {d.span.row: d.level for d in check_source(source, Settings())}[13] == level


def test_a_call_only_with_images_from_a_call_only_with_images_runs_once_per_request():
    # sglang's `general_mm_embed_routine` calls `embed_mm_inputs` only for a batch with images, which calls
    # `get_embedding_and_mask` only after its early return without them: the second is per request too.
    source = """\
import torch

def general_mm_embed_routine(input_ids, mm_inputs, dev):
    if mm_inputs is not None:
        return embed_mm_inputs(mm_inputs, input_ids, dev)
    return input_ids

def embed_mm_inputs(mm_inputs, input_ids, dev):
    if mm_inputs is None:
        return None
    return get_embedding_and_mask(mm_inputs, dev)

def get_embedding_and_mask(mm_inputs, dev):
    return torch.tensor(mm_inputs.sizes, device=dev)

class Model:
    def forward(self, input_ids, forward_batch, dev):
        return general_mm_embed_routine(input_ids, forward_batch.mm_inputs, dev)
"""
    (found,) = check_source(source, Settings())
    assert (found.span.row, found.level) == (14, "per-request")
    assert "called only with images, audio or video in `embed_mm_inputs`" in found.message


@pytest.mark.parametrize("entry_point", ["embed_multimodal", "get_multimodal_embeddings"])
def test_a_per_request_entry_point_a_step_calls_stays_per_request(entry_point):
    source = """\
import torch

class Model:
    def forward(self, ids, dev):
        return self.embed_multimodal(ids, dev)

    def embed_multimodal(self, ids, dev):
        return self.encode(ids, dev)

    def encode(self, ids, dev):
        return torch.tensor(ids, device=dev)
""".replace("embed_multimodal", entry_point)
    (finding,) = check_source(source, Settings())
    assert finding.level == "per-request"
    assert f"called from `Model.{entry_point}` (per request)" in finding.message
    both = f"return self.{entry_point}(ids, dev), self.encode(ids, dev)"
    shared = source.replace(f"return self.{entry_point}(ids, dev)", both)
    (finding,) = check_source(shared, Settings())
    assert finding.level == "per-step" and "called from `Model.forward` (per step)" in finding.message


def test_a_per_request_entry_point_called_in_a_loop_stays_per_request():
    source = """\
import torch

def embed_multimodal(ids, dev):
    return encode(ids, dev)

def encode(ids, dev):
    return torch.tensor(ids, device=dev)

def measure_widths(items, dev):
    for ids in items:
        embed_multimodal(ids, dev)
        encode(ids, dev)
"""
    (finding,) = check_source(source, Settings())
    # `encode` is also called in the loop itself, which still makes it per step
    assert finding.level == "per-step" and "called in a loop at line 10" in finding.message
    alone = source.replace("        encode(ids, dev)\n", "")
    (finding,) = check_source(alone, Settings())
    assert finding.level == "per-request"
    assert "called from `embed_multimodal` (per request)" in finding.message


def test_a_call_on_a_miss_and_with_images_is_read_alike_by_the_file_and_the_project(tmp_path, run_cli):
    source = """\
import torch

_CACHE = {}


def _build(shape, dev):
    return torch.tensor(shape, device=dev)


def forward(shape, pixel_values, dev):
    t = _CACHE.get(shape)
    if t is None:
        if pixel_values is not None:
            t = _build(shape, dev)
        _CACHE[shape] = t
    return t
"""
    (alone,) = check_source(source, Settings())
    assert alone.level == "per-request" and "called on each cache miss in `forward`" in alone.message
    write(tmp_path, "memo.py", source)
    code, out, _ = run_cli("check", "--output-format", "json", str(tmp_path))
    (project,) = json.loads(out)
    assert code == 1 and (project["level"], project["message"]) == (alone.level, alone.message)


TOKENIZE = """\
import torch

class TokenizerManager:
    def _batch_tokenize_and_process(self, reqs, dev):
        for req in reqs:
            self._tokenize_one_request(req, dev)

    def _tokenize_one_request(self, req, dev):
        return torch.tensor(req.ids, device=dev)  # once per arriving request

class Detokenizer:
    def step(self, ids, dev):
        for i in ids:
            self.detokenize(i, dev)

    def detokenize(self, i, dev):
        return torch.tensor(i, device=dev)  # per step
"""


def test_tokenizing_a_request_runs_once_per_request_though_a_loop_over_requests_calls_it():
    found = {d.span.row: d for d in check_source(TOKENIZE, Settings())}
    assert {row: d.level for row, d in found.items()} == {9: "per-request", 17: "per-step"}
    assert "`TokenizerManager._tokenize_one_request` runs once per request" in found[9].message
    assert found[9].heuristic == "hot-name-new-request"
    by_loop = check_source(TOKENIZE, Settings(disable_heuristics=("hot-name-new-request",)))
    assert {d.span.row: d.heuristic for d in by_loop} == {9: "hot-per-request-loop-over-requests", 17: "hot-name-step"}
    assert {d.span.row: d.level for d in by_loop} == {9: "per-request", 17: "per-step"}
    both = ("hot-name-new-request", "hot-per-request-loop-over-requests")
    off = {d.span.row: d.level for d in check_source(TOKENIZE, Settings(disable_heuristics=both))}
    assert off == {9: "per-step", 17: "per-step"}


def test_adding_a_request_runs_once_per_request_though_the_step_loops_over_new_requests():
    source = """\
import torch

class ModelState:
    def add_request(self, req, dev):
        return torch.tensor(req.prompt, device=dev)

class Runner:
    def execute_model(self, new_reqs, dev):
        for req in new_reqs:
            self.state.add_request(req, dev)
"""
    found = {d.span.row: d for d in check_source(source, Settings())}
    assert {row: d.level for row, d in found.items()} == {5: "per-request"}
    assert "`ModelState.add_request` runs once per request" in found[5].message


PARTS = """\
import torch

class MoEFFN:
    def forward(self, x, dev):
        return torch.tensor(x, device=dev)  # only a vision block builds it: per request

class VisionBlock:
    def __init__(self):
        self.mlp = MoEFFN()

class Mlp:
    def forward(self, x, dev):
        return torch.tensor(x, device=dev)  # a decoder layer builds it too: per step

class VisionTower:
    def __init__(self):
        self.mlp = Mlp()

class DecoderLayer:
    def __init__(self):
        self.mlp = Mlp()
"""


def test_a_class_only_encoders_build_runs_once_per_request_and_one_a_language_model_builds_per_step():
    found = {d.span.row: d for d in check_source(PARTS, Settings())}
    assert {row: d.level for row, d in found.items()} == {5: "per-request", 13: "per-step"}
    assert "`MoEFFN.forward` runs once per request (only multimodal encoders build `MoEFFN`)" in found[5].message
    assert found[5].heuristic == "hot-per-request-encoder"
    for settings in (Settings(preset="training"), Settings(disable_heuristics=("hot-per-request-encoder",))):
        assert {d.span.row: d.level for d in check_source(PARTS, settings)} == {5: "per-step", 13: "per-step"}


def test_a_class_built_through_a_dotted_module_path_outside_an_encoder_is_no_part():
    source = PARTS.replace("class DecoderLayer:\n    def __init__(self):\n        self.mlp = Mlp()",
                           "class DecoderLayer:\n    def __init__(self):\n        self.mlp = models.blocks.Mlp()")
    assert "models.blocks.Mlp()" in source
    assert {d.span.row: d.level for d in check_source(source, Settings())} == {5: "per-request", 13: "per-step"}


TRANSFER = """\
import torch

class Sender:
    def send_all(self, batch):
        for i, req in enumerate(batch.reqs):
            self.send_one(req)
        for t in batch.chunks:
            self.send_chunk(t)

    def send_one(self, req):
        return torch.tensor(req.ids, device="cuda")

    def send_chunk(self, t):
        return torch.tensor(t, device="cuda")

    def drain(self, rid_list):
        for rid in rid_list:
            torch.tensor([rid], device="cuda")

    def forward(self, batch):
        for req in batch.reqs:
            torch.tensor(req.ids, device="cuda")
"""


def test_a_loop_over_requests_in_unknown_code_runs_its_calls_and_sites_per_request():
    found = {d.span.row: d for d in check_source(TRANSFER, Settings())}
    assert found[11].level == "per-request"
    assert "called in a loop over requests at line 5 of `Sender.send_all`" in found[11].message
    assert found[14].level == "per-step"  # a loop over chunks, not requests
    assert found[18].level == "per-request"
    assert "in a loop over requests at line 17" in found[18].message
    assert found[22].level == "per-step"  # per-step code looping over its batch's requests stays per step


@pytest.mark.parametrize(
    "settings",
    [Settings(preset="training"), Settings(disable_heuristics=("hot-per-request-loop-over-requests",))],
    ids=["training", "switched-off"],
)
def test_loops_over_requests_are_per_step_without_the_serving_heuristic(settings):
    found = {d.span.row: d for d in check_source(TRANSFER, settings)}
    assert {found[row].level for row in (11, 18)} == {"per-step"}


@pytest.mark.parametrize(
    "header, over_requests",
    [
        ("for req in reqs:", True),
        ("for i, req in enumerate(batch.reqs):", True),
        ("for req_id, blocks in meta.reqs_to_fill.items():", True),
        ("for a, b in zip(self.running_requests, sizes):", True),
        ("for r in batch.reqs[:n]:", True),
        ("for rid in rids:", True),
        ("for tok in tokens:", False),
        ("for layer in self.layers:", False),
        ("for required in needs:", False),
    ],
)
def test_which_loops_go_over_requests(header, over_requests):
    loop = ast.parse(f"{header}\n    pass").body[0]
    assert iterates_requests(loop.target, loop.iter, Settings().request_loop_names()) is over_requests
    assert not iterates_requests(loop.target, loop.iter, Settings(preset="training").request_loop_names())


ENCODER_PROTOCOL = """\
import torch

class GPUModelRunner:
    def execute_model(self, batch):
        self._execute_mm_encoder(batch)
        return torch.tensor(batch.ids, device="cuda")

    def _execute_mm_encoder(self, batch):
        for item in batch.mm_items:
            self.model.encoder_eager_forward(item)

class VisionModelForConditionalGeneration:
    def encoder_eager_forward(self, item):
        return torch.tensor(item.sizes, device="cuda")

    def prepare_encoder_cudagraph_replay_buffers(self, item):
        return torch.tensor(item.sizes, device="cuda")
"""


def test_vllm_runs_its_multimodal_encoder_once_per_request():
    found = {d.span.row: d for d in check_source(ENCODER_PROTOCOL, Settings())}
    assert {row: d.level for row, d in found.items()} == {6: "per-step", 14: "per-request", 17: "per-request"}
    assert "`VisionModelForConditionalGeneration.encoder_eager_forward` runs once per request" in found[14].message


PREEMPTED = """\
import torch

class Scheduler:
    def event_loop_step(self, batch, dev):
        if batch.out_of_memory:
            self.retract_decode(batch, dev)
        for req in batch.retracted:
            req.load_kv_cache(dev)
        return torch.tensor(batch.ids, device=dev)

    def retract_decode(self, batch, dev):
        return self.copy_back(batch.victims, dev)

    def copy_back(self, rows, dev):
        return torch.tensor(rows, device=dev)

class Req:
    def load_kv_cache(self, dev):
        return torch.tensor(self.kv_rows, device=dev)
"""


def test_preempting_a_request_and_resuming_it_run_once_per_preempted_request():
    levels = {d.span.row: d.level for d in check_source(PREEMPTED, Settings())}
    assert levels == {9: "per-step", 15: "per-request", 19: "per-request"}
    # Switched off, `retract_decode` is a decode step, and nothing says `load_kv_cache` runs at all.
    off = Settings(disable_heuristics=("hot-name-preemption",))
    assert {d.span.row: d.level for d in check_source(PREEMPTED, off)} == {9: "per-step", 15: "per-step"}


@pytest.mark.parametrize(
    "copy, reported",
    [
        ("torch.tensor(deltas, device=input_ids.device)", False),  # a processor's input is on the host
        ("torch.tensor(deltas).to(input_ids.device)", False),
        ("torch.tensor(deltas, device=dev)", True),  # a device it was given: the model's
        ("torch.tensor(deltas, device=self.table.device)", True),  # a buffer the object keeps with its model
    ],
)
def test_on_request_arrival_a_device_taken_from_an_input_is_the_host(copy, reported):
    source = f"""\
import torch

class Processor:
    def tokenize_with_images(self, input_ids, deltas, dev):
        return {copy}
"""
    assert len(check_source(source, Settings())) == int(reported)
    off = Settings(disable_heuristics=("cold-sync-on-request-arrival",))
    assert len(check_source(source, off)) == 1


FEATURE_EXTRACTOR = """\
import torch
from torch import nn
from transformers import SequenceFeatureExtractor


class Frontend(nn.Module):
    def forward(self, feats):
        device = feats.device
        return feats + torch.zeros(80).to(device)


class AudioFeatureExtractor(SequenceFeatureExtractor):
    def __init__(self, cmvn):
        self.cmvn = cmvn
        self.frontend = Frontend()

    def __call__(self, raw, lengths, dev):
        feats = torch.ones(len(raw), 80).to(lengths.device)
        staged = torch.tensor(lengths).to("cuda")
        return self.frontend(feats), staged
"""


def test_a_hugging_face_processor_runs_once_per_request_on_host_tensors():
    # Its `__call__`, and the `forward` of a module only it builds, run as a request arrives: a device taken
    # from an input tensor is the host there, and a copy to an explicit device runs once per request.
    found = {d.span.row: d for d in check_source(FEATURE_EXTRACTOR, Settings())}
    assert set(found) == {19}
    assert found[19].level == "per-request"
    assert "as it arrives (a Hugging Face processor)" in found[19].message
    off = Settings(disable_heuristics=("hot-per-request-processor",))
    assert {d.span.row: d.level for d in check_source(FEATURE_EXTRACTOR, off)} == {
        9: "per-step", 18: "per-step", 19: "per-step",
    }


def test_a_processor_of_the_engine_s_own_is_no_hugging_face_one():
    source = FEATURE_EXTRACTOR.replace("(SequenceFeatureExtractor)", "(BaseMultimodalProcessor)")
    assert {d.span.row for d in check_source(source, Settings())} == {9, 18, 19}


def test_a_class_an_encoder_builds_through_a_local_alias_is_a_part_too():
    """dots3's vision block picks its feed-forward class first (`mlp_cls = MoEFP8 if fp8 else MoEFFN`), then
    builds it (`mlp_cls(...)`): the call builds both classes, which only the vision block builds."""
    source = PARTS.replace("self.mlp = MoEFFN()", "mlp_cls = MoEFP8 if fp8 else MoEFFN\n        self.mlp = mlp_cls()")
    source = source.replace("class VisionBlock:", "class MoEFP8(MoEFFN):\n    pass\n\nclass VisionBlock:")
    found = {d.span.row: d for d in check_source(source, Settings())}
    assert found[5].level == "per-request", found[5].message
    assert "(only multimodal encoders build `MoEFFN`)" in found[5].message


RADIO = """\
import torch

class RadioModel:
    def forward(self, pixel_values, dev):
        return self._forward_dynamic(pixel_values, dev)

    def _forward_dynamic(self, images, dev):
        return torch.tensor([len(i) for i in images], device=dev)  # per image batch

class Decoder:
    def forward(self, input_ids, dev):
        return torch.tensor(input_ids, device=dev)  # per step
"""


def test_a_module_whose_forward_takes_images_first_is_an_encoder():
    """vLLM's and sglang's `RadioModel` is a vision encoder that no class glob names: its `forward` takes
    `pixel_values` first. A language model takes `input_ids` first and stays per step; a trainer runs both
    every step."""
    found = {d.span.row: d for d in check_source(RADIO, Settings())}
    assert {row: d.level for row, d in found.items()} == {8: "per-request", 12: "per-step"}
    assert "(its `forward` takes `pixel_values` first: a multimodal encoder)" in found[8].message
    assert found[8].heuristic == "hot-per-request-encoder"
    assert {d.span.row: d.level for d in check_source(RADIO, Settings(preset="training"))} == {
        8: "per-step", 12: "per-step"
    }


def test_pixel_values_with_a_prefix_make_an_encoder_too():
    """vLLM's Phi-4 image embedding module takes `image_pixel_values` first."""
    source = RADIO.replace("pixel_values", "image_pixel_values")
    found = {d.span.row: d for d in check_source(source, Settings())}
    assert {row: d.level for row, d in found.items()} == {8: "per-request", 12: "per-step"}
    assert "(its `forward` takes `image_pixel_values` first: a multimodal encoder)" in found[8].message
