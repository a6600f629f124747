"""Torch probe: what the *target* interpreter's torch can do, asked in a subprocess.

gpudoctor never imports torch itself (import costs ~4 s and must overlap the other
probes) and never installs or upgrades it. The target interpreter is ``--python``,
else the running interpreter when it has torch, else the first ``python3`` on PATH.
"""
from __future__ import annotations

import json
from pathlib import Path

from gpudoctor.facts.model import TorchFacts
from gpudoctor.probes.runner import ProbeFailed
from gpudoctor.probes.subproc import run_cmd

SCRIPT = Path(__file__).with_name("torch_script.py")
MARK = "GPUDOCTOR_TORCH_JSON "


def choose_interpreter(requested: str | None) -> str:
    """The interpreter to probe. Raises ProbeFailed(kind='missing') if ``requested`` is not found."""
    from gpudoctor.probes.torch_start import missing_interpreter, resolve_interpreter

    path = resolve_interpreter(requested)
    if path is None:
        raise ProbeFailed(missing_interpreter(requested or "python3"), kind="missing")
    return path


def parse_output(stdout: str) -> dict | None:
    for line in reversed(stdout.splitlines()):
        if line.startswith(MARK):
            try:
                data = json.loads(line[len(MARK):])
            except ValueError:
                return None
            return data if isinstance(data, dict) else None
    return None


def probe_torch(opts) -> TorchFacts:
    """Probe torch in the target interpreter.

    torchvision's C++ ops are loaded (a second child, ~9 s on the H200 host: importing torchvision is
    slow) only when gpudoctor's release table cannot vouch for the torch/torchvision pair; a known
    pair is judged from the table by rule CMP001.
    Raises ProbeFailed (with partial TorchFacts) when the interpreter is missing, crashes, hangs
    past ``opts.torch_timeout_s`` or prints no result.
    """
    from gpudoctor.probes.torch_start import take

    python = choose_interpreter(getattr(opts, "python", None))
    res = take(python, opts.torch_timeout_s) or run_cmd([python, str(SCRIPT)], timeout=opts.torch_timeout_s)
    data = parse_output(res.stdout)
    if data is not None and data.get("torchvision_version") and _pair_unknown(data):
        vision = parse_output(run_cmd([python, str(SCRIPT), "vision"], timeout=opts.torch_timeout_s).stdout) or {}
        if vision.get("torchvision_error"):
            data["torchvision_error"] = vision["torchvision_error"]
    if data is None:
        raise ProbeFailed(f"torch probe in {python}: {res.describe_failure() if not res.ok else 'printed no result'}",
                          kind="timeout" if res.timed_out else "crash" if (res.returncode or 0) < 0 else "error",
                          partial=None)  # unknown, not "not installed": TRC rules say not assessed
    data.setdefault("interpreter", python)
    return TorchFacts.model_validate(data)


def _pair_unknown(data: dict) -> bool:
    """True when the release table cannot say whether this torchvision belongs with this torch."""
    try:
        from gpudoctor.compat.check import UNKNOWN, companions

        verdicts = companions(data.get("version"), data.get("torchvision_version"))
        return any(v.status == UNKNOWN for v in verdicts)
    except Exception:
        return True
