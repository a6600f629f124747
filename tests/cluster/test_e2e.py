"""Real multi-process runs on 127.0.0.1 with gloo: torchrun agents and srun-style tasks. No mocks.

Every "node" is a separate process (a torchrun agent with its worker, or a task started with the
variables srun sets). One node is made to differ through its environment: NCCL_ALGO, and the
documented test-only knobs GPUDOCTOR_TEST_LINK_DELAY_MS / _CLOCK_SKEW_MS / _HANG.
"""
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import needs_torch  # noqa: E402

from gpudoctor.facts.cluster import ClusterReport

pytestmark = [pytest.mark.slow, needs_torch]
ROOT = Path(__file__).resolve().parents[2]
LIGHT = "host,cpu,memory,env"  # per-node scan without the torch/NVML subprocesses, to keep the suite fast


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


PROFILE = None


def rules_profile():
    """A site profile (GPUDOCTOR_RULES_DIR) for these runs: a pair is slow below 0.1 x the reference.

    On this 2-core machine the pairs of one round share the CPUs, so healthy pairs differ by up to ~2x
    (on real nodes each pair has its own NICs); the injected delay makes a slow pair ~50x slower.
    """
    global PROFILE
    if PROFILE is None:
        import atexit
        import shutil
        import tempfile

        PROFILE = Path(tempfile.mkdtemp(prefix="gpudoctor-profile-"))
        atexit.register(shutil.rmtree, PROFILE, True)  # issue 15 item 8: the session leaves no folder behind
        text = (ROOT / "rules" / "cluster.toml").read_text()
        assert "slow_fraction = 0.7" in text
        (PROFILE / "cluster.toml").write_text(text.replace("slow_fraction = 0.7", "slow_fraction = 0.1"))
    return str(PROFILE)


def base_env(**extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("NCCL_", "GPUDOCTOR_TEST_", "SLURM_", "RANK", "WORLD_SIZE", "MASTER_", "TORCHELASTIC"))}
    env.update({"PYTHONPATH": str(ROOT), "PYTHONWARNINGS": "ignore", "GLOO_SOCKET_IFNAME": "lo",
                "GPUDOCTOR_RULES_DIR": rules_profile()})
    env.update(extra)
    return env


def start(argv, env, tmp, name):
    out, err = open(tmp / f"{name}.out", "w"), open(tmp / f"{name}.err", "w")
    return subprocess.Popen(argv, env=env, stdout=out, stderr=err, cwd=tmp, start_new_session=True)


def finish(procs, limit):
    deadline = time.monotonic() + limit
    codes = []
    for p in procs:
        try:
            codes.append(p.wait(max(0.1, deadline - time.monotonic())))
        except subprocess.TimeoutExpired:
            codes.append(None)
    for p in procs:  # end what is left (hung test nodes), by process group of the process we started
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    return codes


def torchrun_agents(tmp, envs, args, port):
    n = len(envs)
    return [start([sys.executable, "-m", "torch.distributed.run", "--nnodes", str(n), "--nproc-per-node", "1",
                   "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{port}", "-m", "gpudoctor", "cluster",
                   *args], base_env(**e), tmp, f"agent{i}") for i, e in enumerate(envs)]


def slurm_tasks(tmp, n, args, port, per_task, start_only=None):
    procs = {}
    for r in range(n):
        if start_only is not None and r not in start_only:
            continue
        env = base_env(SLURM_PROCID=str(r), SLURM_NTASKS=str(n), SLURM_LOCALID="0", SLURM_NODEID=str(r),
                       SLURM_NNODES=str(n), SLURM_JOB_NODELIST=f"tnode[0-{n - 1}]", SLURM_TASKS_PER_NODE=f"1(x{n})",
                       SLURM_JOB_ID="4242", MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port), **per_task.get(r, {}))
        procs[r] = start([sys.executable, "-m", "gpudoctor", "cluster", *args], env, tmp, f"task{r}")
    return procs


def by_rule(rep, rid):
    return [f for f in rep.findings if f.rule_id == rid]


PLANTED = {"HF_TOKEN": "hf_PLANTEDs3cretS3CRETs3cret{}", "TORCH_API_KEY": "PLANTED-KEY-node{}",
           "AWS_SECRET_ACCESS_KEY": "PLANTED-AWS-node{}-abcdef", "NCCL_IB_HCA_TOKEN": "tok-PLANTED-{}"}


@pytest.fixture(scope="module")
def torchrun_run(tmp_path_factory):
    """3 torchrun agents (c10d rendezvous): one with NCCL_ALGO and a slow link, one with a skewed clock."""
    tmp = tmp_path_factory.mktemp("torchrun")
    envs = [{}, {"NCCL_ALGO": "Ring", "GPUDOCTOR_TEST_LINK_DELAY_MS": "60"}, {"GPUDOCTOR_TEST_CLOCK_SKEW_MS": "400"}]
    for i, e in enumerate(envs):  # planted secrets, different on each node (test_cluster_report_never_shows_secrets)
        e.update({k: v.format(i) for k, v in PLANTED.items()})
    t0 = time.monotonic()
    procs = torchrun_agents(
        tmp,
        envs,
        [
            "--cpu",
            "--json",
            "--save",
            str(tmp / "saved.json"),
            "--timeout",
            "40",
            "--iters",
            "5",
            "--warmup",
            "1",
            "--probes",
            LIGHT,
            "--size-mib",
            "0.25",
        ],
        free_port(),
    )
    codes = finish(procs, 90)
    outs = [(tmp / f"agent{i}.out").read_text() for i in range(3)]
    return {"codes": codes, "outs": outs, "tmp": tmp, "seconds": time.monotonic() - t0,
            "errs": [(tmp / f"agent{i}.err").read_text() for i in range(3)]}


def the_report(run):
    printed = [o for o in run["outs"] if o.strip()]
    assert len(printed) == 1, run["errs"]  # only rank 0 prints; the other ranks print nothing to stdout
    return ClusterReport.model_validate_json(printed[0])


def label_where(rep, pred):
    got = [n.label for n in rep.nodes if n.report and pred(n.report.snapshot.env.variables)]
    assert len(got) == 1
    return got[0]


def test_torchrun_report_names_the_odd_node(torchrun_run):
    rep = the_report(torchrun_run)
    assert torchrun_run["seconds"] < 60
    assert rep.launch.launcher == "torchrun" and rep.launch.backend == "gloo" and rep.launch.cpu_only
    assert rep.summary.nodes_reported == 3 and [n.node_rank for n in rep.nodes] == [0, 1, 2]
    assert len({n.hostname for n in rep.nodes}) == 1 and len({n.label for n in rep.nodes}) == 3  # one host, 3 nodes
    odd = label_where(rep, lambda env: env.get("NCCL_ALGO") == "Ring")
    f = by_rule(rep, "CLU005")
    assert len(f) == 1 and f[0].subject == "NCCL_ALGO" and f[0].data["odd_nodes"] == [odd]
    d = [x for x in rep.differing if x.rule_id == "NCL001"]
    assert d and d[0].nodes_with == [odd]
    # the saved file is the same document
    saved = ClusterReport.model_validate_json((torchrun_run["tmp"] / "saved.json").read_text())
    assert saved.created_at == rep.created_at and len(saved.nodes) == 3


def test_cluster_report_never_shows_secrets(torchrun_run):
    """Secrets planted in every node's environment (different values per node) reach neither rank 0's JSON,
    the saved report, nor any rank's stdout/stderr; the nodes' env sections say <redacted>."""
    saved = (torchrun_run["tmp"] / "saved.json").read_text()
    for blob in [saved, *torchrun_run["outs"], *torchrun_run["errs"]]:
        assert "PLANTED" not in blob
    rep = the_report(torchrun_run)
    assert [n.report.snapshot.env.variables["TORCH_API_KEY"] for n in rep.nodes] == ["<redacted>"] * 3
    assert not by_rule(rep, "CLU005") or all(f.subject != "TORCH_API_KEY" for f in by_rule(rep, "CLU005"))


def test_torchrun_slow_node_found_by_pairwise_tests(torchrun_run):
    rep = the_report(torchrun_run)
    odd = label_where(rep, lambda env: env.get("NCCL_ALGO") == "Ring")  # the delay was set on the same agent
    assert rep.allreduce is not None and rep.allreduce.correct is True and rep.allreduce.busbw_gbs > 0
    pw = rep.pairwise
    assert pw.rounds == 3 and len(pw.pairs) == 3  # 3 nodes: every pair, one pair per round
    assert pw.slow_nodes == [odd] and pw.slow_links == []
    for p in pw.pairs:
        assert p.slow == (odd in (p.a, p.b))
    f = by_rule(rep, "CLU008")
    assert [(x.title, x.subject) for x in f] == [("Slow node", odd)]


def test_torchrun_clock_skew_named(torchrun_run):
    rep = the_report(torchrun_run)
    skewed = [n for n in rep.nodes if n.ranks and n.ranks[0] != 0 and n.clock_offset_ms and n.clock_offset_ms > 300]
    assert len(skewed) == 1
    assert 350 < skewed[0].clock_offset_ms < 450  # 400 ms injected
    assert [x.subject for x in by_rule(rep, "CLU006")] == [skewed[0].label]
    # every rank exits with rank 0's code (findings: 1) so that torchrun's agents do not wait for each other
    assert torchrun_run["codes"] == [1, 1, 1]


def test_slurm_tasks_slow_link_between_two_nodes(tmp_path):
    """4 srun-style tasks; node 0 delays only its pair with node 1: a slow link, not a slow node."""
    port = free_port()
    procs = slurm_tasks(tmp_path, 4, ["--cpu", "--json", "--timeout", "40", "--iters", "5", "--warmup", "1",
                                      "--probes", LIGHT, "--fail-on", "never", "--size-mib", "0.25"], port,
                        {0: {"GPUDOCTOR_TEST_LINK_DELAY_MS": "60@1"}})
    codes = finish(list(procs.values()), 60)
    assert codes == [0, 0, 0, 0], (tmp_path / "task0.err").read_text()
    rep = ClusterReport.model_validate_json((tmp_path / "task0.out").read_text())
    assert all((tmp_path / f"task{r}.out").read_text() == "" for r in (1, 2, 3))
    assert rep.launch.launcher == "slurm"
    assert [n.label for n in rep.nodes] == [f"node{i}@{rep.nodes[0].hostname}" for i in range(4)]
    pw = rep.pairwise
    assert pw.slow_fraction == 0.1
    assert pw.slow_nodes == [] and pw.slow_links == [[rep.nodes[0].label, rep.nodes[1].label]], pw.pairs
    assert [x.title for x in by_rule(rep, "CLU008")] == ["Slow link"]


def test_slurm_node_that_hangs_and_node_that_never_joins(tmp_path):
    """3 tasks expected: task 1 hangs in its scan, task 2 is never started. Rank 0 names both after --timeout."""
    port = free_port()
    t0 = time.monotonic()
    procs = slurm_tasks(tmp_path, 3, ["--cpu", "--json", "--timeout", "4", "--probes", LIGHT], port,
                        {1: {"GPUDOCTOR_TEST_HANG": "scan"}}, start_only={0, 1})
    codes = finish([procs[0]], 40)
    took = time.monotonic() - t0
    finish([procs[1]], 0)  # the hung one: killed
    assert codes == [1], (tmp_path / "task0.err").read_text()
    assert took < 30
    rep = ClusterReport.model_validate_json((tmp_path / "task0.out").read_text())
    st = {n.label: n.status for n in rep.nodes}
    host = rep.nodes[0].hostname
    assert st == {f"node0@{host}": "reported", f"node1@{host}": "hung", "node2@tnode2": "missing"}
    hung = next(n for n in rep.nodes if n.status == "hung")
    assert hung.last_phase == "scan"
    assert [x.subject for x in by_rule(rep, "CLU007")] == [f"node1@{host}", "node2@tnode2"]
    assert rep.summary.nodes_missing == 1 and rep.summary.nodes_hung == 1
    assert rep.allreduce is None  # one node left: nothing to measure between nodes


def test_torchrun_elastic_names_expected_host_that_never_joined(tmp_path):
    """torchrun --nnodes 1:2 starts with the one node that came; --expect-hosts names the other."""
    me = socket.gethostname()
    p = start([sys.executable, "-m", "torch.distributed.run", "--nnodes", "1:2", "--nproc-per-node", "1",
               "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{free_port()}",
               "--rdzv-conf", "last_call_timeout=1", "-m", "gpudoctor", "cluster", "--cpu", "--json", "--no-confirm",
               "--probes", LIGHT, "--expect-hosts", f"{me},ghost[1-1]"], base_env(), tmp_path, "agent")
    assert finish([p], 40) == [1], (tmp_path / "agent.err").read_text()[-2000:]
    rep = ClusterReport.model_validate_json((tmp_path / "agent.out").read_text())
    assert [(n.label, n.status) for n in rep.nodes] == [(f"node0@{me}", "reported"), ("node?@ghost1", "missing")]
    assert by_rule(rep, "CLU007")[0].subject == "node?@ghost1"


def test_slurm_node_hanging_in_collectives_is_named(tmp_path):
    """2 tasks; task 1 scans, joins the process group, then stops. Every collective is bounded by --timeout."""
    t0 = time.monotonic()
    procs = slurm_tasks(tmp_path, 2, ["--cpu", "--json", "--timeout", "3", "--probes", LIGHT, "--iters", "2",
                                      "--warmup", "0"], free_port(), {1: {"GPUDOCTOR_TEST_HANG": "confirm"}})
    codes = finish([procs[0]], 45)
    took = time.monotonic() - t0
    finish([procs[1]], 0)
    assert codes == [1], (tmp_path / "task0.err").read_text()
    rep = ClusterReport.model_validate_json((tmp_path / "task0.out").read_text())
    hung = [n for n in rep.nodes if n.status == "hung"]
    assert [n.node_rank for n in hung] == [1] and hung[0].report is not None  # its scan is still in the report
    assert "no confirmation result" in hung[0].detail
    assert {f.rule_id for f in rep.findings} >= {"CLU007", "CLU009"}
    assert took < 35


def test_slurm_without_cpu_on_a_host_without_gpus_falls_back_to_gloo(tmp_path):
    """No --cpu on this GPU-less machine, full per-node scan (torch probe subprocess included)."""
    procs = slurm_tasks(tmp_path, 2, ["--json", "--timeout", "60", "--iters", "2", "--warmup", "0",
                                      "--fail-on", "never"], free_port(), {})
    assert finish(list(procs.values()), 60) == [0, 0], (tmp_path / "task0.err").read_text()
    rep = ClusterReport.model_validate_json((tmp_path / "task0.out").read_text())
    assert rep.launch.backend == "gloo" and rep.launch.cpu_only
    assert rep.launch.backend_note.startswith("GPU runs skipped: no usable CUDA device")
    for n in rep.nodes:
        assert n.report.snapshot.torch is not None and n.report.snapshot.torch.installed  # the torch probe ran
    assert rep.allreduce.correct is True


def test_torchrun_two_processes_on_one_node(tmp_path):
    """--nproc-per-node 2: local rank 0 scans, both ranks join the all-reduce, one node in the report."""
    p = start([sys.executable, "-m", "torch.distributed.run", "--nnodes", "1", "--nproc-per-node", "2",
               "--rdzv-backend", "c10d", "--rdzv-endpoint", f"127.0.0.1:{free_port()}", "-m", "gpudoctor", "cluster",
               "--cpu", "--json", "--probes", LIGHT, "--iters", "2", "--warmup", "0", "--fail-on", "never"],
              base_env(), tmp_path, "agent")
    assert finish([p], 40) == [0], (tmp_path / "agent.err").read_text()[-2000:]
    rep = ClusterReport.model_validate_json((tmp_path / "agent.out").read_text())
    assert [(n.node_rank, n.ranks, n.status) for n in rep.nodes] == [(0, [0, 1], "reported")]
    assert rep.allreduce.ranks == 2 and rep.allreduce.nodes == 1 and rep.allreduce.correct is True
    assert rep.pairwise is None  # one node: no node-to-node pairs
    assert {o.rule_id: o.status for o in rep.outcomes}["CLU009"] == "pass"
