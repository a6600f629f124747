"""Lint rules for the distributed set-up of a training script: L1, L2, L3, L4, L5, L7, L8, L12.

Each check reads one file's syntax tree (see :mod:`gpudoctor.lint.context`) and yields (node, message, edits).
Precision first: when the file does not show enough (``**kwargs``, a helper defined elsewhere) the check
stays quiet. Sources: ../shared/docs/seed-checklists.md section L, and the PyTorch page in each rule.
"""
from __future__ import annotations

import ast
from collections.abc import Iterator

from gpudoctor.lint.context import FileContext, const_str, is_true, mentions_rank, target_name
from gpudoctor.lint.registry import Hit, lint_rule

DP = "torch.nn.DataParallel"
DDP = "torch.nn.DistributedDataParallel"
SAMPLER = "torch.utils.data.DistributedSampler"
LOADER = "torch.utils.data.DataLoader"
PT = "https://pytorch.org/docs/stable/"


@lint_rule("LNT001")
def dataparallel(ctx: FileContext) -> Iterator[Hit]:
    """A call of ``torch.nn.DataParallel`` (any import spelling or alias)."""
    for call in ctx.calls_to(DP):
        yield call, "nn.DataParallel: one process drives every GPU; use DistributedDataParallel", []


def _sets_device(ctx: FileContext) -> bool:
    """The file pins each process to its GPU somehow: set_device, device_id= / device_ids=, a
    ``torch.device``/``.cuda``/``.to`` with a computed (non-constant) index, or an f-string ``cuda:{...}``."""
    if ctx.has_call("torch.cuda.set_device") or "set_device" in ctx.attr_calls:
        return True
    for call, q in ctx.calls:
        if any(kw.arg in ("device_id", "device_ids") for kw in call.keywords):
            return True
        if q == "torch.device" and any(not isinstance(a, ast.Constant) for a in call.args):
            return True
        if (isinstance(call.func, ast.Attribute) and call.func.attr in ("cuda", "to") and call.args
                and isinstance(call.args[0], ast.Name | ast.Attribute | ast.Subscript) and mentions_rank(call.args[0])):
            return True
    return any(isinstance(n, ast.JoinedStr) and n.values and (const_str(n.values[0]) or "").startswith("cuda:")
               for n in ctx.nodes)


@lint_rule("LNT002")
def no_set_device(ctx: FileContext) -> Iterator[Hit]:
    """``init_process_group`` with the NCCL backend (a literal, ``Backend.NCCL``, or none named) in a file that
    never pins a GPU: no ``set_device``, no ``device_id(s)=``, no device built from a rank, no DeepSpeed /
    Accelerate / HF Trainer / Lightning import (they pin it)."""
    calls = list(ctx.calls_to("torch.distributed.init_process_group"))
    if not calls or ctx.framework_managed or _sets_device(ctx):
        return
    call = calls[0]
    backend = FileContext.arg(call, "backend", 0)
    if backend is not None and "nccl" not in (const_str(backend) or "").lower() and not (
            isinstance(backend, ast.Attribute) and backend.attr.lower() == "nccl"):
        return  # gloo / mpi, or a backend the file does not show
    yield call, "init_process_group without torch.cuda.set_device(local_rank): every rank uses GPU 0", []


def _is_sampler(ctx: FileContext, node: ast.AST | None) -> bool:
    if isinstance(node, ast.Call):
        return ctx.qualname(node.func) == SAMPLER
    name = target_name(node) if node is not None else None
    return name is not None and bool(ctx.assigned_from(name, SAMPLER))


@lint_rule("LNT003")
def sampler_and_shuffle(ctx: FileContext) -> Iterator[Hit]:
    """A DataLoader given ``shuffle=True`` (keyword or 3rd positional) and a ``DistributedSampler`` (built in
    the call, or a name assigned from one)."""
    for call in ctx.calls_to(LOADER):
        if is_true(FileContext.arg(call, "shuffle", 2)) and _is_sampler(ctx, FileContext.arg(call, "sampler", 3)):
            yield call, "DataLoader gets a DistributedSampler and shuffle=True (ValueError); drop shuffle=True", []


def _iterated_here(ctx: FileContext, sampler: ast.Call) -> bool:
    """The DataLoader built on ``sampler`` (inline, or through the name it is assigned to) is assigned to a
    name that a ``for`` loop of this file iterates; otherwise the epoch loop (and its set_epoch) may live in
    another module (e.g. a ``train(..., sampler=...)`` helper)."""
    parent = ctx.parents.get(sampler)
    names = {target_name(t) for t in parent.targets} if isinstance(parent, ast.Assign) else set()
    loaders: set[str | None] = set()
    for call in ctx.calls_to(LOADER):
        s = FileContext.arg(call, "sampler", 3)
        if s is sampler or (s is not None and target_name(s) in names):
            up = ctx.parents.get(call)
            if isinstance(up, ast.Assign):
                loaders |= {target_name(t) for t in up.targets}
    loaders.discard(None)
    for node in ctx.nodes:
        if isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
            if any(target_name(n) in loaders for n in ast.walk(node.iter) if isinstance(n, ast.Name | ast.Attribute)):
                return True
    return False


@lint_rule("LNT004")
def no_set_epoch(ctx: FileContext) -> Iterator[Hit]:
    """A shuffling ``DistributedSampler`` (``shuffle`` not given as False) in a file with no ``.set_epoch(...)``
    call on anything (``sampler.set_epoch``, ``loader.sampler.set_epoch``, a helper's)."""
    if "set_epoch" in ctx.attr_calls:
        return
    for call in ctx.calls_to(SAMPLER):
        shuffle = FileContext.arg(call, "shuffle", 3)
        if (isinstance(shuffle, ast.Constant) and shuffle.value is False) or not _iterated_here(ctx, call):
            continue
        yield call, "DistributedSampler without sampler.set_epoch(epoch): every epoch has the same order", []
        return


@lint_rule("LNT005")
def load_without_map_location(ctx: FileContext) -> Iterator[Hit]:
    """``torch.load`` with no ``map_location`` (keyword or 2nd positional) in a file that uses
    torch.distributed itself (process group, DDP or DistributedSampler); not when the branch beside it passes
    one, nor when the same function saved the file just before (a round trip in one process)."""
    if not ctx.is_distributed:
        return
    mapped = [c for c in ctx.calls_to("torch.load") if FileContext.arg(c, "map_location", 1) is not None]
    saves = list(ctx.calls_to("torch.save"))
    for call in ctx.calls_to("torch.load"):
        fn = ctx.function_of(call)
        round_trip = any(s.lineno < call.lineno and ctx.function_of(s) is fn for s in saves)
        if FileContext.arg(call, "map_location", 1) is None and not FileContext.opaque(call) and not round_trip \
                and not any(ctx.exclusive(call, m) for m in mapped):  # the other branch maps: handled
            yield call, "torch.load without map_location: every rank restores the tensors on the saving GPU", []


@lint_rule("LNT006")
def save_on_every_rank(ctx: FileContext) -> Iterator[Hit]:
    """``torch.save`` in a distributed file, not under a rank guard (``if rank == 0``, ``dist.get_rank() == 0``,
    ``self.gpu_id == 0``, ``is_main_process()``, ``local_rank in (-1, 0)``, an early return, a rank-only function
    or one whose every call site is guarded) and not to a path that names the rank."""
    if not ctx.is_distributed:
        return
    for call in ctx.calls_to("torch.save"):
        path = FileContext.arg(call, "f", 1)
        if (path is not None and mentions_rank(path)) or ctx.rank_guarded(call):
            continue
        yield call, "torch.save runs on every rank; guard it with `if rank == 0:`", []


@lint_rule("LNT007")
def wrapper_state_dict(ctx: FileContext) -> Iterator[Hit]:
    """``X.state_dict()`` inside a ``torch.save(...)`` where ``X`` (a name or ``self.attr``) is assigned from
    ``DistributedDataParallel(...)`` earlier in the file and never reassigned from anything else."""
    for save in ctx.calls_to("torch.save"):
        for node in ast.walk(save):
            if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "state_dict" and not node.args):
                continue
            name = target_name(node.func.value)
            wraps = ctx.assigned_from(name, DDP) if name else []
            if wraps and all(w.lineno < save.lineno for w in wraps) and not _reassigned(ctx, name or ""):
                yield node, f"{name}.state_dict() is the DDP wrapper's ('module.' keys); save {name}.module", []


def _reassigned(ctx: FileContext, name: str) -> bool:
    """``name`` is assigned from something other than a DDP call after the wrap (e.g. unwrapped again)."""
    for node in ctx.nodes:
        if isinstance(node, ast.Assign) and any(target_name(t) == name for t in node.targets):
            if not (isinstance(node.value, ast.Call) and ctx.qualname(node.value.func) == DDP):
                if any(node.lineno > w.lineno for w in ctx.assigned_from(name, DDP)):
                    return True
    return False


def _launched_by_torchrun(ctx: FileContext) -> bool:
    """The file starts a process group or reads LOCAL_RANK / RANK / WORLD_SIZE (a torchrun-launched script)."""
    if ctx.has_call("torch.distributed.init_process_group"):
        return True
    return any(const_str(n) in ("LOCAL_RANK", "RANK", "WORLD_SIZE") for n in ctx.nodes)


@lint_rule("LNT008")
def autowrap_on_device_count(ctx: FileContext) -> Iterator[Hit]:
    """A DataParallel/DDP call inside an ``if`` whose test calls ``torch.cuda.device_count()``, in a file that
    starts a process group or reads LOCAL_RANK/RANK/WORLD_SIZE."""
    wraps = list(ctx.calls_to(DP, DDP))
    if not wraps or not _launched_by_torchrun(ctx):
        return
    for call in wraps:
        for a in ctx.ancestors(call):
            if isinstance(a, ast.If) and any(isinstance(n, ast.Call)
                                             and ctx.qualname(n.func) == "torch.cuda.device_count"
                                             for n in ast.walk(a.test)):
                yield call, "model wrapped because device_count() > 1 in a torchrun script: all ranks wrap all GPUs", []
                break


@lint_rule("LNT009")
def find_unused(ctx: FileContext) -> Iterator[Hit]:
    """``DistributedDataParallel(..., find_unused_parameters=True)`` with a literal True."""
    for call in ctx.calls_to(DDP):
        if is_true(FileContext.arg(call, "find_unused_parameters")):
            yield call, "find_unused_parameters=True costs a graph traversal every step; remove it if not needed", []


def _env_writes(ctx: FileContext) -> Iterator[tuple[ast.AST, str]]:
    """(node, variable) for ``os.environ[K] = v``, ``os.environ.setdefault/update(K=...)``, ``os.putenv(K, v)``."""
    for node in ctx.nodes:
        if isinstance(node, ast.Assign):
            for t in node.targets:
                if isinstance(t, ast.Subscript) and ctx.qualname(t.value) == "os.environ":
                    key = const_str(t.slice)
                    if key:
                        yield node, key
    for call, q in ctx.calls:
        if q in ("os.environ.setdefault", "os.putenv") and call.args and const_str(call.args[0]):
            yield call, const_str(call.args[0]) or ""
        elif q == "os.environ.update":
            for kw in call.keywords:
                if kw.arg:
                    yield call, kw.arg
            if call.args and isinstance(call.args[0], ast.Dict):
                for k in call.args[0].keys:
                    if const_str(k):
                        yield call, const_str(k) or ""


#: NCCL variables that only add diagnostics; setting them in a script changes no behaviour
NCCL_DIAGNOSTIC = {"NCCL_DEBUG", "NCCL_DEBUG_SUBSYS", "NCCL_DEBUG_FILE"}


@lint_rule("LNT010")
def nccl_env_in_script(ctx: FileContext) -> Iterator[Hit]:
    """An assignment of an ``NCCL_*`` / ``TORCH_NCCL_*`` variable to ``os.environ`` (item assignment,
    ``setdefault``, ``update``, ``os.putenv``), except the diagnostic NCCL_DEBUG* ones."""
    for node, key in _env_writes(ctx):
        if (key.startswith("NCCL_") or key.startswith("TORCH_NCCL_")) and key not in NCCL_DIAGNOSTIC:
            yield node, f"{key} forced in the script; set it in the launch environment instead", []
