"""NCCL / CUDA environment rules (family NCL)."""
from __future__ import annotations

import difflib

from gpudoctor.compat import data
from gpudoctor.compat.versions import vtuple
from gpudoctor.rules.engine import NotAssessed, rule


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


def _listed(ctx, table: str) -> list[tuple[str, str, str]]:
    """(name, value, the table's entry) for each environment variable named in rules/nccl_env.toml's ``table``."""
    env = ctx.env()
    entries = _nccl()[table]
    return [(name, env[name], entries[name]) for name in sorted(env) if name in entries]


@rule("NCL001")
def forced_algo(ctx):
    """Flags NCCL_ALGO and NCCL_PROTO when set; a value NCCL's parser refuses (an unknown algorithm, protocol or
    collective prefix: :func:`gpudoctor.rules.env_values.nccl_list_problems`) is an error when the NCCL in use is
    2.24 or newer (init fails with ncclInvalidUsage), a warning when its version is unknown or older (ignored)."""
    from gpudoctor.rules.env_values import NCCL_STRICT_LISTS, nccl_list_problems

    env = ctx.env()
    version = nccl_in_use(ctx.snap)
    nccl = vtuple(version) if version else None
    for name in ("NCCL_ALGO", "NCCL_PROTO"):
        if name not in env:
            continue
        bad = nccl_list_problems(name, env[name])
        if not bad:
            yield ctx.finding([f"{name}={env[name]}"], subject=name, remedy=f"unset {name}")
            continue
        strict = nccl is not None and nccl[:2] >= NCCL_STRICT_LISTS
        ev = [f"{name}={env[name]}", *bad,
              f"NCCL {version if nccl else '(version unknown)'}: from 2.24 NCCL refuses it ('Unrecognized "
              "element token', ncclInvalidUsage) when a communicator of 2 or more ranks starts; older NCCL ignores it",
              "a one-GPU run does not show it: NCCL skips its tuner with one rank"]
        yield ctx.finding(ev, subject=name, severity="error" if strict else "warning",
                          title=f"{name} holds a value NCCL refuses",
                          remedy=f"Unset {name}, or use NCCL's names (NCCL env docs): e.g. {name}="
                                 + ("Ring,Tree" if name == "NCCL_ALGO" else "^LL128"),
                          data={"problems": bad, "nccl": version if nccl else None})


@rule("NCL002")
def obsolete(ctx):
    """Flags obsolete or renamed NCCL_* variables, with their replacement."""
    for name, value, new in _listed(ctx, "obsolete"):
        yield ctx.finding([f"{name}={value}: obsolete; use {new}"], subject=name, remedy=f"unset {name}; use {new}")


@rule("NCL003")
def unknown(ctx):
    """Flags NCCL_* names neither documented by NCCL nor read by its sources (rules/nccl_env_names.toml, generated
    from NVIDIA/nccl's NCCL_PARAM / ncclGetEnv calls of every release since 2.10), nor obsolete, nor PyTorch's old
    aliases, suggesting the closest."""
    env = ctx.env()
    d = _nccl()
    known = set(d["known"]) | set(d["obsolete"]) | set(d["torch_renamed"]) | set(d.get("image_metadata", []))
    known |= set(data.load("nccl_env_names")["names"])
    for name in sorted(env):
        if name.startswith("NCCL_") and name not in known:
            close = difflib.get_close_matches(name, sorted(known), n=1, cutoff=0.75)
            hint = f"; did you mean {close[0]}?" if close else ""
            yield ctx.finding([f"{name}={env[name]}: not a documented NCCL variable{hint}"], subject=name,
                              remedy=f"rename to {close[0]}" if close else f"unset {name}",
                              data={"suggestion": close[0] if close else None})


@rule("NCL004")
def torch_renamed(ctx):
    """Flags NCCL_ASYNC_ERROR_HANDLING and the other deprecated PyTorch aliases."""
    for name, value, new in _listed(ctx, "torch_renamed"):
        yield ctx.finding([f"{name}={value}: deprecated alias of {new}"], subject=name,
                          remedy=f"export {new}={value}; unset {name}")


@rule("NCL005")
def debug_vars(ctx):
    """Flags the NCCL debugging-only variables (P2P/SHM disable, buffer and thread overrides). A framework's known
    workaround (rules/nccl_env.toml [workarounds]: NCCL_CUMEM_ENABLE=0 for NCCL 2.19-2.22.2) is information while the
    NCCL in use (collect_env / the report's torch facts) still needs it or is unknown, a warning once it is fixed."""
    from gpudoctor.rules.env_values import misread, nccl_integers

    workarounds = _nccl().get("workarounds", {})
    integers = nccl_integers()
    for name, value, what in _listed(ctx, "debug_only"):
        read = misread(value) if name in integers else None
        if name.endswith("_DISABLE") and read == 0:
            continue  # NCCL reads true / yes / 08 as 0: nothing is disabled (NCL013 says so)
        if not (name.endswith("_DISABLE") and value.strip() in ("0", "")):
            ev = [f"{name}={value}: {what}"]
            if name in PATH_LEVEL_VARS and not valid_path_level(value):
                ev.append(f"'{value}' is not a level NCCL reads ({', '.join(PATH_LEVELS)}, or a number): NCCL "
                          "ignores the variable without a warning")
            known = workarounds.get(name)
            if known and value.strip() == known["value"]:
                yield _workaround(ctx, name, value, known, ev)
                continue
            yield ctx.finding(ev, subject=name, remedy=f"unset {name}")


def nccl_in_use(snap) -> str | None:
    """The NCCL version the inputs show for the job: torch's (collect_env / a report's probe), else the NCCL log's
    banner ("NCCL version 2.27.3+cuda12.8" -> "2.27.3"), else the nvidia-nccl-cu* wheel of a pip list; None."""
    t = snap.torch
    if t is not None and t.nccl_version:
        return t.nccl_version
    logs = snap.logs
    if logs is not None and logs.nccl is not None and logs.nccl.version:
        return logs.nccl.version.split("+")[0]
    wheels = t.nvidia_wheels if t is not None else {}
    return next((v for k, v in sorted(wheels.items()) if k.startswith("nvidia-nccl-cu")), None)


def _workaround(ctx, name: str, value: str, known: dict, ev: list[str]):
    """NCL005's finding for a framework's workaround of an NCCL bug fixed in ``known["fixed_in"]``."""
    version = nccl_in_use(ctx.snap)
    nccl = vtuple(version) if version else None
    fixed = known["fixed_in"]
    needed = vtuple(fixed) or (0,)
    ev += [f"a known workaround: {known['why']}", f"its cost: {known['cost']}"]
    sources = [known["source"], *ctx.spec.sources]
    since = known.get("default_from")
    if nccl is not None and since and nccl < (vtuple(since) or (0,)):
        ev.append(f"NCCL {version} is older than {since}, which does not use cuMem by default: the setting changes "
                  "nothing here")
        return ctx.finding(ev, subject=name, severity="info", sources=sources,
                           remedy=f"Nothing to do with NCCL {version}; keep {name}={value} only if the job moves to "
                                  f"an NCCL from {since} up to before {fixed} (it has the fix)")
    if nccl is not None and nccl >= needed:
        ev.append(f"NCCL {version} is {fixed} or newer: the workaround is no longer needed")
        return ctx.finding(ev, subject=name, remedy=f"unset {name} (NCCL {version} has the fix)",
                           sources=sources)
    have = f"NCCL {version} is older than {fixed}" if nccl else "the NCCL version is not in the inputs"
    ev.append(f"{have}: keep it only where the framework needs it")
    return ctx.finding(ev, subject=name, severity="info", sources=sources,
                       remedy=f"keep {name}={value} with NCCL older than {fixed}; upgrade NCCL (a newer torch wheel "
                              f"or nvidia-nccl-cu12 >= {fixed}) and unset it")


#: NCCL's path types in order (src/graph/topo.cc topoPathTypeStr, v2.28; older releases have a subset) up to SYS:
#: ncclGetLevel (src/graph/paths.cc) compares NCCL_P2P_LEVEL / NCCL_NET_GDR_LEVEL with them case-sensitively, or
#: reads a leading digit as an old-style level; anything else leaves the variable unset, silently
PATH_LEVELS = ("LOC", "NVL", "NVB", "C2C", "PIX", "PXB", "P2C", "PXN", "PHB", "SYS")
PATH_LEVEL_VARS = ("NCCL_P2P_LEVEL", "NCCL_NET_GDR_LEVEL")


def valid_path_level(value: str) -> bool:
    """Whether ncclGetLevel accepts ``value`` (exact name, or a leading digit)."""
    return value in PATH_LEVELS or value[:1].isdigit()


@rule("NCL006")
def launch_blocking(ctx):
    """Flags CUDA_LAUNCH_BLOCKING set to 1."""
    env = ctx.env()
    if env.get("CUDA_LAUNCH_BLOCKING", "").strip() == "1":
        yield ctx.finding(["CUDA_LAUNCH_BLOCKING=1"], subject="CUDA_LAUNCH_BLOCKING")


@rule("NCL007")
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
