"""`gpudoctor cuda-version-check`: a torch build against the drivers / GPUs it will run on (no GPU needed)."""
from __future__ import annotations

import enum
import sys

import typer

from gpudoctor.cli.app import app
from gpudoctor.cli.output import EXIT_FINDINGS, EXIT_OK, fail
from gpudoctor.pipeline import defaults as D
from gpudoctor.pipeline.defaults import MAX_TIMEOUT_S


class CheckFormat(str, enum.Enum):
    text = "text"
    json = "json"
    junit = "junit"
    github = "github"


@app.command("cuda-version-check")
def cuda_version_check(
    torch: list[str] = typer.Option(
        [],
        "--torch",
        help="A torch pin to check, e.g. 2.5.1+cu124 (no suffix = the "
        "PyPI wheel, with that release's default CUDA). Repeatable.",
    ),
    requirements: str | None = typer.Option(
        None,
        "--requirements",
        "-r",
        help="Read the torch pin from a requirements*.txt, pyproject.toml, uv.lock, poetry.lock or pdm.lock.",
    ),
    driver: str | None = typer.Option(None, "--driver", help="Target NVIDIA driver version, e.g. 535.104.05 or R535."),
    gpu: list[str] = typer.Option(
        [], "--gpu", help='Target GPU model, e.g. "H100 SXM", "RTX 4090", "A10". Repeatable.'
    ),
    cc: list[str] = typer.Option([], "--cc", help="Target compute capability, e.g. 9.0. Repeatable."),
    fleet: str | None = typer.Option(
        None, "--fleet", help="TOML file of node types ([[node]] name, driver, gpu or cc, count)."
    ),
    fmt: CheckFormat = typer.Option(CheckFormat.text, "--format", help="Output format."),
    json_out: bool = typer.Option(False, "--json", help="Same as --format json (as `scan` and `check` take it)."),
    python: str | None = typer.Option(
        None,
        "--python",
        help="Interpreter (or its environment folder) whose installed torch to check "
        "(default: this one if it has torch, else python3 on PATH).",
    ),
    strict: bool = typer.Option(False, "--strict", help="Count checks the tables cannot decide as failures."),
    torch_timeout: float = typer.Option(
        D.TORCH_TIMEOUT_S, "--torch-timeout", min=1, max=MAX_TIMEOUT_S, help="Seconds allowed for the torch probe."
    ),
):
    """Check a torch build against the drivers / GPUs it will run on (no GPU needed; for CI).

    Exit codes: 0 every target passes, 1 any fails, 2 bad input (unknown GPU, unparseable pin, missing file).
    """
    from gpudoctor.compat import versioncheck as vc
    from gpudoctor.compat.pins import PinError, parse_pin, pins_from_file

    if json_out and fmt not in (CheckFormat.text, CheckFormat.json):
        raise fail(f"--json and --format {fmt.value} ask for two formats: give one")
    if json_out:
        fmt = CheckFormat.json
    try:
        if fleet and (driver or gpu or cc):
            raise vc.InputError("--fleet cannot be combined with --driver / --gpu / --cc")
        if torch and requirements:
            raise vc.InputError("give --torch or --requirements, not both")
        if fleet:
            targets = vc.load_fleet(fleet)
        elif gpu or cc:
            targets = [vc.target_from("", driver, gpu=g, where="--") for g in gpu] + \
                      [vc.target_from("", driver, cc=c, where="--") for c in cc]
        elif driver:
            targets = [vc.target_from("", driver, where="--")]
        else:
            targets = None
        if torch:
            subjects = [vc.subject_from_pin(parse_pin(t)) for t in torch]
        elif requirements:
            subjects = [vc.subject_from_pin(p) for p in pins_from_file(requirements)]
        else:
            from gpudoctor.pipeline.versions import installed_torch_subject

            subjects = [installed_torch_subject(python, torch_timeout)]
        if targets is None:
            from gpudoctor.pipeline.versions import local_targets

            targets = local_targets()
    except (vc.InputError, PinError) as exc:
        raise fail(str(exc)) from None
    results = []
    for s in subjects:
        results += [vc.check(s, t, strict=strict) for t in targets]
        comp = vc.check_companions(s, strict=strict)
        if comp is not None:
            results.append(comp)
    sys.stdout.write(vc.RENDERERS[fmt.value](results) + "\n")
    raise typer.Exit(EXIT_FINDINGS if any(r.status == "fail" for r in results) else EXIT_OK)
