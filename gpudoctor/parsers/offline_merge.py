"""How `gpudoctor check` merges the facts of several inputs into one snapshot: models field by field, NVML GPUs
by index, NCCL logs, processes attached to their GPU, quotes scrubbed of secrets."""
from __future__ import annotations

import typing
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel

from gpudoctor.facts.model import NcclLogFacts, NvmlFacts, Snapshot

if TYPE_CHECKING:
    from gpudoctor.parsers.offline import Collected


def _merge_model(dst: BaseModel, src: BaseModel) -> None:
    """Copy the fields ``src`` knows and ``dst`` does not (first file wins on a conflict)."""
    for name in src.model_fields_set - {"source", "gpus"}:
        if name not in dst.model_fields_set:
            setattr(dst, name, getattr(src, name))


def _merge_nvml(dst: NvmlFacts, src: NvmlFacts) -> None:
    _merge_model(dst, src)
    if "gpus" in src.model_fields_set:
        by_index = {g.index: g for g in dst.gpus}
        for g in src.gpus:
            if g.index in by_index:
                _merge_model(by_index[g.index], g)
            else:
                dst.gpus.append(g.model_copy(deep=True))
        dst.gpus = sorted(dst.gpus, key=lambda g: g.index)
        # the largest count any input gave ("Attached GPUs : 8" of a cut -q), never fewer than the GPUs listed
        dst.gpu_count = max(dst.gpu_count or 0, src.gpu_count or 0, len(dst.gpus))


#: NcclLogFacts fields parse_nccl_log reads from the first line that has them, and those it reads from the last
FIRST_WINS = ("version", "nranks")
LAST_WINS = ("cuda_driver_version", "ib_device_found", "net", "nvls_channels")


def _merge_nccl(items: list[NcclLogFacts]) -> NcclLogFacts | None:
    """The NCCL facts of several texts (files, or the chunks of one large log), in order, merged as parse_nccl_log
    reads one text: the first version and rank count, the last driver version, network, IB state and NVLS channel
    count, every transport, the first MAX_WARN warnings, and for each variable its last 'set by environment' value."""
    from gpudoctor.parsers.nccl_log import MAX_COMMS, MAX_WARN

    if not items:
        return None
    out = items[0].model_copy(deep=True)
    out.comms = out.comms[:MAX_COMMS]
    for n in items[1:]:
        for name in FIRST_WINS:
            if getattr(out, name) is None and getattr(n, name) is not None:
                setattr(out, name, getattr(n, name))
        for name in LAST_WINS:
            if getattr(n, name) is not None:
                setattr(out, name, getattr(n, name))
        out.init_complete = out.init_complete or n.init_complete
        out.bootstrap_no_interface = out.bootstrap_no_interface or n.bootstrap_no_interface
        for name in ("transports", "gdr_disabled_hcas", "socket_interfaces"):
            cur = getattr(out, name)
            cur += [x for x in getattr(n, name) if x not in cur]
        out.warnings += n.warnings[:max(0, MAX_WARN - len(out.warnings))]
        out.env_set = {**out.env_set, **n.env_set}
        out.host_nets = {**out.host_nets, **n.host_nets}
        out.socket_addresses = {**n.socket_addresses, **out.socket_addresses}  # the first address seen wins
        if n.nnodes is not None:
            out.nnodes = max(out.nnodes or 0, n.nnodes)
        mine = {c.comm_id: c for c in out.comms}
        for c in n.comms:
            if c.comm_id not in mine:
                if len(out.comms) >= MAX_COMMS:
                    continue
                out.comms.append(c.model_copy(deep=True))
                mine[c.comm_id] = out.comms[-1]
                continue
            for name in ("started", "completed"):
                lst = getattr(mine[c.comm_id], name)
                lst += [r for r in getattr(c, name) if r not in lst]
        for host, trs in n.host_net_transports.items():
            lst = out.host_net_transports.setdefault(host, [])
            lst += [t for t in trs if t not in lst]
    return out


def _attach(snap: Snapshot, name: str, value: Any) -> bool:
    """Put a section object from another parser (e.g. topology) into the Snapshot field that accepts its type."""
    for fname, finfo in Snapshot.model_fields.items():
        types = typing.get_args(finfo.annotation) or (finfo.annotation,)
        if any(isinstance(t, type) and isinstance(value, t) for t in types):
            setattr(snap, fname, value)
            return True
    return False


def _attach_processes(snap: Snapshot, col: Collected, known: dict) -> None:
    """Give each GPU the processes a --query-compute-apps CSV lists for it (matched by gpu_uuid / gpu_bus_id;
    rows without them only when exactly one GPU is known). Unmatched rows are noted on their input file."""
    gpus = snap.nvml.gpus if snap.nvml is not None else []
    by_uuid = {g.uuid: g for g in gpus if g.uuid}
    by_bus = {}
    for gb in gpus:
        if gb.pci_bus_id:
            by_bus[gb.pci_bus_id.lower()[-12:]] = gb  # 00000000:18:00.0 and 0000:18:00.0 compare equal
    unmatched: dict[str, int] = {}
    named: set[str] = set()  # inputs whose unmatched rows name their GPU (uuid / bus id) the GPU list lacks
    attached = False
    for path, uuid, bus, proc in col.apps:
        g = by_uuid.get(uuid) if uuid else None
        g = g or (by_bus.get(bus.lower()[-12:]) if bus else None)
        if g is None and not uuid and not bus and len(gpus) == 1:
            g = gpus[0]
        if g is None:
            unmatched[path] = unmatched.get(path, 0) + 1
            if uuid or bus:
                named.add(path)
            continue
        same = next((q for q in g.processes if q.pid == proc.pid), None)
        if same is not None:  # the same process from another input (the table and the CSV): one entry
            _merge_model(same, proc)
        else:
            g.processes = list(g.processes) + [proc]
        attached = True
    if attached and "nvml.gpus" in known and "processes" not in known["nvml.gpus"]:
        known["nvml.gpus"] = sorted(set(known["nvml.gpus"]) | {"processes"})
    for inp in snap.inputs:
        if inp.path in named:
            inp.note = (f"{unmatched[inp.path]} process row(s) name GPUs (uuid / bus id) that no GPU list in the "
                        "inputs has: pass `nvidia-smi --query-gpu=index,pci.bus_id,uuid --format=csv` (or nvidia-smi "
                        "-q) with it to place them")
        elif inp.path in unmatched:
            inp.note = (f"{unmatched[inp.path]} process row(s) not attached to a GPU: add gpu_uuid or gpu_bus_id to "
                        f"--query-compute-apps, or pass the GPU list (nvidia-smi -L / --query-gpu) with it")


def _scrub_logs(logs) -> None:
    """Remove credentials from every line the report will quote (users paste logs into public issues)."""
    from gpudoctor.facts.env import redact, scrub

    for hit in logs.signatures:
        hit.lines = [scrub(x) for x in hit.lines]
        hit.groups = {k: scrub(v) for k, v in hit.groups.items()}
    logs.error_lines = [scrub(x) for x in logs.error_lines]
    logs.kernel_messages = [scrub(x) for x in logs.kernel_messages]
    logs.commands = [scrub(x) for x in logs.commands]
    for x in logs.xids:
        if getattr(x, "line", None):
            x.line = scrub(x.line)
    if logs.nccl is not None:
        logs.nccl.env_set = {k: redact(k, v) for k, v in logs.nccl.env_set.items()}
        for f in ("warnings", "lines"):
            if isinstance(getattr(logs.nccl, f, None), list):
                setattr(logs.nccl, f, [scrub(x) for x in getattr(logs.nccl, f)])
