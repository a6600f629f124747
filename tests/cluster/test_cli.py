"""The `cluster` command's edges: no launcher, bad options, the schema, and torch kept out of start-up."""
import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import needs_torch  # noqa: E402

from gpudoctor.facts.cluster import ClusterReport

ROOT = Path(__file__).resolve().parents[2]


def gd(*args, env=None):
    base = {k: v for k, v in os.environ.items() if not k.startswith(("SLURM_", "RANK", "WORLD_SIZE", "MASTER_"))}
    base.update(env or {}, PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "gpudoctor", *args], env=base, capture_output=True, text=True,
                          timeout=60)


@needs_torch
def test_cluster_outside_a_launcher_is_a_usage_error():
    r = gd("cluster", "--cpu")
    assert r.returncode == 2 and r.stdout == ""
    assert r.stderr.startswith("gpudoctor: error: not started by a distributed launcher")
    assert len(r.stderr.strip().splitlines()) == 1


@needs_torch
def test_cluster_unknown_probe_is_a_usage_error():
    r = gd("cluster", "--probes", "host,gpus", env={"SLURM_PROCID": "0", "SLURM_NTASKS": "1",
                                                   "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "1"})
    assert r.returncode == 2 and "unknown probe(s) gpus" in r.stderr


@needs_torch
def test_cluster_unreachable_store_is_one_line():
    r = gd("cluster", "--cpu", "--timeout", "1", env={"SLURM_PROCID": "1", "SLURM_NTASKS": "2",
                                                       "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "9"})
    assert r.returncode == 2
    assert "cannot reach the c10d store at 127.0.0.1:9" in r.stderr and "Traceback" not in r.stderr


def test_schema_cluster_is_the_models_schema():
    r = gd("schema", "--cluster")
    assert r.returncode == 0
    doc = json.loads(r.stdout)
    assert doc["title"] == "gpudoctor cluster report"
    assert doc["properties"]["kind"]["const"] == "gpudoctor-cluster-report"
    assert set(ClusterReport.model_json_schema()["required"]) == set(doc["required"])


def test_cli_start_up_does_not_import_torch():
    code = ("import sys, gpudoctor.cli.app, gpudoctor.rules, gpudoctor.cluster.launch, gpudoctor.cluster.assemble, "
            "gpudoctor.reports.cluster_terminal; assert 'torch' not in sys.modules, 'torch imported'")
    r = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=str(ROOT)), capture_output=True,
                       text=True, timeout=60)
    assert r.returncode == 0, r.stderr
