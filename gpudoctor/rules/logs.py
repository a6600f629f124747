"""Logs & errors rules: the signature catalogue (family SIG, one rule per entry of rules/signatures.toml)
and rules on parsed log facts (family LOG: inputs, XID events, GPU Direct RDMA, container launches).

They judge only text given to ``gpudoctor check``; in a live scan (no logs) they do not apply.
"""
from __future__ import annotations

import os
import re
import string
from typing import TYPE_CHECKING

from gpudoctor.compat import data
from gpudoctor.compat.versions import vtuple
from gpudoctor.facts.findings import SEVERITY_ORDER
from gpudoctor.parsers._text import clip, size_bytes
from gpudoctor.parsers.commands import docker_gpu_request
from gpudoctor.parsers.hit_origin import describe
from gpudoctor.rules.engine import NotApplicable, NotAssessed, define, rule

if TYPE_CHECKING:
    from gpudoctor.facts.model import Snapshot

AREA = "Logs & errors"
NO_LOGS = "no log or error text among the inputs (pass them to `gpudoctor check`)"
# Xids the driver logs while cleaning up after another fault (43: channel stopped after an application fault,
# 45: preemptive removal after other errors or a killed process): attached to the cause on the same GPU.
FOLLOW_ON_XIDS = (43, 45)
#: Xids that classify the fault another Xid of the same GPU reported: a double-bit ECC error (48) is then reported
#: contained to one application (94) or not (95) -- one memory error, listed in the 48's finding (NVIDIA Xid
#: catalogue: Xid 94 / 95 on A100 and later accompany the ECC error)
SAME_FAULT = {94: 48, 95: 48}


def _logs(ctx):
    if ctx.snap.logs is None:
        raise NotApplicable(NO_LOGS)
    return ctx.snap.logs


#: the id a signature lists in ``follows`` (rules/signatures.toml) for "an Xid that blames the hardware": the CUDA
#: errors a process gets when its GPU fails under it (unspecified launch failure, ECC, NCCL's failed CUDA call) are
#: reported inside that Xid's LOG001 finding
XID_CAUSE = "LOG001"


#: the host a kernel-log line names: journald / syslog ("Dec 04 14:02:10 node-b kernel: NVRM: ...")
_KERNEL_HOST = re.compile(r"^(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\S+) (\S+) kernel: ")


def gpu_keys(logs) -> dict[int, str]:
    """index in logs.xids -> the GPU it names: its PCI address, and when the inputs hold the kernel logs of several
    hosts (the hosts journald names, else one file per host) the host too ("0000:9a:00 on node-b"): every node of a
    job has a GPU at the same address, which is not one GPU."""
    hosts = []
    for x in logs.xids:
        m = _KERNEL_HOST.match(x.line)
        hosts.append(m.group(1) if m else os.path.basename(x.file) if x.file else "")
    several = len(set(hosts)) > 1
    return {i: (x.pci_bus_id or "?") + (f" on {hosts[i]}" if several and hosts[i] else "")
            for i, x in enumerate(logs.xids)}


def hardware_xids(logs) -> list[tuple[int, str]]:
    """(Xid, PCI bus id) of the kernel log's Xids that are errors blamed on the GPU, the node, the fabric or the
    driver (rules/xid.toml): the failures CUDA errors of the same inputs follow from. Application Xids (13, 31, 43,
    45, 94) are not: they are the kernel's echo of a fault the application made."""
    table = data.load("xid").get("xid", {})
    out = []
    keys = gpu_keys(logs)
    for i, x in enumerate(logs.xids):
        entry = table.get(str(x.xid)) or {}
        if entry.get("severity") == "error" and entry.get("blame", "GPU") != "application":
            key = (x.xid, keys[i])
            if key not in out:
                out.append(key)
    return out


def _rendezvous_split(logs) -> bool:
    from gpudoctor.rules.launch import rendezvous_split

    return bool(rendezvous_split(logs))


#: rule ids a signature may list in ``follows``: the fact rules that conclude what its message is a consequence of
#: (an Xid blaming the hardware under the CUDA errors, hosts in different rendezvous under the rendezvous timeout),
#: each with the test of the logs that makes that rule fire
def _first_failure(logs) -> bool:
    from gpudoctor.rules.launch import first_failure

    return first_failure(logs, SEVERITIES) is not None


RULE_CAUSES = {XID_CAUSE: lambda logs: bool(logs.xids) and bool(hardware_xids(logs)), "LOG012": _rendezvous_split,
               "LOG013": _first_failure}


def _hit_ids(logs) -> set[str]:
    """Ids of the signatures that matched, plus those of RULE_CAUSES whose rule fires on these logs."""
    ids = {h.id for h in logs.signatures}
    ids.update(rid for rid, fires in RULE_CAUSES.items() if fires(logs))
    return ids


@rule("SIG000")
def unexplained(ctx):
    """Lists error-looking lines (Error, Exception, failed, WARN ...) of the given text that no signature matched."""
    if ctx.snap.logs is None:
        if not ctx.snap.inputs:  # a live scan: logs are not its input
            raise NotApplicable(NO_LOGS)
        raise NotAssessed(NO_LOGS)
    lines = ctx.snap.logs.error_lines
    if lines:
        yield ctx.finding(lines[:10], data={"lines": lines})


class _Blank(dict):
    """Format mapping that renders a missing or empty named group as nothing."""

    def __missing__(self, key: str) -> str:
        return ""


_SEGMENT = re.compile(r"\[\[(.*?)\]\]")  # an optional part of a conclusion: dropped when none of its groups matched


def _fields(template: str) -> set[str]:
    return {f for _, f, _, _ in string.Formatter().parse(template) if f}


def _conclusion(entry: dict, groups: dict[str, str]) -> str | None:
    """The entry's conclusion sentence with the first match's named groups filled in (None without one).

    ``conclusion`` is one template, or a list with one per message form: the first whose fields all matched."""
    template = entry.get("conclusion")
    if not template:
        return None
    values = {k: " ".join(v.split())[:160] for k, v in groups.items() if v}
    if isinstance(template, list):  # one per message form: the first whose required (non-[[optional]]) fields matched
        template = next((t for t in template if _fields(_SEGMENT.sub("", t)) <= values.keys()), None)
        if template is None:
            return None
    names = _fields(template)
    if names and not names & values.keys():
        return None  # the match carried none of the facts the sentence needs
    text = _SEGMENT.sub(lambda m: m.group(1) if _fields(m.group(1)) & values.keys() else "", template)
    text = text.format_map(_Blank(values)).strip()  # optional parts may start with the space that separates them
    if entry["id"] == "SIG057":
        text += _cuda_error_note(groups)
    if groups.get("sxid"):
        text += _sxid_note(groups["sxid"])
    return text


# CUresult names whose runtime (cudaError_t) counterpart is not the CamelCase of the name
_CU_ALIASES = {"CUDA_ERROR_NOT_INITIALIZED": "3", "CUDA_ERROR_OUT_OF_MEMORY": "2", "CUDA_ERROR_INVALID_CONTEXT": "201",
               "CUDA_ERROR_LAUNCH_FAILED": "719", "CUDA_ERROR_INVALID_HANDLE": "400", "CUDA_ERROR_NOT_FOUND": "500",
               "CUDA_ERROR_DEINITIALIZED": "4", "CUDA_ERROR_INVALID_IMAGE": "200",
               "CUDA_ERROR_NO_BINARY_FOR_GPU": "209", "CUDA_ERROR_CONTEXT_ALREADY_IN_USE": "216"}


def _cuda_error_note(groups: dict[str, str]) -> str:
    """For the generic CUDA error: the cudaError_t behind the message, from rules/cuda_errors.toml. A driver API
    CUresult name (CUDA_ERROR_NO_DEVICE) is mapped to its runtime twin (cudaErrorNoDevice, same code)."""
    table = data.load("cuda_errors").get("error", {})
    msg = (groups.get("cuda_error") or "").strip().rstrip(".").lower()
    name = (groups.get("cuda_name") or "").lower()
    code = groups.get("code") or groups.get("code2") or ""
    cu = groups.get("cu_name") or ""
    if cu:
        code = code or _CU_ALIASES.get(cu, "")
        name = name or "cudaerror" + cu.removeprefix("CUDA_ERROR_").replace("_", "").lower()
    for num, e in table.items():
        if (msg and e["message"].rstrip(".").lower() == msg) or (name and e["name"].lower() == name) or code == num:
            return f" (cudaError_t {num}, {e['name']}: '{e['message']}')"
    return ""


def _sxid_note(sxid: str) -> str:
    """For an NVSwitch SXid: its enum name and switch unit, from rules/sxid.toml (open-gpu-kernel-modules)."""
    table = data.load("sxid")
    entry = table.get("sxid", {}).get(str(int(sxid)))
    unit = table.get("unit", {}).get(str(int(sxid) // 1000))
    parts = [p for p in ((entry or {}).get("name"), f"unit: {unit}" if unit else None) if p]
    return f" ({'; '.join(parts)})" if parts else ""


#: a Python exception line as a traceback ends ("ValueError: ...", "torch.OutOfMemoryError: ...", "[rank3]: ...")
_EXCEPTION_LINE = re.compile(
    r"^\s*(?:\[(?:rank|default)\d+\]:\s*)?(?:[A-Za-z_][\w.]*\.)?[A-Z]\w*(?:Error|Exception)\b:")
_NET_VARS = ("NCCL_SOCKET_IFNAME", "GLOO_SOCKET_IFNAME", "MASTER_ADDR", "MASTER_PORT", "NCCL_IB_HCA",
             "NCCL_IB_GID_INDEX")
_NET_SIGS = {"SIG020", "SIG031", "SIG032", "SIG033", "SIG034", "SIG035", "SIG038", "SIG039", "SIG040", "SIG051"}
_GPU_SIGS = {"SIG010", "SIG015", "SIG046", "SIG060", "SIG065"}


def _root_exception(logs) -> str | None:
    """The first exception line of the logs that no signature explains (the failing rank's own error, when torchrun
    reports a ChildFailedError), or None."""
    return next((x for x in logs.error_lines if _EXCEPTION_LINE.match(x)), None)


def _context(entry: dict, snap: Snapshot) -> list[str]:
    """The other facts of the inputs that bear on this signature (versions, variables, GPU count), so that the
    finding concludes instead of echoing."""
    out: list[str] = []
    env = snap.env.variables if snap.env is not None else {}
    nvml, torch, logs = snap.nvml, snap.torch, snap.logs
    fam, sid = entry.get("family"), entry["id"]
    if fam in ("nccl", "c10d") and logs is not None and logs.nccl is not None and logs.nccl.version:
        out.append(f"NCCL {logs.nccl.version} (from the NCCL log)")
    if sid in _NET_SIGS:
        set_vars = [f"{k}={env[k]}" for k in _NET_VARS if k in env]
        if set_vars:
            out.append("network settings in the inputs: " + ", ".join(set_vars))
        elif env:
            out.append("NCCL_SOCKET_IFNAME is not set in the environment given: NCCL chose the interface itself")
        if logs is not None and logs.nccl is not None and logs.nccl.net:
            out.append(f"NCCL network in use: {logs.nccl.net}")
    if sid == "SIG050" and logs is not None:  # the root cause's own exception, when no signature explains it
        exc = _root_exception(logs)
        if exc is not None:
            out.append(f"the exception in the inputs that no signature explains (read it first): {clip(exc, 200)}")
    cmds = logs.commands if logs is not None else []
    if sid == "SIG008" and any(c.split()[:1] and c.split()[0] in ("docker", "podman", "nvidia-docker", "enroot",
                                                                   "singularity", "apptainer") for c in cmds):
        shm = any("--ipc=host" in c or "--shm-size" in c for c in cmds)
        net = any("--network=host" in c or "--net=host" in c or "--network host" in c for c in cmds)
        out.append("the job runs in a container: NCCL's system calls usually fail there on "
                   + "; ".join(x for x in ("" if shm else "/dev/shm (docker's 64 MB default: --ipc=host or "
                                            "--shm-size=16g)",
                                            "" if net else "the network between containers on different hosts "
                                            "(--network=host)",
                                            "locked memory for InfiniBand (--ulimit memlock=-1)") if x))
    if sid in _GPU_SIGS:
        if nvml is not None and nvml.gpus:
            out.append(f"GPUs on the host (nvidia-smi/NVML): {len(nvml.gpus)}")
        for k in ("CUDA_VISIBLE_DEVICES", "LOCAL_WORLD_SIZE", "WORLD_SIZE", "NVIDIA_VISIBLE_DEVICES"):
            if k in env:
                out.append(f"{k}={env[k]}")
        if logs is not None and logs.nccl is not None and logs.nccl.nranks:
            out.append(f"ranks in the NCCL communicator: {logs.nccl.nranks}")
        mig_env = "MIG-" in env.get("CUDA_VISIBLE_DEVICES", "") or any(
            "CUDA_VISIBLE_DEVICES=MIG-" in c for c in (logs.commands if logs is not None else []))
        if mig_env or (nvml is not None and any(g.mig_mode_current for g in nvml.gpus)):
            out.append("MIG is in use: a CUDA process enumerates at most one MIG instance (CUDA_VISIBLE_DEVICES "
                       "listing several MIG UUIDs still gives one device), and NCCL cannot run collectives between MIG "
                       "instances: run one single-GPU process per instance, or train on full GPUs")
    if fam in ("cuda", "container", "build", "nvidia-smi", "kernel"):
        parts = []
        if nvml is not None and nvml.driver_version:
            parts.append(f"driver {nvml.driver_version}"
                         + (f" (CUDA {nvml.cuda_driver_version} at most)" if nvml.cuda_driver_version else ""))
        if torch is not None and torch.version:
            cuda_known = "cuda" in snap.known_fields.get("torch", ["cuda"])
            parts.append(f"torch {torch.version}" + (f" (CUDA {torch.cuda})" if torch.cuda else
                                                     " (CPU build)" if cuda_known else ""))
        if parts:
            out.append("versions in the inputs: " + ", ".join(parts))
    return out


_WHEN = re.compile(r"^\s*(?:(major|size)\()?(\w+)\)?\s*(<|>|==|!=)\s*(?:(major|size)\()?(\w+)\)?\s*$")


def _when(expr: str, groups: dict[str, str]) -> bool:
    """A case's ``when``: "cc < min", "major(cc) > major(max)", "size(unalloc) > size(size)": two named groups
    compared as versions (6.0 < 7.0), major versions, or sizes ("737.00 MiB" > "546.00 MiB", units read by
    parsers/_text.size_bytes); False when either group did not match or cannot be read so."""
    m = _WHEN.match(expr)
    if m is None:
        raise ValueError(f"bad 'when' in rules/signatures.toml: {expr!r}")
    vals: list = []
    for fn, name in ((m.group(1), m.group(2)), (m.group(4), m.group(5))):
        raw = groups.get(name) or ""
        v = (size_bytes(raw),) if fn == "size" else vtuple(raw)
        if not v or v[0] is None:
            return False
        vals.append(v[:1] if fn == "major" else v)
    a, b = vals
    return {"<": a < b, ">": a > b, "==": a == b, "!=": a != b}[m.group(3)]


def _case(entry: dict, groups: dict[str, str], env: dict[str, str] | None = None,
          hit_ids: set[str] | frozenset[str] = frozenset(), gpus: int | None = None) -> dict | None:
    """The entry's first ``cases`` row that holds for this match: its named ``group``'s value (the errno, signal or
    device set the message printed; or the first present of a list of groups) fully matches its ``match`` regex
    (case-insensitive), its ``when`` comparison
    of two groups holds, and the variable it names in ``env`` is set in the inputs (``env``: the environment dump's
    variables and NCCL's 'set by environment' lines, see :func:`_input_env`), and one of the signatures in its
    ``hit`` matched too (``hit_ids``: a barrier warning followed by a hang is the hang's cause), and the inputs list
    at least ``min_gpus`` GPUs (``gpus``: nvidia-smi / NVML's count, None when unknown). That row's title / cause /
    remedy replace the entry's, since the value names the cause (errno 113 is a firewall, not a server that is not
    listening); {VAR} in them is the variable's value."""
    env = env or {}
    for c in entry.get("cases", ()):
        if "group" in c:  # one group, or a list of them (the alternatives of one message form): the first present
            names = c["group"] if isinstance(c["group"], list) else [c["group"]]
            value = next((" ".join(v.split()) for v in (groups.get(n) or "" for n in names) if v.strip()), "")
            if not value or not re.fullmatch(c["match"], value, re.IGNORECASE):
                continue
        if "when" in c and not _when(c["when"], groups):
            continue
        if c.get("unless") and groups.get(c["unless"]):
            continue
        if c.get("env") and not env.get(c["env"]):
            continue
        if c.get("hit") and not set(c["hit"]) & hit_ids:
            continue
        if c.get("min_gpus") and (gpus is None or gpus < c["min_gpus"]):
            continue
        if c.get("env") or c.get("min_gpus"):
            values = _Blank({"gpus": str(gpus)} | ({c["env"]: clip(env[c["env"]], 80)} if c.get("env") else {}))
            return {k: v.format_map(values) if k in ("title", "cause", "remedy") else v for k, v in c.items()}
        return c
    return None


def _worst_groups(entry: dict, hit, env: dict[str, str], hit_ids: set[str], gpus: int | None) -> dict[str, str]:
    """The groups of ``hit`` whose case is the most severe: its first match's (or NCCL's 'Last error:' copy), unless a
    later match's values read as a worse case (an HCA's 'local catastrophic error' after a 'port error')."""
    if not entry.get("cases") or not hit.group_variants:
        return hit.groups

    cases = entry["cases"]

    def rank(groups: dict[str, str]) -> tuple[int, int]:  # severity, then the earlier (more specific) case
        case = _case(entry, groups, env, hit_ids, gpus)
        order = next((n for n, c in enumerate(cases) if case is not None and c.get("title") == case.get("title")),
                     len(cases))
        return SEVERITY_ORDER[(case or {}).get("severity") or entry["severity"]], -order

    best = hit.groups
    for g in hit.group_variants:
        if rank(g) > rank(best):
            best = g
    return best


def _gpu_count(snap: Snapshot) -> int | None:
    """GPUs the inputs list (nvidia-smi -L / -q / NVML), None when they list none."""
    return len(snap.nvml.gpus) if snap.nvml is not None and snap.nvml.gpus else None


def _input_env(snap: Snapshot) -> dict[str, str]:
    """Environment variables the inputs show: an env dump's, then NCCL's 'NCCL_X set by environment to Y' lines."""
    out = dict(snap.env.variables) if snap.env is not None else {}
    logs = snap.logs
    if logs is not None and logs.nccl is not None:
        for k, v in logs.nccl.env_set.items():
            out.setdefault(k, v)
    return out


def _only_info(cause: str, hits, hit_ids: set[str]) -> bool:
    """Whether every hit of signature ``cause`` reads, through its ``cases``, as info: then it is not a problem
    and cannot be the cause of another error (an out-of-memory message listing one process, this job itself,
    does not absorb the out-of-memory finding; listing several does)."""
    entry = _BY_ID.get(cause)
    own = [h for h in hits if h.id == cause]
    if entry is None or not own or not entry.get("cases"):
        return False
    return all(((_case(entry, h.groups, None, hit_ids) or {}).get("severity") or entry["severity"]) == "info"
               for h in own)


def _suppressed(entry: dict, hit_ids: set[str], hits=()) -> tuple[bool, list[str]]:
    """Whether a hit of ``entry`` is reported inside another finding: its causes matched (``follows``; a cause
    that reads as info here does not count, :func:`_only_info`), it is a
    family's generic form (``fallback``) and a specific signature of that family matched, or it carries another
    error's text (``wraps``) and another signature matched on its first line (``hits``: every SignatureHit)."""
    causes = [c for c in entry.get("follows", []) if c in hit_ids and not _only_info(c, hits, hit_ids)]
    if causes:
        return True, causes
    if entry.get("fallback"):
        fam = _FAMILY.get(entry["id"])
        # only a specific signature hides a generic one: two generic forms on one line must not hide each other
        others = [h for h in hit_ids if h != entry["id"] and _FAMILY.get(h) == fam and h not in _FALLBACKS]
        if others:
            return True, sorted(others)
    if entry.get("wraps"):
        own = next((h for h in hits if h.id == entry["id"]), None)
        same = sorted({h.id for h in hits if own is not None and h.id != own.id and h.id not in _WRAPS
                       and h.first_line is not None and h.first_line == own.first_line
                       and h.files[:1] == own.files[:1]})
        # every line of it read by other signatures (the matcher's wrapped_by), or the same first line (a report
        # saved before schema 2.4)
        same = sorted(set(same) | {w for w in (own.wrapped_by if own is not None else []) if w in hit_ids})
        if same:
            return True, same
    return False, []


def _register_signature(entry: dict) -> None:
    sid = entry["id"]

    def check(ctx):
        logs = _logs(ctx)
        hit_ids = _hit_ids(logs)
        for hit in logs.signatures:
            if hit.id == sid:
                if _suppressed(entry, _cause_ids(entry, logs, hit_ids), logs.signatures)[0]:
                    return  # a follow-on: the cause's finding lists it
                ev = [f"matched ({describe(hit)}):"] + [f"  {line}" for line in hit.lines]
                groups = _worst_groups(entry, hit, _input_env(ctx.snap), hit_ids, _gpu_count(ctx.snap))
                concl = _conclusion(entry, groups)
                case = _case(entry, groups, _input_env(ctx.snap), hit_ids, _gpu_count(ctx.snap))
                if case and case.get("cause"):
                    ev.insert(0, case["cause"])
                if concl:
                    ev.insert(0, concl)
                ev[1 if concl else 0:1 if concl else 0] = _context(entry, ctx.snap)
                follow = [h for h in logs.signatures if h.id != sid and sid in _FOLLOWS.get(h.id, ())]
                for f in follow:
                    if f.lines and f.lines[0] in hit.lines:
                        ev.append(f"follow-on ({f.id}, {f.count}x): the same line, read by a more general signature")
                        continue
                    ev.append(f"follow-on ({f.id}, {f.count}x, caused by this): {f.lines[0] if f.lines else ''}")
                xids = kernel_record_lines(logs, sid) if entry.get("kernel_xids") and logs.xids else []
                ev += xids
                # `escalates`: a cause whose follow-on is an error is an error itself (a Fabric Manager warning that
                # left CUDA failing with 802 stopped the job); other causes keep theirs (a harmless race at exit)
                sev = max([(case or {}).get("severity", entry["severity"])]
                          + [_SEVERITY[f.id] for f in follow if entry.get("escalates")], key=SEVERITY_ORDER.__getitem__)
                if sid == "SIG050" and sev == "info" and _root_exception(logs) is not None:
                    sev = "warning"  # the job failed on an exception no signature explains: shown, not hidden
                if hit.from_prose:  # the writer quoting what they saw, no log pasted: a lead, not a verdict
                    sev = "warning" if sev == "error" else sev
                    ev.insert(0, "read from the writer's words (no log was pasted): check it against the log")
                yield ctx.finding(ev, severity=sev, title=(case or {}).get("title"), remedy=(case or {}).get("remedy"),
                                  data={"family": entry.get("family", ""), "count": hit.count,
                                                          "files": hit.files, "groups": hit.groups,
                                                          "ranks": hit.ranks, "hosts": hit.hosts, "gpus": hit.gpus,
                                                          "first_line": hit.first_line, "last_line": hit.last_line,
                                                          "first_time": hit.first_time,
                                                          "conclusion": concl, "follow_on": [f.id for f in follow]})

    check.__doc__ = f"Looks for this message in the given logs and error text (regular expression): {entry['regex']}"
    check.__name__ = f"signature_{sid.lower()}"
    facts = [r for r in entry.get("follows", ()) if not r.startswith("SIG") and r not in RULE_CAUSES]
    define(sid, AREA, entry["severity"], entry["title"], why=entry["cause"], fix=entry["remedy"],
         sources=entry.get("sources", []), ok=f"no '{entry['title']}' in the logs", follows=facts)(check)


_ENTRIES: list[dict] = list(data.load("signatures").get("signature", []))
_BY_ID: dict[str, dict] = {e["id"]: e for e in _ENTRIES}
_FAMILY: dict[str, str] = {e["id"]: e.get("family", "") for e in _ENTRIES}
_FOLLOWS: dict[str, tuple[str, ...]] = {e["id"]: tuple(e.get("follows", ())) for e in _ENTRIES}
_SEVERITY: dict[str, str] = {e["id"]: e["severity"] for e in _ENTRIES}
SEVERITIES = _SEVERITY  # signature id -> the catalogue's severity (rules/launch.py LOG013)
_FALLBACKS: frozenset[str] = frozenset(e["id"] for e in _ENTRIES if e.get("fallback"))
_WRAPS: frozenset[str] = frozenset(e["id"] for e in _ENTRIES if e.get("wraps"))


for _entry in _ENTRIES:
    _register_signature(_entry)


@rule("LOG000")
def inputs(ctx):
    """Reports the inputs of `gpudoctor check` that were recognised but could not be turned into facts."""
    if not ctx.snap.inputs:
        raise NotApplicable("no saved inputs (live scan)")
    if not any(i.status == "read" for i in ctx.snap.inputs):  # every format then says so (HTML, JUnit, JSON)
        yield ctx.finding([f"{i.path}: {i.status}: {i.reason}" for i in ctx.snap.inputs[:20]], severity="error",
                          title="No input could be read: nothing was diagnosed",
                          remedy="Pass the files `check` reads (gpudoctor check --help lists them); each line above "
                                 "says why its input was not read.", data={"inputs": len(ctx.snap.inputs)})
        return
    notes = [f"{i.path}: {i.note}" for i in ctx.snap.inputs if i.note and i.status == "read"]
    unavailable = [n for n in notes if "not available" in n]
    if unavailable and len(unavailable) == len(notes):
        raise NotAssessed("; ".join(unavailable))
    if notes:
        yield ctx.finding(notes, data={"notes": notes})


@rule("LOG001")
def xids(ctx):
    """Groups the kernel log's 'NVRM: Xid (PCI:...): N' lines by XID and GPU, with meaning and action per XID."""
    logs = _logs(ctx)
    if not logs.xids:
        if not logs.kernel_messages:
            raise NotAssessed("no kernel log (dmesg) among the inputs")
        return
    table = data.load("xid").get("xid", {})
    groups = xid_groups(logs)
    causes = {bus for (code, bus) in groups if code not in FOLLOW_ON_XIDS}
    hardware = hardware_xids(logs)
    placed = _place_follow_ons(follow_ons_of(logs, XID_CAUSE), hardware) if hardware else {}
    recorded = kernel_records(logs)
    if recorded and all(k in recorded or k[0] in FOLLOW_ON_XIDS for k in groups):
        owners = ", ".join(sorted(set(recorded.values())))
        raise NotApplicable(f"the kernel's Xids record the application fault {owners} reports (listed there)")
    broken = {b for _, b in hardware}  # GPUs with an Xid that blames the GPU / node / fabric / driver
    first_hardware: dict[str, tuple[int, str]] = {}
    for key in hardware:
        first_hardware.setdefault(key[1], key)

    def app_blamed(c: int) -> bool:
        return (table.get(str(c)) or {}).get("blame") == "application"

    for (code, bus), events in sorted(groups.items()):
        if (code, bus) in recorded:
            continue  # the kernel's record of an application fault a signature reports: listed in its finding
        if app_blamed(code) and bus in broken and (code, bus) not in hardware:
            continue  # a process's fault on a GPU that failed (Xid 31 after a 48): listed with the GPU's Xid
        entry = table.get(str(code))
        if code in FOLLOW_ON_XIDS and bus in causes:
            continue  # cleanup after the other Xid(s) of this GPU: reported with them
        if SAME_FAULT.get(code) is not None and (SAME_FAULT[code], bus) in groups:
            continue  # the classification of the ECC error the 48 of this GPU reported: listed there
        if entry:
            title = f"Xid {code} ({entry.get('mnemonic') or entry.get('published', '')}): {entry['meaning']}"
            sev, action = entry["severity"], entry["action"]
            blame = entry.get("blame", "GPU")
        else:
            title = f"Xid {code} (not in gpudoctor's table)"
            sev, action, blame = "warning", f"look up Xid {code} in NVIDIA's Xid catalogue", "unknown"
        if code == 154:  # the driver names the required action: it sets the severity and the fix
            sev, action = _recovery_action(events[-1].line, sev, action)
        fixed = _driver_fix((entry or {}).get("driver_fixed", ()), ctx.snap)
        if fixed is not None:  # a driver defect the release notes name: the driver, not the GPU, is to fix first
            blame, action = "driver", f"update the driver to {fixed[0]} or later ({fixed[1]}); then " + action
        if blame == "GPU" and sev == "error" and "RMA" not in action and code != 154:  # 154: the driver's own action
            action = HARDWARE_LADDER[2].upper() + HARDWARE_LADDER[3:] if _ONLY_RESET.match(action) else \
                action + HARDWARE_LADDER
        named = _KERNEL_HOST.match(events[0].line)
        host = bus.split(" on ", 1)[1] if " on " in bus else (named.group(1) if named else None)
        where = bus if " on " in bus or host is None else f"{bus} on {host}"
        ev = [f"{len(events)} event(s) on GPU {where}, blame: {blame}", f"first: {events[0].line}"]
        pids = {m.group(1) for x in events for m in [_PID.search(x.line)] if m}
        names = {m.group(1) for x in events for m in [_XID_NAME.search(x.line)] if m}
        if blame == "application" and sev != "info" and len(pids) >= 3 and len(names) != 1 and not any(
                c == code and b != bus for c, b in groups):  # (one name: one program restarted, not many programs)
            ev.append(f"{len(pids)} different processes hit Xid {code} on this GPU and on no other: a fault that "
                      "follows one GPU rather than one program points at the GPU (run `dcgmi diag -r 3` on it)")
        if len(events) > 1:
            ev.append(f"last: {events[-1].line}")
        follow = {c: len(groups[(c, bus)]) for c in FOLLOW_ON_XIDS if (c, bus) in groups and code not in FOLLOW_ON_XIDS}
        follow.update({c: len(groups[(c, bus)]) for c, cause in SAME_FAULT.items()
                       if cause == code and (c, bus) in groups})
        if first_hardware.get(bus) == (code, bus):  # the GPU's first hardware Xid lists its processes' Xids
            follow.update({c: len(groups[(c, b)]) for c, b in groups
                           if b == bus and app_blamed(c) and c not in FOLLOW_ON_XIDS and (c, b) not in recorded})
        if follow:
            ev.append("follow-on on the same GPU (cleanup after this error or its classification, not a separate "
                      "fault): "
                      + ", ".join(f"Xid {c} x{n}" for c, n in sorted(follow.items())))
        errors = placed.get((code, bus), [])
        ev += follow_on_lines(errors, "caused by this Xid")
        yield ctx.finding(ev, severity=sev, title=title, subject=f"GPU {where}", remedy=action,
                          data={"xid": code, "pci_bus_id": bus.split(" on ")[0], "host": host, "count": len(events),
                                "blame": blame,
                                "follow_on": follow, "follow_on_signatures": [h.id for h in errors]})


def xid_groups(logs) -> dict[tuple[int, str], list]:
    """(Xid, GPU key of :func:`gpu_keys`) -> that GPU's XidEvents of that Xid, in log order."""
    groups: dict[tuple[int, str], list] = {}
    keys = gpu_keys(logs)
    for i, x in enumerate(logs.xids):
        groups.setdefault((x.xid, keys[i]), []).append(x)
    return groups


#: the process an Xid line names ("NVRM: Xid (PCI:0000:18:00): 31, pid=4242, name=python, ..."; R525+)
_XID_NAME = re.compile(r"\bname=([^,\s]+)")
#: process names of a PyTorch job: the interpreter, or the thread torch names ("pt_main_thread", "pt_autograd_0")
_JOB_PROCESS = re.compile(r"(?i)python[\d.]*|pt_\w+|torchrun|ray::\S+")


def _app_xid_groups(logs, hit) -> dict[tuple[int, str], list]:
    """The Xid groups that record signature ``hit``'s fault: application-blamed (rules/xid.toml), one of its entry's
    ``kernel_xids``, hit by fewer than three processes (a fault that follows one GPU points at the GPU), and logged
    for a process of the job (no name, a Python / torch thread name, or a name its lines mention: nccl-tests'
    all_reduce_perf); another program's fault (name=other_job) is not this one's."""
    codes = (_BY_ID.get(hit.id) or {}).get("kernel_xids") or ()
    if not codes or not logs.xids:
        return {}
    table = data.load("xid").get("xid", {})
    said = " ".join(hit.lines)
    out = {}
    for (code, bus), events in xid_groups(logs).items():
        if code not in codes or (table.get(str(code)) or {}).get("blame") != "application":
            continue
        names = {m.group(1) for x in events for m in [_XID_NAME.search(x.line)] if m}
        if len({m.group(1) for x in events for m in [_PID.search(x.line)] if m}) >= 3 and len(names) != 1:
            continue  # (several programs; one name in all is one program restarted)
        if names and not any(_JOB_PROCESS.fullmatch(n) or n in said for n in names):
            continue
        out[(code, bus)] = events
    return out


def _cause_ids(entry: dict, logs, hit_ids: set[str]) -> set[str]:
    """``hit_ids`` as causes of ``entry``'s hits: without the hardware Xids (LOG001) when the kernel logged this
    very fault as the application's (Xid 31 / 13 of the job's process) on a GPU no hardware Xid names: an Xid 48 on
    another GPU did not cause it (one on the same GPU, or a GPU off the bus there, did)."""
    if XID_CAUSE in hit_ids and entry.get("kernel_xids"):
        own = next((h for h in logs.signatures if h.id == entry["id"]), None)
        broken = {bus for _, bus in hardware_xids(logs)}
        if own is not None and any(bus not in broken for _, bus in _app_xid_groups(logs, own)):
            return hit_ids - {XID_CAUSE}
    return hit_ids


def kernel_records(logs) -> dict[tuple[int, str], str]:
    """(Xid, GPU key) -> the id of the signature whose fault that Xid group records (:func:`_app_xid_groups`: the
    MMU fault, Xid 31, and graphics exception, Xid 13, the kernel logged for the CUDA error a process printed), for
    the signatures that matched and are reported on their own."""
    hit_ids = _hit_ids(logs)
    out: dict[tuple[int, str], str] = {}
    for h in logs.signatures:
        entry = _BY_ID.get(h.id, {})
        if not entry.get("kernel_xids") or _suppressed(entry, _cause_ids(entry, logs, hit_ids), logs.signatures)[0]:
            continue
        for key in _app_xid_groups(logs, h):
            out.setdefault(key, h.id)
    return out


def kernel_record_lines(logs, sid: str) -> list[str]:
    """Evidence for signature ``sid``: the Xid groups :func:`kernel_records` gives it, one line each."""
    table = data.load("xid").get("xid", {})
    groups = xid_groups(logs)
    out = []
    for (code, bus), owner in sorted(kernel_records(logs).items()):
        if owner == sid:
            entry = table.get(str(code)) or {}
            events = groups[(code, bus)]
            out.append(f"the kernel's record of this fault: Xid {code} ({entry.get('meaning', '')}) x{len(events)} on "
                       f"GPU {bus}: {events[0].line}")
    return out


def follow_ons_of(logs, rule_id: str) -> list:
    """The signature hits reported inside the finding of fact rule ``rule_id`` (one of RULE_CAUSES): those listing it
    in ``follows`` whose only matched cause it is, and that are not folded into another signature (a generic form,
    a wrapper), which lists them itself."""
    hit_ids = _hit_ids(logs)
    out = []
    for h in logs.signatures:
        entry = _BY_ID.get(h.id)
        if entry is None or rule_id not in entry.get("follows", ()):
            continue
        ids = _cause_ids(entry, logs, hit_ids)
        causes = _suppressed(entry, ids, logs.signatures)[1]
        if causes == [rule_id] and not _suppressed(entry, ids - {rule_id}, logs.signatures)[0]:
            out.append(h)
    return out


def _place_follow_ons(hits, hardware: list[tuple[int, str]]) -> dict[tuple[int, str], list]:
    """Each follow-on hit under one hardware Xid: the Xid of the GPU its lines name (a kernel line's PCI address),
    else the first hardware Xid of the inputs (an application's CUDA error names no PCI address)."""
    out: dict[tuple[int, str], list] = {}
    for h in hits:
        buses = {g.lower().split(".")[0] for g in h.gpus if ":" in g and "@" not in g}
        home = next((x for x in hardware if x[1].split(" on ")[0].lower().split(".")[0] in buses), hardware[0])
        out.setdefault(home, []).append(h)
    return out


def follow_on_lines(hits, why: str) -> list[str]:
    """Evidence lines for follow-on signature ``hits``: 'follow-on (SIG058, 2x, <why>): <first line>'."""
    return [f"follow-on ({h.id}, {h.count}x, {why}): {h.lines[0] if h.lines else ''}" for h in hits]


def _driver_fix(rows, snap) -> tuple[str, str] | None:
    """(first fixed release, note) of a ``driver_fixed`` row of rules/xid.toml whose branch is the driver's in the
    inputs (nvidia-smi, /proc/driver/nvidia/version) and whose fix that driver predates; None otherwise."""
    drv = snap.nvml.driver_version if snap.nvml is not None else None
    have = vtuple(drv or "")
    for branch, first, note in rows:
        fixed_in = vtuple(first)
        if have and fixed_in and str(have[0]) == branch and have < fixed_in:
            return first, f"driver {drv}: {note}"
    return None


#: what follows a GPU-blamed error Xid's own action (NVIDIA Xid catalogue, "Immediate action" / resolution bucket:
#: RESET_GPU, then CONTACT_SUPPORT when it recurs; DCGM field diagnostics before an RMA)
HARDWARE_LADDER = ("; drain the node of jobs first, then reset the GPU (`nvidia-smi -r -i <gpu>`) or reboot; if the "
                   "same Xid comes back on the same GPU, run `dcgmi diag -r 3` (or NVIDIA's field diagnostics) on it "
                   "and open an RMA / hardware ticket with `nvidia-bug-report.sh` attached")
_ONLY_RESET = re.compile(r"^(?:\s*(?:reset the GPU|reboot|contact support|drain the node)\s*[;,.]?)+$", re.I)
_PID = re.compile(r"\bpid=(\d+)")
_RECOVERY = re.compile(r"recovery action changed from 0x[0-9a-fA-F]+ \([^)]*\) to 0x[0-9a-fA-F]+ \(([^)]+)\)")


def _recovery_action(line: str, sev: str, action: str) -> tuple[str, str]:
    """(severity, action) for Xid 154's line: those of the action it changed to (rules/xid.toml recovery_action),
    else the catalogue's ``sev`` / ``action`` (an unknown name, or the line cut before it)."""
    m = _RECOVERY.search(line)
    name = m.group(1).strip() if m else ""
    entry = data.load("xid").get("recovery_action", {}).get(name)
    if entry is None:
        return sev, action
    return entry["severity"], f"{name} (the driver's recovery action): {entry['action']}"


@rule("LOG002")
def gdr_asymmetric(ctx):
    """Compares the 'via NET/IB/N[/GDRDMA]' transports of each host in the NCCL log."""
    logs = _logs(ctx)
    n = logs.nccl
    if n is None or not n.host_net_transports:
        raise NotAssessed("no NCCL INFO channel lines with network transports and host names")
    with_gdr = sorted(h for h, ts in n.host_net_transports.items() if any("GDRDMA" in t for t in ts))
    without = sorted(h for h, ts in n.host_net_transports.items()
                     if any(t.startswith("NET/IB") for t in ts) and not any("GDRDMA" in t for t in ts))
    if len(n.host_net_transports) < 2:
        raise NotAssessed("network transports of only one host in the log")
    if with_gdr and without:
        ev = [f"{h}: {', '.join(n.host_net_transports[h])}" for h in with_gdr + without]
        yield ctx.finding(ev + [f"no GDRDMA on: {', '.join(without)}"], subject=", ".join(without),
                          data={"with_gdr": with_gdr, "without_gdr": without})


@rule("LOG003")
def container_without_gpus(ctx):
    """Reads the docker/podman run command lines among the inputs and flags those that request no GPU."""
    logs = _logs(ctx)
    runs = [c for c in logs.commands if c.split()[:2] in (["docker", "run"], ["podman", "run"])
            or c.startswith(("nvidia-docker run",))]
    if not runs:
        raise NotAssessed("no docker/podman run command among the inputs")
    for c in runs:
        if not docker_gpu_request(c):
            yield ctx.finding([f"$ {c[:300]}", "no --gpus / --runtime nvidia / nvidia.com/gpu device requested"],
                              data={"command": c[:300]})


@rule("LOG004")
def peer_access(ctx):
    """Reads pasted cudaDeviceCanAccessPeer / torch.cuda.can_device_access_peer results."""
    logs = _logs(ctx)
    if not logs.peer_access:
        raise NotAssessed("no peer-access check among the inputs")
    no = sorted(k for k, v in logs.peer_access.items() if not v)
    if no:
        yield ctx.finding([f"cudaDeviceCanAccessPeer({k.replace(',', ', ')}) = 0" for k in no],
                          subject="GPU " + ", ".join(k.replace(",", "->") for k in no), data={"pairs": no})


def known_causes(text: str, snap: Snapshot, limit: int = 3) -> list[tuple[dict, list[str]]]:
    """The catalogue's root causes in ``text`` (a failed confirmation run's errors and NCCL warnings, say): up to
    ``limit`` (entry, lines) pairs, follow-ons and generic forms dropped when their cause matched. ``lines`` are
    the signature's conclusion (when its groups fill one) and the facts of ``snap`` that bear on it."""
    from gpudoctor.parsers.signatures import match_signatures

    hits = match_signatures(text)
    hit_ids = {h.id for h in hits}
    by_id = {e["id"]: e for e in _ENTRIES}
    out: list[tuple[dict, list[str]]] = []
    for h in hits:
        entry = by_id.get(h.id)
        if entry is None or _suppressed(entry, hit_ids, hits)[0]:
            continue
        concl = _conclusion(entry, h.groups)
        out.append((entry, ([concl] if concl else []) + _context(entry, snap)))
    order = {"error": 0, "warning": 1, "info": 2}
    out.sort(key=lambda p: order.get(p[0]["severity"], 3))
    return out[:limit]
