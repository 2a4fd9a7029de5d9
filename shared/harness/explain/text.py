"""Reading a paste: its lines, frames, messages' shapes, words and versions (no catalog)."""

from __future__ import annotations

import re

from shared.harness.libraries import VERSIONED_PACKAGES

# One side of torch 1.x's binary op checks: a backend (1.0-1.1) or a device (TensorIterator), and
# a dtype.
_BINARY_SIDE = r"(?:backend \w+|device [\w:]+) and dtype \w+"

# Messages of each family as torch and the libraries word them, whatever the case. `generic`:
# the message names the clash, not its cause (a case needs an anchor to be named).
FAMILY_MESSAGES: tuple[tuple[str, str, bool], ...] = (
    ("dtype-mix", r"(?:mat1|self) and mat2 must have the same dtype", True),
    ("dtype-mix", r"expected (?:mat1|m1) and (?:mat2|m2) to have the same dtype", True),
    # an extension's kernel that reads its tensors as float only (torch 1.x's data<float> or
    # data_ptr<float> accessor, with where it checked): a half tensor has no kernel there
    ("unsupported-dtype",
     r"expected scalar type float but found (?:half|bfloat16) ?\(data(?:_ptr)?<float>", True),
    ("dtype-mix", r"expected scalar type \w+ but found \w+", True),
    ("dtype-mix", r"expected object of scalar type \w+ but got scalar type \w+", True),  # torch 1.x
    ("dtype-mix", r"expected type torch\.(?:cuda\.)?\w+tensor but got torch\.(?:cuda\.)?\w+tensor",
     True),  # torch 1.0's TensorIterator
    # torch 0.4's argument check ("Expected object of type Variable[torch.FloatTensor] but found
    # type Variable[torch.DoubleTensor]"); its sides say a device clash (operand_sides), so both
    # must be read: a side cut by a line's wrap is no family's
    ("dtype-mix", r"expected object of type (?:variable\[)?torch\.[\w.]+tensor\]? but found type "
     r"(?:variable\[)?torch\.[\w.]+tensor", True),
    # torch 0.4's CUDA-only device check met by a CPU tensor (pytorch#7689: CPU ids for a CUDA
    # EmbeddingBag)
    ("device-placement", r"get_device is not implemented for type torch\.\w+tensor", True),
    # torch 1.0-1.1's binary op check ("expected backend CUDA and dtype Double but got backend
    # CUDA and dtype Float") and torch 1.x TensorIterator's, as read in its source ("expected
    # device cuda:0 and dtype Float but got device cpu and dtype Float"): its sides say which
    # (operand_sides); then TensorIterator's device alone
    ("dtype-mix", rf"expected {_BINARY_SIDE} but got {_BINARY_SIDE}", True),
    ("device-placement", r"expected device [\w:]+ but got device [\w:]+", True),
    # torch 0.2's type check of a module's weight against its input (pytorch#2138's title)
    ("dtype-mix", r"expected (?:double|float|half) tensor \(got (?:double|float|half) tensor\)",
     True),
    ("dtype-mix", r"found dtype \w+ but expected \w+", True),
    # (a space lost, or one colon, where a user typed the message again)
    ("dtype-mix", r"input type ?\((?:c10::?|struct c10::)?\w+\) ?and (?:weight|bias) type", True),
    ("dtype-mix", r"index put requires the source and destination dtypes match", True),
    # masked_scatter's, where most vision-language models now merge image features
    ("dtype-mix", r"masked_scatter_?: expected self and source to have same dtypes", True),
    ("dtype-mix", r"expected query, key,? and value to have the same dtype", True),
    # SDPA's check names the clash, not its cause: a float mask under CPU autocast
    # (cpu-autocast-mha-mask), or a half model's own float32 mask, meet the same words
    ("dtype-mix", r"expected attn_mask dtype to be bool", True),
    # torch's RNN/GRU/LSTM checks (ATen's RNN.cpp), their dtype and device wordings
    ("dtype-mix", r"input and (?:parameter|hidden) tensors are not the same dtype", True),
    ("dtype-mix", r"expected tensor for argument #\d+ '\w+' to have the same type as tensor", True),
    # the weight's type as torch.FloatTensor, or as the older CUDABFloat16Type
    ("device-placement",
     r"input type ?\(torch\.(?:cuda\.)?\w+\) ?and weight type ?\((?:torch\.|cuda)", True),
    ("device-placement", r"expected all tensors to be on the same device", True),
    # its second half alone, where a log wrapped the line before it (pdb2reaction#297)
    ("device-placement", r"but got \w+ is on [\w:]+, different from other tensors on [\w:]+", True),
    ("device-placement",  # torch 1.x
     r"expected object of (?:device type|backend) \w+ but got (?:device type|backend)", True),
    ("device-placement", r"input, ?output and indices must be on the current device", True),
    # torch < 1.0's legacy constructor given a tensor of the other device
    # ("torch.cuda.FloatTensor(cpu_tensor)": "TypeError: expected CUDA (got CPU)")
    ("device-placement", r"expected (?:cuda|cpu) \(got (?:cpu|cuda)\)", True),
    ("device-placement", r"input and (?:parameter|hidden) tensors are not at the same device",
     True),
    # torch < 1.0's argument check, a CPU and a CUDA tensor among the arguments it got
    ("device-placement", r"received an invalid combination of arguments - got \((?=[^)]*torch\.cuda"
     r"\.\w+tensor)(?=[^)]*torch\.(?!cuda\.)\w+tensor)", True),
    ("device-placement", r"calling \.generate\(\) with the `?input_ids`? being on a device", True),
    # a generator asked for a meta tensor: the latents drawn on a model's meta device, a
    # meta-tensor problem whatever the generator's device (easydiffusion#1299's low-VRAM profile)
    ("meta-tensors", r"cannot generate a meta tensor from a generator of type", True),
    ("device-placement", r"cannot generate a \w+ tensor from a generator of type", False),
    # generator-device's, and a DataLoader sampler's CPU generator under a CUDA default tensor
    # type (TextBPN-Plus-Plus#24): claimed only where an anchor (a frame, diffusers) says which
    ("device-placement", r"expected a '\w+' device type for generator", True),
    ("overflow", r"invalid value encountered in cast", True),
    ("overflow", r"probability tensor contains either", True),
    # AUTOMATIC1111's NaN check of the UNet's or the VAE's output (its NansException)
    ("overflow", r"a tensor with all nans was produced in (?:unet|vae)", True),
    # GradScaler's own kernels refusing half gradients (bfloat16 ones on torch < 2.3): its
    # machinery, not a missing op of the model's
    ("gradient-scaling",
     r"_amp_(?:foreach_non_finite_check_and_unscale|update_scale)\w*\"? not implemented for", False),
    ("unsupported-dtype", r"not implemented for '(?:half|bfloat16|complexhalf)'", False),
    # torch 0.2-0.3's CPU HalfTensor, storage only: no math method at all (pytorch#4552)
    ("unsupported-dtype", r"'torch\.halftensor' object has no attribute", False),
    # torch 1.0-1.2's legacy dispatch ("_thnn_conv2d_forward not supported on CPUType for Half")
    ("unsupported-dtype", r"not supported on cputype for (?:half|bfloat16)", False),
    # torch 0.4-1.0's wording of the same refusal, the tensor type naming the device (0.4 wrote
    # "not_implemented")
    ("unsupported-dtype",
     r"is not[ _]implemented for type torch\.(?:cuda\.)?(?:half|bfloat16)tensor", False),
    ("unsupported-dtype", r"unsupported dtype (?:half|bfloat16)", True),
    ("unsupported-dtype",
     r"cufft only supports dimensions whose sizes are powers of two when computing in half", True),
    ("unsupported-dtype", r"cufft doesn'?t support tensor of type: (?:bfloat16|half)", True),
    ("unsupported-dtype", r"flashattention only supports? fp16 and bf16", False),
    ("unsupported-dtype",
     r"flash attention 2(?:\.0)? only supports torch\.float16 and torch\.bfloat16", False),
    ("unsupported-dtype", r"got unsupported scalartype (?:bfloat16|half)", False),
    ("unsupported-dtype",
     r"pipelines loaded with `?(?:torch_)?dtype=torch\.float16`? cannot run with `?cpu`? device", True),
    # torch's check of any value filled or written into a half tensor (a mask's -1e9, a float32
    # minimum, a constant): DeBERTa's fill is one of several causes its threads show (an older
    # torch named the type bare, "type Half", as NVIDIA/tacotron2#18 quotes it)
    ("overflow", r"value cannot be converted to type (?:(?:at|c10)::)?(?:half|bfloat16) without "
     r"overflow", True),
    ("hardware", r"cannot convert a mps tensor to float64 dtype", False),
    ("hardware", r"trying to convert \w+ to the mps backend but it does not have support for that "
     r"dtype", False),
    ("hardware", r"current cuda device does not support bfloat16", False),  # torch's autocast
    # cuBLAS refusing a bfloat16 GEMM (CUDA_R_16BF): a GPU older than Ampere that runs no bf16
    ("hardware", r"cublas_status_not_supported when calling `?cublas\w+\((?=.*cuda_r_16bf)", True),
    ("hardware", r"\b(?:bfloat16|float64|double)\b[\w ]{0,30} not supported on (?:the )?mps", False),
    ("hardware", r"bfloat16 is only supported on gpus with compute capability", False),
    ("hardware", r"cufft doesn'?t support signals of half type with compute capability less than",
     False),
    ("hardware", r"bf16 is only supported on a100", False),
    # ptxas refusing a kernel's bfloat16 instructions (Triton's, a JIT-built extension's) on a GPU
    # before Ampere: "Feature 'cvt.bf16.f32' requires .target sm_80 or higher"
    ("hardware", r"feature '[^']*bf16[^']*' requires \.target sm_\d+", False),
    ("hardware", r"(?:fp16|bf16) mixed precision requires a gpu", False),
    # accelerate's bf16 refusal: a GPU torch says lacks bfloat16, or Apple's MPS before its autocast
    # (accelerate#3064), which a paste need not name
    ("hardware", r"bf16 mixed precision requires pytorch >= 1\.10 and a supported device", True),
    # torch's own, mixed precision asked where torch sees no CUDA: they disable themselves
    ("hardware", r"gradscaler is enabled, but cuda is not available", True),
    ("hardware", r"user provided device_type of 'cuda', but cuda is not available", True),
    ("hardware", r"cuda is not available or torch_xla is imported\. disabling autocast", True),
    ("gradient-scaling", r"attempting to unscale fp16 gradients", False),
    # FSDP1's: any unit holding two dtypes (peft's float32 adapters, a model's float32 norms),
    # fsdp-lora-flat-dtype's mechanism, whose fix (one dtype per unit) applies to either
    ("distributed", r"must flatten tensors with uniform dtype", False),
    ("distributed", r"fsdp expects uniform original parameter dtype", False),
    ("distributed", r"flatparameter requires uniform dtype", False),
    ("offload", r"you can't move a model that has some modules offloaded", False),
    ("meta-tensors", r"cannot copy out of meta tensor", True),
    ("meta-tensors", r"is on the meta device, we need a `?value`? to put in", True),
    # transformers < 4.30 (8-bit only, read in 4.27.4's source): "for `8-bit` models"
    ("quantization", r"\.to`? is not supported for (?:`?4-bit`? or )?`?8-bit", False),
    ("quantization", r"calling `?cuda\(\)`? is not supported for `?4-bit`? or `?8-bit", False),
    ("quantization", r"cannot merge lora layers when the model is loaded in 8-bit", False),
    # diffusers' refusal of any quantized model's cast (bitsandbytes, GGUF, torchao)
    ("quantization", r"casting a quantized model to a new `?dtype`? is unsupported", False),
    # torch's refusal to promote float8 against another dtype: float8-stored weights meeting the
    # compute dtype (QUANTIZED_SIDE below)
    ("quantization", r"promotion for float8 types is not supported", True),
)
# A NaN in training has several mechanisms the words of a description do not separate.
TRAINING_WORDS = frozenset({"loss", "grad", "grad_norm", "gradient", "gradients", "train",
                            "training", "finetune", "finetuning", "epoch"})  # fmt: skip
TRAINING_NAN_WHY = ("a NaN in training: a float16 activation overflowing, half-precision weights "
                    "without float32 master weights, or an optimizer step; the description does "
                    "not tell which: `python -m shared.culprit run --backward your_script.py` "
                    "names the first module or gradient that turned NaN")
# A description without an error: on the held-out batches its words named another family as
# often as the report's (black images from a float16 overflow and from a GPU that runs no
# float16, precision lost, an offload bug), so, as they name no case, they name no family.
DESCRIPTION_WHY = ("a description without an error: its words fit several families (a float16 "
                   "overflow, a GPU that runs no float16 right, precision lost, an offload or "
                   "optimizer bug) and decide none: `python -m shared.culprit run "
                   "your_script.py` names the module, the mechanism and the case on your run")
# An error no documented message and no family's message matches: its words would guess a
# family as a description's would.
UNKNOWN_ERROR_WHY = ("an error no documented case and no family's message matches: "
                     "`python -m shared.culprit run your_script.py` names the module that raised "
                     "it and the mechanism on your run")
# A quantized base (bitsandbytes, GPTQ, AWQ, int8/int4 loading): its layers' own output dtypes
# raise torch's generic dtype clash as often as a module another dtype than its input does.
QUANTIZED_BASE = re.compile(r"(?:^|[^a-z0-9])(?:load_in_[48]bit|[48][- ]?bits?\b|int[48]\b|"
                            r"bitsandbytes|bnb\b|gptq|awq\b|qlora|quantiz)")  # lower-cased text
QUANTIZED_WHY = ("a dtype clash beside a quantized base: its layers' output dtypes (a "
                 "quantization failure) and a plain dtype mix read alike; `python -m "
                 "shared.culprit run your_script.py` names the module on your run")
NAMES_NOTHING_WHY = ("a CUDA device-side assert names no failure: the assertion printed above "
                     "it (or a run with CUDA_LAUNCH_BLOCKING=1) says which")
# Messages that keep no direction: the order of the two dtypes is the order met, not a role.
UNORDERED = re.compile(r"uniform (?:original parameter )?dtype", re.IGNORECASE)

# What users write for the words the cases use (each group's words are added for any of them).
SYNONYMS = (
    ("black", "blank", "nan", "empty", "dark"),
    ("image", "images", "picture", "output", "result", "video"),
    ("sdxl", "sd xl", "diffusion xl", "stable diffusion", "sd"),  # not "xl" alone: T5-XL
    ("fp16", "float16", "half", "f16", "16b"),
    ("bf16", "bfloat16"),
    ("fp32", "float32"),
    ("nan", "inf", "overflow", "overflowing"),
    ("change", "updating", "updates", "modified", "decrease", "decreases", "learn", "converge",
     "converging", "convergence"),
    ("garbage", "gibberish", "nonsense", "meaningless"),
    ("merge", "merged", "merges", "merging", "merge_and_unload"),
    ("effect", "diff", "different", "degenerated", "behaves"),
    ("pad", "padding", "<pad>"),
    ("lora", "adapter", "adapters"),
    ("rope", "rotary"),
    # T5's multilingual and byte-level versions share its float16 overflow; "t5encoder" as a
    # lowercase class or file name spells it
    ("t5", "mt5", "umt5", "byt5", "t5encoder"),
    ("loss", "losses"),
)
# Words a title names that are no subject: libraries, dtypes, devices, glue.
NOT_SUBJECT = {*VERSIONED_PACKAGES, "pytorch", "cpu", "cuda", "gpu", "pure", "the", "on", "a",
               "an", "in", "with", "of", "to", "and", "or", "its", "fp16", "bf16", "float16",
               "bfloat16", "float32", "float64", "half", "model", "models", "training", "multi",
               "single"}  # fmt: skip

# bm25s's English stopwords and the pronouns and verbs every report has.
STOPWORDS = frozenset({"a", "an", "and", "are", "as", "at", "be", "but", "by", "for", "if", "in",
                       "into", "is", "it", "no", "not", "of", "on", "or", "such", "that", "the",
                       "their", "then", "there", "these", "they", "this", "to", "was", "will",
                       "with", "i", "my", "me", "we", "you", "get", "got", "when", "what", "how",
                       "can", "any", "have", "has", "do", "does", "after", "before"})
BOX = re.compile(r"[│╭╮╰╯─━┃┏┓┗┛❱╷╵▕▏]")
PROMPT = re.compile(r"^\s*(?:\[rank\d+\]:|-+>\s*\d*|\d+\s*[│|]|!!! Exception during processing !!!|>+)\s*")
# Markdown's emphasis and code marks, and the backslash of a quote escaped inside a quoted
# message (a JSON or repr of an error: 'not implemented for \'Half\'').
MARKUP = re.compile(r"\*\*|__|`+|\\(?=['\"])")
FRAMES = (
    re.compile(r'File "([^"]+)", line \d+, in (\S+)'),  # plain
    re.compile(r"([\w./\\:~-]+\.py):\d+ in (\w+)"),  # rich
    re.compile(r"File ([\w./\\:~-]+\.py):\d+, in (\w+)"),  # IPython 8
    re.compile(r"([\w./\\:~-]+\.py) in (\w+)\("),  # IPython 7, Colab
)
CUDA_MATMUL = re.compile(
    r"expected (?:mat1|m1) and (?:mat2|m2) to have the same dtype, but got:\s*"
    r"(?:struct )?(?:c10::)?(\w+)\s*!=\s*(?:struct )?(?:c10::)?(\w+)", re.IGNORECASE)  # fmt: skip
# dtype words and their class: which side is half, float32, float64 survives the masking.
DTYPE_CLASS = (
    (r"(?:torch\.)?(?:cuda\.?)?(?:half|bfloat16)(?:tensor|type)", "LOWT"),  # CUDAHalfType too
    (r"(?:torch\.)?(?:cuda\.?)?float(?:tensor|type)", "F32T"),
    (r"(?:torch\.)?(?:cuda\.?)?double(?:tensor|type)", "F64T"),
    (r"(?:struct )?(?:c10::)?(?:complexhalf|half|bfloat16|float16|fp16|bf16|bloat16)", "LOW"),
    (r"(?:c10::)?(?:float|float32|fp32)", "F32"),
    (r"(?:c10::)?(?:double|float64)", "F64"),
)
_DTYPE = re.compile("|".join(rf"(?P<c{i}>\b{p}\b)" for i, (p, _) in enumerate(DTYPE_CLASS)),
                    re.IGNORECASE)  # fmt: skip
_DEVICE = re.compile(r"torch\.cuda\.\w+tensor|\bcuda(?::\d+)?\b", re.IGNORECASE)
CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z][a-z])")  # where a space goes in T5Model, typeHalf
# Stable Diffusion 2.x as users write it (SD 2.1, sd21, stable-diffusion-2-1), or as its
# checkpoints and configs are named (v2-1_768-ema-pruned, 512-base-ema, v2-inference-v.yaml): one
# word, sd2, that the "sd" synonyms (SDXL's) do not take; the digits would otherwise be dropped.
SD2 = re.compile(r"\b(?:(?:sd|stable[ _-]?diffusion)[ _-]?v?2(?:\.[01x]|1)?|v2-1_(?:512|768)"
                 r"|(?:768-v|512-base)-ema|v2-inference(?:-v)?)\b", re.IGNORECASE)
# Stable Diffusion 1.x as users write it (SD1.5, sd15, stable-diffusion-v1-4, v1-5-pruned): a
# version named, and not SDXL's, which "stable diffusion" alone implies (its synonyms).
SD1 = re.compile(r"\b(?:(?:sd|stable[ _-]?diffusion)[ _-]?v?1(?:[._-]?[45x])|v1-5-pruned)\b",
                 re.IGNORECASE)
SDXL_NAMED = re.compile(r"sdxl|\bsd[ _-]xl|diffusion[ _-]?xl", re.IGNORECASE)
# Words that say a Stable Diffusion pipeline ran (its tools and UIs), and the words that name its
# version (SD1, SD2 and the SDXL synonyms give these): where a description has the first and none of
# the second, every version stays possible, and so does each SD case.
SD_TOOLS = frozenset({"comfyui", "webui", "automatic1111", "a1111", "forge", "invokeai",
                      "controlnet", "xformers", "diffusers", "sdnext", "fooocus"})  # fmt: skip
SD_VERSIONS = frozenset({"sdxl", "sd2", "sd1"})
# SDXL as its checkpoint files spell it (sd_xl_base_1.0.safetensors, sd_xl_refiner_1.0).
SDXL_FILE = re.compile(r"\bsd_xl(?=_|\b)", re.IGNORECASE)
# A run of exclamation marks is what a float16 model that overflowed writes (token 0 of many
# vocabularies): a word for it, as users write it; ComfyUI's exception banner is no such output.
COMFY_BANNER = re.compile(r"!!! Exception during processing !!!")
EXCLAIMED = re.compile(r"!{3,}")
NAN_WORD = re.compile(r"\bnans?\b", re.IGNORECASE)  # "NaNs" is no camel-case "Na Ns"
# A pasted exception line. ASCII word characters, as search.js's \w: a name glued to the words
# before it in another script ("...时报错TypeError:") still starts there.
EXCEPTION = re.compile(r"(?<![A-Za-z0-9_])[A-Z][A-Za-z0-9_]*(?:Error|Exception)\s?:")
# A traceback's source line of a raise (Python prints it above the exception it raised).
RAISE_LINE = re.compile(r"^\s*raise\b")
_NUMBER = re.compile(r"\b\d+(?:\.\d+)?\b")
_WORD = re.compile(r"[a-z][a-z0-9_]*|<pad>|\d+[a-z]+", re.IGNORECASE)
MIN_CORRECTABLE, SPELLING_CUTOFF = 5, 85  # a shorter word is too easily another one
SYMPTOM_MIN_SCORE = 2.0  # the BM25 score below which a case is no candidate for a description


def clean_lines(text: str) -> list[str]:
    """The paste's lines without traceback decorations and markdown around them."""
    lines = []
    for raw in text.splitlines():
        line = MARKUP.sub("", PROMPT.sub("", BOX.sub(" ", raw)))
        line = " ".join(line.split())
        if line:
            lines.append(line)
    return lines


def frames_of(text: str) -> list[str]:
    """Frames as "path:function", the path from the package down (site-packages cut)."""
    found = []
    for pattern in FRAMES:
        for path, function in pattern.findall(BOX.sub(" ", text)):
            path = path.replace("\\", "/")
            for marker in ("site-packages/", "dist-packages/"):
                path = path.split(marker, 1)[-1]
            found.append(f"{path}:{function}")
    return found


def canonical(line: str) -> str:
    """A message with CUDA's matmul wording rewritten to the CPU's."""
    return CUDA_MATMUL.sub(lambda m: f"mat1 and mat2 must have the same dtype, but got "
                           f"{m.group(1)} and {m.group(2)}", line)  # fmt: skip


def shape(message: str) -> str:
    """Dtypes by class (low / float32 / float64) and devices kept, numbers masked, lowercase."""
    def cls(match: re.Match) -> str:
        name = next(DTYPE_CLASS[int(k[1:])][1] for k, v in match.groupdict().items() if v)
        return ("CUDA" if "cuda" in match.group(0).lower() else "") + name

    text = _NUMBER.sub("#", _DTYPE.sub(cls, canonical(message)))
    text = re.sub(r"\bcuda:#", "cuda", text, flags=re.IGNORECASE)
    if UNORDERED.search(text):  # order is not a direction: sort the classes
        classes = sorted(re.findall(r"\b(?:CUDA)?(?:LOW|F32|F64)T?\b", text))
        text = re.sub(r"\b(?:CUDA)?(?:LOW|F32|F64)T?\b", lambda _: classes.pop(0), text)
    return " ".join(text.lower().split())


def literal(pattern: str) -> str:
    """A documented regex as the plain text it matches (optional groups dropped)."""
    text = re.sub(r"\((?:[^()\\]|\\.)*\)\?", "", pattern)
    text = re.sub(r"\(\\d\+\)|\\d\+|\\\d", "1", text)
    text = re.sub(r"\((\w+)\|[^()]*\)", r"\1", text)  # (bfloat16|float32): the first
    text = text.removeprefix("^").removesuffix("$")
    return re.sub(r"\\(.)", r"\1", text)


def tokens(text: str) -> list[str]:
    """Lowercase words, "Gemma 3" joined to "gemma3" (and the hub's "gemma-3-4b-it", "llama_2"),
    each with its synonyms' group words."""
    text = SDXL_FILE.sub(" sdxl ", SD2.sub(" sd2 ", COMFY_BANNER.sub(" ", text)))
    text = NAN_WORD.sub(" nan ", EXCLAIMED.sub(" exclamation ", text))
    text = re.sub(r"\b([A-Za-z]{3,})[ _-](\d)\b(?![.\d])", r"\1\2", text)
    text = CAMEL.sub(" ", text)  # T5Model: T5 Model
    words = [w.lower() for w in _WORD.findall(text)]
    words = [w for w in words if w not in STOPWORDS]
    out = []
    for i, word in enumerate(words):
        out.append(word)
        pair = f"{word} {words[i + 1]}" if i + 1 < len(words) else ""
        for group in SYNONYMS:
            if word in group or pair in group:
                out += [w for w in group if " " not in w and w != word]
    return out


def pasted_words(text: str) -> list[str]:
    """A paste's tokens. Stable Diffusion 1.x named, SDXL not: "sd1", and not the SDXL that
    "stable diffusion" alone implies (its synonyms)."""
    words = tokens(text)
    if SD1.search(text) and not SDXL_NAMED.search(text):
        return [w for w in words if w != "sdxl"] + ["sd1"]
    return words


DTYPE_WORDS = {"fp16", "float16", "half", "f16", "16b", "bf16", "bfloat16", "fp32", "float32"}


def stems(words: list[str]) -> set[str]:
    """Words without a plural s: "weight" finds "weights"."""
    return {w[:-1] if len(w) > 3 and w.endswith("s") and not w.endswith("ss") else w for w in words}


def correct_spelling(line: str, vocabulary: list[str]) -> str:
    """Each word near a documented message's word (a typo, another case) replaced by it."""
    from rapidfuzz import fuzz, process  # noqa: PLC0415

    def fix(match: re.Match) -> str:
        word = match.group(0)
        if len(word) < MIN_CORRECTABLE or word.lower() in vocabulary:
            return word
        best = process.extractOne(word.lower(), vocabulary, scorer=fuzz.ratio,
                                  score_cutoff=SPELLING_CUTOFF)  # fmt: skip
        return best[0] if best else word

    return re.sub(r"[A-Za-z][A-Za-z0-9_]+", fix, line)


TYPE_SIDES = (re.compile(r"input type ?\(([^)]*)\) ?and (?:weight|bias) type ?\(([^)]*)\)"),
              re.compile(r"but type ([\w.:]+) does not equal ([\w.:]+)"),
              # torch 0.4-1.0's legacy type names, the device in the name
              re.compile(r"expected (?:object of )?type (?:variable\[)?(torch\.[\w.]+tensor)\]? "
                         r"but (?:got|found)(?: type)? (?:variable\[)?(torch\.[\w.]+tensor)"),
              # torch 1.x: a backend or a device, and a dtype, each side
              re.compile(rf"expected ({_BINARY_SIDE}) but got ({_BINARY_SIDE})"),
              )  # fmt: skip


# A quantized storage dtype on one side of a dtype clash, the quantization family (a quantized
# format cast too late or not at all), not a plain dtype mix: a float8 side (ComfyUI's
# --fp8_e4m3fn-unet, a trainer's --fp8_base), or a matmul's weight operand (mat2) in an 8-bit
# integer dtype (bitsandbytes' int8 or packed uint8 4-bit weights reaching a plain matmul). An
# 8-bit input (a uint8 image for float weights) stays a dtype mix.
QUANTIZED_SIDE = re.compile(
    r"\bfloat8_?e\d|\bmat2 must have the same dtype, but got \w+ and (?:byte|char)\b",
    re.IGNORECASE)

SIDE_DEVICES = ("cuda", "mps", "xpu")  # a tensor type naming none of them is a CPU tensor's
_SIDE_DEVICE = re.compile("|".join(SIDE_DEVICES))


def operand_sides(low: str) -> list[tuple[str, str]]:
    """Both tensor types a type message names, (device, dtype class) each: the family is read
    from both sides ("torch.cuda.HalfTensor" against "torch.cuda.FloatTensor": a dtype clash;
    "MPSFloatType" against "torch.FloatTensor": a placement clash)."""
    for pattern in TYPE_SIDES:
        if found := pattern.search(low):
            sides = []
            for side in found.groups():
                match = _DTYPE.search(_SIDE_DEVICE.sub(" ", side))
                dtype = next((DTYPE_CLASS[int(k[1:])][1].rstrip("T") for k, v in
                              match.groupdict().items() if v), "") if match else ""  # fmt: skip
                sides.append((next((d for d in SIDE_DEVICES if d in side), "cpu"), dtype))
            return sides
    return []


def message_family(line: str) -> tuple[str, bool]:
    """The family a message belongs to and whether it is generic, from torch's own wordings;
    a type message's family from both its sides: devices that differ are a placement clash,
    the same device with two dtypes a dtype clash (a floating one against an integer one, a
    ByteTensor image fed to half weights, too: no floating class on one side), a quantized
    side (float8, or an 8-bit integer matmul weight) the quantization family."""
    low = canonical(line).lower()
    for family, pattern, generic in FAMILY_MESSAGES:
        if re.search(pattern, low):
            sides = operand_sides(low)
            if len(sides) == 2 and sides[0][0] != sides[1][0]:
                return "device-placement", True
            if family == "dtype-mix" and QUANTIZED_SIDE.search(low):
                return "quantization", True
            if len(sides) == 2 and (sides[0][1] or sides[1][1]) and sides[0][1] != sides[1][1]:
                return "dtype-mix", True
            return family, generic
    return "", False


# A clash of integer dtypes (indices, labels) is another failure than any documented here
# ("to be bool or float": the attention mask check's wording, no operand).
INTEGER_DTYPES = re.compile(r"\b(?:long|int|short|char|byte|bool)\b(?! or\b)")


# A device no case runs on (every case runs on the CPU or CUDA): Apple's MPS, Intel's XPU,
# Ascend's NPU, Gaudi's HPU, as a message names the device it ran on (quoted, or with its
# index: "(not 'mps')", "mps:0"), not a list of the devices a check accepts ("CUDA or NPU
# devices"). A documented message naming one is another check than the case's.
OTHER_DEVICE = re.compile(r"['\"](mps|xpu|npu|hpu)(?::\d+)?['\"]|\b(mps|xpu|npu|hpu):\d",
                          re.IGNORECASE)
# A call into an extension's own operator, as TorchScript's traceback shows it
# ("torch.ops.torch_scatter.scatter_max(...)"): its kernels are the extension's, not the torch
# CPU or CUDA backend a usual cause names.
EXTENSION_OP = re.compile(r"\btorch\.ops\.(?!aten\.|prims\.)\w+\.\w+")
# A message naming torch's own backend (torch 1.x's legacy dispatch: "_th_addmm_ not supported on
# CPUType for Half"): the kernel that refused is torch's, whichever extension called it.
TORCH_BACKEND = re.compile(r"\b(?:CPU|CUDA)Type\b")
# Where Python's warnings module says a warning was issued: "path:line: SomeWarning: message".
WARNING_SITE = re.compile(r"^(?:[A-Za-z]:)?([^\s:]+\.py):\d+: \w*Warning:")


def warning_site(line: str) -> str:
    """The file a pasted warning line says it was issued in ("" if none), as frames_of writes
    paths (site-packages cut)."""
    found = WARNING_SITE.search(line)
    if not found:
        return ""
    path = found.group(1).replace("\\", "/")
    for marker in ("site-packages/", "dist-packages/"):
        path = path.split(marker, 1)[-1]
    return path


def innermost_library_frame(text: str) -> str:
    """The paste's innermost frame ("path:function", site-packages cut) where it is a library's:
    the code that raised, when the traceback ends inside an installed package. A traceback that
    no exception line follows was cut short: its last frame shown is no raise site ("")."""
    found = []
    plain = BOX.sub(" ", text)
    for pattern in FRAMES:
        found += [(m.start(), m.group(1).replace("\\", "/"), m.group(2))
                  for m in pattern.finditer(plain)]  # fmt: skip
    if not found:
        return ""
    start, path, function = max(found)
    if not EXCEPTION.search(plain, start):
        return ""
    for marker in ("site-packages/", "dist-packages/"):
        if marker in path:
            return f"{path.split(marker, 1)[-1]}:{function}"
    return ""


# A library's name, then its version within a few characters on the line; never across a path
# separator ("venvs/pytorch/lib/python3.8" names Python's version, not torch's).
PASTED_VERSION = re.compile(
    r"\b(torch|pytorch|transformers|diffusers|peft|accelerate|bitsandbytes)\b[^\n\d/\\]{0,12}?"
    r"v?(\d+\.\d+(?:\.\d+)?)", re.IGNORECASE)  # fmt: skip


def pasted_versions(text: str) -> dict[str, str]:
    return {n.lower().replace("pytorch", "torch"): v for n, v in PASTED_VERSION.findall(text)}
