"""NCCL / CUDA environment rules (family NCL)."""
from __future__ import annotations

import difflib

from gpudoctor.compat import data
from gpudoctor.rules.engine import NotAssessed, rule

ENV_URL = "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/env.html"
TORCH_ENV_URL = "https://pytorch.org/docs/stable/torch_nccl_environment_variables.html"


def p2p_off_settings(env: dict) -> list[str]:
    """The settings in ``env`` that turn NCCL's P2P transport off (NCCL_P2P_DISABLE=1, NCCL_P2P_LEVEL=LOC/0)."""
    off = []
    if env.get("NCCL_P2P_DISABLE", "").strip() == "1":
        off.append("NCCL_P2P_DISABLE=1")
    if env.get("NCCL_P2P_LEVEL", "").strip().upper() in ("LOC", "0"):
        off.append(f"NCCL_P2P_LEVEL={env['NCCL_P2P_LEVEL']}")
    return off


def _nccl():
    return data.load("nccl_env")


@rule("NCL001", "NCCL & environment", "warning", "NCCL algorithm or protocol forced",
      ok="NCCL algorithm and protocol left to NCCL's tuner",
      why="NCCL's tuner picks the algorithm (Ring, Tree, NVLS, ...) and protocol (LL, LL128, Simple) per message "
          "size and topology. Forcing one (the 'golden settings' of old guides) overrides that choice for every "
          "size and usually costs bandwidth; the NCCL guide discourages setting NCCL_PROTO and warns that forcing "
          "LL128 where unsupported can corrupt data.",
      fix="Unset NCCL_ALGO and NCCL_PROTO (keep them only for a measured, documented case).",
      sources=[ENV_URL, "checklist H12"])
def forced_algo(ctx):
    """Flags NCCL_ALGO and NCCL_PROTO when set."""
    env = ctx.env()
    for name in ("NCCL_ALGO", "NCCL_PROTO"):
        if name in env:
            yield ctx.finding([f"{name}={env[name]}"], subject=name, remedy=f"unset {name}")


@rule("NCL002", "NCCL & environment", "warning", "Obsolete NCCL variable",
      ok='no obsolete NCCL variable',
      why="Variables removed or renamed in NCCL are silently ignored (or only partly honoured), so the setting "
          "the script relies on is not in effect.",
      fix="Use the current name given below, or drop the variable.",
      sources=[ENV_URL, "checklist H12"])
def obsolete(ctx):
    """Flags obsolete or renamed NCCL_* variables, with their replacement."""
    env = ctx.env()
    table = _nccl()["obsolete"]
    for name in sorted(env):
        if name in table:
            yield ctx.finding([f"{name}={env[name]}: obsolete; use {table[name]}"], subject=name,
                              remedy=f"unset {name}; use {table[name]}")


@rule("NCL003", "NCCL & environment", "warning", "Unknown (misspelled?) NCCL variable",
      ok='no unknown NCCL variable',
      why="NCCL ignores variables it does not know, so a typo silently leaves the default in place.",
      fix="Correct the name (closest documented name shown) or remove it.",
      sources=[ENV_URL, "checklist H12"])
def unknown(ctx):
    """Flags NCCL_* names not documented by NCCL (nor obsolete, nor PyTorch's old aliases), suggesting the closest."""
    env = ctx.env()
    d = _nccl()
    known = set(d["known"]) | set(d["obsolete"]) | set(d["torch_renamed"]) | set(d.get("image_metadata", []))
    for name in sorted(env):
        if name.startswith("NCCL_") and name not in known:
            close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.75)
            hint = f"; did you mean {close[0]}?" if close else ""
            yield ctx.finding([f"{name}={env[name]}: not a documented NCCL variable{hint}"], subject=name,
                              remedy=f"rename to {close[0]}" if close else f"unset {name}",
                              data={"suggestion": close[0] if close else None})


@rule("NCL004", "NCCL & environment", "warning", "PyTorch NCCL variable under its old name",
      ok='no deprecated PyTorch NCCL variable name',
      why="PyTorch renamed its ProcessGroupNCCL variables with a TORCH_ prefix (e.g. NCCL_ASYNC_ERROR_HANDLING -> "
          "TORCH_NCCL_ASYNC_ERROR_HANDLING); the old names are deprecated aliases that newer releases warn about "
          "and will drop.",
      fix="Rename the variable as shown.",
      sources=[TORCH_ENV_URL, "checklist H13"])
def torch_renamed(ctx):
    """Flags NCCL_ASYNC_ERROR_HANDLING and the other deprecated PyTorch aliases."""
    env = ctx.env()
    table = _nccl()["torch_renamed"]
    for name in sorted(env):
        if name in table:
            yield ctx.finding([f"{name}={env[name]}: deprecated alias of {table[name]}"], subject=name,
                              remedy=f"export {table[name]}={env[name]}; unset {name}")


@rule("NCL005", "NCCL & environment", "warning", "NCCL debugging variable set",
      ok='no NCCL debugging variable set',
      why="The NCCL guide lists these as debugging variables that 'should not be used in production nor retained "
          "in scripts' because they force slower paths or may cause crashes or hangs. NCCL_P2P_DISABLE and "
          "NCCL_SHM_DISABLE left over from a debugging session are a classic cause of '2 GPUs not faster than 1'.",
      fix="Unset it unless a measured problem needs it.",
      sources=[ENV_URL, "checklist H12"])
def debug_vars(ctx):
    """Flags the NCCL debugging-only variables (P2P/SHM disable, buffer and thread overrides)."""
    env = ctx.env()
    table = _nccl()["debug_only"]
    for name in sorted(env):
        if name in table and not (name.endswith("_DISABLE") and env[name].strip() in ("0", "")):
            yield ctx.finding([f"{name}={env[name]}: {table[name]}"], subject=name, remedy=f"unset {name}")


@rule("NCL006", "NCCL & environment", "warning", "CUDA_LAUNCH_BLOCKING=1",
      ok='CUDA_LAUNCH_BLOCKING not set',
      why="It makes every kernel launch synchronous: useful to locate an error, much slower for training, and it "
          "serialises DDP's overlap of communication with backward.",
      fix="unset CUDA_LAUNCH_BLOCKING",
      sources=["https://pytorch.org/docs/stable/notes/cuda.html#asynchronous-execution", "checklist H12"])
def launch_blocking(ctx):
    """Flags CUDA_LAUNCH_BLOCKING set to 1."""
    env = ctx.env()
    if env.get("CUDA_LAUNCH_BLOCKING", "").strip() == "1":
        yield ctx.finding(["CUDA_LAUNCH_BLOCKING=1"], subject="CUDA_LAUNCH_BLOCKING")


@rule("NCL007", "NCCL & environment", "warning", "NCCL peer-to-peer disabled on GPUs joined by NVLink",
      ok="NCCL P2P not disabled on NVLink-connected GPUs",
      why="NCCL_P2P_DISABLE=1 or NCCL_P2P_LEVEL=LOC (0) forbids the P2P transport, so GPUs that share NVLink (or an "
          "NVSwitch) exchange data through host memory (SHM) instead: all-reduce bus bandwidth falls from hundreds "
          "of GB/s to a few tens.",
      fix="Unset NCCL_P2P_DISABLE and NCCL_P2P_LEVEL (let NCCL choose); confirm in an NCCL_DEBUG=INFO log that "
          "channels use 'via P2P/...' and with nccl-tests all_reduce_perf.",
      sources=[ENV_URL, "https://github.com/NVIDIA/nccl-tests/issues/228", "checklist H7, H12"])
def p2p_off_on_nvlink(ctx):
    """Flags NCCL_P2P_DISABLE=1 / NCCL_P2P_LEVEL=LOC when GPUs are joined by NVLink: from NVML's (or
    `nvidia-smi nvlink -s`) NVLink state when known, else from NV# links in the `nvidia-smi topo -m` matrix."""
    off = p2p_off_settings(ctx.env())
    if not off:
        return
    remedy = "unset " + " ".join(o.split("=")[0] for o in off)
    nv = ctx.snap.nvml
    if nv is not None and any(g.nvlinks for g in nv.gpus):
        gpus = ctx.gpus_with("nvlinks")
        linked = [g for g in gpus if any(link.active for link in g.nvlinks)]
        if len(linked) >= 2:
            ev = [f"{', '.join(off)}: P2P transport disabled"]
            for g in linked[:4]:
                act = [link for link in g.nvlinks if link.active]
                speed = f" at {act[0].speed_gbps:g} GB/s each" if act and act[0].speed_gbps else ""
                ev.append(f"GPU {g.index} {g.name or ''}: {len(act)} active NVLinks{speed}")
            yield ctx.finding(ev, remedy=remedy, data={"settings": off, "nvlink_gpus": [g.index for g in linked]})
        return
    topo = ctx.snap.topology
    if topo is None or topo.matrix is None:
        raise NotAssessed("NVLink state not in the facts (give `nvidia-smi nvlink -s` or `nvidia-smi topo -m`)")
    from gpudoctor.facts import topology as T
    from gpudoctor.rules.topology import _multi_gpu

    groups = T.nvlink_components(topo, _multi_gpu(ctx, topo))
    joined = [g for g in groups if len(g) > 1]
    if joined:
        yield ctx.finding(
            [
                f"{', '.join(off)}: P2P transport disabled",
                f"nvidia-smi topo -m NVLink groups: {' | '.join(','.join(map(str, sorted(g))) for g in joined)}",
            ],
            remedy=remedy,
            data={"settings": off, "nvlink_groups": [sorted(g) for g in joined]},
        )


# ------------------------------------------------------------------ NCCL / launcher variable parsing

def multi_node(env: dict[str, str]) -> bool | None:
    """True when the launcher's variables say the job spans nodes (WORLD_SIZE > LOCAL_WORLD_SIZE,
    SLURM_NNODES / SLURM_JOB_NUM_NODES > 1); False when they say one node; None when unknown."""
    def num(name):
        try:
            return int(env[name])
        except (KeyError, ValueError):
            return None

    ws, lws = num("WORLD_SIZE"), num("LOCAL_WORLD_SIZE")
    nodes = num("SLURM_NNODES") or num("SLURM_JOB_NUM_NODES")
    if (ws and lws and ws > lws) or (nodes and nodes > 1):
        return True
    if (ws and lws and ws <= lws) or nodes == 1:
        return False
    return None


def _socket_if_match(spec: str, names: list[str]) -> tuple[bool, list[str], list[str]]:
    """NCCL_SOCKET_IFNAME semantics (NCCL env docs): comma-separated prefixes; '^' excludes; '=' exact match.
    Returns (exclude mode, interfaces selected, entries matching nothing)."""
    s = spec.strip()
    exclude = s.startswith("^")
    if exclude:
        s = s[1:]
    exact = s.startswith("=")
    if exact:
        s = s[1:]
    entries = [e.strip() for e in s.split(",") if e.strip()]
    def hit(e, n):
        return n == e if exact else n.startswith(e)
    dead = [e for e in entries if not any(hit(e, n) for n in names)]
    if exclude:
        selected = [n for n in names if not any(hit(e, n) for e in entries)]
    else:
        selected = [n for n in names if any(hit(e, n) for e in entries)]
    return exclude, selected, dead
