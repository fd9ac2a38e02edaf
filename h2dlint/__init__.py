"""h2dlint: find per-step host-to-device copies that stall the GPU pipeline."""

__version__ = "0.1.0"
