"""Derived confirmation facts shared by the runner (which records them) and the CNF rules and reports (which read
them): the transport verdict, the scaling-loss split, byte sizes as labels. Pure functions over facts."""
from __future__ import annotations

from typing import Any, Literal

from gpudoctor.facts.model import DdpResult
from gpudoctor.facts.units import fmt_size  # noqa: F401 (re-exported for the rules and reports)

#: NCCL_P2P_DISABLE / NCCL_SHM_DISABLE re-run outcome -> the transport blamed, and the sentence the report gives.
#: NCCL uses P2P (NVLink or PCIe peer-to-peer) between GPUs that can reach each other, SHM (host shared memory)
#: where P2P is not possible, and the network otherwise (NCCL user guide, env variables NCCL_P2P_DISABLE /
#: NCCL_SHM_DISABLE).
TRANSPORT_SENTENCES = {
    "p2p": ("the P2P transport (NVLink / PCIe peer-to-peer) is at fault: the run passes with "
            "NCCL_P2P_DISABLE=1 and fails with NCCL_SHM_DISABLE=1"),
    "shm": ("the SHM transport (host shared memory, /dev/shm) is at fault: the run passes with "
            "NCCL_SHM_DISABLE=1 and fails with NCCL_P2P_DISABLE=1"),
    "either": ("inconclusive: the run passes with either transport disabled (an intermittent fault, or one "
               "in the path both change)"),
    "neither": ("not a P2P or SHM transport fault: the run fails with either disabled (look at the GPU, "
                "driver, NCCL version or the workload itself)"),
}


def transport_verdict(p2p_disabled_ok: bool,
                      shm_disabled_ok: bool) -> tuple[Literal["p2p", "shm", "either", "neither"], str]:
    """Which NCCL transport the two re-runs blame: (verdict, sentence) -- computed once, by the runner."""
    verdict: Literal["p2p", "shm", "either", "neither"]
    if p2p_disabled_ok != shm_disabled_ok:
        verdict = "p2p" if p2p_disabled_ok else "shm"
    else:
        verdict = "either" if p2p_disabled_ok else "neither"
    return verdict, TRANSPORT_SENTENCES[verdict]


def attribute_loss(d: DdpResult) -> dict[str, Any] | None:
    """Split the time lost to scaling into communication and computation (checklist C8).

    With Tn the DDP step, Tn_nosync the same step without gradient all-reduce (DDP no_sync) and
    T1* the ideal per-rank step (T1 for weak scaling, T1/n for strong): communication = Tn -
    Tn_nosync (all-reduce not hidden behind backward), computation = Tn_nosync - T1* (each rank
    computing slower than one device alone: shared CPU, memory, clocks, PCIe). The all-reduce of
    the gradient size is the upper bound of what communication can cost. Seconds.
    """
    if d.single is None or d.nosync_step_s is None:
        return None
    t1_ideal = d.single.step_s.median * (d.per_rank_batch / d.single.batch)
    comm = max(0.0, d.step.step_s.median - d.nosync_step_s.median)
    comp = max(0.0, d.nosync_step_s.median - t1_ideal)
    return {"lost_s": max(0.0, d.step.step_s.median - t1_ideal), "communication_s": comm, "computation_s": comp,
            "t1_ideal_s": t1_ideal, "dominant": "communication" if comm >= comp else "computation",
            "grad_allreduce_s": d.grad_allreduce_s.median if d.grad_allreduce_s else None}
