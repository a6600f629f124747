"""NCL008 (allocator configuration torch rejects) and NCL009 (NCCL_NET / NCCL_IB_HCA naming a network the host
lacks), on the real H200 snapshot (no RDMA device) edited per case. The faults were set by hand on that host
(docs/examples/h200-faults-2026-12-01): NCCL_NET=Bogus made the NCCL confirmation run fail with 'Failed to
initialize any NET plugin'; PYTORCH_CUDA_ALLOC_CONF=expandable_segments:maybe passed a --no-confirm scan silently."""
from __future__ import annotations

import json
import pathlib

import pytest
from conftest import ids, outcome

from gpudoctor.facts.model import Snapshot
from gpudoctor.facts.topo_model import IbPort
from gpudoctor.rules import evaluate
from gpudoctor.rules.env_values import split_alloc_conf

FAULTS = pathlib.Path(__file__).parent / "fixtures" / "h200-faults"


@pytest.fixture
def h200_topo_snap() -> Snapshot:
    """The H200's own `scan --no-confirm` snapshot of 2026-12-01 (with topology facts: no RDMA device)."""
    return Snapshot.model_validate(json.loads((FAULTS / "baseline-noconfirm.json").read_text())["snapshot"])


def _run(snap, rid, **env):
    snap.env.variables.update(env)
    return evaluate(snap, only=[rid])


def test_split_alloc_conf_keeps_bracket_lists():
    assert split_alloc_conf("expandable_segments:True, roundup_power2_divisions:[256:1,512:2,>:4],x") == [
        ("expandable_segments", "True"), ("roundup_power2_divisions", "[256:1,512:2,>:4]"), ("x", None)]


@pytest.mark.parametrize("value", ["expandable_segments:True", "max_split_size_mb:128,garbage_collection_threshold:0.8",
                                   "backend:cudaMallocAsync", "roundup_power2_divisions:[256:1,512:2,>:4]",
                                   "roundup_power2_divisions:4,pinned_num_register_threads:8"])
def test_ncl008_accepts_valid_configs(h200_snap, value):
    rep = _run(h200_snap, "NCL008", PYTORCH_CUDA_ALLOC_CONF=value)
    assert ids(rep) == [] and outcome(rep, "NCL008").status == "pass"


@pytest.mark.parametrize("value, why", [
    ("expandable_segments:maybe", "True or False"), ("expandable_segments:true", "True or False"),
    ("max_split_size_mb:10", ">= 20"), ("garbage_collection_threshold:1.5", "between 0 and 1"),
    ("backend:cudaMalloc", "native, cudaMallocAsync"), ("roundup_power2_divisions:3", "power of 2"),
    ("max_split_size_mb", "no value"), ("expandable_segment:True", "did you mean expandable_segments"),
])
def test_ncl008_rejects_what_torch_rejects(h200_snap, value, why):
    rep = _run(h200_snap, "NCL008", PYTORCH_CUDA_ALLOC_CONF=value)
    assert ids(rep) == ["NCL008"] and rep.findings[0].severity == "error"
    assert why in " ".join(rep.findings[0].evidence)


def test_ncl008_unknown_key_on_a_newer_torch_is_a_warning(h200_snap):
    h200_snap.torch.version = "2.20.0+cu135"   # newer than the torch whose keys were read: it may know the key
    rep = _run(h200_snap, "NCL008", PYTORCH_ALLOC_CONF="some_future_option:True")
    assert [f.severity for f in rep.findings] == ["warning"]


def test_ncl008_unknown_env_is_not_assessed(h200_snap):
    h200_snap.env = None
    assert outcome(evaluate(h200_snap, only=["NCL008"]), "NCL008").status == "not_assessed"


def test_ncl009_nccl_net_ib_without_rdma_is_an_error(h200_topo_snap):
    assert h200_topo_snap.topology.ib_present is False   # the real host: no /sys/class/infiniband
    rep = _run(h200_topo_snap, "NCL009", NCCL_NET="IB")
    assert ids(rep) == ["NCL009"] and rep.findings[0].severity == "error"


def test_ncl009_unknown_network_name_warns_and_names_the_plugin(h200_topo_snap):
    rep = _run(h200_topo_snap, "NCL009", NCCL_NET="Bogus")
    assert [f.severity for f in rep.findings] == ["warning"]
    assert "Failed to initialize any NET plugin" in " ".join(rep.findings[0].evidence)
    assert ids(_run(h200_topo_snap, "NCL009", NCCL_NET="Socket")) == []


def test_ncl009_ib_hca(h200_topo_snap):
    assert ids(_run(h200_topo_snap, "NCL009", NCCL_IB_HCA="mlx5_99")) == []   # no RDMA device: moot
    topo = h200_topo_snap.topology
    topo.ib_present = True
    topo.ib_ports = [IbPort(device="mlx5_0", port=1, state="ACTIVE"), IbPort(device="mlx5_1", port=1, state="ACTIVE")]
    assert ids(_run(h200_topo_snap, "NCL009", NCCL_IB_HCA="mlx5_0:1,mlx5_1:1")) == []
    assert ids(_run(h200_topo_snap, "NCL009", NCCL_NET="IB")) == []
    rep = _run(h200_topo_snap, "NCL009", NCCL_IB_HCA="=mlx5_9", NCCL_NET="IB", WORLD_SIZE="16", LOCAL_WORLD_SIZE="8")
    assert [f.severity for f in rep.findings] == ["warning"] and "selects no HCA" in rep.findings[0].evidence[0]


def test_ncl009_ib_facts_unknown_is_not_assessed(h200_topo_snap):
    h200_topo_snap.topology.ib_present = None
    assert outcome(_run(h200_topo_snap, "NCL009", NCCL_NET="IB"), "NCL009").status == "not_assessed"


@pytest.mark.parametrize("env, phrase", [
    ({"WORLD_SIZE": "2", "RANK": "2"}, "below the world size"),
    ({"LOCAL_RANK": "1", "LOCAL_WORLD_SIZE": "1"}, "LOCAL_RANK=1 with LOCAL_WORLD_SIZE=1"),
    ({"MASTER_PORT": "70000"}, "outside 1-65535"),
    ({"MASTER_PORT": "29500x"}, "not an integer"),
    ({"LOCAL_RANK": "3"}, "invalid device ordinal"),        # one H200 visible
    ({"LOCAL_WORLD_SIZE": "2", "WORLD_SIZE": "2"}, "share a GPU"),
])
def test_ncl010_launch_variables(h200_snap, env, phrase):
    rep = _run(h200_snap, "NCL010", **env)
    assert ids(rep) == ["NCL010"] and phrase in " ".join(rep.findings[0].evidence)
    gpu_only = "LOCAL_RANK" in env and "LOCAL_WORLD_SIZE" not in env or "share a GPU" in phrase
    assert rep.findings[0].severity == ("warning" if gpu_only else "error")


def test_ncl010_quiet_on_a_consistent_launch(h200_snap):
    rep = _run(h200_snap, "NCL010", WORLD_SIZE="16", RANK="15", LOCAL_RANK="0", LOCAL_WORLD_SIZE="1",
               MASTER_PORT="29500")
    assert ids(rep) == [] and outcome(rep, "NCL010").status == "pass"
    h200_snap.env = None
    assert outcome(evaluate(h200_snap, only=["NCL010"]), "NCL010").status == "not_assessed"


def test_ncl001_unknown_algorithm_is_an_error_on_nccl_2_24_and_later(h200_snap):
    """NCCL_ALGO=Bogus on the H200 (NCCL 2.28.9): the one-rank run passed (no tuner with one rank), but NCCL
    2.24+ refuses the token on any multi-rank communicator (src/graph/tuning.cc parseList)."""
    h200_snap.torch.nccl_version = "2.28.9"
    rep = _run(h200_snap, "NCL001", NCCL_ALGO="Bogus")
    f = rep.findings[0]
    assert f.severity == "error" and "'Bogus' is not an algorithm NCCL knows" in " ".join(f.evidence)
    h200_snap.torch.nccl_version = "2.21.5"
    assert [f.severity for f in _run(h200_snap, "NCL001", NCCL_ALGO="Bogus").findings] == ["warning"]
    # valid forms, the per-collective syntax included: the plain 'forced' warning only
    for value in ("Ring,Tree", "ring;allreduce:^nvls", "NVLSTree"):
        rep = _run(h200_snap, "NCL001", NCCL_ALGO=value)
        assert [(f.severity, f.title) for f in rep.findings] == [("warning", "NCCL algorithm or protocol forced")]
    rep = _run(h200_snap, "NCL001", NCCL_ALGO="Ring", NCCL_PROTO="LL;tree")
    assert any("needs a collective prefix" in " ".join(f.evidence) for f in rep.findings)


def test_ncl008_key_newer_than_the_torch_in_use(h200_snap):
    """expandable_segments arrived in torch 2.1: torch 2.0 raises 'Unrecognized CachingAllocator option'."""
    h200_snap.torch.version = "2.0.1+cu118"
    rep = _run(h200_snap, "NCL008", PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True")
    assert [f.severity for f in rep.findings] == ["error"] and "needs torch 2.1" in " ".join(rep.findings[0].evidence)
    h200_snap.torch.version = "2.1.0+cu121"
    assert ids(_run(h200_snap, "NCL008", PYTORCH_CUDA_ALLOC_CONF="expandable_segments:True")) == []


def test_launcher_variables_are_collected():
    from gpudoctor.facts.env import collect_env

    env = collect_env({"LOCAL_RANK": "3", "RANK": "3", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500",
                       "HOME": "/root", "HF_TOKEN": "hf_" + "x" * 30})
    assert env == {"LOCAL_RANK": "3", "RANK": "3", "MASTER_ADDR": "10.0.0.1", "MASTER_PORT": "29500"}


def test_a_path_level_nccl_does_not_read_is_named(tmp_path):
    """ncclGetLevel (src/graph/paths.cc) compares NCCL_P2P_LEVEL with LOC/NVL/.../SYS case-sensitively or reads a
    leading digit; 'NVLINK' matches neither, so NCCL ignores it silently."""
    import json

    from typer.testing import CliRunner

    from gpudoctor.cli.app import app

    for value, bad in (("NVLINK", True), ("nvl", True), ("NVL", False), ("2", False)):
        p = tmp_path / "env.txt"
        p.write_text(f"NCCL_P2P_LEVEL={value}\nPATH=/usr/bin\nHOME=/root\n")
        doc = json.loads(CliRunner().invoke(app, ["check", str(p), "--format", "json"]).stdout)
        ev = " ".join(e for f in doc["findings"] if f["rule_id"] == "NCL005" for e in f["evidence"])
        assert ("not a level NCCL reads" in ev) == bad, (value, ev)


def test_a_loopback_master_addr_in_a_multi_node_job_is_an_error(tmp_path):
    from typer.testing import CliRunner

    from gpudoctor.cli.app import app

    p = tmp_path / "env.txt"
    p.write_text("MASTER_ADDR=localhost\nMASTER_PORT=29500\nWORLD_SIZE=16\nLOCAL_WORLD_SIZE=8\nRANK=8\nLOCAL_RANK=0\n"
                 "SLURM_NNODES=2\nPATH=/usr/bin\nHOME=/root\nUSER=root\n")
    doc = json.loads(CliRunner().invoke(app, ["check", str(p), "--format", "json"]).stdout)
    f = next(f for f in doc["findings"] if f["rule_id"] == "NCL010")
    assert any("MASTER_ADDR=localhost" in e for e in f["evidence"])


def _nccl_log(tmp_path, text):
    import json

    from typer.testing import CliRunner

    from gpudoctor.cli.app import app

    p = tmp_path / "nccl.log"
    p.write_text(text)
    res = CliRunner().invoke(app, ["check", str(p), "--format", "json"])
    return {o["rule_id"]: o for o in json.loads(res.stdout)["outcomes"]}, json.loads(res.stdout)["findings"]


# bootstrap.cc INFO "Bootstrap : Using%s", net_socket.cc INFO "NET/Socket : Using%s" (" [%d]%s:%s" per interface)
def test_socket_ifname_prefix_that_also_selects_sub_interfaces(tmp_path):
    base = ("a7:41822:41822 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to {v}\n"
            "a7:41822:41822 [0] NCCL INFO Bootstrap : Using bond0:192.168.42.7<0>\n"
            "a7:41822:41990 [0] NCCL INFO NET/Socket : Using [0]bond0:192.168.42.7<0>{more}\n"
            "a7:41822:41990 [0] NCCL INFO Using network Socket\n")
    more = " [1]bond0.2973:10.0.106.189<0> [2]bond0.2973.1:fe80::f816:3eff:fe5d:8ecb%bond0.2973.1<0>"
    outcomes, found = _nccl_log(tmp_path, base.format(v="bond0", more=more))
    f = next(x for x in found if x["rule_id"] == "NCL011")
    assert f["severity"] == "warning" and "bond0.2973" in f["title"] and "NCCL_SOCKET_IFNAME==bond0" in f["remedy"]
    outcomes, _ = _nccl_log(tmp_path, base.format(v="==bond0", more=""))
    assert outcomes["NCL011"]["status"] == "pass"
    outcomes, _ = _nccl_log(tmp_path, base.format(v="bond0", more="").replace(
        "a7:41822:41822 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to bond0\n", ""))
    assert outcomes["NCL011"]["status"] == "not_assessed"


def test_socket_ifname_that_matches_nothing(tmp_path):
    _, found = _nccl_log(tmp_path, "t3:1958:1958 [3] NCCL INFO NCCL_SOCKET_IFNAME set by environment to eth2\n"
                                   "t3:1958:1958 [3] NCCL INFO Bootstrap: Using\n")
    f = next(x for x in found if x["rule_id"] == "NCL011")
    assert f["severity"] == "error" and "matches no interface" in f["title"]


# NCCL_SOCKET_IFNAME unset: socket.cc ncclFindInterfaces takes every interface but docker*, lo and virbr* (after ib*)
_AUTO = ("n1:2841:2841 [0] NCCL INFO Bootstrap : Using bond0:192.168.1.161<0>\n"
         "n1:2841:2900 [0] NCCL INFO NET/Socket : Using [0]bond0:192.168.1.161<0>{more}\n"
         "n1:2841:2900 [0] NCCL INFO Using network Socket\n")
_BRIDGES = " [1]br-05ab815fa14e:172.19.0.1<0> [2]veth6163fba:fe80::b878:6cff:fe52:abe2%veth6163fba<0>"


def test_container_bridges_nccl_picked_by_itself(tmp_path):
    outcomes, found = _nccl_log(tmp_path, _AUTO.format(more=_BRIDGES))
    f = next(x for x in found if x["rule_id"] == "NCL012")
    assert f["severity"] == "warning" and f["data"]["virtual"] == ["br-05ab815fa14e", "veth6163fba"]
    assert "NCCL_SOCKET_IFNAME==bond0" in f["remedy"] and "^br-,docker,lo,veth" in f["remedy"]
    refused = "n1:2841:2910 [0] include/socket.h:409 NCCL WARN Net : Connect to 172.19.0.1<49153> failed : " \
              "Connection refused\n"
    _, found = _nccl_log(tmp_path, _AUTO.format(more=_BRIDGES) + refused)
    f = next(x for x in found if x["rule_id"] == "NCL012")
    assert f["severity"] == "error" and f["data"]["failures"] == ["SIG031"] and found[0]["rule_id"] == "NCL012"


@pytest.mark.parametrize("log", [
    _AUTO.format(more=" [1]eth1:10.0.0.7<0>"),  # two real NICs
    "n1:2841:2841 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to bond\n" + _AUTO.format(more=_BRIDGES),
])
def test_no_container_bridge_or_the_users_choice_is_quiet(tmp_path, log):
    outcomes, found = _nccl_log(tmp_path, log)
    assert "NCL012" not in [f["rule_id"] for f in found]
    assert outcomes["NCL012"]["status"] in ("pass", "not_applicable")


@pytest.mark.parametrize("name,value,read,fix", [
    ("NCCL_BUFFSIZE", "8M", 8, "NCCL_BUFFSIZE=8388608"),      # strtoll stops at the suffix
    ("NCCL_IB_DISABLE", "true", 0, "NCCL_IB_DISABLE=1"),      # no digit: 0, IB stays enabled
    ("NCCL_IB_GID_INDEX", "08", 0, "NCCL_IB_GID_INDEX=8"),    # base 0: a leading 0 is octal, '8' ends it
    ("NCCL_NTHREADS", "2.5e2", 2, "NCCL_NTHREADS=250"),
])
def test_an_integer_nccl_variable_nccl_reads_as_another_number(h200_snap, name, value, read, fix):
    from gpudoctor.rules import evaluate

    h200_snap.env.variables[name] = value
    f, = evaluate(h200_snap, only=["NCL013"]).findings
    assert f.data["read"] == read and fix in f.remedy and f.subject == name


@pytest.mark.parametrize("name,value", [("NCCL_BUFFSIZE", "4194304"), ("NCCL_IB_TIMEOUT", "0x16"),
                                        ("NCCL_IB_GID_INDEX", "03"), ("NCCL_CUMEM_ENABLE", "-2"),
                                        ("NCCL_SOCKET_IFNAME", "eth0"), ("NCCL_IB_HCA", "mlx5_0:1")])
def test_plain_integers_and_string_variables_are_quiet(h200_snap, name, value):
    from gpudoctor.rules import evaluate

    h200_snap.env.variables[name] = value
    assert evaluate(h200_snap, only=["NCL013"]).findings == []


def test_a_tiny_size_in_nccls_own_set_by_environment_line(tmp_path):
    """param.cc INFO "%s set by environment to %lld." shows what strtoll kept of NCCL_BUFFSIZE=8M: 8 bytes."""
    outcomes, found = _nccl_log(tmp_path, "t4:1180:1244 [0] NCCL INFO NCCL_BUFFSIZE set by environment to 8.\n"
                                          "t4:1180:1244 [0] NCCL INFO NCCL version 2.27.3+cuda12.8\n")
    f = next(x for x in found if x["rule_id"] == "NCL013")
    assert "only 8 bytes" in f["title"] and "8388608" in f["remedy"]
    assert "NCL005" not in [x["rule_id"] for x in found] and f["data"]["read"] == 8  # NCL005 listed inside it
    _, found = _nccl_log(tmp_path, "t4:1180:1244 [0] NCCL INFO NCCL_BUFFSIZE set by environment to 8388608.\n"
                                   "t4:1180:1244 [0] NCCL INFO NCCL version 2.27.3+cuda12.8\n")
    assert "NCL013" not in [x["rule_id"] for x in found] and "NCL005" in [x["rule_id"] for x in found]


def test_a_tunnel_with_a_link_local_address_is_flagged_a_nic_named_veth0_is_not(tmp_path):
    """NVIDIA/nccl#529's shape: NCCL took ip6tnl0 (an IPv6 tunnel, fe80:: only) before the host's real NIC, which a
    cloud named veth0; and an interface of any name with only a link-local address cannot reach another node."""
    using = "[0]ip6tnl0:fe80::e866:19ff:fe1e:a688%ip6tnl0<0> [1]veth0:2a02:6b8:fc1d:3606:0:4457:edef:600a<0>"
    _, found = _nccl_log(tmp_path, f"h:97:221 [0] NCCL INFO Bootstrap : Using {using}\n"
                                   f"h:97:221 [0] NCCL INFO NET/Socket : Using {using}\n")
    f = next(x for x in found if x["rule_id"] == "NCL012")
    assert f["data"]["virtual"] == ["ip6tnl0"] and "NCCL_SOCKET_IFNAME==veth0" in f["remedy"]
    assert "ip6tnl0 comes first" in " ".join(f["evidence"])
    _, found = _nccl_log(tmp_path, "h:97:221 [0] NCCL INFO NET/Socket : Using [0]eth0:10.1.0.5<0> "
                                   "[1]eth1:169.254.3.1<0>\n")
    f = next(x for x in found if x["rule_id"] == "NCL012")
    assert f["data"]["virtual"] == ["eth1"] and "link-local" in " ".join(f["evidence"])


def test_the_cumem_workaround_is_judged_by_the_nccl_of_the_log_when_torch_is_not_in_the_inputs(tmp_path):
    _, found = _nccl_log(tmp_path, "h:1:1 [0] NCCL INFO NCCL version 2.27.3+cuda12.8\n"
                                   "h:1:1 [0] NCCL INFO NCCL_CUMEM_ENABLE set by environment to 0.\n")
    f = next(x for x in found if x["rule_id"] == "NCL005")
    assert f["severity"] == "warning" and "NCCL 2.27.3 is 2.22.3 or newer" in " ".join(f["evidence"])


@pytest.mark.parametrize("name,value,fix", [("NCCL_P2P_DISABLE", "true", "NCCL_P2P_DISABLE=1"),
                                            ("NCCL_COLLNET_ENABLE", "yes", "NCCL_COLLNET_ENABLE=1"),
                                            ("NCCL_NTHREADS", "8M", "NCCL_NTHREADS=<integer>")])
def test_variables_nccl_reads_with_strtol_itself_and_units_only_for_sizes(h200_snap, name, value, fix):
    """paths.cc ncclGetLevel: strtol(NCCL_P2P_DISABLE) == 1 disables P2P, so 'true' disables nothing (and NCL005 does
    not say it does); a unit suffix is suggested as bytes only for the byte sizes."""
    from gpudoctor.rules import evaluate

    h200_snap.env.variables[name] = value
    rep = evaluate(h200_snap, only=["NCL013", "NCL005"])
    f, = [x for x in rep.findings if x.rule_id == "NCL013"]
    assert f.data["read"] == 0 or name == "NCCL_NTHREADS"
    assert fix in f.remedy and "NCL005" not in [x.rule_id for x in rep.findings if x.subject == name
                                                and "disables" in " ".join(x.evidence)]


def test_the_value_nccl_logged_wins_over_an_environment_dump_of_another_run(tmp_path):
    env = tmp_path / "env.txt"
    env.write_text("NCCL_BUFFSIZE=8M\n")
    log = tmp_path / "nccl.log"
    log.write_text("h:1:1 [0] NCCL INFO NCCL_BUFFSIZE set by environment to 8388608.\nh:1:1 [0] NCCL INFO NCCL "
                   "version 2.27.3+cuda12.8\n")
    import json

    from typer.testing import CliRunner

    from gpudoctor.cli.app import app

    res = CliRunner().invoke(app, ["check", str(env), str(log), "--format", "json"])
    assert "NCL013" not in [f["rule_id"] for f in json.loads(res.stdout)["findings"]]


def test_container_bridges_on_a_one_node_job_are_a_note(tmp_path):
    """init.cc INFO "comm %p rank %d nRanks %d nNodes %d localRanks %d localRank %d MNNVL %d" (2.21+): one node."""
    one = "n1:2841:2900 [0] NCCL INFO comm 0x55d0 rank 0 nRanks 8 nNodes 1 localRanks 8 localRank 0 MNNVL 0\n"
    _, found = _nccl_log(tmp_path, _AUTO.format(more=_BRIDGES) + one)
    f = next(x for x in found if x["rule_id"] == "NCL012")
    assert f["severity"] == "info" and "one node" in " ".join(f["evidence"])


@pytest.mark.parametrize("text", [
    "Containers:\n  pytorch:\n    Environment:\n      NCCL_BUFFSIZE:   8M\n      HF_TOKEN:        <set to the key "
    "'t' in secret 'hf'>\n      WANDB_API_KEY:   0123456789abcdef0123456789\n    Mounts:\n      /dev/shm from dshm\n",
    "spec:\n  containers:\n  - name: pytorch\n    env:\n    - name: NCCL_BUFFSIZE\n      value: \"8M\"\n"
    "    - name: WANDB_API_KEY\n      value: 0123456789abcdef0123456789\n",
])
def test_a_pods_environment_is_read_from_kubectl_describe_and_a_pod_spec(tmp_path, text):
    import json

    from typer.testing import CliRunner

    from gpudoctor.cli.app import app

    p = tmp_path / "pod.txt"
    p.write_text(text)
    res = CliRunner().invoke(app, ["check", str(p), "--format", "json"])
    doc = json.loads(res.stdout)
    assert doc["snapshot"]["env"]["variables"] == {"NCCL_BUFFSIZE": "8M"}  # training variables only, no secret
    assert "NCL013" in [f["rule_id"] for f in doc["findings"]] and "0123456789abcdef" not in res.stdout


def test_an_exclusion_list_that_leaves_the_bridges_in_is_still_judged(tmp_path):
    """NCCL_SOCKET_IFNAME=^docker excludes docker* only: br-<id> and veth pairs are still NCCL's pick."""
    _, found = _nccl_log(tmp_path, "n1:2841:2841 [0] NCCL INFO NCCL_SOCKET_IFNAME set by environment to ^docker\n"
                                   + _AUTO.format(more=_BRIDGES))
    f = next(x for x in found if x["rule_id"] == "NCL012")
    assert "beside NCCL_SOCKET_IFNAME=^docker" in f["evidence"][0]


def test_variables_a_pasted_command_line_sets_are_checked(tmp_path):
    """docker's -e / --env, a leading NAME=value, srun's --export and mpirun's -x reach the env rules."""
    import json

    from typer.testing import CliRunner

    from gpudoctor.cli.app import app

    p = tmp_path / "cmd.txt"
    p.write_text("$ docker run --gpus all -e NCCL_NTHREADS=\"0256\" -e HF_TOKEN=hf_abcdefghijklmnopqrstuvwx \\\n"
                 "    --env=NCCL_BUFFSIZE=8M nvcr.io/nvidia/pytorch:24.05-py3 torchrun train.py\n")
    res = CliRunner().invoke(app, ["check", str(p), "--format", "json"])
    doc = json.loads(res.stdout)
    assert doc["snapshot"]["env"]["variables"] == {"NCCL_NTHREADS": "0256", "NCCL_BUFFSIZE": "8M"}
    assert [f["subject"] for f in doc["findings"] if f["rule_id"] == "NCL013"] == ["NCCL_BUFFSIZE", "NCCL_NTHREADS"]
    assert "hf_abcdef" not in res.stdout
    from gpudoctor.parsers.commands import command_env

    assert command_env("srun --export=ALL,NCCL_SOCKET_IFNAME=eth0 python t.py") == {"NCCL_SOCKET_IFNAME": "eth0"}
    assert command_env("mpirun -x NCCL_DEBUG=INFO -x LD_LIBRARY_PATH ./a.out") == {"NCCL_DEBUG": "INFO"}


def test_the_new_nccl_rules_say_not_assessed_without_their_facts(tmp_path):
    """NCL012 needs NCCL's 'Using' lines, NCL013 an environment; the signatures need a log: not assessed, never pass."""
    import json

    from typer.testing import CliRunner

    from gpudoctor.cli.app import app
    from gpudoctor.facts.model import Snapshot
    from gpudoctor.rules import evaluate

    p = tmp_path / "smi.txt"
    p.write_text("No devices were found\n")
    doc = json.loads(CliRunner().invoke(app, ["check", str(p), "--format", "json"]).stdout)
    status = {o["rule_id"]: o["status"] for o in doc["outcomes"]}
    assert status["NCL012"] == "not_assessed" and status["NCL013"] == "not_assessed"
    empty = evaluate(Snapshot(gpudoctor_version="x", created_at="now"))
    status = {o.rule_id: o.status for o in empty.outcomes}
    assert all(status[r] != "pass" for r in ("NCL012", "NCL013", "SIG513", "SIG519", "SIG525", "SIG527"))
