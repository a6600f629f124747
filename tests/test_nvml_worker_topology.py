"""The worker's topology and fabric modes, driven by a stand-in for pynvml (no GPU here), then assembled."""
from __future__ import annotations

import ctypes
import importlib.util
import io
import json
import types
from contextlib import redirect_stdout

import pynvml

from gpudoctor.probes import topology as P


def load_worker():
    spec = importlib.util.spec_from_file_location("nvml_worker_modes", P.WORKER)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


class NVMLError(Exception):
    def __init__(self, value):
        super().__init__(f"NVML error {value}")
        self.value = value


def fake_nvml(fabric_state=3, fabric_status=0, mismatch_v3=False, links=18):
    ns = types.SimpleNamespace(NVMLError=NVMLError, NVML_ERROR_NOT_SUPPORTED=3, NVML_ERROR_ARGUMENT_VERSION_MISMATCH=25)
    ns.nvmlDeviceGetHandleByIndex = lambda i: i
    ns.nvmlDeviceGetPciInfo = lambda h: types.SimpleNamespace(busId=f"00000000:{0x18 + h:02x}:00.0".encode())
    ns.nvmlDeviceGetTopologyCommonAncestor = lambda a, b: 50 if (a < 2) != (b < 2) else 20
    ns.nvmlDeviceGetP2PStatus = lambda a, b, cap: 0 if cap != 4 else 5

    def state(h, link):
        if link >= links:
            raise NVMLError(2)
        return 0 if (h, link) == (1, 17) else 1
    ns.nvmlDeviceGetNvLinkState = state
    ns.nvmlDeviceGetNvLinkVersion = lambda h, link: 4
    ns.nvmlDeviceGetNvLinkRemoteDeviceType = lambda h, link: 2
    ns.nvmlDeviceGetNvLinkRemotePciInfo = lambda h, link: types.SimpleNamespace(busId=b"00000000:c0:00.0")

    def errs(h, link, counter):
        if counter == 3:
            raise NVMLError(3)
        return 7 if (h, link, counter) == (0, 5, 0) else 0
    ns.nvmlDeviceGetNvLinkErrorCounter = errs
    for name in ("c_nvmlGpuFabricInfo_v3_t", "nvmlGpuFabricInfo_v3", "c_nvmlGpuFabricInfo_v2_t",
                 "nvmlGpuFabricInfo_v2", "c_nvmlGpuFabricInfo_t"):
        setattr(ns, name, getattr(pynvml, name))
    ns.calls = []

    def fabric_v(h, ref):
        st = ctypes.cast(ref, ctypes.POINTER(ctypes.c_uint)).contents  # the version word NVML would read
        ns.calls.append(st.value)
        if mismatch_v3 and st.value == pynvml.nvmlGpuFabricInfo_v3:
            raise NVMLError(25)
        obj = ref._obj
        obj.state, obj.status, obj.cliqueId, obj.healthMask = fabric_state, fabric_status, 7, 0
        obj.clusterUuid[0] = 0xab
    ns.nvmlDeviceGetGpuFabricInfoV = fabric_v
    ns.nvmlErrorString = lambda s: b"Success" if s == 0 else b"Unknown Error"
    return ns


def capture(fn, *args) -> list[str]:
    buf = io.StringIO()
    with redirect_stdout(buf):
        fn(*args)
    return buf.getvalue().splitlines()


def test_topology_mode_stream_assembles():
    w = load_worker()
    lines = capture(w.topology, fake_nvml(), 4)
    assert all(json.loads(x) for x in lines)
    bus, pairs, links, fail = P.assemble_topology(lines)
    assert bus[3] == "00000000:1b:00.0" and fail is None
    assert len(pairs) == 6
    p01 = next(p for p in pairs if (p.a, p.b) == (0, 1))
    p02 = next(p for p in pairs if (p.a, p.b) == (0, 2))
    assert p01.common_ancestor == "PXB" and p02.common_ancestor == "SYS"
    assert p01.p2p == {"read": "OK", "write": "OK", "nvlink": "OK", "atomics": "OK", "pci": "NS"}
    assert len(links) == 4 * 18
    down = [(x.gpu, x.link) for x in links if not x.active]
    assert down == [(1, 17)]
    l05 = next(x for x in links if (x.gpu, x.link) == (0, 5))
    assert l05.version == 4 and l05.remote_type == "switch" and l05.remote_bus_id == "00000000:c0:00.0"
    assert l05.errors == {"replay": 7, "recovery": 0, "crc_flit": 0}


def test_fabric_mode_uses_v3_then_falls_back_to_v2():
    w = load_worker()
    nv = fake_nvml(fabric_state=2)
    fab, errs = P.assemble_fabric(capture(w.fabric, nv, 2))
    assert nv.calls == [pynvml.nvmlGpuFabricInfo_v3] * 2
    assert [(f.state, f.struct_version, f.clique_id) for f in fab] == [("in_progress", 3, 7)] * 2
    assert fab[0].cluster_uuid.startswith("ab") and errs == {}
    nv = fake_nvml(mismatch_v3=True, fabric_status=999)
    fab, _ = P.assemble_fabric(capture(w.fabric, nv, 1))
    assert nv.calls == [pynvml.nvmlGpuFabricInfo_v3, pynvml.nvmlGpuFabricInfo_v2]
    assert fab[0].struct_version == 2 and fab[0].state == "completed" and fab[0].status == "Unknown Error"


def test_fabric_not_supported_is_a_fact():
    w = load_worker()
    nv = fake_nvml()

    def unsupported(h, ref):
        raise NVMLError(3)
    nv.nvmlDeviceGetGpuFabricInfoV = unsupported
    fab, errs = P.assemble_fabric(capture(w.fabric, nv, 1))
    assert [f.state for f in fab] == ["not_supported"] and errs == {}
