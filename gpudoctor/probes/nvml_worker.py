"""NVML worker: runs in its own process and streams one JSON line per fact.

NVML is native code and can crash the process (a wrongly versioned struct in the
fabric-info call segfaulted Python on the H200 host). So the parent never calls
NVML itself: it starts this file with its own interpreter and reads its stdout.
Before each call a ``{"t": "step"}`` line names it, so a crash is attributed to the
call that caused it and every fact emitted before the crash is kept. The lines are
the TypedDicts of ``gpudoctor/facts/protocol.py`` (loaded by path, as the enums).

Modes (first argument): none = the per-GPU facts (:data:`GPU_FIELDS`); ``topology`` = per GPU pair
the common ancestor and P2P status, per NVLink its state, version, remote device and
error counters; ``fabric`` = NVSwitch fabric info per GPU. The fabric call is the one
that crashed Python when its struct was wrongly versioned, so it runs in a separate
invocation: a crash there loses only fabric facts.

Self-contained on purpose (pynvml and the standard library only). Source of the enums: NVML API
reference, nvml.h (``nvmlClocksEventReasons``, ``nvmlComputeMode_t``, temperature thresholds).
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


def _dec(v):
    return v.decode("utf-8", "replace") if isinstance(v, bytes) else v


def _why(exc):
    return f"{type(exc).__name__} {exc}"


def _err(i, key, exc):
    emit({"t": "err", "i": i, "k": key, "v": _why(exc)})


def _nvml_failed(pynvml, i, key, exc):
    """An NVML call for ``key`` raised: "unsupported" for NVML's Not Supported, else an "err" line."""
    not_supported = getattr(pynvml, "NVML_ERROR_NOT_SUPPORTED", 3)
    if isinstance(exc, pynvml.NVMLError) and getattr(exc, "value", None) == not_supported:
        emit({"t": "unsupported", "i": i, "k": key})
    else:  # another NVML error, or bindings older/newer than the driver
        _err(i, key, exc)


def call(pynvml, i, key, fn, *args):
    """(True, fn(*args)) after a "step" line naming the call; (False, None) after its failure line."""
    emit({"t": "step", "name": "gpu{}.{}".format(i, getattr(fn, "__name__", key))})
    try:
        return True, fn(*args)
    except Exception as exc:
        _nvml_failed(pynvml, i, key, exc)
    return False, None


def nvlink_states(pynvml, i, h):
    """(link, state) of GPU ``i``'s NVLinks in order, up to the first link NVML refuses (no more links)."""
    for link in range(NVLINK_MAX_LINKS):
        emit({"t": "step", "name": f"gpu{i}.nvmlDeviceGetNvLinkState({link})"})
        try:
            state = pynvml.nvmlDeviceGetNvLinkState(h, link)
        except Exception:
            return  # Not Supported / invalid link: no (more) NVLinks
        yield link, state


def _shutdown(pynvml):
    try:
        pynvml.nvmlShutdown()
    except Exception:
        pass
    emit({"t": "done"})


# nvml.h: nvmlGpuP2PCapsIndex_t (pynvml writes NVML_P2P_CAPS_INDEX_READ with a stray comma, a tuple)
P2P_CAPS = (("read", 0), ("write", 1), ("nvlink", 2), ("atomics", 3), ("pci", 4))
# nvml.h: nvmlNvLinkErrorCounter_t
NVLINK_ERRORS = (("replay", 0), ("recovery", 1), ("crc_flit", 2), ("crc_data", 3))
NVLINK_REMOTE = {0: "gpu", 1: "ibmnpu", 2: "switch", 255: "unknown"}
#: per NVLink: (key, NVML function, converter), each skipped where the bindings lack it
NVLINK_DETAILS = (("version", "nvmlDeviceGetNvLinkVersion", int),
                  ("remote_type", "nvmlDeviceGetNvLinkRemoteDeviceType", lambda v: NVLINK_REMOTE.get(int(v), str(v))),
                  ("remote_bus_id", "nvmlDeviceGetNvLinkRemotePciInfo", lambda v: _dec(v.busId)))


def _pair(pynvml, a, b, ha, hb):
    """Common ancestor and P2P status of GPUs ``a`` < ``b``: "pair" lines, "pair_err" for a failed query."""
    queries = [("common_ancestor", "nvmlDeviceGetTopologyCommonAncestor", ())]
    queries += [("p2p_" + name, f"nvmlDeviceGetP2PStatus({name})", (cap,)) for name, cap in P2P_CAPS]
    for key, step, args in queries:
        emit({"t": "step", "name": f"pair{a}-{b}.{step}"})
        try:
            v = int(getattr(pynvml, step.split("(")[0])(ha, hb, *args))
            emit({"t": "pair", "a": a, "b": b, "k": key, "v": v})
        except Exception as exc:
            emit({"t": "pair_err", "a": a, "b": b, "k": key, "v": _why(exc)})


def _nvlink(pynvml, i, h, link, state):
    """One NVLink's details and, when it is up, its error counters ("nvlink" lines; failed queries are left out)."""
    emit({"t": "nvlink", "i": i, "link": link, "k": "state", "v": int(state)})
    queries = [(key, fn, (), conv, f"{fn}({link})") for key, fn, conv in NVLINK_DETAILS if hasattr(pynvml, fn)]
    if state:  # newer GPUs report the error counters through field values only: a failure is no fact
        fn = "nvmlDeviceGetNvLinkErrorCounter"
        queries += [("err_" + key, fn, (c,), int, f"{fn}({link},{key})") for key, c in NVLINK_ERRORS]
    for key, fn, args, conv, step in queries:
        emit({"t": "step", "name": f"gpu{i}.{step}"})
        try:
            emit({"t": "nvlink", "i": i, "link": link, "k": key, "v": conv(getattr(pynvml, fn)(h, link, *args))})
        except Exception:
            pass


def topology(pynvml, count):
    """GPU pairs (common ancestor, P2P status) and NVLink details."""
    handles = {}
    for i in range(count):
        emit({"t": "step", "name": f"gpu{i}.nvmlDeviceGetHandleByIndex"})
        try:
            handles[i] = pynvml.nvmlDeviceGetHandleByIndex(i)
            emit({"t": "gpu", "i": i, "k": "pci_bus_id", "v": _dec(pynvml.nvmlDeviceGetPciInfo(handles[i]).busId)})
        except Exception as exc:
            _err(i, "handle", exc)
    idx = sorted(handles)
    for x, a in enumerate(idx):
        for b in idx[x + 1:]:
            _pair(pynvml, a, b, handles[a], handles[b])
    for i in idx:
        for link, state in nvlink_states(pynvml, i, handles[i]):
            _nvlink(pynvml, i, handles[i], link, state)


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


def _fabric_info(pynvml, ctypes, i, h):
    """(struct, version) of GPU ``i``'s fabric info, newest checked struct first, v1 where no versioned one
    applies; (None, None) after an "unsupported" or "err" line."""
    mismatch = getattr(pynvml, "NVML_ERROR_ARGUMENT_VERSION_MISMATCH", 25)
    candidates = list(_fabric_struct(pynvml, ctypes)) if hasattr(pynvml, "nvmlDeviceGetGpuFabricInfoV") else []
    for ver, cls, word in candidates:
        st = cls()
        st.version = word
        emit({"t": "step", "name": f"gpu{i}.nvmlDeviceGetGpuFabricInfoV(v{ver})"})
        try:
            pynvml.nvmlDeviceGetGpuFabricInfoV(h, ctypes.byref(st))
            return st, ver
        except Exception as exc:
            if isinstance(exc, pynvml.NVMLError) and getattr(exc, "value", None) == mismatch:
                continue  # driver older than the bindings' struct: try the previous version
            _nvml_failed(pynvml, i, "fabric", exc)
            return None, None
    cls = getattr(pynvml, "c_nvmlGpuFabricInfo_t", None)
    if cls is None or not hasattr(pynvml, "nvmlDeviceGetGpuFabricInfo"):
        return None, None
    st = cls()  # v1: no version word (R525-R535 drivers)
    emit({"t": "step", "name": f"gpu{i}.nvmlDeviceGetGpuFabricInfo(v1)"})
    try:
        pynvml.nvmlDeviceGetGpuFabricInfo(h, ctypes.byref(st))
        return st, 1
    except Exception as exc:
        _nvml_failed(pynvml, i, "fabric", exc)
    return None, None


def fabric(pynvml, count):
    """NVSwitch fabric state per GPU via nvmlDeviceGetGpuFabricInfoV with a checked struct version."""
    import ctypes
    for i in range(count):
        emit({"t": "step", "name": f"gpu{i}.nvmlDeviceGetHandleByIndex"})
        try:
            h = pynvml.nvmlDeviceGetHandleByIndex(i)
        except Exception as exc:
            _err(i, "handle", exc)
            continue
        info, used = _fabric_info(pynvml, ctypes, i, h)
        if info is None:
            continue
        out = {"struct_version": used, "state": int(info.state), "status": int(info.status),
               "cluster_uuid": bytes(bytearray(info.clusterUuid)).hex()}
        try:
            out["status_name"] = _dec(pynvml.nvmlErrorString(int(info.status)))
        except Exception:
            pass
        for key, attr in (("clique_id", "cliqueId"), ("health_mask", "healthMask"),
                          ("health_summary", "healthSummary")):
            if hasattr(info, attr):
                out[key] = int(getattr(info, attr))
        for k, v in out.items():
            emit({"t": "fabric", "i": i, "k": k, "v": v})


# The system facts: (key, NVML functions, the first one the bindings have is called, converter).
SYS_FIELDS = (
    ("driver_version", ["nvmlSystemGetDriverVersion"], _dec),
    ("nvml_version", ["nvmlSystemGetNVMLVersion"], _dec),
    ("cuda_driver_version", ["nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion"],
     lambda v: f"{v // 1000}.{(v % 1000) // 10}"),  # NVML: 1000 * major + 10 * minor
)


def _row(key, fns, puts, args=(), optional=False, needs=None):
    """One NVML call of a GPU: ``key`` names it in "unsupported"/"err" lines; ``fns`` the NVML functions ("A|B": the
    first the bindings have, called with the handle then the pynvml constants named in ``args``); ``puts`` the
    (GpuFacts field, converter) pairs it fills; ``optional``: skipped when the bindings lack ``fns``; ``needs``:
    made only when the call of that key succeeded."""
    return {"key": key, "fns": fns.split("|"), "puts": puts, "args": args, "optional": optional, "needs": needs}


def _one(key, fns, convert, **kw):  # a row filling the one field named like the call
    return _row(key, fns, ((key, convert),), **kw)


def _watts(v):
    return round(v / 1000.0, 1)  # NVML reports milliwatts


GPU_FIELDS = (
    _one("name", "nvmlDeviceGetName", _dec),
    _one("uuid", "nvmlDeviceGetUUID", _dec),
    _one("pci_bus_id", "nvmlDeviceGetPciInfo", lambda v: _dec(v.busId)),
    _one("compute_capability", "nvmlDeviceGetCudaComputeCapability", lambda v: f"{v[0]}.{v[1]}"),
    _row("memory", "nvmlDeviceGetMemoryInfo",
         (("memory_total_bytes", lambda v: int(v.total)), ("memory_used_bytes", lambda v: int(v.used)))),
    _one("temperature_c", "nvmlDeviceGetTemperature", int, args=("NVML_TEMPERATURE_GPU",)),
    _one("temperature_slowdown_c", "nvmlDeviceGetTemperatureThreshold", int,
         args=("NVML_TEMPERATURE_THRESHOLD_SLOWDOWN",)),
    _one("temperature_shutdown_c", "nvmlDeviceGetTemperatureThreshold", int,
         args=("NVML_TEMPERATURE_THRESHOLD_SHUTDOWN",)),
    _one("power_draw_w", "nvmlDeviceGetPowerUsage", _watts),
    _one("power_limit_w", "nvmlDeviceGetEnforcedPowerLimit", _watts),
    _one("power_default_limit_w", "nvmlDeviceGetPowerManagementDefaultLimit", _watts),
    _one("pcie_gen_current", "nvmlDeviceGetCurrPcieLinkGeneration", int, optional=True),
    _one("pcie_gen_max", "nvmlDeviceGetMaxPcieLinkGeneration", int, optional=True),
    _one("pcie_gen_gpu_max", "nvmlDeviceGetGpuMaxPcieLinkGeneration", int, optional=True),
    _one("pcie_width_current", "nvmlDeviceGetCurrPcieLinkWidth", int, optional=True),
    _one("pcie_width_max", "nvmlDeviceGetMaxPcieLinkWidth", int, optional=True),
    _one("pcie_replay_counter", "nvmlDeviceGetPcieReplayCounter", int, optional=True),
    _one("utilization_gpu_pct", "nvmlDeviceGetUtilizationRates", lambda v: int(v.gpu)),
    _one("pstate", "nvmlDeviceGetPerformanceState", int),
    _row("clock_event_reasons", "nvmlDeviceGetCurrentClocksEventReasons|nvmlDeviceGetCurrentClocksThrottleReasons",
         (("clock_event_reasons_mask", int), ("clock_event_reasons", lambda v: _CLOCK_REASONS.decode(int(v))))),
    _one("persistence_mode", "nvmlDeviceGetPersistenceMode", bool),
    _one("compute_mode", "nvmlDeviceGetComputeMode", lambda v: COMPUTE_MODES.get(int(v), str(v))),
    _row("mig_mode", "nvmlDeviceGetMigMode",
         (("mig_mode_current", lambda v: bool(v[0])), ("mig_mode_pending", lambda v: bool(v[1])))),
    _row("ecc_mode", "nvmlDeviceGetEccMode", (("ecc_mode_current", lambda v: bool(v[0])),)),
    _one("ecc_uncorrected_volatile", "nvmlDeviceGetTotalEccErrors", int,
         args=("NVML_MEMORY_ERROR_TYPE_UNCORRECTED", "NVML_VOLATILE_ECC"), needs="ecc_mode"),
    _one("ecc_uncorrected_aggregate", "nvmlDeviceGetTotalEccErrors", int,
         args=("NVML_MEMORY_ERROR_TYPE_UNCORRECTED", "NVML_AGGREGATE_ECC"), needs="ecc_mode"),
    _row("remapped_rows", "nvmlDeviceGetRemappedRows",
         (("remapped_rows_correctable", lambda v: int(v[0])), ("remapped_rows_uncorrectable", lambda v: int(v[1])),
          ("remapped_rows_pending", lambda v: bool(v[2])), ("remapped_rows_failure", lambda v: bool(v[3])))),
    # dynamic page retirement (Kepler..Volta/Turing; Ampere+ answer Not Supported and use row remapping)
    _one("retired_pages_sbe", "nvmlDeviceGetRetiredPages", len,
         args=("NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS",), optional=True),
    _one("retired_pages_dbe", "nvmlDeviceGetRetiredPages", len,
         args=("NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR",), optional=True),
    _one("retired_pages_pending", "nvmlDeviceGetRetiredPagesPendingStatus", bool, optional=True),
)


def put(i, key, value):
    emit({"t": "gpu", "i": i, "k": _PROTOCOL.check_gpu_key(key), "v": value})


def _function(pynvml, names, optional):
    """The first of ``names`` the bindings have; None when none (AttributeError for a required one)."""
    for name in names:
        fn = getattr(pynvml, name, None)
        if fn is not None:
            return fn
    if optional:
        return None
    return getattr(pynvml, names[-1])


def gpu_fields(pynvml, i, h):
    """Every row of :data:`GPU_FIELDS` for GPU ``i``: one call each, its fields put on success."""
    done = set()
    for row in GPU_FIELDS:
        fn = _function(pynvml, row["fns"], row["optional"])
        if fn is None or (row["needs"] and row["needs"] not in done):
            continue
        ok, v = call(pynvml, i, row["key"], fn, h, *(getattr(pynvml, a) for a in row["args"]))
        if not ok:
            continue
        done.add(row["key"])
        for field, convert in row["puts"]:
            put(i, field, convert(v))


def processes(pynvml, i, h):
    """Compute and graphics processes on GPU ``i`` (pid, name from /proc, kind, used memory in bytes)."""
    procs = []
    for kind, fn in (("compute", pynvml.nvmlDeviceGetComputeRunningProcesses),
                     ("graphics", pynvml.nvmlDeviceGetGraphicsRunningProcesses)):
        ok, plist = call(pynvml, i, kind + "_processes", fn, h)
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
    return procs


def nvlinks(pynvml, i, h):
    links = []
    for link, state in nvlink_states(pynvml, i, h):
        version = None
        try:
            version = int(pynvml.nvmlDeviceGetNvLinkVersion(h, link))
        except Exception:
            pass
        links.append({"link": link, "active": bool(state), "version": version})
    return links


def gpus(pynvml, count):
    """The per-GPU facts (the default mode)."""
    for i in range(count):
        ok, h = call(pynvml, i, "handle", pynvml.nvmlDeviceGetHandleByIndex, i)
        if not ok:
            continue
        put(i, "index", i)
        gpu_fields(pynvml, i, h)
        put(i, "processes", processes(pynvml, i, h))
        if hasattr(pynvml, "nvmlDeviceGetNumaNodeId"):
            ok, v = call(pynvml, i, "numa_node", pynvml.nvmlDeviceGetNumaNodeId, h)
            if ok and int(v) >= 0:
                put(i, "numa_node", int(v))
        put(i, "nvlinks", nvlinks(pynvml, i, h))


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
    if mode not in ("topology", "fabric"):
        for key, fns, convert in SYS_FIELDS:
            ok, val = call(pynvml, "sys", key, _function(pynvml, fns, False))
            if ok:
                emit({"t": "sys", "k": key, "v": _dec(convert(val))})
    ok, count = call(pynvml, "sys", "gpu_count", pynvml.nvmlDeviceGetCount)
    emit({"t": "sys", "k": "gpu_count", "v": count if ok else 0})
    {"topology": topology, "fabric": fabric}.get(mode, gpus)(pynvml, count if ok else 0)
    _shutdown(pynvml)


if __name__ == "__main__":
    main()
