"""GPU load worker: the self-test (a few seconds) and the burn-in (minutes) on every GPU at once.

Runs in the *target* interpreter (``python -m gpudoctor.confirm.gpuload selftest|burn``) and imports
only the standard library, torch and, when present, pynvml (nvidia-ml-py) for the samples. It prints
JSON lines on stdout, one object per line:

  {"t": "gpu", "i": 0, "name": "NVIDIA H200", "uuid": "GPU-...", "pci_bus_id": "...", "static": {...}}
  {"t": "round", "i": 0, "s": 1.23, "kind": "gemm", "value": 787.1}    (TFLOP/s; "copy": GB/s)
  {"t": "sample", "i": 0, "s": 1.25, "sm_mhz": 1470, "power_w": 699.1, "temp_c": 51, "reasons": [...],
   "util": 100, "others": [{"pid": 4711, "used_mib": 2048, "name": "python3"}]}
  {"t": "counters", "when": "before"|"after", "i": 0, "ecc": {...}, "remap": {...}, "nvlink": {...}}
  {"t": "error", "i": 0, "error": "..."}
  {"t": "done", "seconds": 4.1, "interrupted": false}

Measurement (units: TFLOP/s = 1e12 FLOP/s, GB/s = 1e9 B/s): a dense GEMM C = A @ B of n x n
matrices (n = 8192; 2 n^3 FLOP each) in bf16 on GPUs with a bf16 tensor path (compute capability
>= 8.0), fp16 below (V100, T4); random normal data (zeros run ~13 % faster on an H200), warm-up
first; each GPU's work is enqueued on its own device before any is waited for, so all GPUs run at
once. Each round is a group of calls timed with one pair of CUDA events and divided by the call
count. The device-to-device copy counts bytes read plus bytes written (2 x size per copy).

Interrupting (SIGINT/SIGTERM) ends the loop at the next round, frees the GPU memory, prints the
final counters and "done" with ``interrupted: true``.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
from typing import Any

from gpudoctor.confirm.protocol import check_load_line
from gpudoctor.facts.clock_reasons import decode as decode_reasons  # nvml.h nvmlClocksEventReason* bits

GEMM_N = 8192
#: bytes of one device-to-device copy buffer (the copy moves 2 x this per call), capped by free memory
COPY_BYTES = 1 << 30
STOP = threading.Event()
_LOCK = threading.Lock()


def emit(obj: dict[str, Any]) -> None:
    """Print one JSON line (thread-safe) of :data:`gpudoctor.confirm.protocol.LOAD_LINES`; ProtocolError for a
    field outside the protocol."""
    check_load_line(obj)
    with _LOCK:
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()


class Nvml:
    """Optional NVML access through pynvml; every call returns None where NVML or the field is missing."""

    def __init__(self) -> None:
        self.nv: Any = None
        try:
            import pynvml

            pynvml.nvmlInit()
            self.nv = pynvml
        except Exception:  # no pynvml or no driver: samples are simply absent
            self.nv = None

    def handle(self, uuid: str | None, bus: str | None) -> Any:
        if self.nv is None:
            return None
        for get, key in ((self.nv.nvmlDeviceGetHandleByUUID, uuid), (self.nv.nvmlDeviceGetHandleByPciBusId, bus)):
            if key:
                try:
                    return get(key)
                except Exception:
                    continue
        return None

    def call(self, name: str, *args: Any) -> Any:
        try:
            return getattr(self.nv, name)(*args)
        except Exception:
            return None

    def static(self, h: Any) -> dict[str, Any]:
        """Max SM clock (MHz), enforced power limit (W), slowdown/shutdown temperatures (°C)."""
        if h is None:
            return {}
        nv = self.nv
        limit = self.call("nvmlDeviceGetEnforcedPowerLimit", h)
        return {"max_sm_mhz": self.call("nvmlDeviceGetMaxClockInfo", h, nv.NVML_CLOCK_SM),
                "power_limit_w": limit / 1000.0 if limit is not None else None,
                "slowdown_temp_c": self.call("nvmlDeviceGetTemperatureThreshold", h, 1),
                "shutdown_temp_c": self.call("nvmlDeviceGetTemperatureThreshold", h, 0)}

    def sample(self, h: Any, own: set[int]) -> dict[str, Any]:
        """SM clock (MHz), power (W), temperature (°C), clock-event reasons, utilization (%), other processes."""
        nv = self.nv
        power = self.call("nvmlDeviceGetPowerUsage", h)
        mask = self.call("nvmlDeviceGetCurrentClocksEventReasons", h)
        if mask is None:
            mask = self.call("nvmlDeviceGetCurrentClocksThrottleReasons", h)
        util = self.call("nvmlDeviceGetUtilizationRates", h)
        procs = self.call("nvmlDeviceGetComputeRunningProcesses", h) or []
        others = []
        for p in procs:
            if p.pid in own:
                continue
            used = getattr(p, "usedGpuMemory", None)
            others.append({"pid": p.pid, "used_mib": round(used / 2**20) if isinstance(used, int) else None,
                           "name": _proc_name(p.pid)})
        return {"sm_mhz": self.call("nvmlDeviceGetClockInfo", h, nv.NVML_CLOCK_SM),
                "power_w": round(power / 1000.0, 1) if power is not None else None,
                "temp_c": self.call("nvmlDeviceGetTemperature", h, 0),
                "reasons": decode_reasons(mask) if mask is not None else None,
                "util": getattr(util, "gpu", None), "others": others}

    def counters(self, h: Any) -> dict[str, Any]:
        """ECC (volatile, corrected/uncorrected), row remapping, NVLink error counters (summed over links)."""
        out: dict[str, Any] = {}
        ecc = {}
        for kind, label in ((0, "corrected"), (1, "uncorrected")):  # NVML_MEMORY_ERROR_TYPE_*
            v = self.call("nvmlDeviceGetTotalEccErrors", h, kind, 0)  # NVML_VOLATILE_ECC
            if v is not None:
                ecc[label] = int(v)
        out["ecc"] = ecc
        rr = self.call("nvmlDeviceGetRemappedRows", h)
        if rr is not None:
            out["remap"] = {"correctable": rr[0], "uncorrectable": rr[1], "pending": bool(rr[2]),
                            "failure": bool(rr[3])}
        links: dict[str, int] = {}
        for link in range(18):
            if self.call("nvmlDeviceGetNvLinkState", h, link) != 1:
                continue
            for cnt, label in ((0, "replay"), (1, "recovery"), (2, "crc_flit"), (3, "crc_data")):
                v = self.call("nvmlDeviceGetNvLinkErrorCounter", h, link, cnt)
                if v is not None:
                    links[label] = links.get(label, 0) + int(v)
        out["nvlink"] = links
        return out


def _proc_name(pid: int) -> str | None:
    try:
        with open(f"/proc/{pid}/comm") as fh:
            return fh.read().strip()
    except OSError:
        return None


class Gpu:
    """One GPU's buffers and timing events."""

    def __init__(self, torch: Any, i: int, dtype: Any, copy_bytes: int) -> None:
        self.i = i
        dev = torch.device("cuda", i)
        self.dev = dev
        gen = torch.Generator(device=dev)
        gen.manual_seed(1234 + i)
        self.a = torch.randn(GEMM_N, GEMM_N, device=dev, dtype=dtype, generator=gen)
        self.b = torch.randn(GEMM_N, GEMM_N, device=dev, dtype=dtype, generator=gen)
        self.c = torch.empty(GEMM_N, GEMM_N, device=dev, dtype=dtype)
        free, _ = torch.cuda.mem_get_info(i)
        nbytes = max(1 << 24, min(copy_bytes, int(free * 0.05)))
        self.copy_bytes = nbytes
        self.src = torch.randn(nbytes // 4, device=dev, dtype=torch.float32, generator=gen)
        self.dst = torch.empty_like(self.src)
        self.ev = (torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
        self.calls = 1

    def enqueue(self, torch: Any, kind: str, calls: int) -> None:
        with torch.cuda.device(self.dev):
            self.ev[0].record()
            for _ in range(calls):
                if kind == "gemm":
                    torch.matmul(self.a, self.b, out=self.c)
                else:
                    self.dst.copy_(self.src)
            self.ev[1].record()
        self.calls = calls

    def rate(self, kind: str) -> float:
        """TFLOP/s (gemm) or GB/s (copy) of the last group."""
        s = self.ev[0].elapsed_time(self.ev[1]) / 1000.0 / self.calls
        if kind == "gemm":
            return 2.0 * GEMM_N ** 3 / s / 1e12
        return 2.0 * self.copy_bytes / s / 1e9

    def free(self) -> None:
        for name in ("a", "b", "c", "src", "dst"):
            setattr(self, name, None)


def run_group(torch: Any, gpus: list[Gpu], kind: str, calls: dict[int, int], t0: float) -> dict[int, float]:
    """Enqueue one group on every GPU, then wait for all; per-GPU rate."""
    for g in gpus:
        g.enqueue(torch, kind, calls[g.i])
    for g in gpus:
        torch.cuda.synchronize(g.dev)
    out = {}
    for g in gpus:
        out[g.i] = g.rate(kind)
        emit({"t": "round", "i": g.i, "s": round(time.monotonic() - t0, 3), "kind": kind, "value": round(out[g.i], 2)})
    return out


def calls_for(rates: dict[int, float], kind: str, gpus: list[Gpu], target_s: float) -> dict[int, int]:
    """Calls per group so that one group takes about ``target_s`` seconds on each GPU."""
    out = {}
    for g in gpus:
        r = rates.get(g.i) or 1.0
        one_s = (2.0 * GEMM_N ** 3 / (r * 1e12)) if kind == "gemm" else (2.0 * g.copy_bytes / (r * 1e9))
        out[g.i] = int(min(500, max(2, target_s / max(one_s, 1e-6))))
    return out


def sampler(nvml: Nvml, handles: dict[int, Any], period_s: float, t0: float) -> None:
    own = {os.getpid()}
    while not STOP.is_set():
        for i, h in handles.items():
            if h is not None:
                emit(dict(nvml.sample(h, own), t="sample", i=i, s=round(time.monotonic() - t0, 3)))
        STOP.wait(period_s)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="gpudoctor.confirm.gpuload")
    p.add_argument("mode", choices=["selftest", "burn"])
    p.add_argument("--gemm-s", type=float, default=1.5, help="selftest: seconds of timed GEMM")
    p.add_argument("--copy-s", type=float, default=0.5, help="selftest: seconds of timed copies")
    p.add_argument("--seconds", type=float, default=180.0, help="burn: duration")
    p.add_argument("--sample-s", type=float, default=0.1, help="NVML sampling period")
    p.add_argument("--devices", default="", help="comma-separated torch indices (default: all)")
    a = p.parse_args(argv)

    stopped = {"flag": False}

    def on_signal(signum: int, frame: Any) -> None:
        stopped["flag"] = True

    signal.signal(signal.SIGINT, on_signal)
    signal.signal(signal.SIGTERM, on_signal)
    t0 = time.monotonic()
    import torch

    if not torch.cuda.is_available():
        emit({"t": "error", "i": None, "error": "torch.cuda.is_available() is False"})
        emit({"t": "done", "seconds": round(time.monotonic() - t0, 3), "interrupted": False})
        return 1
    idx = [int(x) for x in a.devices.split(",") if x.strip()] or list(range(torch.cuda.device_count()))
    nvml = Nvml()
    handles: dict[int, Any] = {}
    gpus: list[Gpu] = []
    for i in idx:
        props = torch.cuda.get_device_properties(i)
        uuid = getattr(props, "uuid", None)
        uuid_s = None if uuid is None else (str(uuid) if str(uuid).startswith("GPU-") else f"GPU-{uuid}")
        bus = None
        if hasattr(props, "pci_bus_id"):
            dom, dev = getattr(props, "pci_domain_id", 0), getattr(props, "pci_device_id", 0)
            bus = f"{dom:08x}:{props.pci_bus_id:02x}:{dev:02x}.0"
        h = nvml.handle(uuid_s, bus)
        handles[i] = h
        cap = f"{props.major}.{props.minor}"
        dtype = torch.bfloat16 if props.major >= 8 else torch.float16
        emit({"t": "gpu", "i": i, "name": props.name, "uuid": uuid_s, "pci_bus_id": bus, "capability": cap,
              "gemm_dtype": str(dtype).replace("torch.", ""), "gemm_n": GEMM_N,
              "static": nvml.static(h), "nvml": h is not None})
        if h is not None:
            emit(dict(nvml.counters(h), t="counters", when="before", i=i))
        try:
            gpus.append(Gpu(torch, i, dtype, COPY_BYTES))
        except Exception as exc:  # out of memory (another process), a broken device
            emit({"t": "error", "i": i, "error": f"{type(exc).__name__}: {exc}"[:400]})
    thread = threading.Thread(target=sampler, args=(nvml, handles, a.sample_s, t0), daemon=True)
    if nvml.nv is not None:
        thread.start()
    interrupted = False
    try:
        if gpus:
            # warm-up: module load, cuBLAS handle, clocks; then size the groups to ~0.1 s
            rates = run_group(torch, gpus, "gemm", {g.i: 3 for g in gpus}, t0)
            rates = run_group(torch, gpus, "gemm", calls_for(rates, "gemm", gpus, 0.1), t0)
            crates = run_group(torch, gpus, "copy", {g.i: 3 for g in gpus}, t0)
            gcalls = calls_for(rates, "gemm", gpus, 0.1)
            ccalls = calls_for(crates, "copy", gpus, 0.05)
            emit({"t": "mark", "what": "timed", "s": round(time.monotonic() - t0, 3)})
            if a.mode == "selftest":
                t1 = time.monotonic()
                while time.monotonic() - t1 < a.gemm_s and not stopped["flag"]:
                    run_group(torch, gpus, "gemm", gcalls, t0)
                t1 = time.monotonic()
                while time.monotonic() - t1 < a.copy_s and not stopped["flag"]:
                    run_group(torch, gpus, "copy", ccalls, t0)
            else:
                t1 = time.monotonic()
                gcalls = calls_for(rates, "gemm", gpus, 0.5)
                ccalls = calls_for(crates, "copy", gpus, 0.25)
                while time.monotonic() - t1 < a.seconds and not stopped["flag"]:
                    run_group(torch, gpus, "gemm", gcalls, t0)
                    if not stopped["flag"]:
                        run_group(torch, gpus, "copy", ccalls, t0)
        interrupted = stopped["flag"]
    except Exception as exc:
        emit({"t": "error", "i": None, "error": f"{type(exc).__name__}: {exc}"[:400]})
    finally:
        STOP.set()
        if thread.is_alive():
            thread.join(timeout=2.0)
        for g in gpus:
            g.free()
        gpus.clear()
        torch.cuda.empty_cache()
        for i, h in handles.items():
            if h is not None:
                emit(dict(nvml.counters(h), t="counters", when="after", i=i))
        emit({"t": "done", "seconds": round(time.monotonic() - t0, 3), "interrupted": interrupted})
    return 0


if __name__ == "__main__":
    sys.exit(main())
