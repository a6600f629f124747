"""Every parser on random and mutated real inputs: a result or a clear ParseError, never another exception.
Also the whole offline pipeline (detect -> parse -> signatures -> rules) on mutated inputs."""
import pathlib

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpudoctor.parsers import (
    ParseError,
    collect_env,
    commands,
    detect,
    dmesg,
    env_dump,
    host_text,
    ibstat,
    lspci,
    nccl_log,
    nvidia_smi,
    p2p_check,
)
from gpudoctor.parsers.signatures import match_signatures, unexplained_error_lines

FIX = pathlib.Path(__file__).parent / "fixtures"
PARSERS = {
    "collect_env": (collect_env.parse_collect_env, "h200-text/collect_env.txt"),
    "lscpu": (collect_env.parse_lscpu, "h200-text/lscpu.txt"),
    "smi_table": (nvidia_smi.parse_table, "h200-text/nvidia-smi-busy.txt"),
    "smi_query": (nvidia_smi.parse_query, "h200-text/nvidia-smi-q-busy.txt"),
    "smi_xml": (nvidia_smi.parse_xml, "h200-text/nvidia-smi-q.xml"),
    "smi_list": (nvidia_smi.parse_list, "h200-text/nvidia-smi-L.txt"),
    "smi_csv": (nvidia_smi.parse_query_csv, "h200-text/nvidia-smi-csv.txt"),
    "meminfo": (host_text.parse_meminfo, "h200-text/meminfo.txt"),
    "proc_driver_version": (host_text.parse_proc_driver_version, "bug-report/procdriver.txt"),
    "apps_csv": (nvidia_smi.parse_compute_apps_csv, "h200-text/compute-apps-busy.txt"),
    "nvlink": (nvidia_smi.parse_nvlink_status, "corpus/017-a100-nvswitch-0-nvls-and-p2p-level-loc/nvlink-s.txt"),
    "lspci": (lspci.parse_lspci, "corpus/raw/lspci/005-plx-pex8725-acscap-acsctl-srcvalid.txt"),
    "ibstat": (ibstat.parse_ib_ports, "ib/ibstat-one-port-init.txt"),
    "ibv_devinfo": (ibstat.parse_ib_ports, "ib/ibv_devinfo-v.txt"),
    "df": (host_text.parse_df, "h200-errors/devshm-1m-dataloader.txt"),
    "ulimit": (host_text.parse_ulimit, "h200-text/ulimit.txt"),
    "dmesg": (dmesg.parse_kernel_log, "corpus/021-dmesg-gpu-fallen-off-bus-no-xid/dmesg.txt"),
    "nccl": (nccl_log.parse_nccl_log, "corpus/028-nccl-gdr-asymmetric-nv-peer-mem-missing-one-node/nccl.log"),
    "env": (env_dump.parse_env, "corpus/raw/collect_env/005-vllm-sectioned-torch2.8-cu128-4xa30-full.txt"),
    "commands": (commands.parse_commands, "corpus/023-container-started-without-gpus/container-log.txt"),
    "p2p": (p2p_check.parse_peer_checks, "corpus/027-trtllm-2xa10-phb-no-peer-access-custom-allreduce/p2p-check.txt"),
}
FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
alphabet = st.characters(blacklist_categories=("Cs",))


def _call(fn, text):
    try:
        fn(text)
    except ParseError as exc:
        assert str(exc) and "\n" not in str(exc)


@st.composite
def mutated(draw, base: str):
    """A real capture cut, spliced, with lines dropped / duplicated / garbled."""
    lines = base.split("\n")
    ops = draw(st.lists(st.sampled_from(["cut", "drop", "dup", "garble", "swap", "tabs", "cr"]), max_size=6))
    for op in ops:
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        if op == "cut":
            lines = lines[:i] + [lines[i][: draw(st.integers(0, max(0, len(lines[i]))))]]
        elif op == "drop":
            del lines[i]
        elif op == "dup":
            lines.insert(i, lines[i])
        elif op == "garble":
            lines[i] = draw(st.text(alphabet, max_size=80))
        elif op == "swap":
            j = draw(st.integers(0, len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif op == "tabs":
            lines[i] = lines[i].replace("  ", "\t")
        elif op == "cr":
            lines[i] += "\r"
    return "\n".join(lines)


@pytest.mark.parametrize("name", sorted(PARSERS))
@FUZZ
@given(text=st.text(alphabet, max_size=400))
def test_random_text(name, text):
    _call(PARSERS[name][0], text)


@pytest.mark.parametrize("name", sorted(PARSERS))
def test_mutated_real_input(name):
    fn, rel = PARSERS[name]
    base = (FIX / rel).read_text()
    fn(base)  # the real capture itself parses

    @FUZZ
    @given(text=mutated(base))
    def inner(text):
        _call(fn, text)

    inner()


@FUZZ
@given(text=st.one_of(st.text(alphabet, max_size=600),
                      mutated((FIX / "h200-errors/duplicate-gpu.txt").read_text()),
                      mutated((FIX / "corpus/008-torch21-cu121-on-driver-470/collect_env.txt").read_text())))
def test_detect_and_signatures_never_raise(text):
    detect.detect(text)
    spans = []
    match_signatures(text, spans=spans)
    unexplained_error_lines(text, spans)


@FUZZ
@given(a=mutated((FIX / "h200-text/nvidia-smi-q-busy.txt").read_text()),
       b=mutated((FIX / "h200-text/collect_env.txt").read_text()),
       c=mutated((FIX / "corpus/005-nccl-devshm-permission-denied/nccl.log").read_text()))
def test_pipeline_never_raises(tmp_path_factory, a, b, c):
    from gpudoctor.parsers.offline import build_snapshot
    from gpudoctor.rules import evaluate

    d = tmp_path_factory.mktemp("f")
    paths = []
    for i, t in enumerate((a, b, c)):
        p = d / f"{i}.txt"
        p.write_text(t, encoding="utf-8", errors="replace")
        paths.append(str(p))
    snap, errors = build_snapshot(paths)
    assert all("\n" not in e for e in errors)
    if snap is not None:
        rep = evaluate(snap)
        assert not [o for o in rep.outcomes if (o.reason or "").startswith("rule error")], \
            [o.reason for o in rep.outcomes if (o.reason or "").startswith("rule error")]


# ---------------------------------------------------------------------------------------------------------------
# Issue 6: the parsers the table above did not reach, other text/stream readers, and a check that every module of
# gpudoctor/parsers is fuzzed (so a new parser module cannot be added without its fuzz test).

import re  # noqa: E402

from gpudoctor.compat.pins import PinError, parse_pin, pins_from_file  # noqa: E402
from gpudoctor.facts.load import InputError, parse_document  # noqa: E402
from gpudoctor.parsers import (  # noqa: E402
    _text,
    code_table,
    hit_origin,
    launch_ranks,
    nccl_tests,
    packages,
    prose,
    regex_literals,
    topo,
    topology_text,
    torch_messages,
)
from gpudoctor.probes import nvml as nvml_probe  # noqa: E402
from gpudoctor.probes import topology as topology_probe  # noqa: E402
from gpudoctor.probes import torch_probe  # noqa: E402

MORE = {  # name -> (function of one text, REAL capture it is mutated from, the clear error it may raise)
    "topo": (topo.parse_topo_matrix, "topology/topo/005-8xa100-nv12-10nic-amd-nps4-mangled.txt", ParseError),
    "topo_h200_ansi": (topo.parse_topo_matrix, "topology/h200-topo-m.txt", ParseError),
    "topology_text": (topology_text.topology_from_text, "topology/h200-topo-m.txt", ParseError),
    "torch_messages": (torch_messages.parse_messages, "corpus/020-torch-arch-list-missing-sm61/error.txt", ()),
    "torch_facts_from_texts": (
        lambda t: torch_messages.facts_from_texts([t]),
        "corpus/008-torch21-cu121-on-driver-470/collect_env.txt",
        (),
    ),
    "env_lines": (
        env_dump.parse_env_lines,
        "corpus/raw/collect_env/005-vllm-sectioned-torch2.8-cu128-4xa30-full.txt",
        (),
    ),
    "torch_probe_output": (torch_probe.parse_output, "h200/torch-probe.txt", ()),
    "nvml_worker_stream": (
        lambda t: nvml_probe.assemble(t.splitlines())[0].model_dump_json(),
        "h200/nvml-worker-busy.jsonl",
        (),
    ),
    "topology_worker_stream": (
        lambda t: topology_probe.assemble_topology(t.splitlines()),
        "h200/nvml-worker-busy.jsonl",
        (),
    ),
    "report_document": (parse_document, "h200/scan.json", InputError),
    "torch_pin": (lambda t: parse_pin(t[:200]), "h200/torch-probe.txt", PinError),
}
# small helpers that read one value or one line of pasted text: never raise (or only their documented ValueError)
HELPERS = {
    "to_int": (_text.to_int, ()), "to_float": (_text.to_float, ()), "to_bool": (_text.to_bool, ()),
    "size_bytes": (_text.size_bytes, ()), "na": (_text.na, ()), "clean": (_text.clean, ()),
    "first_bdf": (dmesg.first_bdf, ()), "join_nvrm": (dmesg.join_nvrm, ()),
    "docker_gpu_request": (commands.docker_gpu_request, ()), "looks_like_env": (detect.looks_like_env, ()),
    "normalize_bdf": (lspci.normalize_bdf, ValueError), "link_class": (topo.link_class, ()),
    "nvlink_count": (topo.nvlink_count, ()), "strip_ansi": (topo.strip_ansi, ()),
    "origin": (hit_origin.origin, ()), "anchors": (regex_literals.anchors, re.error),
    "rank_announcements": (launch_ranks.parse_rank_announcements, ()),
    "nccl_tests": (nccl_tests.parse_nccl_tests, ()),
    "unwrap_json_lines": (_text.unwrap_json_lines, ()), "unquote": (_text.unquote, ()),
    "package_list": (packages.looks_like_package_list, ()), "parse_packages": (packages.parse_packages, ParseError),
    "strip_line_prefixes": (_text.strip_line_prefixes, ()), "mask_code_tables": (code_table.mask_code_tables, ()),
    "is_code_table": (code_table.is_code_table, ()),
    "log_view": (prose.log_view, ()), "is_python_source": (prose.is_python_source, ()),
    "is_config": (prose.is_config, ()), "is_conversation": (prose.is_conversation, ()),
}


def _call_more(fn, text, errors):
    try:
        fn(text)
    except errors as exc:  # noqa: PERF203 - the documented, clear error
        assert str(exc) and "\n" not in str(exc)


@pytest.mark.parametrize("name", sorted(MORE))
@FUZZ
@given(text=st.text(alphabet, max_size=400))
def test_random_text_more(name, text):
    fn, _, errors = MORE[name]
    _call_more(fn, text, errors)


@pytest.mark.parametrize("name", sorted(MORE))
def test_mutated_real_input_more(name):
    fn, rel, errors = MORE[name]
    base = (FIX / rel).read_text()
    if name not in ("torch_pin", "topology_worker_stream"):
        assert fn(base)  # the real capture gives a result

    @FUZZ
    @given(text=mutated(base))
    def inner(text):
        _call_more(fn, text, errors)

    inner()


@pytest.mark.parametrize("name", sorted(HELPERS))
@settings(max_examples=150, deadline=None)
@given(text=st.one_of(st.text(alphabet, max_size=80),
                      st.sampled_from(["0", "-1", "1e309", "nan", "N/A", "[N/A]", "12 MiB", "3.5 GB", "yes", "Enabled",
                                       "0000:17:00.0", "00000000:17:00.0", "17:00.0", "NV12", "PIX", "\x1b[31mSYS",
                                       "NVRM: GPU at PCI:0000:17:00: GPU has fallen off the bus."])))
def test_helpers_never_raise(name, text):
    fn, errors = HELPERS[name]
    _call_more(fn, text, errors)


@FUZZ
@given(text=mutated((FIX.parent.parent / "examples" / "requirements-train.txt").read_text()))
def test_requirements_file_mutated(tmp_path_factory, text):
    p = tmp_path_factory.mktemp("req") / "requirements.txt"
    p.write_text(text, encoding="utf-8", errors="replace")
    try:
        pins_from_file(str(p))
    except PinError as exc:
        assert str(exc) and "\n" not in str(exc)


def test_every_parser_module_is_fuzzed():
    import pkgutil

    import gpudoctor.parsers as pkg

    modules = {m.name for m in pkgutil.iter_modules(pkg.__path__)}
    fuzzed = {fn.__module__.rsplit(".", 1)[-1] for fn, _ in PARSERS.values()}
    fuzzed |= {fn.__module__.rsplit(".", 1)[-1] for fn, _, _ in MORE.values()}
    fuzzed |= {fn.__module__.rsplit(".", 1)[-1] for fn, _ in HELPERS.values()}
    fuzzed |= {"detect", "signatures"}  # test_detect_and_signatures_never_raise
    fuzzed |= {"offline", "offline_merge", "offline_formats", "stream"}  # build_snapshot, merging, format table,
    # reader: test_pipeline_never_raises
    fuzzed |= {"bug_report"}  # test_bug_report_never_raises
    fuzzed |= {"chunk_pool"}  # no text of its own: runs the parsers above on chunks (tests/test_chunk_pool.py)
    fuzzed |= {"smi_common"}  # constants and one-value helpers of the nvidia-smi parsers (fuzzed through them)
    fuzzed |= {"torch_messages"}        # lambdas above (facts_from_texts) are defined in this module
    assert modules - fuzzed == set(), f"parser modules without a fuzz test: {sorted(modules - fuzzed)}"


def _bug_report_text() -> str:
    import gzip

    return gzip.decompress((FIX / "bug-report/nvidia-bug-report.log.gz").read_bytes()).decode()


@FUZZ
@given(text=st.one_of(mutated(_bug_report_text()), st.text(alphabet, max_size=400).map(
    lambda t: "_" * 44 + "\n\n*** /proc/driver/nvidia/version\n" + t)))
def test_bug_report_never_raises(tmp_path_factory, text):
    """nvidia-bug-report.log cut, spliced, garbled: its sections split and the whole pipeline runs."""
    from gpudoctor.parsers import bug_report
    from gpudoctor.parsers.offline import build_snapshot
    from gpudoctor.rules import evaluate

    bug_report.split_sections(text)
    p = tmp_path_factory.mktemp("br") / "nvidia-bug-report.log"
    p.write_text(text, encoding="utf-8", errors="replace")
    snap, errors = build_snapshot([str(p)])
    assert all("\n" not in e for e in errors)
    if snap is not None:
        rep = evaluate(snap)
        assert not [o for o in rep.outcomes if (o.reason or "").startswith("rule error")]
