"""The libraries the gallery knows, in one table: each distribution's name, the module it is
imported as, what it is, and what the harness does with it (its role).

To add a library, add one ``Library`` entry to :data:`LIBRARIES`: the runner preloads and
records it, the environment checks it imports, ``case.toml`` may name it (``requires``, ``when``),
the READMEs and the site show its version, ``explain`` knows its name is no subject.
"""

from __future__ import annotations

from dataclasses import dataclass

# What the harness does with a library:
VERSIONED = "versioned"  # the stack: its version recorded with every run, nameable in case.toml
DECLARED = "declared"  # a package only some variants import: named in their `requires.packages`
BROUGHT = "brought"  # what the stack brings along as its own dependency: imported undeclared
UNDECLARED = "undeclared"  # what releases import without declaring it: every set installs it
ROLES = (VERSIONED, DECLARED, BROUGHT, UNDECLARED)


@dataclass(frozen=True)
class Library:
    name: str  # the distribution's name, as an installer and ``importlib.metadata`` spell it
    module: str  # the top-level module it is imported as
    about: str  # what it is, in a few words
    role: str  # one of ROLES
    short: str = ""  # its name in the site's narrow timeline columns ("": its name)
    # Whether the harness's parent process may import it before forking the variants: not where
    # its import initialises CUDA (a forked child could no longer use the GPU).
    preloaded: bool = True


LIBRARIES = (
    Library("torch", "torch", "PyTorch: tensors, autograd, autocast, the kernels", VERSIONED),
    Library("transformers", "transformers", "Hugging Face's model classes and Trainer",
            VERSIONED, short="tf"),  # fmt: skip
    Library("diffusers", "diffusers", "Hugging Face's diffusion pipelines, UNets and VAEs",
            VERSIONED, short="diff"),  # fmt: skip
    Library("peft", "peft", "LoRA and other adapters over a model's layers", VERSIONED),
    Library("accelerate", "accelerate", "device placement, offload hooks, mixed-precision "
            "training", VERSIONED, short="acc"),  # fmt: skip
    # bitsandbytes asks for the device's capability when imported.
    Library("bitsandbytes", "bitsandbytes", "8-bit and 4-bit quantized layers and optimizers",
            VERSIONED, preloaded=False),  # fmt: skip
    # torch-optimi 0.3 declares torch >= 2.2 and imports a name torch has from 2.4: a variant
    # names its own floor.
    Library("torch-optimi", "optimi", "optimizers with Kahan summation for bfloat16 training",
            DECLARED),  # fmt: skip
    Library("numpy", "numpy", "arrays (a dependency of the stack)", BROUGHT),
    Library("pillow", "PIL", "images (a dependency of diffusers and transformers)", BROUGHT),
    Library("packaging", "packaging", "version parsing (a dependency of the stack)", BROUGHT),
    Library("safetensors", "safetensors", "the weights' file format", BROUGHT),
    Library("tokenizers", "tokenizers", "transformers' fast tokenizers", BROUGHT),
    Library("huggingface-hub", "huggingface_hub", "the hub client (nothing is downloaded)",
            BROUGHT),  # fmt: skip
    # peft 0.11 imports torch.utils.cpp_extension, bitsandbytes 0.42-0.45 triton's build module;
    # both import setuptools, which a strict installer (uv installs nothing unasked) leaves out
    # where a user's pip-made virtualenv of that time had it. Every set gets it unless it names
    # it itself: a rule, not a table of the dates or sets that happened to need it.
    Library("setuptools", "setuptools", "imported by old releases without declaring it",
            UNDECLARED),  # fmt: skip
)
BY_NAME = {library.name: library for library in LIBRARIES}


def named(role: str) -> tuple[str, ...]:
    """The distribution names of one role's libraries, in table order."""
    return tuple(library.name for library in LIBRARIES if library.role == role)


# The libraries whose versions a run records and an expectation or a requirement may name.
VERSIONED_PACKAGES = named(VERSIONED)
# Every library a case may import, distribution name -> import name: the versioned ones and
# those some variants declare besides.
CASE_LIBRARIES = {lib.name: lib.module for lib in LIBRARIES if lib.role in (VERSIONED, DECLARED)}
# The packages only some variants import, distribution name -> import name: each variant that
# imports one names it in its `requires.packages`, so that where it is missing it is SKIPPED.
DECLARED_PACKAGES = {lib.name: lib.module for lib in LIBRARIES if lib.role == DECLARED}
# What a case script may import without declaring it (by import name): the stack and what it
# brings along.
STACK_IMPORTS = tuple(lib.module for lib in LIBRARIES if lib.role in (VERSIONED, BROUGHT))
# What every library set installs unless it names it itself.
UNDECLARED_IMPORTS = named(UNDECLARED)
# The modules the harness's parent must not import before forking.
NOT_PRELOADED = tuple(lib.module for lib in LIBRARIES if not lib.preloaded)


def short_name(name: str) -> str:
    """A library's name in a narrow column."""
    library = BY_NAME.get(name)
    return library.short or name if library else name
