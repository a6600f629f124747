"""``env`` / ``printenv`` / ``export -p`` output -> EnvFacts.

Uses the live env probe's own filter and redaction (:func:`gpudoctor.facts.env.collect_env`), so a
saved dump and a live scan keep the same variables and never show a secret.
"""
from __future__ import annotations

import re

from gpudoctor.facts.env import collect_env
from gpudoctor.facts.model import EnvFacts
from gpudoctor.parsers import ParseError
from gpudoctor.parsers._text import clean

_VAR = re.compile(r"^(?:export\s+|declare -x\s+|setenv\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$")


def parse_env_lines(text: str) -> dict[str, str]:
    """Every NAME=value line (quotes of ``export -p`` removed); other lines are ignored."""
    out: dict[str, str] = {}
    for raw in clean(text).split("\n"):
        m = _VAR.match(raw.strip())
        if m:
            v = m.group(2)
            if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
                v = v[1:-1]
            out[m.group(1)] = v
    return out


#: `kubectl describe pod`: "    Environment:" then one "      NAME:  value" line per variable (a secret or field
#: reference is printed as "<set to the key 'k' in secret 's'>" and is no value)
_DESCRIBE_HEAD = re.compile(r"^([ \t]*)Environment:[ \t]*$", re.M)
_DESCRIBE_VAR = re.compile(r"^([ \t]+)([A-Za-z_][A-Za-z0-9_]*):[ \t]+(\S.*?)[ \t]*$")
#: a pod spec's (kubectl get pod -o yaml, a manifest) "- name: NCCL_X" with its "value: ..." on the next line
_YAML_VAR = re.compile(r"^[ \t]*-[ \t]+name:[ \t]*[\"']?([A-Za-z_][A-Za-z0-9_]*)[\"']?[ \t]*\n"
                       r"[ \t]+value:[ \t]*(.*?)[ \t]*$", re.M)


def parse_container_env(text: str) -> dict[str, str]:
    """The variables a Kubernetes pod description (`kubectl describe pod`: its Environment blocks) or pod spec
    (`env: - name: / value:`) sets, quotes removed; references to secrets and fields are left out."""
    out: dict[str, str] = {}
    t = clean(text)
    for head in _DESCRIBE_HEAD.finditer(t):
        indent = len(head.group(1).expandtabs())
        for line in t[head.end() + 1:].split("\n"):
            m = _DESCRIBE_VAR.match(line)
            if m is None or len(m.group(1).expandtabs()) <= indent:
                break
            if not m.group(3).startswith("<"):
                out.setdefault(m.group(2), m.group(3))
    for m in _YAML_VAR.finditer(t):
        v = m.group(2)
        if len(v) >= 2 and v[0] == v[-1] and v[0] in "\"'":
            v = v[1:-1]
        out.setdefault(m.group(1), v)
    return out


#: the variables every login or container shell exports: a dump with PATH and one of these is the whole environment;
#: a few NAME=value lines without them are an excerpt (only those variables are known)
_SHELL_VARS = ("HOME", "PWD", "USER", "SHELL", "HOSTNAME", "LOGNAME", "TERM")


def is_whole_environment(text: str) -> bool:
    """True when ``text`` looks like a complete ``env`` / ``printenv`` / ``export -p`` dump, not a few lines of one."""
    names = parse_env_lines(text)
    return "PATH" in names and any(v in names for v in _SHELL_VARS)


#: ``echo $LD_LIBRARY_PATH`` as pasted: an optional echo command line, then one colon-separated list of absolute paths
_ECHO = re.compile(r"""^[ \t]*(?:\S*[$#%>][ \t]*)?echo[ \t]+["']?\$\{?([A-Za-z_][A-Za-z0-9_]*)\}?["']?[ \t]*$""")
_PATH_LIST = re.compile(r"^[ \t]*/[^\s:]*(?::(?:/[^\s:]*)?)*[ \t]*$")
_LIB_DIR = re.compile(r"/lib(?:32|64|x32)?(?:/|$)|/lib[^/]*$|/stubs$|/compat$")


def parse_path_value(text: str) -> EnvFacts:
    """The value of one path variable as ``echo $LD_LIBRARY_PATH`` prints it -> EnvFacts with that one variable.

    The name comes from the echo line when pasted with it; without it, a list whose every entry is a library folder
    (…/lib, …/lib64, …/lib/x86_64-linux-gnu, cuda-compat) is LD_LIBRARY_PATH. Raises ParseError otherwise."""
    lines = [x for x in clean(text).split("\n") if x.strip()]
    name = None
    if len(lines) == 2 and _ECHO.match(lines[0]):
        name = _ECHO.match(lines[0]).group(1)  # type: ignore[union-attr]
        lines = lines[1:]
    if len(lines) != 1 or not _PATH_LIST.match(lines[0]):
        raise ParseError("not one colon-separated list of absolute paths")
    value = lines[0].strip()
    if name is None:
        entries = [e for e in value.split(":") if e]
        if not entries or not all(_LIB_DIR.search(e.rstrip("/")) for e in entries):
            raise ParseError("a list of paths that are not all library folders: which variable it is is unknown")
        name = "LD_LIBRARY_PATH"
    return EnvFacts(source=f"echo ${name}", variables=collect_env({name: value}))


def parse_env(text: str) -> EnvFacts:
    """Parse an environment dump into the training-relevant variables (secrets redacted).

    Raises ParseError when fewer than one NAME=value line is present.
    """
    allv = parse_env_lines(text)
    if not allv:
        raise ParseError("no NAME=value line")
    return EnvFacts(source="env dump", variables=collect_env(allv))
