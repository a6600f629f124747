"""Lint rules for the training loop and the data pipeline: L6, L9, L10, L11 (and the --fix of L11).

Sources: ../shared/docs/seed-checklists.md section L; https://pytorch.org/docs/stable/notes/amp_examples.html
(accumulation, clipping with a GradScaler), https://pytorch.org/docs/stable/data.html (workers, pinning),
https://pytorch.org/docs/stable/amp.html (deprecations).
"""
from __future__ import annotations

import ast
from collections.abc import Iterator

from gpudoctor.lint.context import FileContext, is_true, mentions_rank, target_name
from gpudoctor.lint.registry import Hit, lint_rule
from gpudoctor.lint.rules_dist import DDP, LOADER


def _scope(ctx: FileContext, node: ast.AST) -> ast.AST:
    return ctx.function_of(node) or ctx.tree


def _is_optimizer_step(call: ast.Call) -> bool:
    """``optimizer.step()``, ``self.opt.step()``, ``scaler.step(optimizer)``."""
    if not (isinstance(call.func, ast.Attribute) and call.func.attr == "step"):
        return False
    recv = (target_name(call.func.value) or "").lower()
    return "opt" in recv or ("scaler" in recv and bool(call.args))


def _backward_loss(call: ast.Call) -> ast.expr | None:
    """For ``loss.backward()`` the loss expression; for ``scaler.scale(loss).backward()`` the ``loss``."""
    if not (isinstance(call.func, ast.Attribute) and call.func.attr == "backward" and not call.args):
        return None
    recv = call.func.value
    if (isinstance(recv, ast.Call) and isinstance(recv.func, ast.Attribute) and recv.func.attr == "scale"
            and len(recv.args) == 1):
        return recv.args[0]
    return recv


def _zeroes_every_step(loop: ast.AST, gate: ast.AST | None) -> bool:
    """The loop calls ``zero_grad()`` outside ``gate``: gradients are cleared every iteration, nothing
    accumulates (e.g. a test running six independent steps)."""
    inside_gate = {id(n) for n in ast.walk(gate)} if gate is not None else set()
    return any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "zero_grad"
               and id(n) not in inside_gate for n in ast.walk(loop))


def _accumulation(ctx: FileContext) -> Iterator[ast.Call]:
    """``backward()`` calls that accumulate: the optimizer step is under an ``if`` with a ``%`` test that the
    backward is not under, or the backward is in an inner loop without a step and a step follows the loop."""
    steps = [c for c, _ in ctx.calls if _is_optimizer_step(c)]
    for bw, _ in ctx.calls:
        if _backward_loss(bw) is None:
            continue
        bw_anc = list(ctx.ancestors(bw))
        for st in steps:
            st_anc = list(ctx.ancestors(st))
            gated = [a for a in st_anc if isinstance(a, ast.If) and a not in bw_anc
                     and any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Mod) for n in ast.walk(a.test))]
            shared = [a for a in st_anc if a in bw_anc and isinstance(a, ast.For | ast.While)]
            if gated and shared and not _zeroes_every_step(shared[0], gated[0]):
                yield bw
                break
            inner = next((a for a in bw_anc if isinstance(a, ast.For | ast.While)), None)
            if (inner is not None and inner not in st_anc and ctx.parents.get(inner) in st_anc[:3]
                    and st.lineno > inner.lineno and not any(_is_optimizer_step(c) for c in ast.walk(inner)
                                                             if isinstance(c, ast.Call))
                    and not _zeroes_every_step(inner, None)):
                yield bw
                break


def _divided(ctx: FileContext, bw: ast.Call) -> bool:
    """The backwarded loss is divided (or multiplied) before backward: in the expression itself or in an
    assignment / augmented assignment to its name in the same function."""
    loss = _backward_loss(bw)
    if isinstance(loss, ast.BinOp) and isinstance(loss.op, ast.Div | ast.Mult):
        return True
    name = target_name(loss) if loss is not None else None
    if name is None:
        return True  # cannot tell what the loss is: stay quiet
    for node in ast.walk(_scope(ctx, bw)):
        if (isinstance(node, ast.AugAssign) and target_name(node.target) == name
                and isinstance(node.op, ast.Div | ast.Mult)):
            return True
        if isinstance(node, ast.Assign) and any(target_name(t) == name for t in node.targets):
            if any(isinstance(n, ast.BinOp) and isinstance(n.op, ast.Div | ast.Mult) for n in ast.walk(node.value)):
                return True
    return False


@lint_rule("LNT011")
def undivided_accumulation(ctx: FileContext) -> Iterator[Hit]:
    """A ``backward()`` that accumulates (optimizer step under a ``%`` test it is not under, or an inner
    micro-step loop) on a loss never divided or multiplied in its function."""
    for bw in _accumulation(ctx):
        if not _divided(ctx, bw):
            yield bw, "gradients accumulate over micro-steps but the loss is not divided by the step count", []


@lint_rule("LNT012")
def accumulation_without_no_sync(ctx: FileContext) -> Iterator[Hit]:
    """Accumulation (as LNT011 finds it) in a file that wraps a model in DDP and never mentions ``no_sync``
    nor ``require_backward_grad_sync`` (in any form: direct, conditional, ExitStack)."""
    if not ctx.has_call(DDP):
        return
    for node in ctx.nodes:
        if isinstance(node, ast.Attribute) and node.attr in ("no_sync", "require_backward_grad_sync"):
            return
    for bw in _accumulation(ctx):
        yield bw, "accumulating micro-steps all-reduce every time; wrap them in model.no_sync()", []
        return


def _uses_cuda(ctx: FileContext) -> bool:
    return (ctx.is_distributed or any((q or "").startswith("torch.cuda") for _, q in ctx.calls)
            or "cuda" in ctx.attr_calls)


#: dataset names that say the data is synthetic or already in memory (no decoding for workers to hide)
IN_MEMORY_WORDS = ("dummy", "fake", "random", "synthetic", "regression", "toy", "tokenized")


def _in_memory(ctx: FileContext, ds: ast.expr | None) -> bool:
    """The dataset is a literal, ``range(...)``, a ``TensorDataset``, or named as synthetic / pre-tokenized."""
    if isinstance(ds, ast.Name):  # `train_set = RegressionDataset(...)` in the same function: judge the call
        scope = ctx.function_of(ds) or ctx.tree
        for node in ast.walk(scope):
            if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                    and any(target_name(t) == ds.id for t in node.targets) and _in_memory(ctx, node.value)):
                return True
    if isinstance(ds, ast.List | ast.Tuple | ast.ListComp):
        return True
    if isinstance(ds, ast.Call):
        if ctx.qualname(ds.func) == "torch.utils.data.TensorDataset" or (
                isinstance(ds.func, ast.Name) and ds.func.id in ("range", "list")):
            return True
    named: ast.AST | None = ds.func if isinstance(ds, ast.Call) else ds
    base = named.value if isinstance(named, ast.Subscript) else named
    name = (target_name(base) or "").lower() if base is not None else ""
    return any(w in name for w in IN_MEMORY_WORDS)


def _loader_calls(ctx: FileContext) -> Iterator[ast.Call]:
    """Training DataLoader calls (``shuffle=True`` or a ``sampler``) whose arguments can be read (no
    ``*args``/``**kwargs``), in a file using CUDA with a ``backward()``, whose dataset is not an in-memory
    ``TensorDataset`` (evaluation loaders and test fixtures are left alone)."""
    if not _uses_cuda(ctx) or "backward" not in ctx.attr_calls:
        return
    for call in ctx.calls_to(LOADER):
        ds = FileContext.arg(call, "dataset", 0)
        training = is_true(FileContext.arg(call, "shuffle", 2)) or FileContext.arg(call, "sampler", 3) is not None
        if not training or FileContext.opaque(call) or _in_memory(ctx, ds):
            continue
        yield call


def _decodes(ctx: FileContext, ds: ast.AST | None) -> bool:
    """The dataset call (or the call assigned to the dataset's name in the same function) is a torchvision
    dataset or takes a transform."""
    if isinstance(ds, ast.Name):
        scope = ctx.function_of(ds) or ctx.tree
        calls = [n.value for n in ast.walk(scope) if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call)
                 and any(target_name(t) == ds.id for t in n.targets)]
        return any(_decodes(ctx, c) for c in calls)
    if not isinstance(ds, ast.Call):
        return False
    return ((ctx.qualname(ds.func) or "").startswith("torchvision.datasets.")
            or any(kw.arg in ("transform", "transforms", "image_transform") for kw in ds.keywords))


@lint_rule("LNT013")
def no_workers(ctx: FileContext) -> Iterator[Hit]:
    """A training DataLoader (in a CUDA file with a backward) without ``num_workers`` or with a literal 0,
    whose dataset shows per-sample work: a ``torchvision.datasets`` class or a dataset built with a
    ``transform=``/``transforms=`` argument (directly or through the name it is assigned to). Datasets the file
    does not show are left alone: synthetic or pre-tokenised data loads fine in the main process."""
    for call in _loader_calls(ctx):
        nw = FileContext.arg(call, "num_workers", 5)
        zero = nw is None or (isinstance(nw, ast.Constant) and nw.value == 0)
        if zero and _decodes(ctx, FileContext.arg(call, "dataset", 0)):
            yield call, "DataLoader without worker processes (num_workers=0): the GPU waits for data", []


@lint_rule("LNT014")
def no_pin_memory(ctx: FileContext) -> Iterator[Hit]:
    """A DataLoader (in a CUDA/distributed file) given a non-zero ``num_workers`` but no ``pin_memory``."""
    for call in _loader_calls(ctx):
        nw = FileContext.arg(call, "num_workers", 5)
        if nw is not None and not (isinstance(nw, ast.Constant) and nw.value == 0) \
                and FileContext.arg(call, "pin_memory", 7) is None:
            yield call, "DataLoader without pin_memory=True: host-to-GPU copies cannot overlap compute", []


SEEDS = ("torch.manual_seed", "random.seed", "numpy.random.seed", "torch.cuda.manual_seed_all",
         "torch.cuda.manual_seed", "transformers.set_seed", "lightning.seed_everything",
         "pytorch_lightning.seed_everything")


def _from_rank(ctx: FileContext, arg: ast.expr) -> bool:
    """``arg`` is a name assigned (anywhere in the file) from an expression naming the rank
    (``seed = args.seed + utils.get_rank()``)."""
    name = target_name(arg)
    for node in ctx.nodes:
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign) and node.value is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if name is not None and any(target_name(t) == name for t in targets) and mentions_rank(node.value):
                return True
    return False


@lint_rule("LNT015")
def same_seed(ctx: FileContext) -> Iterator[Hit]:
    """In a file that wraps a model in DDP (which broadcasts the initial weights) and builds a DataLoader, but
    uses no FSDP: seed calls whose argument is a literal or a plain name (not an expression such as
    ``seed + rank``), when no seed call in the file involves the rank."""
    if not (ctx.has_call(DDP) and ctx.has_call(LOADER)) or any(
            "fully_shard" in (q or "") or "FullyShardedDataParallel" in (q or "") for _, q in ctx.calls):
        return  # FSDP (no broadcast) needs one seed for identical initial weights; no loader: no data randomness
    seeds = list(ctx.calls_to(*SEEDS))
    if any(c.args and (mentions_rank(c.args[0]) or _from_rank(ctx, c.args[0])) for c in seeds):
        return
    for call in seeds:
        if call.args and isinstance(call.args[0], ast.Constant | ast.Name | ast.Attribute):
            yield call, "every rank seeds with the same value; use seed + rank for data randomness", []
            return


@lint_rule("LNT016")
def batchnorm_without_sync(ctx: FileContext) -> Iterator[Hit]:
    """A ``torch.nn.BatchNorm1d/2d/3d`` built in a file that also wraps a model in DDP and never mentions
    SyncBatchNorm."""
    if not ctx.has_call(DDP):
        return
    for node in ctx.nodes:
        if isinstance(node, ast.Attribute | ast.Name) and "SyncBatchNorm" in (ctx.qualname(node) or ""):
            return
        if isinstance(node, ast.Attribute) and node.attr == "convert_sync_batchnorm":
            return
    for call in ctx.calls_to("torch.nn.BatchNorm1d", "torch.nn.BatchNorm2d", "torch.nn.BatchNorm3d"):
        yield call, "BatchNorm in a DDP model normalises per rank; consider SyncBatchNorm", []
        return
