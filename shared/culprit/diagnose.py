"""Diagnose a whole run: the module, the mechanism and the gallery case, from global hooks.

:class:`Diagnosis` watches everything a process runs, with no handle on its models: the
:class:`MismatchGuard` and :class:`NonFiniteGuard` through torch's global module hooks, an
:class:`OpWatch` (a ``TorchFunctionMode``) for torch calls in or outside modules, and global
hooks that note where each module was made and what each outermost call was given and returned.
At the end, :meth:`Diagnosis.problem` weighs what they saw with the hazard patterns of every
model, pipeline and optimizer the run still holds (:func:`held_hazards`) and names one
:class:`Problem`: the module, the mechanism, and the case that documents it (its fix line read
from the case's own files), or the family when no case does. ``python -m shared.culprit run``
runs a user's unmodified script under it (``shared.culprit.__main__``).

Record only: nothing in torch or the libraries is patched; every hook goes at exit.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import gc
import json
import re
import runpy
import sys
import tomllib
import weakref
from pathlib import Path

import torch
from torch import nn, optim
from torch.nn.modules import module as torch_module

from shared.culprit.audit import audit, majority
from shared.culprit.finders import (
    generator_hazards,
    hazards,
    optimizer_hazards,
    pipeline_hazards,
)
from shared.culprit.guards import (
    GuardedCalls,
    MismatchGuard,
    NonFiniteGuard,
    OwnHook,
    unwatched,
)
from shared.culprit.tensors import dtype_name, full_path, live_parents, tensors_of
from shared.culprit.watchers import TORCH_DIR, FailedOp, OpWatch, ProfileWatches, seen_hazards
from shared.fixes import added_statement
from shared.hazards import (
    HAZARDS,
    MECHANISMS,
    NAMES_NOTHING,
    NOTED_HAZARDS,
    SEQUENCE_DECIDES,
    SILENT_HAZARDS,
    UNDECIDED,
    documented_case,
    documented_cases,
)

CASES_DIR = Path(__file__).resolve().parents[2] / "cases"  # in a clone; absent when installed
HERE = str(Path(__file__).resolve().parent)
# A model's first calls, whose forwards have every torch call watched (OpWatch), as has each call
# given inputs of shapes, dtypes or devices it was not given before; the other calls run the code
# those ran, with the module hooks only (the watch of every call costs most).
FULLY_WATCHED_CALLS = 3
KNOWN_INPUTS = 256  # input signatures kept a model: beyond them, every call is new (watched)
# Process starts (sys.audit events): what runs in a child is not watched here.
SPAWN_EVENTS = ("os.fork", "os.forkpty", "os.posix_spawn", "os.spawn", "os.exec",
                "subprocess.Popen")  # fmt: skip


@dataclasses.dataclass(frozen=True)
class Problem:
    """What went wrong first, where, by which mechanism, and the case that documents it."""

    # "mismatch", "failed-op", "non-finite", "non-finite-gradient", a hazard kind, "error"
    kind: str
    module: str  # dotted path from the outermost model, or the op's name
    file: str  # where: the module's creation, or the call's line
    line: int | None
    detail: str
    mechanism: str
    case: str | None
    family: str | None

    def as_json(self) -> dict:
        return dataclasses.asdict(self)


class Diagnosis:
    """Context manager: watch the whole process (global hooks only, record only); then
    :meth:`problem` names the first problem, or None. ``backward=True`` also watches gradients
    for the first non-finite one."""

    def __init__(self, backward: bool = False, profiled: ProfileWatches | None = None,
                 every_call: bool = False):  # fmt: skip
        self.guard = MismatchGuard()
        self.values = NonFiniteGuard(gradients=backward)
        self.ops = OpWatch()
        # FSDP1's flattening, GradScaler's unscale_, TrainingArguments' precision: the registry's
        # profile-function watchers, under one profile function
        self.profiled = ProfileWatches.of_registry() if profiled is None else profiled
        self.spawned: list[str] = []  # process starts seen: their work is not watched here
        self._created: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # module: (f, l)
        self._given = _TensorsSeen()  # what outermost calls were given
        self._returned = _TensorsSeen()  # ... and returned
        self._roots: weakref.WeakSet = weakref.WeakSet()  # modules called outermost
        # A model's forward runs the same code for the same kind of inputs: the torch calls inside
        # it are watched on its first FULLY_WATCHED_CALLS calls and on each call with new inputs
        # (every_call: on all of them).
        self.every_call = every_call
        self._calls_of: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # root: calls
        self._inputs_of: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()  # root: seen
        self._ops_paused = False  # during the outermost call now running
        self.unwatched_failure = ""  # a model's call that raised while its torch calls were not
        self.watchers = (self.guard, self.values, self.ops, self.profiled)
        # Both guards, and the outermost calls' bookkeeping, under the fewest hooks.
        self._calls = GuardedCalls(self.guard, self.values, self._entering, self._leaving)
        self._stack = contextlib.ExitStack()
        self._active = False
        self.seen: list[dict] = []  # noted hazards (NOTED_HAZARDS) of the models held
        self.longest = 0  # the longest sequence of integer ids an outermost call was given

    def __enter__(self):
        stack = self._stack.__enter__()
        # Where each module is made; then every call (GuardedCalls: the first pre-hook of an
        # outermost call pauses the profile function, which would otherwise see each hook run).
        for handle in (
            torch_module.register_module_parameter_registration_hook(self._registered),
            torch_module.register_module_module_registration_hook(self._registered),
        ):
            stack.callback(handle.remove)
        for watcher in (self._calls, self.ops, self.profiled):
            stack.enter_context(watcher)
        self._active = True
        stack.callback(setattr, self, "_active", False)
        _add_audit_hook(self)
        return self

    def __exit__(self, *exc_info) -> None:
        self._stack.__exit__(*exc_info)

    # --- global hooks --------------------------------------------------------------------------

    def _entering(self, module: nn.Module) -> None:
        """An outermost module call begins (the global pre-hook: no keyword arguments; its own
        pre-hook, from its second call on, decides whether its torch calls are watched)."""
        self.profiled.pause()  # until it returns
        calls = self._calls_of[module] = self._calls_of.get(module, 0) + 1
        if calls == 1 and not self.every_call:  # removed at exit, with the other hooks
            handle = module.register_forward_pre_hook(OwnHook(self._outermost_inputs),
                                                       with_kwargs=True)
            self._stack.callback(handle.remove)

    def _outermost_inputs(self, module: nn.Module, args: tuple, kwargs: dict) -> None:
        """A root's own pre-hook: past its first calls, and given inputs of a kind it was given
        before, its forward runs code already watched: the torch calls go unwatched."""
        if self._calls.depth != 1:
            return  # called inside another model this time
        with contextlib.suppress(Exception), unwatched():
            seen = self._inputs_of.setdefault(module, set())
            signature = input_signature(args, kwargs)
            if signature in seen:
                if self._calls_of.get(module, 0) > FULLY_WATCHED_CALLS:
                    self._ops_paused = self.ops.pause()
            elif len(seen) < KNOWN_INPUTS:
                seen.add(signature)

    def _leaving(self, module: nn.Module, args: tuple, kwargs: dict, output) -> None:
        """An outermost module call ends (output None after an exception)."""
        if self._ops_paused:
            self._ops_paused = False
            self.ops.resume()
            if output is None and sys.exc_info()[0] is not None and not self.unwatched_failure:
                calls = self._calls_of.get(module, 0)
                self.unwatched_failure = f"{type(module).__name__}'s call {calls}"
        # An outermost call: what the script gave a model, and what a model gave back.
        if self._calls_of.get(module) == 1:
            self._roots.add(module)
        with contextlib.suppress(Exception), unwatched():
            for value in (*args, *kwargs.values()):
                for tensor in tensors_of(value):
                    self._given.add(tensor)
                    if not tensor.is_floating_point() and tensor.dim() >= 1:  # token ids
                        self.longest = max(self.longest, tensor.shape[-1])
            for tensor in tensors_of(output):
                self._returned.add(tensor)
        self.profiled.resume()  # last: the profile function would see each call above

    def _registered(self, module: nn.Module, name: str, value) -> None:
        # A module's first parameter or submodule is registered in its __init__: the frame
        # outside torch and outside that __init__ is where it was made.
        if module not in self._created:
            self._created[module] = _caller(sys._getframe(1), module)

    def on_audit(self, event: str, args: tuple) -> None:
        if self._active and event in SPAWN_EVENTS:
            self.spawned.append(event)

    # --- the answer ----------------------------------------------------------------------------

    def notes(self) -> list[str]:
        """What this process could not watch, said plainly (never a verdict)."""
        found = [
            f"hazard seen, not decided by this run: {h['kind']} at {h['where']}: {h['detail']} "
            f"(cases/{h['case']})" for h in self.seen
        ]
        if self.profiled.displaced:
            found.append(
                "another profile function was set (a profiler): FSDP1's flattening, GradScaler's "
                "unscale_ and TrainingArguments' precision were not watched"
            )
        if self.unwatched_failure and self.ops.failed is None:
            found.append(
                f"{self.unwatched_failure} raised; the torch calls inside a model's forward are "
                f"watched on its first {FULLY_WATCHED_CALLS} calls and on calls with new kinds of "
                "inputs: run with --every-call to have the failing call named"
            )
        if self.spawned:
            found.append(
                f"the script started other processes ({', '.join(sorted(set(self.spawned)))}): "
                "what ran in them was not watched; run each worker's code under diagnose"
            )
        if _compiled():
            found.append(
                "the script used torch.compile: compiled code runs without module hooks and "
                "was not checked; run it once without torch.compile to diagnose"
            )
        return found

    def problem(self, namespace: dict | None = None, raised: BaseException | None = None,
                *watchers):  # fmt: skip
        """The first problem this run showed, or None. ``namespace``: the script's globals (its
        models, pipelines and optimizers, audited with every model it called); ``raised``: the
        exception that ended it, if any; ``watchers``: others that watched the run (their
        hazards count). Call while its models are alive.

        A run that failed: the first mismatch, else a torch call that raised on operands of two
        dtypes or devices, else a model whose placement a library owns moved, else the first
        inf/NaN producer, else a hazard. A run that ended cleanly: a hazard whose failure raises
        nothing, else the first inf/NaN producer (a mismatch there was handled by the module
        itself: T5's norms cast their input)."""
        self.guard.resolve_paths()
        self.values.resolve_paths()
        failing = raised is not None and not isinstance(raised, (SystemExit, KeyboardInterrupt))
        namespace = {**(namespace or {}), **self._called_roots()}
        held = held_hazards(namespace, self.ops, self.profiled, *watchers)
        decided = {kind for kind, ceiling in SEQUENCE_DECIDES.items() if self.longest >= ceiling}
        silent = [h for h in held if h["kind"] in SILENT_HAZARDS or h["kind"] in decided]
        loud = [h for h in held if h["kind"] not in SILENT_HAZARDS | NOTED_HAZARDS | UNDECIDED]
        self.seen = [h for h in held if h["kind"] in NOTED_HAZARDS and h not in silent]
        if failing:
            found = (self._mismatch(held) or self._failed_op() or _owned_placement(raised)
                     or (self._non_finite() if self.values.first is not None else None))
            if found:
                return found
            if loud or silent:
                return _hazard_problem((loud or silent)[0])
            return _documented_error(raised) or _unexplained(raised)
        if silent:
            return _hazard_problem(silent[0])
        if self.values.first is not None:
            return self._non_finite()
        if self.values.first_gradient is not None:
            return self._non_finite_gradient()
        return None

    def _called_roots(self) -> dict:
        return {f"<{type(m).__name__} called>": m for m in list(self._roots)}

    def _mismatch(self, held: list[dict]) -> Problem | None:
        first, module, tensor = self.guard.first, self.guard.first_module, self.guard.first_input
        if first is None or module is None:
            return None
        where, creation = first.module, self._created.get(module, ("?", None))
        holder = _held_unregistered(module)
        detail = first.describe().split(": ", 1)[1]
        if first.input_dtype == "float64":
            mechanism = "float64-data"
        elif first.parameter_device == "meta":
            mechanism = "meta-tensor"
        elif holder:
            mechanism, where = "not-registered", holder
            unregistered = _root(module)
            creation = self._created.get(unregistered, creation)
            detail += f"; {type(unregistered).__name__}, made where shown, is not registered"
        elif re.search(r"\blora_|modules_to_save\b", where):
            mechanism = "adapter-dtype"
        else:
            mechanism = self._origin(first, module, tensor)
        # Two cases may document the same module (a VAE's post_quant_conv): the one whose own
        # hazard this run holds (a pipeline of mixed dtypes) is it.
        found_kinds = {h["kind"] for h in held}
        candidates = documented_cases("mismatch", where, _declared_culprits())
        case = next((c for c in candidates if case_facts(c).get("hazard") in found_kinds),
                    candidates[0] if candidates else MECHANISMS[mechanism].case)  # fmt: skip
        return _problem("mismatch", where, creation, detail, mechanism, case)

    def _origin(self, first, module: nn.Module, tensor) -> str:
        """Where the mismatched tensor came from, and what that says about the cause."""
        root = _root(module)
        most = majority(audit(root)) if root is not module else ("-", "-")
        given = tensor is not None and tensor in self._given
        returned = tensor is not None and tensor in self._returned
        if first.input_device != first.parameter_device:
            if most[0] not in ("-", first.parameter_device):
                return "submodule-not-moved"
            return "input-not-moved" if given or returned else "made-in-model-device"
        if most[1] not in ("-", first.parameter_dtype):
            return "submodule-dtype"
        if returned:
            return "component-dtype"
        if given:
            return "input-not-cast"
        if first.input_dtype == dtype_name(torch.get_default_dtype()):
            return "made-in-model"
        return "input-not-cast"

    def _failed_op(self) -> Problem | None:
        failed: FailedOp | None = self.ops.failed
        if failed is None:
            return None
        dtypes = {dtype for dtype, _ in failed.operands if dtype.startswith(("float", "bfloat"))}
        devices = {device for _, device in failed.operands}
        if "meta" in devices:
            mechanism = "meta-tensor"
        elif "float64" in dtypes and len(dtypes) > 1:
            mechanism = "float64-data"
        elif len(dtypes) > 1 or len(devices) > 1:
            mechanism = "op-operands-device" if len(devices) > 1 else "op-operands"
        elif devices == {"cpu"} and "not implemented for 'Half'" in failed.error:
            mechanism = "half-kernel-missing"  # "... not implemented for 'Half'" on the CPU
        else:
            return None  # one dtype, one device: this call's own refusal, not a mismatch
        where = failed.op
        if failed.module is not None:
            where = f"{failed.op} in {full_path(failed.module, live_parents())}"
        case = documented_case("failed-op", failed.op, ()) or MECHANISMS[mechanism].case
        detail = f"{failed.describe()}: {failed.error}"
        return _problem("failed-op", where, (failed.file, failed.line), detail, mechanism, case)

    def _non_finite(self) -> Problem:
        first = self.values.first
        module = self.values._module
        creation = self._created.get(module, ("?", None)) if module is not None else ("?", None)
        detail = first.describe().split(": ", 1)[1]
        case = documented_case("non-finite", first.module, ()) or MECHANISMS["overflow"].case
        return _problem("non-finite", first.module, creation, detail, "overflow", case)

    def _non_finite_gradient(self) -> Problem:
        first = self.values.first_gradient
        detail = first.describe().split(": ", 1)[1]
        case = documented_case("non-finite", first.parameter, ()) or None
        return _problem("non-finite-gradient", first.parameter, ("?", None), detail,
                        "overflow-backward", case)  # fmt: skip


def input_signature(args: tuple, kwargs: dict) -> tuple:
    """What, besides values, decides which torch calls a forward makes: each tensor argument's
    shape, dtype and device (one level into tuples, lists and dicts), which arguments are given,
    and the flags among them (booleans, strings, None); other values by their type."""

    def kind(value):
        if isinstance(value, torch.Tensor):
            return tuple(value.shape), value.dtype, value.device
        if value is None or isinstance(value, (bool, str)):
            return value
        return type(value)

    parts = []
    for key, value in (*enumerate(args), *kwargs.items()):
        if isinstance(value, (tuple, list)):
            parts.append((key, tuple(kind(item) for item in value)))
        elif isinstance(value, dict):
            parts.append((key, tuple((k, kind(v)) for k, v in value.items())))
        else:
            parts.append((key, kind(value)))
    return tuple(parts)


class _TensorsSeen:
    """Tensors by identity, held weakly: a plain dict of weak references, dropped once dead as
    it grows (every outermost call adds its own: a WeakValueDictionary costs more than the call
    of a small model)."""

    def __init__(self):
        self._refs: dict[int, weakref.ref] = {}
        self._limit = 1024

    def add(self, tensor: torch.Tensor) -> None:
        self._refs[id(tensor)] = weakref.ref(tensor)
        if len(self._refs) > self._limit:
            self._refs = {key: ref for key, ref in self._refs.items() if ref() is not None}
            self._limit = max(1024, 2 * len(self._refs))

    def __contains__(self, tensor: torch.Tensor) -> bool:
        ref = self._refs.get(id(tensor))
        return ref is not None and ref() is tensor


# --- what the run holds ------------------------------------------------------------------------


def held_models(namespace: dict) -> tuple[dict, list[tuple[str, object]]]:
    """The outermost models in ``namespace`` (a pipeline's components named ``pipe.unet``), and
    the pipelines it holds, by name."""
    models, pipelines = {}, []
    for name, value in namespace.items():
        components = getattr(value, "components", None) if not isinstance(value, type) else None
        if isinstance(value, nn.Module):
            models[name] = value
        elif isinstance(components, dict):
            models.update({f"{name}.{k}": v for k, v in components.items()
                           if isinstance(v, nn.Module)})  # fmt: skip
            pipelines.append((name, value))
    inside = {id(m) for model in models.values() for m in list(model.modules())[1:]}
    return {n: m for n, m in models.items() if id(m) not in inside}, pipelines


def held_hazards(namespace: dict, *watchers) -> list[dict]:
    """The hazard patterns (shared.culprit) of every model, pipeline and optimizer in
    ``namespace`` (a pipeline with the generators it holds), and those the watchers saw while
    the run went on; each as a record naming what it was found in."""
    generators = {k: v for k, v in namespace.items() if isinstance(v, torch.Generator)}
    models, pipelines = held_models(namespace)
    found = []
    for name, value in namespace.items():
        if isinstance(value, optim.Optimizer):
            found += _named(name, optimizer_hazards, value)
    for name, pipeline in pipelines:
        found += _named(name, pipeline_hazards, pipeline.components)
        device = getattr(pipeline, "_execution_device", None)  # diffusers': where it draws
        if generators and device is not None:
            found += _named(name, generator_hazards, generators, device)
    audited = set()
    for name, model in models.items():  # parts go with their model; one model under two names once
        if id(model) not in audited:
            audited.add(id(model))
            found += _named(name, hazards, model)
    return found + _named("", seen_hazards, *watchers)


def _named(name: str, find, *subjects) -> list[dict]:
    """``find(*subjects)`` as records naming what they were found in (and its class)."""
    try:
        kind = type(subjects[0]).__name__ if subjects else ""
        return [{"model": name, "model_class": kind, "case": h.case, **dataclasses.asdict(h)}
                for h in find(*subjects)]  # fmt: skip
    except Exception:  # noqa: BLE001 - auditing must never break a verdict
        return []


# --- helpers -----------------------------------------------------------------------------------


def _problem(kind, where, creation, detail, mechanism, case) -> Problem:
    known = MECHANISMS[mechanism]
    family = case_facts(case).get("family") if case else known.family
    return Problem(kind, where, _shown_path(creation[0]), creation[1], detail, known.text, case,
                   family or known.family)  # fmt: skip


def _hazard_problem(record: dict) -> Problem:
    where = f"{record.get('model_class', '')}.{record['where']}"
    case = documented_case(record["kind"], where, ()) or record["case"]
    return Problem(
        record["kind"], record["where"], "", None, record["detail"],
        HAZARDS[record["kind"]].meaning, case, case_facts(case).get("family"),
    )  # fmt: skip


# Module methods that move or cast a whole model.
MOVES = frozenset({"to", "cuda", "cpu", "half", "float", "bfloat16", "double", "type"})


def _owned_placement(raised: BaseException) -> Problem | None:
    """The exception came out of moving or casting a model whose placement or dtype a library
    owns: dispatched with offload (accelerate's device_map), or quantized (bitsandbytes)."""
    tb, script_line = raised.__traceback__, ("?", None)
    while tb is not None:
        frame = tb.tb_frame
        if frame.f_globals.get("__name__") == "__main__":
            script_line = (frame.f_code.co_filename, tb.tb_lineno)
        owner, move = frame.f_locals.get("self"), frame.f_code.co_name
        if not (move in MOVES and isinstance(owner, nn.Module)):
            # accelerate's dispatch_model wraps model.to/.cuda/...: `fn` and `model` are local
            owner = frame.f_locals.get("model")
            move = getattr(frame.f_locals.get("fn"), "__name__", "")
        if move in MOVES and isinstance(owner, nn.Module):
            device_map = getattr(owner, "hf_device_map", None) or {}
            offloaded = sorted({str(d) for d in device_map.values()} & {"cpu", "disk"})
            quantized = sorted({type(p).__name__ for p in owner.parameters()}
                               & {"Params4bit", "Int8Params"})  # fmt: skip
            if offloaded and len(set(map(str, device_map.values()))) > 1 or "disk" in offloaded:
                mechanism, what = "offload-moved", f"device_map offloads to {', '.join(offloaded)}"
            elif quantized or getattr(owner, "is_quantized", False):
                what = f"{', '.join(quantized) or 'quantized'} weights"
                mechanism = "quantized-moved"
            else:
                tb = tb.tb_next
                continue
            text = str(raised).splitlines()[0] if str(raised) else ""
            detail = f".{move}() on {type(owner).__name__} ({what}): {text}"
            return _problem("moved", type(owner).__name__, script_line, detail, mechanism,
                            MECHANISMS[mechanism].case)  # fmt: skip
        tb = tb.tb_next
    return None


def _documented_error(raised: BaseException) -> Problem | None:
    """An error no watcher explained that one case documents as pasted: its type, its message
    (any wording the case's ``when`` entries give) and a traceback frame at its raise site. The
    case's own check refused the call (a setup refused, a call order torch enforces); several
    cases matching decide nothing."""
    text = str(raised).splitlines()[0] if str(raised) else ""
    frames, tb = [], raised.__traceback__
    while tb is not None:
        path = tb.tb_frame.f_code.co_filename.replace("\\", "/")  # a library's from its package
        path = path.rsplit("site-packages/", 1)[1] if "site-packages/" in path else Path(path).name
        frames.append(f"{path}:{tb.tb_frame.f_code.co_name}")
        tb = tb.tb_next
    matched = {}
    for case, error, messages, sites in _documented_errors():
        # case.toml names a type plainly or qualified ("torch.AcceleratorError")
        if error.rsplit(".", 1)[-1] != type(raised).__name__:
            continue
        if not any(re.search(m, text) for m in messages):
            continue
        site = next((f for f in reversed(frames) if any(re.search(s, f) for s in sites)), None)
        if site:
            matched.setdefault(case, site)
    if len(matched) != 1:
        return None
    (case, site), = matched.items()
    facts = case_facts(case)
    return Problem(
        "documented-error", site, "", None, f"{type(raised).__name__}: {text}",
        f"the library's own check refused it, as the case documents: {facts.get('title', '')}",
        case, facts.get("family"),
    )  # fmt: skip


def _documented_errors() -> list[tuple[str, str, list[str], list[str]]]:
    """(case, exception type, message regex, raise-site regex) of every documented wording of
    every failing variant in the cases' case.toml (its ``when`` entries' wordings too)."""
    if not _ERRORS:
        for case, table in _case_tables().items():
            for variant in table.get("variant", []):
                for said in (variant, *variant.get("when", [])):
                    error = said.get("error", variant.get("error"))
                    message = said.get("message")
                    raised_in = said.get("raised_in", variant.get("raised_in"))
                    # a message that names no failure finds nothing (a kernel's assert)
                    messages = [m for m in _listed(message or []) if not NAMES_NOTHING.search(m)]
                    if error and messages and raised_in:
                        _ERRORS.append((case, error, messages, _listed(raised_in)))
    return _ERRORS


@functools.cache
def _case_tables() -> dict[str, dict]:
    """Every case's case.toml as a table, read once ({} where the cases are not at hand)."""
    tables = {}
    for path in sorted(CASES_DIR.glob("[!_.]*/case.toml")) if CASES_DIR.is_dir() else ():
        with contextlib.suppress(OSError, tomllib.TOMLDecodeError):
            tables[path.parent.name] = tomllib.loads(path.read_text(encoding="utf-8"))
    return tables


_ERRORS: list[tuple[str, str, list[str], list[str]]] = []


def _listed(value) -> list[str]:
    """A case.toml key that holds one regex or a list of them, as a list."""
    return list(value) if isinstance(value, list) else [value]


def _unexplained(raised: BaseException) -> Problem:
    file, line = "?", None
    tb = raised.__traceback__
    while tb is not None:  # the innermost frame outside torch: where the script's path failed
        if not tb.tb_frame.f_code.co_filename.startswith((TORCH_DIR, HERE)):
            file, line = tb.tb_frame.f_code.co_filename, tb.tb_lineno
        tb = tb.tb_next
    text = str(raised).splitlines()[0] if str(raised) else ""
    return Problem(
        "error", "", _shown_path(file), line, f"{type(raised).__name__}: {text}",
        "none this run could see (no mismatch, no inf/NaN, no hazard): a library's own "
        "check refused the call; paste the error into explain", None, None,
    )  # fmt: skip


def _held_unregistered(module: nn.Module) -> str:
    """``holder.attribute[key]`` where a live module keeps ``module`` in a plain list, tuple or
    dict (not registered: ``.to()`` and ``.half()`` never reach it); "" if none does."""
    parents = live_parents()
    inner = ".".join(full_path(module, parents).split(".")[1:])
    module = _root(module)
    for candidate in _live_modules():
        for attribute, value in vars(candidate).items():
            if attribute.startswith("_") or not isinstance(value, (list, tuple, dict)):
                continue
            items = value.items() if isinstance(value, dict) else enumerate(value)
            for key, item in items:
                if item is module:
                    held = f"{full_path(candidate, parents)}.{attribute}[{key!r}]"
                    return f"{held}.{inner}".rstrip(".")
    return ""


def _live_modules():
    return [o for o in gc.get_objects() if issubclass(type(o), nn.Module)]


def _root(module: nn.Module) -> nn.Module:
    parents, seen = live_parents(), {module}
    while module in parents and parents[module][0] not in seen:
        module = parents[module][0]
        seen.add(module)
    return module


def _caller(frame, made=None) -> tuple[str, int]:
    """The innermost frame outside torch (and outside ``made``'s own methods): the code that
    called, or made a module."""
    while frame is not None and (
        frame.f_code.co_filename.startswith((TORCH_DIR, HERE))
        or (made is not None and frame.f_locals.get("self") is made)
    ):
        frame = frame.f_back
    return (frame.f_code.co_filename, frame.f_lineno) if frame is not None else ("?", 0)


def _shown_path(file: str) -> str:
    try:
        return str(Path(file).resolve().relative_to(Path.cwd()))
    except ValueError:
        return file


def _compiled() -> bool:
    dynamo = sys.modules.get("torch._dynamo.utils")
    try:
        return bool(dynamo and dynamo.counters["frames"]["total"])
    except Exception:  # noqa: BLE001 - a torch without these counters: nothing compiled seen
        return False


_AUDITED: list[Diagnosis] = []


def _add_audit_hook(diagnosis: Diagnosis) -> None:
    """One audit hook per process (it cannot be removed): it tells the diagnosis now active."""
    if not _AUDITED:
        sys.addaudithook(lambda event, args: [d.on_audit(event, args) for d in _AUDITED[-1:]])
    _AUDITED[:] = [diagnosis]


# --- the gallery's documentation, read from the cases' own files ------------------------------


def case_facts(case: str | None) -> dict:
    """A case's family and fix line, read from its case.toml (its ``fix``, else the first
    statement its first fixing variant's script adds to the broken one's, as ``explain`` prints
    it, and that script's name); {} where the cases are not at hand (installed)."""
    if not case:
        return {}
    return _CASE_FACTS.get(case) or _CASE_FACTS.setdefault(case, _read_case(case))


_CASE_FACTS: dict[str, dict] = {}


def _read_case(case: str) -> dict:
    table = _case_tables().get(case)
    if table is None:
        return {}
    variants = table.get("variant", [])
    scripts = {variant.get("name"): variant.get("script") for variant in variants}
    fixing = next((v for v in variants if scripts.get(v.get("fixes")) and v.get("script")), {})
    fix = table.get("fix", "")
    if not fix and fixing:
        with contextlib.suppress(OSError):
            folder = CASES_DIR / case
            fix = added_statement(folder / scripts[fixing["fixes"]], folder / fixing["script"])
    return {"family": table.get("family"), "fix": fix, "fixed": fixing.get("script", ""),
            "title": table.get("title", ""), "hazard": table.get("hazard")}


def _declared_culprits() -> list[tuple[str, str]]:
    """(regex, case) for each variant's documented culprit in the cases' case.toml."""
    if not _CULPRITS:
        for case, table in _case_tables().items():
            for variant in table.get("variant", []):
                if variant.get("culprit"):
                    _CULPRITS.append((variant["culprit"], case))
    return _CULPRITS


_CULPRITS: list[tuple[str, str]] = []


def format_problem(problem: Problem | None, notes: list[str]) -> str:
    """The human report: at most about twelve lines."""
    lines = []
    if problem is None:
        lines.append("diagnose: no problem seen (no dtype/device mismatch, no inf/NaN, none of "
                     "the gallery's hazard patterns)")  # fmt: skip
    else:
        where = f" at {problem.file}:{problem.line}" if problem.line else ""
        lines += [
            f"diagnose: {problem.kind} in {problem.module or 'the script'}{where}",
            f"  what:      {problem.detail}",
            f"  mechanism: {problem.mechanism}",
        ]
        if problem.case:
            facts = case_facts(problem.case)
            lines.append(f"  case:      cases/{problem.case} ({problem.family or '-'})")
            if facts.get("fix"):
                script = f"  (cases/{problem.case}/{facts['fixed']})" if facts["fixed"] else ""
                lines.append(f"  fix:       {facts['fix']}{script}")
        elif problem.family:
            lines.append(f"  family:    {problem.family} (no case documents this mechanism)")
    lines += [f"  note: {note}" for note in notes]
    return "\n".join(lines)


# --- running a user's script, as `python -m cProfile` does -------------------------------------


def run(target: str, args: list[str], *, module: bool = False, backward: bool = False,
        json_path: str | None = None, every_call: bool = False) -> int:  # fmt: skip
    """Run ``target`` (a script, or a module with ``module=True``) as ``__main__`` with
    ``args`` under a :class:`Diagnosis`; print the report on stderr, write it to ``json_path``.

    Returns the script's own exit status: ``sys.exit``'s code as Python would turn it into one,
    1 after an uncaught exception (its traceback printed as Python prints it)."""
    sys.argv = [target, *args]
    if not module:
        sys.path[0] = str(Path(target).resolve().parent)  # as `python SCRIPT` sets it
    _forget_gallery_modules()
    diagnosis = Diagnosis(backward=backward, every_call=every_call)
    namespace, raised = {}, None
    try:
        with diagnosis:
            try:
                if module:
                    namespace = runpy.run_module(target, run_name="__main__", alter_sys=True)
                else:
                    namespace = runpy.run_path(target, run_name="__main__")
            except BaseException as exc:
                raised = exc
                namespace = _raising_globals(exc, target)
            finally:
                problem = _safely(diagnosis.problem, namespace, raised)
                notes = diagnosis.notes()
    finally:
        namespace = None
    if raised is not None and not isinstance(raised, SystemExit):
        shown = raised.with_traceback(_from_script(raised.__traceback__))
        sys.excepthook(type(shown), shown, shown.__traceback__)
    sys.stdout.flush()
    print(format_problem(problem, notes), file=sys.stderr)
    if json_path:
        record = {"problem": problem.as_json() if problem else None, "notes": notes}
        Path(json_path).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    if isinstance(raised, SystemExit):
        raise raised  # Python turns its code into the exit status (and prints a message)
    return 1 if raised is not None else 0


def _forget_gallery_modules() -> None:
    """Take the gallery's ``shared*`` modules out of ``sys.modules`` (this module keeps its own
    references): the script's ``import shared`` then finds its own package, or the gallery's
    afresh from its path, as it would without diagnose."""
    for name in [n for n in sys.modules if n == "shared" or n.startswith("shared.")]:
        del sys.modules[name]


def _safely(find, namespace, raised):
    try:
        return find(namespace, raised)
    except Exception as exc:  # noqa: BLE001 - the diagnosis must never change the run
        print(f"diagnose: the diagnosis itself failed ({exc!r}); the run is unchanged",
              file=sys.stderr)  # fmt: skip
        return None


def _raising_globals(exc: BaseException, target: str) -> dict:
    """The globals of the script's frame the exception passed through (its models)."""
    tb, found = exc.__traceback__, {}
    while tb is not None:
        if tb.tb_frame.f_globals.get("__name__") == "__main__":
            found = tb.tb_frame.f_globals
        tb = tb.tb_next
    return found


def _from_script(tb):
    """The traceback from the script's first frame on, as Python would print it: runpy's frames
    and the watchers' (``__tracebackhide__``: OpWatch passing each call on) left out."""
    while tb is not None and tb.tb_frame.f_globals.get("__name__") != "__main__":
        tb = tb.tb_next
    shown = []
    while tb is not None:
        if not tb.tb_frame.f_locals.get("__tracebackhide__"):
            shown.append(tb)
        tb = tb.tb_next
    for outer, inner in zip(shown, shown[1:], strict=False):
        outer.tb_next = inner
    if shown:
        shown[-1].tb_next = None
    return shown[0] if shown else None
