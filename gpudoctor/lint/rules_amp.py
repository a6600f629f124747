"""Lint rules for mixed precision (L11): deprecated ``torch.cuda.amp``, GradScaler with bf16, clipping a
scaled gradient; with the mechanical --fix of the deprecated calls.

Sources: ../shared/docs/seed-checklists.md L11; https://pytorch.org/docs/stable/amp.html;
https://pytorch.org/docs/stable/notes/amp_examples.html#gradient-clipping
"""
from __future__ import annotations

import ast
from collections.abc import Iterator

from gpudoctor.lint.context import FileContext, is_true, target_name
from gpudoctor.lint.model import Edit
from gpudoctor.lint.registry import Hit, lint_rule

AUTOCAST_OLD, SCALER_OLD = "torch.cuda.amp.autocast", "torch.cuda.amp.GradScaler"
AUTOCAST_PARAMS = ("enabled", "dtype", "cache_enabled")  # torch.cuda.amp.autocast's positional order


def _root(node: ast.expr) -> ast.Name | None:
    while isinstance(node, ast.Attribute):
        node = node.value
    return node if isinstance(node, ast.Name) else None


def _fix(ctx: FileContext, call: ast.Call, old: str) -> list[Edit]:
    """The replacement call text, or no edit when it could change behaviour or cannot be written exactly:
    the call is not spelled ``<torch>.cuda.amp.X`` (a ``from ... import``), has ``*args``/``**kwargs``, or the
    file changes the autocast defaults (``set_autocast_dtype``/``set_autocast_cache_enabled``: torch.autocast
    reads them where torch.cuda.amp.autocast passed float16 / True)."""
    root = _root(call.func)
    if (root is None or ctx.imports.get(root.id) != "torch" or not isinstance(call.func, ast.Attribute)
            or FileContext.opaque(call) or call.end_lineno is None or call.end_col_offset is None):
        return []
    if {"set_autocast_dtype", "set_autocast_cache_enabled"} & ctx.attr_calls:
        return []
    seg = [ast.get_source_segment(ctx.source, a) for a in call.args]
    kws = [ast.get_source_segment(ctx.source, k) for k in call.keywords]
    if any(s is None for s in seg + kws) or len(call.args) > 5:
        return []
    if old == AUTOCAST_OLD:
        if len(call.args) > 3:
            return []
        args = [f"{p}={s}" for p, s in zip(AUTOCAST_PARAMS, seg, strict=False)] + [k or "" for k in kws]
        text = f'{root.id}.autocast("cuda"' + "".join(", " + a for a in args) + ")"
    else:
        text = f'{root.id}.amp.GradScaler("cuda"' + "".join(", " + (a or "") for a in seg + kws) + ")"
    return [Edit(call.lineno, call.col_offset, call.end_lineno, call.end_col_offset, text)]


@lint_rule("LNT017")
def deprecated_amp(ctx: FileContext) -> Iterator[Hit]:
    """A call of ``torch.cuda.amp.autocast``, ``GradScaler``, ``custom_fwd`` or ``custom_bwd`` (any import
    spelling); the first two are fixable when spelled as an attribute of the torch module."""
    for call, q in ctx.calls:
        if not (q or "").startswith("torch.cuda.amp.") or ctx.in_version_branch(call):
            continue  # in_version_branch: the old spelling kept on purpose for old PyTorch versions
        if q in (AUTOCAST_OLD, SCALER_OLD):
            new = 'torch.autocast("cuda", ...)' if q == AUTOCAST_OLD else 'torch.amp.GradScaler("cuda", ...)'
            yield call, f"{q} is deprecated; use {new}", _fix(ctx, call, q)
        elif q in ("torch.cuda.amp.custom_fwd", "torch.cuda.amp.custom_bwd"):
            yield call, f"{q} is deprecated; use torch.amp.{q.rsplit('.', 1)[1]}(device_type='cuda')", []


@lint_rule("LNT018")
def scaler_with_bf16(ctx: FileContext) -> Iterator[Hit]:
    """An autocast whose ``dtype`` is literally ``torch.bfloat16`` and no autocast with another dtype in the
    file, plus a GradScaler whose ``enabled`` is absent or literally True."""
    dtypes = []
    for call in ctx.calls_to("torch.autocast", AUTOCAST_OLD):
        d = FileContext.arg(call, "dtype", 1)  # 2nd positional in both signatures
        dtypes.append(ctx.qualname(d) if d is not None else None)
    if not dtypes or any(d != "torch.bfloat16" for d in dtypes):
        return
    for call in ctx.calls_to(SCALER_OLD, "torch.amp.GradScaler"):
        enabled = FileContext.arg(call, "enabled")
        if (enabled is None or is_true(enabled)) and not FileContext.opaque(call):
            yield call, "GradScaler with bf16 autocast: loss scaling is not needed for bfloat16", []


def _scaled_backwards(scope: ast.AST) -> list[tuple[str, int]]:
    """(scaler name, line) of every ``scaler.scale(loss).backward()`` in ``scope``."""
    out = []
    for n in ast.walk(scope):
        if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "backward"
                and isinstance(n.func.value, ast.Call) and isinstance(n.func.value.func, ast.Attribute)
                and n.func.value.func.attr == "scale"):
            name = target_name(n.func.value.func.value)
            if name:
                out.append((name, n.lineno))
    return out


@lint_rule("LNT019")
def clip_scaled(ctx: FileContext) -> Iterator[Hit]:
    """``torch.nn.utils.clip_grad_norm_/clip_grad_value_`` after a ``scaler.scale(loss).backward()`` in the same
    function, with no ``scaler.unscale_(...)`` between them."""
    for clip in ctx.calls_to("torch.nn.utils.clip_grad_norm_", "torch.nn.utils.clip_grad_value_"):
        scope = ctx.function_of(clip) or ctx.tree
        for scaler, line in _scaled_backwards(scope):
            if line > clip.lineno:
                continue
            unscales = [n for n in ast.walk(scope) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                        and n.func.attr == "unscale_" and target_name(n.func.value) == scaler]
            bws = [n for n in ast.walk(scope) if isinstance(n, ast.Call) and getattr(n, "lineno", 0) == line
                   and isinstance(n.func, ast.Attribute) and n.func.attr == "backward"]
            if bws and ctx.exclusive(bws[0], clip):
                continue  # e.g. `if use_amp: scaler.scale(loss).backward() ... else: loss.backward(); clip(...)`
            if not any(line <= u.lineno <= clip.lineno for u in unscales):
                yield clip, f"clipping the scaled gradients: call {scaler}.unscale_(optimizer) before clipping", []
                break
