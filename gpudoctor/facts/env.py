"""Which environment variables matter for GPU training, and how secrets are kept out of reports.

Shared by the env probe, the dump parsers and the redacting reporter (a leaf: no gpudoctor imports)."""
from __future__ import annotations

import os
import re
from collections.abc import Mapping

PREFIXES = ("NCCL_", "TORCH_", "CUDA_", "NVIDIA_", "PYTORCH_", "TORCHELASTIC_")
EXACT = ("OMP_NUM_THREADS", "LD_LIBRARY_PATH",
         # job size (multi-node or not) for the TOP rules: torchrun/torchelastic and Slurm
         "WORLD_SIZE", "LOCAL_WORLD_SIZE", "SLURM_NNODES", "SLURM_JOB_NUM_NODES",
         # the env:// rendezvous and rank placement (NCL010, the network signatures' context)
         "RANK", "LOCAL_RANK", "GROUP_RANK", "NODE_RANK", "MASTER_ADDR", "MASTER_PORT", "GLOO_SOCKET_IFNAME")
REDACTED = "<redacted>"

_SECRET_NAME = re.compile(
    r"(TOKEN|SECRET|PASSW|KEY|CREDENTIAL|AUTH|COOKIE|SESSION|PRIVATE|SIGNATURE|(?<!OLD)(?<!^)PWD$)", re.IGNORECASE
)
_SECRET_VALUE = re.compile(
    r"(gh[pousr]_[A-Za-z0-9]{20,}|hf_[A-Za-z0-9]{20,}|sk-[A-Za-z0-9_-]{20,}|AKIA[0-9A-Z]{16}|xox[baprs]-[A-Za-z0-9-]{10,}"
    r"|eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}|-----BEGIN [A-Z ]*PRIVATE KEY|://[^/\s:@]+:[^/\s@]+@)")


def is_secret(name: str, value: str) -> bool:
    """True when a variable's name or value looks like a credential; a yes/no/true/false/0/1 value is a setting,
    never a secret (ssh's -o PasswordAuthentication=no)."""
    if value.strip().strip("\"'").lower() in _SETTING_VALUES:
        return False
    return bool(_SECRET_NAME.search(name) or _SECRET_VALUE.search(value))


_SETTING_VALUES = frozenset({"yes", "no", "true", "false", "on", "off", "0", "1", ""})


def redact(name: str, value: str) -> str:
    return REDACTED if is_secret(name, value) else value


def collect_env(environ: Mapping[str, str] | None = None) -> dict[str, str]:
    """The training-relevant variables of ``environ`` (default os.environ), secrets redacted."""
    environ = os.environ if environ is None else environ
    out = {}
    for name in sorted(environ):
        if name.startswith(PREFIXES) or name in EXACT:
            out[name] = redact(name, environ[name])
    return out


#: an exception's name before its message ("KeyError: 'input_ids'", "KeyboardInterrupt: "): the message is the clue
#: to the crash, not a credential
_EXCEPTION_NAME = re.compile(r"(?:Error|Exception|Warning|Interrupt)$")
_ASSIGN = re.compile(
    r"(?P<name>[A-Za-z_][A-Za-z0-9_.-]*)(?P<sep>\s*[=:]\s*|\s+set by environment to\s+)(?P<val>\"[^\"]*\"|'[^']*'|\S+)"
)


def scrub(text: str) -> str:
    """``text`` with credentials replaced by '<redacted>': values assigned to secret-looking names
    (``HF_TOKEN=...``, ``password: ...``, NCCL's ``X set by environment to ...``) and token-shaped
    strings anywhere (GitHub/HF/OpenAI/AWS/Slack tokens, JWTs, URL credentials)."""
    if not text:
        return text

    def assign(m: re.Match[str]) -> str:
        setting = m.group("val").strip("\"'").lower() in _SETTING_VALUES  # -o PasswordAuthentication=no
        if _SECRET_NAME.search(m.group("name")) and not _EXCEPTION_NAME.search(m.group("name")) and not setting:
            return f"{m.group('name')}{m.group('sep')}{REDACTED}"
        return m.group(0)

    text = _ASSIGN.sub(assign, text)
    return _SECRET_VALUE.sub(REDACTED, text)
