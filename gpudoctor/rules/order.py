"""Cause-first order of a report's findings (issue 14 item 3, "root cause first").

The order, within one severity (errors, then warnings, then notes):

1. what the hardware or the kernel reported: an Xid that blames the GPU, the node, the fabric or a driver defect,
   and the kernel signatures (a GPU off the bus or a driver/library mismatch explains the CUDA and NCCL errors above
   it), then the nvidia-smi signatures (nvidia-smi failing to reach a GPU follows the Xid that took it);
2. the findings of the fact rules (versions, settings, topology read from the dumps or probed live), and of the log
   rules that conclude from many lines (ranks started twice, hosts on different networks, ranks timed out in
   different collectives, a hang on PCIe peer-to-peer);
3. the signatures of the logs, in the order they first appear: by the wall-clock time their first line carries when
   every one of them carries one (per-rank logs: rank 9's error at 14:02 before rank 0's timeout at 14:12, whatever
   the files are called), otherwise by input file, then line: in a log the first error is the likeliest cause, the
   later ones its consequences (the follow-ons the catalogue knows are already folded into their cause's finding);
4. log findings with no position (e.g. a transport compared across hosts), then the findings about the inputs
   themselves (SIG000 unexplained lines, LOG000 unreadable inputs).

Within a group the rule registry's order is kept (the sort is stable).
"""
from __future__ import annotations

from gpudoctor.facts.findings import SEVERITY_ORDER, Finding

_HARDWARE_BLAME = frozenset({"GPU", "node", "fabric", "driver"})  # rules/xid.toml `blame` (driver: driver_fixed)
_KERNEL_FAMILIES = frozenset({"kernel"})  # rules/signatures.toml `family`
_SMI_FAMILIES = frozenset({"nvidia-smi"})
_ABOUT_THE_INPUTS = frozenset({"SIG000", "LOG000"})
#: log rules that conclude from many lines (ranks, hosts, transports compared): they explain the signatures they see
_CONCLUDING = frozenset({"LOG005", "LOG006", "LOG007", "LOG008", "LOG009", "LOG010", "LOG011", "LOG012", "LOG013"})


def _group(f: Finding) -> int:
    if f.rule_id in _ABOUT_THE_INPUTS:
        return 5
    if f.data.get("blame") in _HARDWARE_BLAME or f.data.get("family") in _KERNEL_FAMILIES:
        return 0
    if f.data.get("family") in _SMI_FAMILIES:
        return 1
    if not f.rule_id.startswith(("SIG", "LOG")) or f.rule_id in _CONCLUDING:
        return 2
    return 3 if f.data.get("first_line") is not None else 4


def cause_first(findings: list[Finding], files: list[str] | None = None) -> list[Finding]:
    """``findings`` sorted worst first, then cause first (the module docstring). ``files``: the inputs in the order
    they were given (a log finding's position is its first file's index there, then its first line)."""
    index = {p: i for i, p in enumerate(files or [])}
    placed = [f for f in findings if _group(f) == 3]
    by_time = len({tuple(f.data.get("files") or ()) for f in placed}) > 1 and all(
        isinstance(f.data.get("first_time"), str) for f in placed)
    # the stamps carry no year: a run over New Year has December stamps before January ones
    months = {f.data["first_time"][:2] for f in placed} if by_time else set()
    new_year = "12" in months and "01" in months

    def key(f: Finding) -> tuple[int, int, str, int, int]:
        hit_files = f.data.get("files") or []
        first = f.data.get("first_line")
        where = index.get(hit_files[0], len(index)) if hit_files else len(index)
        when = f.data["first_time"] if by_time and _group(f) == 3 else ""
        if new_year and when and when[:2] <= "06":
            when = f"{int(when[:2]) + 12}{when[2:]}"  # January after December
        return (-SEVERITY_ORDER[f.severity], _group(f), when, where, first if isinstance(first, int) else 0)

    return sorted(findings, key=key)
