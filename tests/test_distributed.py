"""Rank layout of torchrun variants, decided without GPUs (the rule, not the hardware)."""

import pytest

from shared.distributed import rank_backend, torchrun_ranks


@pytest.mark.parametrize(("cuda_devices", "expected"), [(0, 2), (1, 2), (2, 2), (4, 4), (8, 8)])
def test_one_rank_per_gpu_from_two_gpus_on(cuda_devices, expected):
    assert torchrun_ranks(default_ranks=2, cuda_devices=cuda_devices) == expected


@pytest.mark.parametrize(
    ("world_size", "cuda_devices", "expected"),
    [
        (2, 0, ("gloo", "cpu")),  # no GPU: CPU ranks
        (2, 1, ("gloo", "cpu")),  # one GPU cannot give each rank its own
        (2, 2, ("nccl", "cuda")),
        (4, 4, ("nccl", "cuda")),
        (4, 2, ("gloo", "cpu")),  # more ranks than GPUs
        (1, 1, ("gloo", "cpu")),  # NCCL needs two GPUs to show the multi-GPU topology
    ],
)
def test_backend_follows_the_gpus(world_size, cuda_devices, expected):
    assert rank_backend(world_size, cuda_devices) == expected


def test_the_harness_launches_what_the_backend_rule_accepts():
    for gpus in range(9):
        ranks = torchrun_ranks(2, gpus)
        assert rank_backend(ranks, gpus)[0] == ("nccl" if gpus >= 2 else "gloo")
