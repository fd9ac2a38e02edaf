"""Levels in a diffusion pipeline: a loop over the timesteps runs per denoising step wherever it sits
(`hot-denoising-loop`); what the pipeline's `__call__` calls once loops over the request's items
(`hot-per-request-loop`); its VAE runs once per request (`hot-per-request-vae`)."""

from __future__ import annotations

import ast

import pytest

from h2dlint.facts.iteration import iterates_timesteps
from h2dlint.facts.settings import Settings
from h2dlint.project.findings import check_source

PIPELINE = """\
import torch

class VideoPipeline:
    def prepare_images(self, images, dev):
        out = []
        for image in images:
            out.append(torch.tensor(image, device=dev))  # once per image of the request
        return out

    def run_diffusion(self, latents, names, dev):
        for i, t in enumerate(self.progress_bar(self.scheduler.timesteps)):
            ids = torch.tensor([i], device=dev)  # per denoising step
            for name in names:
                tag = torch.tensor([len(name)], device=dev)  # per step too: a loop inside the denoising loop
            self.guide(t, dev)
        return latents

    def guide(self, t, dev):
        return torch.tensor([t], device=dev)  # called in the denoising loop

    def __call__(self, images, latents, names, dev):
        self.prepare_images(images, dev)
        return self.run_diffusion(latents, names, dev)
"""


def _levels(settings: Settings) -> dict:
    return {d.span.row: d for d in check_source(PIPELINE, settings)}


def test_a_helper_the_pipeline_calls_once_loops_over_the_request_s_items():
    found = _levels(Settings(preset="diffusion"))
    assert found[7].level == "per-request"
    assert "in a loop at line 6 (once per iteration); called from `VideoPipeline.__call__` (per request)" in (
        found[7].message
    )
    switched_off = Settings(preset="diffusion", disable_heuristics=("hot-per-request-loop",))
    assert _levels(switched_off)[7].level == "per-step"


def test_a_loop_over_the_timesteps_runs_per_step_in_a_helper_too():
    found = _levels(Settings(preset="diffusion"))
    assert {row: found[row].level for row in (12, 14, 19)} == {12: "per-step", 14: "per-step", 19: "per-step"}
    assert "in a denoising loop at line 11" in found[12].message
    assert "in a denoising loop at line 11" in found[14].message  # the loop it sits in is inside that one
    assert "called in a denoising loop at line 11 of `VideoPipeline.run_diffusion`" in found[19].message
    assert {found[row].heuristic for row in (12, 14, 19)} == {"hot-denoising-loop"}


def test_without_the_denoising_loop_heuristic_the_helper_s_loop_repeats_per_request():
    found = _levels(Settings(preset="diffusion", disable_heuristics=("hot-denoising-loop",)))
    assert {row: found[row].level for row in (12, 14, 19)} == {
        12: "per-request", 14: "per-request", 19: "per-request"
    }
    assert "denoising" not in found[12].message


def test_the_serving_preset_knows_denoising_loops_too():
    """sglang and vLLM serve diffusion models: a denoising loop in a per-request entry point runs per step."""
    source = PIPELINE.replace("def run_diffusion", "def get_image_feature").replace(
        "self.run_diffusion(", "self.get_image_feature("
    )
    found = {d.span.row: d.level for d in check_source(source, Settings())}
    assert found[12] == "per-step"


@pytest.mark.parametrize(
    "iterable, steps",
    [
        ("timesteps", True),
        ("enumerate(self.progress_bar(timesteps))", True),
        ("range(len(self.scheduler.timesteps))", True),
        ("enumerate(prior_timesteps_tensor[:-1])", True),
        ("images", False),
        ("range(num_segments)", False),
        ("enumerate(self.progress_bar(steps))", False),
    ],
)
def test_which_loops_go_over_timesteps(iterable, steps):
    expr = ast.parse(iterable, mode="eval").body
    assert iterates_timesteps(expr, Settings().denoising_loop_names()) is steps
    assert iterates_timesteps(expr, ()) is False


SEGMENTS = """\
import torch

class AnimatePipeline:
    def __call__(self, timesteps, num_segments, frames, refs, dev):
        for ref in refs:
            r = torch.tensor([ref], device=dev)  # once per reference image: beside the denoising loop
        for segment in range(num_segments):
            start = torch.tensor([segment], device=dev)  # once per segment of the request
            self.prepare_segment(segment, dev)
            for frame in frames:
                pad = torch.tensor([frame], device=dev)  # per frame of a segment: per request too
            for i, t in enumerate(timesteps):
                ids = torch.tensor([i], device=dev)  # per denoising step

    def prepare_segment(self, segment, dev):
        return torch.tensor([segment], device=dev)
"""


def test_a_pipelines_loops_beside_and_around_its_denoising_loop_repeat_per_request():
    found = {d.span.row: d for d in check_source(SEGMENTS, Settings(preset="diffusion"))}
    levels = {row: d.level for row, d in found.items()}
    assert levels == {6: "per-request", 8: "per-request", 11: "per-request", 13: "per-step", 16: "per-request"}
    assert "in a per-request loop at line 5" in found[6].message
    assert "in a per-request loop at line 7" in found[8].message
    assert "in a per-request loop at line 10" in found[11].message  # a loop of `__call__` too
    assert "in a denoising loop at line 12" in found[13].message
    assert "called in a per-request loop at line 7 of `AnimatePipeline.__call__`" in found[16].message


def test_a_comprehension_of_a_pipeline_beside_its_denoising_loop_runs_per_request():
    source = """\
import torch

class DepthPipeline:
    def __call__(self, timesteps, images, dev):
        for t in timesteps:
            x = torch.tensor([t], device=dev)
            ys = [torch.tensor([i], device=dev) for i in images]  # inside the denoising loop: per step
        return [torch.tensor([i], device=dev) for i in images]  # after it, once per image
"""
    found = {d.span.row: d for d in check_source(source, Settings(preset="diffusion"))}
    assert {row: d.level for row, d in found.items()} == {6: "per-step", 7: "per-step", 8: "per-request"}
    assert "in a per-request loop at line 8" in found[8].message


def test_without_the_denoising_loop_heuristic_a_pipelines_loops_are_its_steps():
    found = check_source(SEGMENTS, Settings(preset="diffusion", disable_heuristics=("hot-denoising-loop",)))
    assert {d.span.row: d.level for d in found} == {6: "per-step", 8: "per-step", 11: "per-step", 13: "per-step",
                                                     16: "per-step"}


def test_a_pipeline_whose_denoising_loop_is_not_known_keeps_its_loops_per_step():
    """A discrete diffusion pipeline refines until done (`while not finished:`), and the timesteps loop of a
    function it defines is no loop of its own: its loops stay taken for its steps."""
    source = """\
import torch

class RefinePipeline:
    def __call__(self, blocks, dev):
        for block in blocks:
            done = torch.tensor([block], device=dev)
            while not done:
                step = torch.tensor([0], device=dev)
        def later(timesteps):
            for t in timesteps:
                pass
"""
    found = {d.span.row: d.level for d in check_source(source, Settings(preset="diffusion"))}
    assert found == {6: "per-step", 8: "per-step"}


def test_a_while_loop_over_the_timesteps_is_a_denoising_loop():
    source = """\
import torch

class ParallelPipeline:
    def __call__(self, scheduler, refs, dev):
        for ref in refs:
            r = torch.tensor([ref], device=dev)
        begin = 0
        while begin < len(scheduler.timesteps):
            ids = torch.tensor([begin], device=dev)
"""
    found = {d.span.row: d for d in check_source(source, Settings(preset="diffusion"))}
    assert {row: d.level for row, d in found.items()} == {6: "per-request", 9: "per-step"}
    assert "in a denoising loop at line 8" in found[9].message


VAE = """\
import torch

class AutoencoderTiny:
    def forward(self, latents, dev):
        return torch.tensor([latents.shape[0]], device=dev)  # decodes once per request

class UNet2DModel:
    def forward(self, sample, dev):
        return torch.tensor([sample.shape[0]], device=dev)  # the denoiser: per step
"""


def test_a_diffusion_pipelines_vae_runs_once_per_request():
    found = {d.span.row: d for d in check_source(VAE, Settings(preset="diffusion"))}
    assert {row: d.level for row, d in found.items()} == {5: "per-request", 9: "per-step"}
    assert found[5].heuristic == "hot-per-request-vae"
    assert "`AutoencoderTiny.forward` runs once per request (a diffusion pipeline's VAE or safety checker)" in (
        found[5].message
    )
    switched_off = Settings(preset="diffusion", disable_heuristics=("hot-per-request-vae",))
    assert {d.level for d in check_source(VAE, switched_off)} == {"per-step"}
    assert {d.level for d in check_source(VAE, Settings())} == {"per-step"}  # serving names no VAE
