"""`gpudoctor cluster`: run under torchrun or srun, one process per node; rank 0 prints one report."""
from __future__ import annotations

import os
import sys

import typer

from gpudoctor.cli.app import app
from gpudoctor.cli.output import (
    EXIT_FINDINGS,
    EXIT_OK,
    EXIT_USAGE,
    FailOn,
    Format,
    exit_code,
    fail,
    format_option,
    output_option,
    output_spec,
    write_report,
)
from gpudoctor.pipeline import defaults as D
from gpudoctor.pipeline.defaults import MAX_TIMEOUT_S


@app.command()
def cluster(
    cpu: bool = typer.Option(False, "--cpu", help="gloo on CPU only: no GPU runs (as on a host without GPUs)."),
    json_out: bool = typer.Option(False, "--json", help="Rank 0 prints the cluster report as JSON on stdout."),
    save: str | None = typer.Option(None, "--save", help="Rank 0 also writes the JSON report to this file."),
    fmt: Format | None = format_option(),
    output: str | None = output_option(),
    verbose: bool = typer.Option(False, "-v", "--verbose", help="Every pair, every node's findings, sources."),
    fail_on: FailOn = typer.Option(FailOn.error, "--fail-on", help="Lowest severity (cross-node or on any node) "
                                   "that makes rank 0's exit code 1."),
    timeout: float = typer.Option(D.CLUSTER_TIMEOUT_S, "--timeout", min=1, max=MAX_TIMEOUT_S,
                                  help="Seconds rank 0 waits for nodes to join and scan, "
                                  "and the limit of each collective and of the wait for results."),
    size_mib: float | None = typer.Option(None, "--size-mib", min=0.001, help="All-reduce message size, MiB "
                                             "(default 256 on GPUs, 4 with --cpu; rules/cluster.toml)."),
    iters: int = typer.Option(D.CLUSTER_ITERS, "--iters", min=1, help="Timed all-reduces per test."),
    warmup: int = typer.Option(D.CLUSTER_WARMUP, "--warmup", min=0, help="Untimed all-reduces before each test."),
    rounds: int | None = typer.Option(None, "--rounds", min=0, help="Node-to-node rounds (default "
                                         "max(3, ceil(log2 N)), at most every pair; 0 = none)."),
    no_confirm: bool = typer.Option(False, "--no-confirm", help="Scans and cross-node rules only; no collectives."),
    probes: str | None = typer.Option(None, "--probes", help="Comma list of probes for each node's scan "
                                         "(default all: torch,nvml,host,cpu,memory,storage,env)."),
    data_path: str = typer.Option(".", "--data-path", help="Directory of the training data (storage checks)."),
    torch_timeout: float = typer.Option(D.TORCH_TIMEOUT_S, "--torch-timeout", min=1, max=MAX_TIMEOUT_S,
                                        help="Seconds allowed for the torch probe."),
    expect_nodes: int | None = typer.Option(None, "--expect-nodes", min=1, help="Nodes that should take part "
                                               "(torchrun --nnodes MIN:MAX: the rendezvous may start with fewer)."),
    expect_hosts: str | None = typer.Option(None, "--expect-hosts", help="Comma list (or Slurm hostlist) of hosts "
                                               "that should take part; the missing ones are named."),
    min_pair_busbw: float | None = typer.Option(None, "--min-pair-busbw", min=0, help="GB/s: a node-to-node pair "
                                                   "below it is slow whatever the others measure."),
):
    """Check many nodes at once: run under torchrun or srun, one process per node; rank 0 prints one report.

    torchrun --nnodes N --nproc-per-node 1 --rdzv-backend c10d --rdzv-endpoint HOST:PORT -m gpudoctor cluster\n
    srun --nodes N --ntasks-per-node 1 python -m gpudoctor cluster
    """
    out = output_spec(fmt, json_out, output, save)
    import importlib.util

    if importlib.util.find_spec("torch") is None:
        raise fail(f"`gpudoctor cluster` runs in the training interpreter, under torchrun or srun, and needs torch; "
                   f"{sys.executable} has no torch (run it with the interpreter that trains)")
    from gpudoctor.cluster.launch import LaunchError, detect, expand_hostlist

    try:
        launch = detect()
        hosts = expand_hostlist(expect_hosts) if expect_hosts else []
    except LaunchError as exc:
        raise fail(str(exc)) from None
    if not os.path.isdir(data_path):
        raise fail(f"--data-path {data_path}: not a directory")
    from gpudoctor.cluster.agent import AgentError, Excluded, run, share_exit_code
    from gpudoctor.cluster.options import build_options
    from gpudoctor.pipeline.errors import PipelineError

    try:
        opts = build_options(probes, data_path, torch_timeout, size_mib, cpu=cpu, timeout_s=timeout, iters=iters,
                             warmup=warmup, rounds=rounds, confirm=not no_confirm, expect_nodes=expect_nodes,
                             expect_hosts=hosts, min_pair_busbw=min_pair_busbw)
    except PipelineError as exc:
        raise fail(str(exc)) from None
    try:
        report, store = run(opts, launch)
    except Excluded as exc:
        sys.stderr.write(f"gpudoctor: rank {launch.rank}: {exc}\n")
        code = share_exit_code(exc.store, launch, None, 0, 60.0)
        raise typer.Exit(EXIT_FINDINGS if code is None else code) from None
    except AgentError as exc:
        raise fail(f"rank {launch.rank}: {exc}") from None
    if report is None:  # not rank 0: rank 0 prints the one report; exit with its code (see share_exit_code)
        code = share_exit_code(store, launch, None, 0, timeout * 2 + 60)
        raise typer.Exit(EXIT_OK if code is None else code)
    from gpudoctor.reports.redact import scrub_model

    report = scrub_model(report)  # the nodes scrubbed their own reports; this covers rank 0's quotes
    findings = list(report.findings) + [f for n in report.nodes if n.report for f in n.report.findings]
    code = exit_code(findings, fail_on)
    from gpudoctor.reports.cluster_terminal import render_cluster

    write_report(report, out, save, verbose, render_cluster, fail_on,
                 on_save_error=lambda: share_exit_code(store, launch, EXIT_USAGE, report.summary.nodes_reported, 0))
    sys.stdout.flush()
    alive = sum(len(n.ranks) for n in report.nodes if n.status == "reported")
    shared = share_exit_code(store, launch, code, alive, 0)
    raise typer.Exit(code if shared is None else shared)  # None: the store failed; rank 0's own verdict stands
