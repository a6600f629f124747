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

Modes (first argument): none = the per-GPU facts above; ``topology`` = per GPU pair
the common ancestor and P2P status, per NVLink its state, version, remote device and
error counters; ``fabric`` = NVSwitch fabric info per GPU. The fabric call is the one
that crashed Python when its struct was wrongly versioned, so it runs in a separate
invocation: a crash there loses only fabric facts.

  {"t": "pair", "a": 0, "b": 1, "k": "common_ancestor", "v": 30}
  {"t": "pair", "a": 0, "b": 1, "k": "p2p_read", "v": 0}
  {"t": "nvlink", "i": 0, "link": 3, "k": "state", "v": 1}
  {"t": "fabric", "i": 0, "k": "state", "v": 3}

Self-contained on purpose (imports pynvml and the standard library only).
Source of the enums: NVML API reference, nvml.h (clock event reasons
``nvmlClocksEventReasons``, ``nvmlComputeMode_t``, temperature thresholds).
"""
import json
import os
import sys


def _load_facts_module(name):
    """gpudoctor/facts/<name>.py (stdlib only), loaded by path: this script runs outside the package."""
    import importlib.util

    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "facts", name + ".py")
    spec = importlib.util.spec_from_file_location("_gpudoctor_" + name, path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod  # TypedDict / dataclass resolution needs the module registered
    spec.loader.exec_module(mod)
    return mod


_CLOCK_REASONS = _load_facts_module("clock_reasons")
_PROTOCOL = _load_facts_module("protocol")
COMPUTE_MODES = {0: "Default", 1: "Exclusive_Thread", 2: "Prohibited", 3: "Exclusive_Process"}
NVLINK_MAX_LINKS = 18


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def decode_reasons(mask):
    return _CLOCK_REASONS.decode(mask)


def _dec(v):
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else v


# nvml.h: nvmlGpuP2PCapsIndex_t (pynvml writes NVML_P2P_CAPS_INDEX_READ with a stray comma, a tuple)
P2P_CAPS = (("read", 0), ("write", 1), ("nvlink", 2), ("atomics", 3), ("pci", 4))
# nvml.h: nvmlNvLinkErrorCounter_t
NVLINK_ERRORS = (("replay", 0), ("recovery", 1), ("crc_flit", 2), ("crc_data", 3))
NVLINK_REMOTE = {0: "gpu", 1: "ibmnpu", 2: "switch", 255: "unknown"}


def topology(pynvml, count):
    """GPU pairs (common ancestor, P2P status) and NVLink details."""
    handles = {}
    for i in range(count):
        emit({"t": "step", "name": f"gpu{i}.nvmlDeviceGetHandleByIndex"})
        try:
            handles[i] = pynvml.nvmlDeviceGetHandleByIndex(i)
            emit({"t": "gpu", "i": i, "k": "pci_bus_id", "v": _dec(pynvml.nvmlDeviceGetPciInfo(handles[i]).busId)})
        except Exception as exc:
            emit({"t": "err", "i": i, "k": "handle", "v": f"{type(exc).__name__} {exc}"})
    idx = sorted(handles)
    for x, a in enumerate(idx):
        for b in idx[x + 1:]:
            emit({"t": "step", "name": f"pair{a}-{b}.nvmlDeviceGetTopologyCommonAncestor"})
            try:
                v = int(pynvml.nvmlDeviceGetTopologyCommonAncestor(handles[a], handles[b]))
                emit({"t": "pair", "a": a, "b": b, "k": "common_ancestor", "v": v})
            except Exception as exc:
                emit({"t": "pair_err", "a": a, "b": b, "k": "common_ancestor", "v": f"{type(exc).__name__} {exc}"})
            for name, cap in P2P_CAPS:
                emit({"t": "step", "name": f"pair{a}-{b}.nvmlDeviceGetP2PStatus({name})"})
                try:
                    v = int(pynvml.nvmlDeviceGetP2PStatus(handles[a], handles[b], cap))
                    emit({"t": "pair", "a": a, "b": b, "k": "p2p_" + name, "v": v})
                except Exception as exc:
                    emit({"t": "pair_err", "a": a, "b": b, "k": "p2p_" + name, "v": f"{type(exc).__name__} {exc}"})
    for i in idx:
        h = handles[i]
        for link in range(NVLINK_MAX_LINKS):
            emit({"t": "step", "name": f"gpu{i}.nvmlDeviceGetNvLinkState({link})"})
            try:
                state = pynvml.nvmlDeviceGetNvLinkState(h, link)
            except Exception:
                break  # Not Supported / invalid link: no (more) NVLinks
            emit({"t": "nvlink", "i": i, "link": link, "k": "state", "v": int(state)})
            for key, fn, args in (("version", "nvmlDeviceGetNvLinkVersion", ()),
                                  ("remote_type", "nvmlDeviceGetNvLinkRemoteDeviceType", ()),
                                  ("remote_bus_id", "nvmlDeviceGetNvLinkRemotePciInfo", ())):
                f = getattr(pynvml, fn, None)
                if f is None:
                    continue
                emit({"t": "step", "name": f"gpu{i}.{fn}({link})"})
                try:
                    v = f(h, link, *args)
                    v = _dec(v.busId) if key == "remote_bus_id" else NVLINK_REMOTE.get(int(v), str(v)) \
                        if key == "remote_type" else int(v)
                    emit({"t": "nvlink", "i": i, "link": link, "k": key, "v": v})
                except Exception:
                    pass
            if not state:
                continue
            for key, counter in NVLINK_ERRORS:
                emit({"t": "step", "name": f"gpu{i}.nvmlDeviceGetNvLinkErrorCounter({link},{key})"})
                try:
                    v = int(pynvml.nvmlDeviceGetNvLinkErrorCounter(h, link, counter))
                    emit({"t": "nvlink", "i": i, "link": link, "k": "err_" + key, "v": v})
                except Exception:
                    pass  # newer GPUs report these through field values only


def _fabric_struct(pynvml, ctypes):
    """The newest versioned fabric-info struct whose version word matches its size, else None.

    NVML's versioned structs carry NVML_STRUCT_VERSION(type, v) = sizeof(type) | v << 24 in
    their first field; a struct whose size differs from its version word makes NVML read or
    write past it (that is how the H200 host segfaulted). So the bindings' struct is checked
    against its own version constant before it is ever passed to NVML.
    """
    for ver, cls_name, const in ((3, "c_nvmlGpuFabricInfo_v3_t", "nvmlGpuFabricInfo_v3"),
                                 (2, "c_nvmlGpuFabricInfo_v2_t", "nvmlGpuFabricInfo_v2")):
        cls, word = getattr(pynvml, cls_name, None), getattr(pynvml, const, None)
        if cls is None or not isinstance(word, int):
            continue
        if (word >> 24) == ver and (word & 0xFFFFFF) == ctypes.sizeof(cls):
            yield ver, cls, word


def fabric(pynvml, count):
    """NVSwitch fabric state per GPU via nvmlDeviceGetGpuFabricInfoV with a checked struct version."""
    import ctypes
    mismatch = getattr(pynvml, "NVML_ERROR_ARGUMENT_VERSION_MISMATCH", 25)
    for i in range(count):
        emit({"t": "step", "name": f"gpu{i}.nvmlDeviceGetHandleByIndex"})
        try:
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
        except Exception as exc:
            emit({"t": "err", "i": i, "k": "handle", "v": f"{type(exc).__name__} {exc}"})
            continue
        info, used = None, None
        candidates = list(_fabric_struct(pynvml, ctypes)) if hasattr(pynvml, "nvmlDeviceGetGpuFabricInfoV") else []
        for ver, cls, word in candidates:
            st = cls()
            st.version = word
            emit({"t": "step", "name": f"gpu{i}.nvmlDeviceGetGpuFabricInfoV(v{ver})"})
            try:
                pynvml.nvmlDeviceGetGpuFabricInfoV(h, ctypes.byref(st))
                info, used = st, ver
                break
            except pynvml.NVMLError as exc:
                if getattr(exc, "value", None) == mismatch:
                    continue  # driver older than the bindings' struct: try the previous version
                if getattr(exc, "value", None) == getattr(pynvml, "NVML_ERROR_NOT_SUPPORTED", 3):
                    emit({"t": "unsupported", "i": i, "k": "fabric"})
                else:
                    emit({"t": "err", "i": i, "k": "fabric", "v": f"{type(exc).__name__} {exc}"})
                break
            except Exception as exc:
                emit({"t": "err", "i": i, "k": "fabric", "v": f"{type(exc).__name__} {exc}"})
                break
        else:
            cls = getattr(pynvml, "c_nvmlGpuFabricInfo_t", None)
            if cls is not None and hasattr(pynvml, "nvmlDeviceGetGpuFabricInfo"):
                st = cls()  # v1: no version word (R525-R535 drivers)
                emit({"t": "step", "name": f"gpu{i}.nvmlDeviceGetGpuFabricInfo(v1)"})
                try:
                    pynvml.nvmlDeviceGetGpuFabricInfo(h, ctypes.byref(st))
                    info, used = st, 1
                except pynvml.NVMLError as exc:
                    if getattr(exc, "value", None) == getattr(pynvml, "NVML_ERROR_NOT_SUPPORTED", 3):
                        emit({"t": "unsupported", "i": i, "k": "fabric"})
                    else:
                        emit({"t": "err", "i": i, "k": "fabric", "v": f"{type(exc).__name__} {exc}"})
                except Exception as exc:
                    emit({"t": "err", "i": i, "k": "fabric", "v": f"{type(exc).__name__} {exc}"})
        if info is None:
            continue
        out = {"struct_version": used, "state": int(info.state), "status": int(info.status),
               "cluster_uuid": bytes(bytearray(info.clusterUuid)).hex()}
        try:
            out["status_name"] = _dec(pynvml.nvmlErrorString(int(info.status)))
        except Exception:
            pass
        for key, attr in (
            ("clique_id", "cliqueId"),
            ("health_mask", "healthMask"),
            ("health_summary", "healthSummary"),
        ):
            if hasattr(info, attr):
                out[key] = int(getattr(info, attr))
        for k, v in out.items():
            emit({"t": "fabric", "i": i, "k": k, "v": v})


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else "gpus"
    if os.environ.get("GPUDOCTOR_NVML_WORKER_CRASH") in ("1", mode):  # fault injection for tests
        emit({"t": "step", "name": "injected"})
        os.kill(os.getpid(), 11)
    try:
        import pynvml
    except Exception as exc:
        emit({"t": "fail", "error": f"nvidia-ml-py (pynvml) is not importable: {exc}"})
        return
    emit({"t": "step", "name": "nvmlInit"})
    try:
        pynvml.nvmlInit()
    except Exception as exc:
        emit({"t": "fail", "error": f"{type(exc).__name__}: {exc}"})
        return
    NVMLError = pynvml.NVMLError
    not_supported = getattr(pynvml, "NVML_ERROR_NOT_SUPPORTED", 3)

    def call(i, key, fn, *args):
        emit({"t": "step", "name": "gpu{}.{}".format(i, getattr(fn, "__name__", key))})
        try:
            return True, fn(*args)
        except NVMLError as exc:
            if getattr(exc, "value", None) == not_supported:
                emit({"t": "unsupported", "i": i, "k": key})
            else:
                emit({"t": "err", "i": i, "k": key, "v": f"{type(exc).__name__} {exc}"})
        except Exception as exc:  # bindings older/newer than the driver
            emit({"t": "err", "i": i, "k": key, "v": f"{type(exc).__name__} {exc}"})
        return False, None

    def put(i, key, value):
        emit({"t": "gpu", "i": i, "k": _PROTOCOL.check_gpu_key(key), "v": value})

    if mode in ("topology", "fabric"):
        ok, count = call("sys", "gpu_count", pynvml.nvmlDeviceGetCount)
        emit({"t": "sys", "k": "gpu_count", "v": count if ok else 0})
        (topology if mode == "topology" else fabric)(pynvml, count if ok else 0)
        try:
            pynvml.nvmlShutdown()
        except Exception:
            pass
        emit({"t": "done"})
        return
    for key, fn in (("driver_version", "nvmlSystemGetDriverVersion"), ("nvml_version", "nvmlSystemGetNVMLVersion"),
                    ("cuda_driver_version", "nvmlSystemGetCudaDriverVersion_v2")):
        ok, val = call("sys", key, getattr(pynvml, fn, None) or pynvml.nvmlSystemGetCudaDriverVersion)
        if ok:
            if key == "cuda_driver_version":
                val = f"{val // 1000}.{(val % 1000) // 10}"
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
            put(i, "compute_capability", f"{v[0]}.{v[1]}")
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
                    with open(f"/proc/{p.pid}/comm") as fh:
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
            emit({"t": "step", "name": f"gpu{i}.nvmlDeviceGetNvLinkState({link})"})
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
