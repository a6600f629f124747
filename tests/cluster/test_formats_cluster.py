"""`gpudoctor cluster --format ... --output ...`: rank 0 writes the cluster report in the asked format (2 CPU
tasks, srun-style environment); the other ranks write nothing."""
from __future__ import annotations

import pytest
from conftest import needs_torch  # noqa: E402

from tests.cluster.test_e2e import LIGHT, finish, free_port, slurm_tasks

prom_parser = pytest.importorskip("prometheus_client.parser", reason="prometheus_client (test extra)")

pytestmark = [needs_torch, pytest.mark.slow]


def test_cluster_rank0_writes_prometheus_and_saves_json(tmp_path):
    port = free_port()
    out = tmp_path / "cluster.prom"
    procs = slurm_tasks(tmp_path, 2, ["--cpu", "--format", "prometheus", "--output", str(out), "--save",
                                      str(tmp_path / "cluster.json"), "--timeout", "40", "--iters", "2",
                                      "--warmup", "1", "--probes", LIGHT, "--fail-on", "never",
                                      "--size-mib", "0.25"], port, {})
    codes = finish(list(procs.values()), 90)
    assert codes == [0, 0], (tmp_path / "task0.err").read_text()
    assert (tmp_path / "task0.out").read_text() == "" == (tmp_path / "task1.out").read_text()
    fams = {f.name: f for f in prom_parser.text_string_to_metric_families(out.read_text())}
    assert len({s.labels["node"] for s in fams["gpudoctor_cluster_node_status"].samples}) == 2
    assert fams["gpudoctor_cluster_pair_bus_bandwidth_bytes_per_second"].samples[0].value > 0
    assert (tmp_path / "cluster.json").read_text().lstrip().startswith("{")
