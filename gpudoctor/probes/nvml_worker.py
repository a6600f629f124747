"""NVML worker: runs in its own process and streams one JSON line per fact.

NVML is native code and can crash the process (a wrongly versioned struct in the
fabric-info call segfaulted Python on the H200 host). So the parent never calls
NVML itself: it starts this file with its own interpreter and reads its stdout.
Before each call a ``{"t": "step"}`` line names it, so a crash is attributed to the
call that caused it and every fact emitted before the crash is kept.

Lines:
  {"t": "step", "name": "gpu0.nvmlDeviceGetRemappedRows"}
  {"t": "sys",  "k": "driver_version", "v": "580.159.04"}
  {"t": "fail", "error": "NVML library not found: ..."}        (NVML unusable)
  {"t": "gpu",  "i": 0, "k": "temperature_c", "v": 36}
  {"t": "unsupported", "i": 0, "k": "numa_node"}
  {"t": "err",  "i": 0, "k": "fabric", "v": "NVMLError_Unknown ..."}
  {"t": "done"}

Self-contained on purpose (imports pynvml and the standard library only).
Source of the enums: NVML API reference, nvml.h (clock event reasons
``nvmlClocksEventReasons``, ``nvmlComputeMode_t``, temperature thresholds).
"""
import json
import os
import sys

CLOCK_EVENT_REASONS = [
    (0x1, "GpuIdle"),
    (0x2, "ApplicationsClocksSetting"),
    (0x4, "SwPowerCap"),
    (0x8, "HwSlowdown"),
    (0x10, "SyncBoost"),
    (0x20, "SwThermalSlowdown"),
    (0x40, "HwThermalSlowdown"),
    (0x80, "HwPowerBrakeSlowdown"),
    (0x100, "DisplayClockSetting"),
]
COMPUTE_MODES = {0: "Default", 1: "Exclusive_Thread", 2: "Prohibited", 3: "Exclusive_Process"}
NVLINK_MAX_LINKS = 18


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def decode_reasons(mask):
    return [name for bit, name in CLOCK_EVENT_REASONS if mask & bit]


def _dec(v):
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else v


def main():
    if os.environ.get("GPUDOCTOR_NVML_WORKER_CRASH") == "1":  # fault injection for tests
        emit({"t": "step", "name": "injected"})
        os.kill(os.getpid(), 11)
    try:
        import pynvml
    except Exception as exc:
        emit({"t": "fail", "error": "nvidia-ml-py (pynvml) is not importable: %s" % exc})
        return
    emit({"t": "step", "name": "nvmlInit"})
    try:
        pynvml.nvmlInit()
    except Exception as exc:
        emit({"t": "fail", "error": "%s: %s" % (type(exc).__name__, exc)})
        return
    NVMLError = pynvml.NVMLError
    not_supported = getattr(pynvml, "NVML_ERROR_NOT_SUPPORTED", 3)

    def call(i, key, fn, *args):
        emit({"t": "step", "name": "gpu%s.%s" % (i, getattr(fn, "__name__", key))})
        try:
            return True, fn(*args)
        except NVMLError as exc:
            if getattr(exc, "value", None) == not_supported:
                emit({"t": "unsupported", "i": i, "k": key})
            else:
                emit({"t": "err", "i": i, "k": key, "v": "%s %s" % (type(exc).__name__, exc)})
        except Exception as exc:  # bindings older/newer than the driver
            emit({"t": "err", "i": i, "k": key, "v": "%s %s" % (type(exc).__name__, exc)})
        return False, None

    def put(i, key, value):
        emit({"t": "gpu", "i": i, "k": key, "v": value})

    for key, fn in (("driver_version", "nvmlSystemGetDriverVersion"), ("nvml_version", "nvmlSystemGetNVMLVersion"),
                    ("cuda_driver_version", "nvmlSystemGetCudaDriverVersion_v2")):
        ok, val = call("sys", key, getattr(pynvml, fn, None) or pynvml.nvmlSystemGetCudaDriverVersion)
        if ok:
            if key == "cuda_driver_version":
                val = "%d.%d" % (val // 1000, (val % 1000) // 10)
            emit({"t": "sys", "k": key, "v": _dec(val)})
    ok, count = call("sys", "gpu_count", pynvml.nvmlDeviceGetCount)
    emit({"t": "sys", "k": "gpu_count", "v": count if ok else 0})
    for i in range(count if ok else 0):
        ok, h = call(i, "handle", pynvml.nvmlDeviceGetHandleByIndex, i)
        if not ok:
            continue
        put(i, "index", i)
        for key, fn in (("name", pynvml.nvmlDeviceGetName), ("uuid", pynvml.nvmlDeviceGetUUID)):
            ok, v = call(i, key, fn, h)
            if ok:
                put(i, key, _dec(v))
        ok, v = call(i, "pci_bus_id", pynvml.nvmlDeviceGetPciInfo, h)
        if ok:
            put(i, "pci_bus_id", _dec(v.busId))
        ok, v = call(i, "compute_capability", pynvml.nvmlDeviceGetCudaComputeCapability, h)
        if ok:
            put(i, "compute_capability", "%d.%d" % tuple(v))
        ok, v = call(i, "memory", pynvml.nvmlDeviceGetMemoryInfo, h)
        if ok:
            put(i, "memory_total_bytes", int(v.total))
            put(i, "memory_used_bytes", int(v.used))
        ok, v = call(i, "temperature_c", pynvml.nvmlDeviceGetTemperature, h, pynvml.NVML_TEMPERATURE_GPU)
        if ok:
            put(i, "temperature_c", int(v))
        for key, thr in (("temperature_slowdown_c", "NVML_TEMPERATURE_THRESHOLD_SLOWDOWN"),
                         ("temperature_shutdown_c", "NVML_TEMPERATURE_THRESHOLD_SHUTDOWN")):
            ok, v = call(i, key, pynvml.nvmlDeviceGetTemperatureThreshold, h, getattr(pynvml, thr))
            if ok:
                put(i, key, int(v))
        for key, fn in (("power_draw_w", pynvml.nvmlDeviceGetPowerUsage),
                        ("power_limit_w", pynvml.nvmlDeviceGetEnforcedPowerLimit),
                        ("power_default_limit_w", pynvml.nvmlDeviceGetPowerManagementDefaultLimit)):
            ok, v = call(i, key, fn, h)
            if ok:
                put(i, key, round(v / 1000.0, 1))  # NVML reports milliwatts
        for key, name in (("pcie_gen_current", "nvmlDeviceGetCurrPcieLinkGeneration"),
                          ("pcie_gen_max", "nvmlDeviceGetMaxPcieLinkGeneration"),
                          ("pcie_gen_gpu_max", "nvmlDeviceGetGpuMaxPcieLinkGeneration"),
                          ("pcie_width_current", "nvmlDeviceGetCurrPcieLinkWidth"),
                          ("pcie_width_max", "nvmlDeviceGetMaxPcieLinkWidth"),
                          ("pcie_replay_counter", "nvmlDeviceGetPcieReplayCounter")):
            fn = getattr(pynvml, name, None)
            if fn is None:
                continue
            ok, v = call(i, key, fn, h)
            if ok:
                put(i, key, int(v))
        ok, v = call(i, "utilization_gpu_pct", pynvml.nvmlDeviceGetUtilizationRates, h)
        if ok:
            put(i, "utilization_gpu_pct", int(v.gpu))
        ok, v = call(i, "pstate", pynvml.nvmlDeviceGetPerformanceState, h)
        if ok:
            put(i, "pstate", int(v))
        fn = getattr(pynvml, "nvmlDeviceGetCurrentClocksEventReasons", None) or \
            pynvml.nvmlDeviceGetCurrentClocksThrottleReasons
        ok, v = call(i, "clock_event_reasons", fn, h)
        if ok:
            put(i, "clock_event_reasons_mask", int(v))
            put(i, "clock_event_reasons", decode_reasons(int(v)))
        ok, v = call(i, "persistence_mode", pynvml.nvmlDeviceGetPersistenceMode, h)
        if ok:
            put(i, "persistence_mode", bool(v))
        ok, v = call(i, "compute_mode", pynvml.nvmlDeviceGetComputeMode, h)
        if ok:
            put(i, "compute_mode", COMPUTE_MODES.get(int(v), str(v)))
        ok, v = call(i, "mig_mode", pynvml.nvmlDeviceGetMigMode, h)
        if ok:
            put(i, "mig_mode_current", bool(v[0]))
            put(i, "mig_mode_pending", bool(v[1]))
        ok, v = call(i, "ecc_mode", pynvml.nvmlDeviceGetEccMode, h)
        if ok:
            put(i, "ecc_mode_current", bool(v[0]))
            for key, counter in (("ecc_uncorrected_volatile", pynvml.NVML_VOLATILE_ECC),
                                 ("ecc_uncorrected_aggregate", pynvml.NVML_AGGREGATE_ECC)):
                ok2, c = call(i, key, pynvml.nvmlDeviceGetTotalEccErrors, h,
                              pynvml.NVML_MEMORY_ERROR_TYPE_UNCORRECTED, counter)
                if ok2:
                    put(i, key, int(c))
        ok, v = call(i, "remapped_rows", pynvml.nvmlDeviceGetRemappedRows, h)
        if ok:
            put(i, "remapped_rows_correctable", int(v[0]))
            put(i, "remapped_rows_uncorrectable", int(v[1]))
            put(i, "remapped_rows_pending", bool(v[2]))
            put(i, "remapped_rows_failure", bool(v[3]))
        procs = []
        for kind, fn in (("compute", pynvml.nvmlDeviceGetComputeRunningProcesses),
                         ("graphics", pynvml.nvmlDeviceGetGraphicsRunningProcesses)):
            ok, plist = call(i, kind + "_processes", fn, h)
            for p in (plist or []) if ok else []:
                mem = getattr(p, "usedGpuMemory", None)
                name = None
                try:
                    with open("/proc/%d/comm" % p.pid) as fh:
                        name = fh.read().strip()
                except OSError:
                    pass
                procs.append({"pid": int(p.pid), "name": name, "kind": kind,
                              "used_memory_bytes": int(mem) if isinstance(mem, int) and mem >= 0 else None})
        put(i, "processes", procs)
        if hasattr(pynvml, "nvmlDeviceGetNumaNodeId"):
            ok, v = call(i, "numa_node", pynvml.nvmlDeviceGetNumaNodeId, h)
            if ok and int(v) >= 0:
                put(i, "numa_node", int(v))
        links = []
        for link in range(NVLINK_MAX_LINKS):
            emit({"t": "step", "name": "gpu%d.nvmlDeviceGetNvLinkState(%d)" % (i, link)})
            try:
                state = pynvml.nvmlDeviceGetNvLinkState(h, link)
            except Exception:
                break  # Not Supported / invalid link: no (more) NVLinks
            version = None
            try:
                version = int(pynvml.nvmlDeviceGetNvLinkVersion(h, link))
            except Exception:
                pass
            links.append({"link": link, "active": bool(state), "version": version})
        put(i, "nvlinks", links)
    try:
        pynvml.nvmlShutdown()
    except Exception:
        pass
    emit({"t": "done"})


if __name__ == "__main__":
    main()
