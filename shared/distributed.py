"""How a multi-rank (torchrun) variant is laid out: the same rule for the harness and the script.

Upstream topology is one rank per GPU over NCCL. With two or more GPUs we do exactly that;
otherwise the variant's own rank count runs on the CPU over gloo, which shows the same
every-rank-fails behaviour without GPUs.
"""

from __future__ import annotations

MIN_GPUS_FOR_NCCL = 2


def torchrun_ranks(default_ranks: int, cuda_devices: int) -> int:
    """Ranks to launch: one per GPU when there are at least two, else the case's default."""
    return cuda_devices if cuda_devices >= MIN_GPUS_FOR_NCCL else default_ranks


def rank_backend(world_size: int, cuda_devices: int) -> tuple[str, str]:
    """(backend, device type) for each rank: NCCL on CUDA when every rank has its own GPU."""
    if cuda_devices >= max(MIN_GPUS_FOR_NCCL, world_size):
        return "nccl", "cuda"
    return "gloo", "cpu"
