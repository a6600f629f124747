"""The compatibility tables: every row has a source, statuses are honest, and the tables agree."""
from pathlib import Path

import pytest

from gpudoctor.compat import data
from gpudoctor.compat import tables as T
from gpudoctor.compat.versions import cc_tuple, vtuple

ROOT = Path(__file__).resolve().parents[2]
STATUSES = {"verified", "secondary", "unverified", "derived"}
ROWS = {"compat_cuda": ["mvc", "mvc_limitation", "toolkit"], "compat_gpus": ["cc", "gpu"],
        "compat_torch": ["release", "wheel_arch"]}


def _rows():
    for f, kinds in ROWS.items():
        doc = data.load(f)
        for k in kinds:
            for i, r in enumerate(doc.get(k, [])):
                yield f, k, i, r
        for k in ("forward_compat", "torchaudio_stable_abi"):
            if k in doc:
                yield f, k, 0, doc[k]


ALL_ROWS = list(_rows())


def known_ccs() -> list[str]:
    return [r["cc"] for r in data.load("compat_gpus")["cc"]]


def torch_releases() -> list[T.TorchRelease]:
    return [T.torch_release(r["release"]) for r in data.load("compat_torch")["release"]]


def test_rows_exist():
    kinds = {(f, k) for f, k, _, _ in ALL_ROWS}
    assert {(f, k) for f, ks in ROWS.items() for k in ks} <= kinds
    assert len(ALL_ROWS) > 100


@pytest.mark.parametrize("f,kind,i,row", ALL_ROWS, ids=[f"{f}.{k}[{i}]" for f, k, i, _ in ALL_ROWS])
def test_every_row_has_a_public_source_and_a_status(f, kind, i, row):
    keys = row.get("source")
    assert keys, f"{f} {kind}[{i}] has no source"
    for url in T.sources(f, keys):
        if url.startswith("repo:"):
            assert (ROOT / url[5:]).is_file(), url
        else:
            assert url.startswith("https://"), url
    assert row.get("status") in STATUSES
    for k, v in row.items():
        if k.endswith("_status"):
            assert v in STATUSES


def test_unverified_marks_of_the_research_are_kept():
    # research notes (compat-research.md) mark these unverified: the data must not launder them
    assert T.torch_release("2.5").pypi_default_status == "unverified"
    assert T.torch_release("2.1").pypi_default_status == "unverified"
    assert T.torch_release("2.4").nccl_status == "unverified"
    assert T.wheel_arch("2.5.1", "cu121").status == "unverified"
    assert T.wheel_arch("2.7.0", "cu128").status == "unverified"
    assert [r for r in T.toolkits() if r.version == "13.3"][0].status == "secondary"


def test_every_torch_variant_has_a_toolkit_driver_row():
    for rel in torch_releases():
        for v in rel.variants + rel.unverified_variants:
            cuda = T.variant_cuda(v)
            assert cuda, v
            assert T.toolkit_min_driver(cuda) is not None, (
                f"torch {rel.release} {v}: CUDA {cuda} not in the driver table"
            )
        assert rel.pypi_default in rel.variants, rel.release
        assert set(rel.experimental) <= set(rel.variants)
        assert set(rel.cudnn) <= set(rel.variants) and set(rel.nccl) <= set(rel.variants)


def test_wheel_arch_rows_name_real_releases_variants_and_capabilities():
    known = {cc_tuple(c) for c in known_ccs()}
    seen = set()
    for r in data.load("compat_torch")["wheel_arch"]:
        for rel in r["releases"]:
            row = T.torch_release(rel)
            assert row is not None, rel
            assert r["variant"] in row.variants, (rel, r["variant"])
            assert (rel, r["variant"]) not in seen, "two arch rows for one wheel"
            seen.add((rel, r["variant"]))
        for c in r["arch"] + r.get("ptx", []):
            assert cc_tuple(c) in known, f"{r['variant']}: unknown compute capability {c}"
        # every arch the wheel's CUDA must be able to target
        cuda = T.minor_of(T.variant_cuda(r["variant"]))
        for c in r["arch"]:
            cr = T.cc_row(c)
            if cr.first:
                assert T.minor_of(cr.first) <= cuda, (r["variant"], c)
            if cr.last:
                assert T.minor_of(cr.last) >= cuda, (r["variant"], c)


def test_gpu_models_have_known_capabilities_and_unique_aliases():
    known = {cc_tuple(c) for c in known_ccs()}
    aliases = {}
    for g in data.load("compat_gpus")["gpu"]:
        assert cc_tuple(g["cc"]) in known, g["name"]
        assert g["segment"] in {"datacenter", "workstation", "consumer", "embedded"}
        for a in g["aliases"]:
            n = T.normalize_gpu_name(a)
            assert n not in aliases, f"alias {a!r} in {g['name']} and {aliases.get(n)}"
            aliases[n] = g["name"]


def test_cc_rows_are_ordered_and_name_toolkits_in_the_table():
    for c in known_ccs():
        r = T.cc_row(c)
        if r.first and r.last:
            assert T.minor_of(r.first) <= T.minor_of(r.last)
        for v in (r.last, r.first):
            if v and T.minor_of(v) >= (10, 2):
                assert T.toolkit_rows(v), f"cc {c}: CUDA {v} not in the toolkit table"


def test_toolkit_drivers_grow_with_the_version_and_respect_the_mvc_floor():
    rows = sorted(
        (r for r in T.toolkits() if r.min_driver), key=lambda r: (T.minor_of(r.version), vtuple(r.min_driver))
    )
    for a, b in zip(rows, rows[1:], strict=False):
        assert vtuple(a.min_driver) <= vtuple(b.min_driver), (a.version, b.version)
    for r in rows:
        m = T.mvc(T.minor_of(r.version)[0])
        if m:
            assert vtuple(r.min_driver) >= vtuple(m.min_driver) or r.update == "RC", r.version


def test_companion_pairs():
    assert T.torch_release("2.11.0").torchvision == "0.26"
    assert T.torch_release("2.6.0+cu124").torchvision == "0.21"
    # torchvision minor = torch minor + 15 across the 2.x table
    for rel in torch_releases():
        if rel.release.startswith("2."):
            assert T.minor_of(rel.torchvision)[1] == T.minor_of(rel.release)[1] + 15


@pytest.mark.parametrize("name,cc,alias", [
    ("NVIDIA H200", "9.0", "h200"), ("H100 SXM", "9.0", "h100 sxm"), ("NVIDIA H100 80GB HBM3", "9.0", "h100"),
    ("RTX 4090", "8.9", "rtx 4090"), ("NVIDIA GeForce RTX 4090", "8.9", "rtx 4090"), ("A10", "8.6", "a10"),
    ("NVIDIA A10G", "8.6", "a10g"), ("NVIDIA A100-SXM4-80GB", "8.0", "a100"), ("NVIDIA A30", "8.0", "a30"),
    ("Tesla T4", "7.5", "t4"), ("Quadro RTX 6000", "7.5", "rtx 6000"),
    ("NVIDIA RTX 6000 Ada Generation", "8.9", "rtx 6000 ada"), ("GeForce GTX 1070 Ti", "6.1", "gtx 1070 ti"),
    ("GeForce GTX 1080 Ti", "6.1", "gtx 1080 ti"), ("Tesla V100-SXM2-32GB", "7.0", "v100"),
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "12.0", "rtx pro 6000 blackwell"), ("B200", "10.0", "b200"),
    ("RTX5090", "12.0", "rtx 5090"),
])
def test_find_gpu(name, cc, alias):
    g = T.find_gpu(name)
    assert g is not None and g.cc == cc and g.alias == alias


@pytest.mark.parametrize("name", ["", "foo", "RTX", "H1000", "A1000x"])
def test_find_gpu_unknown(name):
    assert T.find_gpu(name) is None


def test_driver_max_cuda_and_variants():
    assert T.driver_max_cuda("535.274.02") == "12.2"     # corpus raw collect_env 005 (4x A30)
    assert T.driver_max_cuda("470.182.03") == "11.4"     # corpus 008 (GKE node)
    assert T.driver_max_cuda("580.159.04") == "13.0"     # the H200 capture (NVML says 13.0)
    assert T.driver_max_cuda("410.78") is None
    assert T.variant_cuda("cu118") == "11.8" and T.variant_cuda("cu102") == "10.2" and T.variant_cuda("cpu") is None
    assert T.cuda_variant("12.8.93") == "cu128"
    assert T.suggest_variant("470.182.03") == ("2.7", "cu118", "mvc")
    assert T.suggest_variant("580.159.04")[1:] == ("cu130", "native")
