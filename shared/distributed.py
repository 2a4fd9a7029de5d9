"""How a multi-rank (torchrun) variant is laid out: the same rule for the harness and the script;
and one gloo CPU rank in-process, for the variants that run FSDP on one rank.

Upstream topology is one rank per GPU over NCCL. With two or more GPUs we do exactly that;
otherwise the variant's own rank count runs on the CPU over gloo, which shows the same
every-rank-fails behaviour without GPUs.
"""

from __future__ import annotations

import contextlib
import os
import socket

MIN_GPUS_FOR_NCCL = 2


def torchrun_ranks(default_ranks: int, cuda_devices: int) -> int:
    """Ranks to launch: one per GPU when there are at least two, else the case's default."""
    return cuda_devices if cuda_devices >= MIN_GPUS_FOR_NCCL else default_ranks


def rank_backend(world_size: int, cuda_devices: int) -> tuple[str, str]:
    """(backend, device type) for each rank: NCCL on CUDA when every rank has its own GPU."""
    if cuda_devices >= max(MIN_GPUS_FOR_NCCL, world_size):
        return "nccl", "cuda"
    return "gloo", "cpu"


@contextlib.contextmanager
def one_gloo_rank(**launcher_env: str):
    """A process group of one CPU rank (gloo) in this process, with the variables torchrun
    --nproc-per-node=1 sets and ``launcher_env`` (what ``accelerate launch`` would export);
    yields the CPU device, recorded. torch is imported here: the harness imports this module."""
    import torch
    import torch.distributed as dist

    from shared.checks import record_device

    with socket.socket() as probe:  # a free port on the loopback
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), RANK="0", LOCAL_RANK="0",
                      WORLD_SIZE="1", **launcher_env)  # fmt: skip
    dist.init_process_group("gloo", rank=0, world_size=1)
    try:
        yield record_device(torch.device("cpu"), "one gloo rank: FSDP on the CPU, world size 1")
    finally:
        dist.destroy_process_group()
