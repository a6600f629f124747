"""Shell command lines in pastes (``$ docker run ...``) -> the commands, secrets redacted.

Only container launches and launchers are kept (docker/podman/nvidia-docker/singularity/apptainer/
enroot/srun/mpirun/torchrun/kubectl); their flags (``--gpus``, ``--ipc``, ``--shm-size``,
``--ulimit memlock``) are facts the LOG rules read.
"""
from __future__ import annotations

import re

from gpudoctor.facts.env import redact
from gpudoctor.parsers import ParseError
from gpudoctor.parsers._text import clean

# a leading "VAR=value " prefix (CUDA_VISIBLE_DEVICES=0,1 torchrun ...) is part of the command: it is kept
_CMD = re.compile(r"^\s*(?:[$#]\s*)?(?:sudo\s+)?((?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:docker|podman|nvidia-docker|singularity"
                  r"|apptainer|enroot|srun|mpirun|torchrun|kubectl)\b.*)$")
_ASSIGN = re.compile(r"(\b[A-Za-z_][A-Za-z0-9_]*)=(\"[^\"]*\"|'[^']*'|\S+)")


def _redact(cmd: str) -> str:
    return _ASSIGN.sub(lambda m: f"{m.group(1)}={redact(m.group(1), m.group(2).strip(chr(34) + chr(39)))}", cmd)


def parse_commands(text: str) -> list[str]:
    """Container / launcher command lines (continuations with a trailing backslash joined), redacted.

    Raises ParseError when there is none.
    """
    out = []
    buf = ""
    for line in clean(text).split("\n"):
        if buf:
            buf += " " + line.strip().rstrip("\\").strip()
            if not line.rstrip().endswith("\\"):
                out.append(buf)
                buf = ""
            continue
        m = _CMD.match(line)
        if m:
            if line.rstrip().endswith("\\"):
                buf = m.group(1).rstrip().rstrip("\\").strip()
            else:
                out.append(m.group(1).strip())
    if buf:
        out.append(buf)
    if not out:
        raise ParseError("no container or launcher command line")
    return [_redact(c)[:2000] for c in out]


#: the environment a command line gives the job: a leading "NAME=value" (before the program), docker / podman /
#: kubectl's "-e NAME=value" / "--env NAME=value" / "--env=NAME=value", srun / sbatch's "--export=NAME=value,...",
#: Open MPI's "-x NAME=value"
_LEADING = re.compile(r"^(?:[A-Z_][A-Z0-9_]*=(?:\"[^\"]*\"|'[^']*'|\S*)\s+)+")
_FLAG_ENV = re.compile(r"(?:^|\s)(?:-e|--env|-x)(?:\s+|=)([A-Za-z_][A-Za-z0-9_]*)=(\"[^\"]*\"|'[^']*'|[^\s\\]*)")
_EXPORT = re.compile(r"--export[= ](\S+)")


def command_env(cmd: str) -> dict[str, str]:
    """The variables command line ``cmd`` sets for the program it starts (quotes removed; ALL / NONE of --export and
    names without a value left out)."""
    out: dict[str, str] = {}
    lead = _LEADING.match(cmd)
    pairs = [m.groups() for m in _ASSIGN.finditer(lead.group(0))] if lead else []
    pairs += _FLAG_ENV.findall(cmd)
    for spec in _EXPORT.findall(cmd):
        pairs += [tuple(x.split("=", 1)) for x in spec.split(",") if "=" in x]
    for name, value in pairs:
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        out[name] = value
    return out


def docker_gpu_request(cmd: str) -> bool:
    """True when a docker/podman run command requests GPUs (--gpus, --runtime nvidia, CDI nvidia.com/gpu)."""
    return bool(re.search(r"--gpus\b|--runtime[= ]nvidia|nvidia\.com/gpu|NVIDIA_VISIBLE_DEVICES=(?!void|none)", cmd)) \
        or cmd.startswith("nvidia-docker")
