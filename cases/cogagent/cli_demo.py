"""The case's chat CLI: CogAgent's SAT demo (`cli_demo_sat.py`) re-created around the tiny model.

Launched like upstream, over several ranks or as one process:
    torchrun --standalone --nnodes=1 --nproc-per-node=2 cases/cogagent/cli_demo.py [--fp16|--bf16]
    python cases/cogagent/cli_demo.py [--fp16|--bf16]
What it does, in upstream's order:
1. ranks: under torchrun (WORLD_SIZE set) one rank per GPU with NCCL when there are enough
   GPUs, else CPU ranks with gloo; without torchrun, one process on pick_device()'s device;
2. model: every rank builds the model in float32, as SwissArmyTransformer does; rank 0 loads
   the checkpoint and every parameter is broadcast from it (SAT's way for layers replicated on
   all ranks); then each rank casts it with .half() / .bfloat16() only when --fp16 / --bf16;
3. chat: the preprocessed image (float32) is cast to `bfloat16 if --bf16 else float16`
   ALWAYS, whatever dtype the model has; the question is appended; the logits come back.
With neither flag, a float32 model meets a float16 image in the vision encoder's first conv:
    RuntimeError: Input type (c10::Half) and bias type (float) should be the same
Upstream's demo caught that and printed only the message; this one lets it propagate.
"""

from __future__ import annotations

import argparse
import atexit
import datetime
import os
from dataclasses import dataclass

import torch
import torch.distributed as dist
from tiny_cogagent import (
    TinyCogAgent,
    encode_query,
    example_image,
    preprocess,
    save_tiny_checkpoint,
    tiny_config,
)

from shared.checks import pick_device, record_device
from shared.distributed import rank_backend

# A rank whose partner died must not wait in a collective for gloo's default 30 minutes.
COLLECTIVE_TIMEOUT = datetime.timedelta(seconds=60)


@dataclass(frozen=True)
class Ranks:
    rank: int
    world_size: int
    device: torch.device

    def log(self, text: str) -> None:
        print(f"[rank {self.rank}/{self.world_size}] {text}", flush=True)


@dataclass(frozen=True)
class Answer:
    """What one rank's chat produced, and the inputs needed to redo it in float32."""

    ranks: Ranks
    logits: torch.Tensor
    pixel_values: torch.Tensor  # float32, before the chat's cast
    input_ids: torch.Tensor


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description="Chat with the tiny CogAgent about an image.")
    precision = parser.add_mutually_exclusive_group()
    precision.add_argument("--fp16", action="store_true", help="run the model in float16")
    precision.add_argument("--bf16", action="store_true", help="run the model in bfloat16")
    parser.add_argument("--query", default="What is in this picture?", help="the question")
    return parser.parse_args(argv)


def start_ranks() -> Ranks:
    """Join torchrun's process group if launched by it; say which backend and device."""
    if "WORLD_SIZE" not in os.environ:
        ranks = Ranks(rank=0, world_size=1, device=pick_device())
        ranks.log(f"single process (no torchrun), device {ranks.device}")
        return ranks
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    gpus = torch.cuda.device_count()
    backend, device_type = rank_backend(world_size, gpus)  # one GPU per rank, or CPU ranks
    if device_type == "cuda":
        device = torch.device("cuda", int(os.environ["LOCAL_RANK"]))
        torch.cuda.set_device(device)
    else:
        device = torch.device("cpu")
    record_device(device, f"rank {rank} of {world_size}, {backend}, {gpus} GPU(s) visible")
    dist.init_process_group(backend, timeout=COLLECTIVE_TIMEOUT)
    atexit.register(dist.destroy_process_group)
    ranks = Ranks(rank=rank, world_size=world_size, device=device)
    ranks.log(f"torchrun rank, backend {backend}, device {device}")
    return ranks


def load_replicated_model(ranks: Ranks, dtype: torch.dtype) -> TinyCogAgent:
    """Build on every rank in float32, take rank 0's loaded weights by broadcast, then cast.

    The broadcast carries float32 (what every rank built): gloo on torch < 2.2 cannot send
    bfloat16 ("Invalid scalar type"), and the cast after it gives every rank the same values.
    """
    if ranks.rank == 0:
        model = TinyCogAgent.from_pretrained(save_tiny_checkpoint())  # saved, so loaded, float32
    else:
        model = TinyCogAgent(tiny_config())  # float32, random until the broadcast below
    model.to(device=ranks.device)
    if ranks.world_size > 1:
        for parameter in model.parameters():
            dist.broadcast(parameter.data, src=0)
    return model.to(dtype=dtype).eval()


@torch.no_grad()
def chat(
    model: TinyCogAgent,
    pixel_values: torch.Tensor,
    input_ids: torch.Tensor,
    image_dtype: torch.dtype,
) -> torch.Tensor:
    """One question about one image: the logits over [image tokens, question tokens]."""
    device = model.device
    return model(pixel_values.to(device).to(image_dtype), input_ids.to(device))


def main(argv: list[str] | None = None) -> Answer:
    args = parse_args(argv)
    ranks = start_ranks()
    model_dtype = torch.float16 if args.fp16 else torch.bfloat16 if args.bf16 else torch.float32
    model = load_replicated_model(ranks, model_dtype)
    patch_embedding = model.cross_vision.embeddings.patch_embeddings.projection
    ranks.log(f"model {model_dtype}, patch-embedding bias {patch_embedding.bias.dtype}")

    pixel_values, input_ids = preprocess(example_image()), encode_query(args.query)
    image_dtype = torch.bfloat16 if args.bf16 else torch.float16  # as upstream's chat: always
    ranks.log(f"image {pixel_values.dtype} -> {image_dtype}; question {args.query!r}")
    logits = chat(model, pixel_values, input_ids, image_dtype)
    next_token = chr(logits[0, -1].argmax().item())
    ranks.log(f"answer logits {tuple(logits.shape)} {logits.dtype}; next token {next_token!r}")
    return Answer(ranks, logits, pixel_values, input_ids)


def reference_logits(answer: Answer) -> torch.Tensor:
    """The same chat by a float32 model of the same (broadcast) weights, image kept float32."""
    model = load_replicated_model(answer.ranks, torch.float32)
    answer.ranks.log("float32 reference: same checkpoint, same broadcast, image kept float32")
    return chat(model, answer.pixel_values, answer.input_ids, torch.float32)


if __name__ == "__main__":
    main()
