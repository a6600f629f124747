"""Recognise what a saved text is, by its content (never by its file name).

:func:`detect` returns every format found in the text, most specific first; one paste can hold
several (vLLM's collect_env embeds a topology matrix; a terminal capture holds ``df`` output and a
traceback). Error/log text is recognised by error-looking lines; the signature catalogue runs on
every text regardless.
"""
from __future__ import annotations

import json
import re

from gpudoctor.parsers.code_table import is_code_table
from gpudoctor.parsers.nvidia_smi import NO_DRIVER as NO_DRIVER_MESSAGE
from gpudoctor.parsers.nvidia_smi import WHOLE_MESSAGE as WHOLE_SMI_MESSAGE
from gpudoctor.parsers.prose import is_config, is_python_source
from gpudoctor.parsers.signatures import has_errorish, match_signatures

JSON = "gpudoctor-json"
# gpudoctor's own outputs other than a saved scan report: recognised so that they are explained, never read
# as error logs (their lines quote the signatures they looked for: "SIG003 no 'CUDA error 802 ...' in the logs")
GD_TEXT = "gpudoctor text report"
GD_CLUSTER = "gpudoctor cluster report (JSON)"
GD_VERSIONCHECK = "gpudoctor cuda-version-check output"
GD_STREAM = "gpudoctor probe stream (JSON lines)"
GD_FORMAT = ("gpudoctor report in a machine format (JUnit, Prometheus, HTML, GitHub), gpudoctor lint output, or "
             "gpudoctor's rule documentation (explain, rules, docs/rules)")
OTHER_JSON = "JSON (not a gpudoctor report)"
OWN_OUTPUTS = (GD_TEXT, GD_CLUSTER, GD_VERSIONCHECK, GD_STREAM, GD_FORMAT, OTHER_JSON)
#: a reference listing of error codes with their names and messages (every cudaError_t with cudaGetErrorString, an
#: ncclResult_t / errno / cuDNN status enum, a header's enum block): it names every error, so it shows none happened
CODE_TABLE = "table of error codes and their messages (a reference listing, not a log)"
#: a Python module or script (parsers/prose.py): the messages in it are strings it may print
PY_SOURCE = "Python source code (its messages are strings it may print, not errors that happened)"
#: a YAML / TOML / INI configuration file (parsers/prose.py): its values and comments are settings
CONFIG = "configuration file (YAML / TOML / INI: its values and comments are settings, not output)"
#: recognised, explained and never searched for error signatures (parsers/offline.py)
NOT_INPUTS = OWN_OUTPUTS + (CODE_TABLE, PY_SOURCE, CONFIG)

#: the first line of every terminal report gpudoctor prints (scan, check, smoke, bench, cluster), e.g.
#: "gpudoctor 0.1.0 · 2026-11-29T13:18:51+00:00" or "gpudoctor 0.1.0 · cluster report · 2026-...": anywhere in the
#: first lines (a capture may start with a date or the command line)
_GD_HEADER = re.compile(r"\A(?:[^\n]*\n){0,5}?[ \t]*gpudoctor \d+\.\d+\S* · (?:[a-z][a-z ]+ · )?\d{4}-\d\d-\d\dT", re.M)
#: a finding line of a terminal report ("    ✗ SIG012 CUDA out of memory", "  ! LOG000 ..."; '?' / 'x' marks without
#: UTF-8 or colour): with "→ fix" lines, an excerpt of a report whose header was not pasted
_GD_FINDING = re.compile(r"^ {2,8}[✗!i?xX*] [A-Z]{3}\d{3} \S", re.M)
#: cuda-version-check's text / github output: "PASS  torch ... on ...: reason" lines and the "N passed, N failed" tally
_GD_CVC = re.compile(r"^(?:::(?:error|warning) [^\n]*title=gpudoctor cuda-version-check"
                     r"|(?:PASS|FAIL)  torch \S+ [^\n]* on )"
                     r"|<testsuite [^>]*name=\"gpudoctor cuda-version-check\"", re.M)

#: the marks of `--format junit|prometheus|html|github` (gpudoctor/reports/) and of `gpudoctor lint`'s text and
#: github output: each quotes rule titles, evidence and remedies, so it is never read as an error log
_GD_FORMAT = re.compile(r"<testsuites [^>]*name=\"gpudoctor\"|^# (?:HELP|TYPE) gpudoctor_\w+ "
                        r"|<title>gpudoctor (?:report|check|scan|cluster)\b"
                        r"|^::(?:error|warning|notice) [^\n]*title=(?:gpudoctor [A-Z]{3}\d{3}|LNT\d{3})"
                        r"|^\S+:\d+:\d+ LNT\d{3} "
                        # `gpudoctor explain ID` and the rule pages of docs/rules/ (ruledocs), `gpudoctor rules`
                        r"|^#{1,2} [A-Z]{3}\d{3}: [^\n]*\n+Severity: \*\*(?:error|warning|info)\*\* · Area: "
                        r"|^(?:[A-Z]{3}\d{3} +(?:error|warning|info) +\S[^\n]*\n){3}", re.M)


#: what a gpudoctor JSON document holds near its start (a broken one is still ours: the loader names the error)
_GD_JSON_MARK = re.compile(r'"(?:schema_version|gpudoctor_version)"\s*:|"kind"\s*:\s*"gpudoctor')


def _json_kind(text: str) -> str | None:
    """What a text that starts with '{' is: a scan report / snapshot (JSON), another gpudoctor JSON output, a probe
    stream (one JSON object a line) or some other JSON; None when it is not JSON at all but a log that begins with a
    brace (a metrics dict such as HF Trainer's {'loss': ...}, a config echoed before the output, JSON lines mixed
    with plain stderr): that is read as text."""
    try:
        doc = json.loads(text)
    except ValueError:
        lines = [x for x in text.splitlines() if x.strip()]
        try:
            objs = [json.loads(x) for x in lines[:50]]
        except ValueError:
            # broken JSON of ours (a cut report): the report loader names the error; anything else is text
            return JSON if _GD_JSON_MARK.search(text[:4096]) else None
        if len(objs) > 1 and all(isinstance(o, dict) for o in objs):
            return GD_STREAM if all("t" in o for o in objs) else OTHER_JSON
        return JSON
    if not isinstance(doc, dict):
        return JSON
    kind = doc.get("kind")
    if kind == "gpudoctor-cluster-report":
        return GD_CLUSTER
    if kind == "gpudoctor-cuda-version-check":
        return GD_VERSIONCHECK
    if kind == "gpudoctor-report" or "schema_version" in doc:
        return JSON
    return OTHER_JSON
SMI_XML = "nvidia-smi -q -x"
SMI_Q = "nvidia-smi -q"
SMI = "nvidia-smi"
TOPO = "nvidia-smi topo -m"
NVLINK = "nvidia-smi nvlink -s"
SMI_L = "nvidia-smi -L"
SMI_CSV = "nvidia-smi --query-gpu CSV"
APPS_CSV = "nvidia-smi --query-compute-apps CSV"
MEMINFO = "/proc/meminfo"
LSCPU = "lscpu"
P2P = "peer-access check"
COLLECT_ENV = "collect_env"
LSPCI = "lspci"
IBSTAT = "ibstat / ibv_devinfo"
K8S_ENV = "Kubernetes pod environment (kubectl describe / pod spec)"
SYSLOG = "system log (journald / syslog)"
DF = "df"
ULIMIT = "ulimit -a"
DMESG = "kernel log"
DRIVER_VERSION = "/proc/driver/nvidia/version"
BUG_REPORT = "nvidia-bug-report.log"
PATH_VALUE = "echo $LD_LIBRARY_PATH"
#: the whole text is one colon-separated list of absolute paths, after an optional `echo $NAME` line
_PATH_VALUE = re.compile(r"""\A\s*(?:[^\n]*\becho[ \t]+["']?\$\{?[A-Za-z_]\w*\}?["']?[ \t]*\n\s*)?"""
                         r"/[^\s:]*(?::(?:/[^\s:]*)?)*[ \t]*\s*\Z")
#: a Python warning as the warnings module prints it: "…/torch/cuda/__init__.py:128: UserWarning: CUDA initialization…"
# "file.py:12: UserWarning: text"; or the header alone, its text on the next lines, trailing space stripped or not
_PY_WARNING = re.compile(r"^\S*\.py:\d+: [A-Z]\w*Warning:(?: |[ \t]*$)", re.M)
#: nvidia-bug-report.sh's prologue or its section layout (44 underscores, an empty line, "*** /proc/..."), found in
#: any piece of one (parsers/bug_report.py)
BUG_REPORT_MARK = re.compile(r"Start of NVIDIA bug report log file|^nvidia-bug-report\.sh Version: \d"
                             r"|^_{44}[ \t]*\r?\n\r?\n\*\*\* /(?:proc|sys|etc|var)/", re.M)
_BUG_REPORT_LITERALS = ("Start of NVIDIA bug report log file", "nvidia-bug-report.sh Version: ", "_" * 44)


def is_bug_report_piece(text: str) -> bool:
    """BUG_REPORT_MARK found in ``text`` (its literals tested first: the ^ alternatives defeat the regex's own
    literal search, ~3 ms per 64 kB)."""
    return any(a in text for a in _BUG_REPORT_LITERALS) and BUG_REPORT_MARK.search(text) is not None


NCCL = "NCCL log"
LAUNCH = "launcher rank lines"
NCCL_TESTS = "nccl-tests output"
PACKAGES = "package list (pip / conda)"
ENV = "env dump"
COMMAND = "command line"
ERRORS = "error text"
#: a marker among a large input's chunk kinds (parsers/stream.py): the chunk is JSON lines whose log fields are read
JSON_LINES = "JSON-lines log"

#: one header line of `nvidia-smi --query-gpu=FIELDS --format=csv[,nounits]` (CRLF tolerated)
_CSV_FIELDS = r"[a-z][a-z0-9_.]*(?: \[[^\]\n]+\])?(?:, ?[a-z][a-z0-9_.]*(?: \[[^\]\n]+\])?)+[ \t]*\r?$"
CSV_HEADER = re.compile(
    r"^(?=[^\n]*\b(?:pci\.bus_id|uuid|temperature\.gpu|clocks_(?:event|throttle)_reasons\.|power\.draw"
    r"|pcie\.link\.|memory\.total|driver_version|utilization\.gpu|ecc\.errors\.|retired_pages\.|remapped_rows\."
    r"|mig\.mode\.))" + _CSV_FIELDS,
    re.M,
)

#: the header line of `nvidia-smi --query-compute-apps=FIELDS --format=csv` (pid and a process/memory field)
APPS_HEADER = re.compile(r"^(?=[^\n]*\bpid\b)(?=[^\n]*\b(?:process_name|used_gpu_memory|used_memory)\b)" + _CSV_FIELDS,
                         re.M)

_RULES: list[tuple[str, re.Pattern]] = [
    (SMI_XML, re.compile(r"<nvidia_smi_log\b")),
    (
        SMI_Q,
        re.compile(
            r"=+NVSMI LOG=+|^\s*(?:Attached GPUs|Product Name|Remapped Rows|Clocks (?:Throttle|Event) Reasons"
            r"|FB Memory Usage|Performance State|Persistence Mode|Retired Pages|ECC Errors)\s*(?:\s:|$)",
            re.M,
        ),
    ),
    (
        SMI,
        re.compile(
            r"NVIDIA-SMI\s+\d+\.\d+|^\|\s+\d+\s+.+\|\s+[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.\d"
            r"|NVIDIA-SMI has failed because"
            # its whole output is "No devices were found" / "Failed to initialize NVML: ...": a diagnosis
            r"|(?i:" + WHOLE_SMI_MESSAGE.pattern + ")"
            # or, in a terminal capture of several commands, what follows the `$ nvidia-smi` prompt line
            r"|^[^\n]*[$#][ \t]*(?:sudo[ \t]+)?nvidia-smi(?:[ \t][^\n|]*)?\n[ \t]*(?i:"
            + NO_DRIVER_MESSAGE.pattern + ")"
            # or, in a message, on a line of its own under a sentence that introduces nvidia-smi's output
            r"|^[^\n]*\bnvidia-smi\b[^\n]*:[ \t]*\r?\n(?:[ \t]*\r?\n)?[ \t>]*(?i:" + NO_DRIVER_MESSAGE.pattern
            + r")[ \t]*\r?$",
            re.M,
        ),
    ),
    (TOPO, re.compile(r"^\s*GPU0(?:\s+(?:GPU\d+|NIC\d+|mlx\d+_\d+|\S+_\d+))*\s+CPU Affinity|^GPU0\s+X\s", re.M)),
    (NVLINK, re.compile(r"^GPU \d+: [^\n]*\n\s*Link \d+:", re.M)),
    # the header line of --query-gpu=... --format=csv (anywhere: a pasted command line may precede it):
    # query field names, comma separated, with at least one GPU field (a --query-compute-apps header has none)
    (SMI_CSV, CSV_HEADER),
    (APPS_CSV, APPS_HEADER),
    (MEMINFO, re.compile(r"^MemTotal:\s+\d+ kB\s*\n(?:[^\n]*\n){0,3}?MemAvailable:\s+\d+ kB", re.M)),
    (
        SMI_L,
        re.compile(
            r"\AGPU \d+: [^\n]*\(UUID: GPU-[^\n]*\)\s*(?:\n\s*(?:GPU \d+: [^\n]*\(UUID: GPU-|MIG )[^\n]*)*\s*\Z"
            # or, in a terminal capture of several commands, the list after its `$ nvidia-smi -L` prompt line
            r"|^[^\n]*[$#][ \t]*(?:sudo[ \t]+)?nvidia-smi[ \t]+(?:-L|--list-gpus)[ \t]*\n"
            r"[ \t]*GPU \d+: [^\n]*\(UUID: GPU-",
            re.M,
        ),
    ),
    (P2P, re.compile(r"(?:cudaDeviceCanAccessPeer|can_device_access_peer)\(\s*\d+\s*,\s*\d+\s*\)")),
    (
        COLLECT_ENV,
        re.compile(
            # (a bullet and "(e.g., 1.0)": the issue template's hand-filled checklist)
            r"^(?:[ \t]*[-*][ \t]+)?(?:PyTorch [Vv]ersion(?: \(e\.g\.,? [^)\n]*\))?|Is debug build"
            r"|CUDA used to build PyTorch|Is CUDA available"
            r"|GPU models and configuration|Nvidia driver version|cuDNN version)\s*[:\uff1a]",
            re.M,
        ),
    ),
    (LSCPU, re.compile(r"^Architecture:[ \t]+\S+[ \t]*\n(?:[^\n]*\n){0,8}?(?:CPU\(s\)|Model name):", re.M)),
    (
        LSPCI,
        re.compile(
            r"^\s*(?:LnkCap|LnkSta|ACSCtl|ACSCap):|^(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7] "
            r"(?:PCI bridge|3D controller|VGA compatible controller|Ethernet controller|Infiniband controller"
            r"|Host bridge|Bridge):",
            re.M,
        ),
    ),
    (K8S_ENV, re.compile(r"^[ \t]+Environment:[ \t]*\r?\n[ \t]+[A-Za-z_][A-Za-z0-9_]*:[ \t]+\S"
                         r"|^[ \t]*-[ \t]+name:[ \t]*[\"']?[A-Z_][A-Z0-9_]*[\"']?[ \t]*\r?\n[ \t]+value:", re.M)),
    (IBSTAT, re.compile(r"^CA '[^'\n]+'[ \t]*\n[ \t]+CA type:|^hca_id:[ \t]*\S+[ \t]*\n[ \t]+transport:", re.M)),
    (DF, re.compile(r"^Filesystem\s+\S+(?:\s\S+)?\s+Used\s+Avail", re.M)),
    (
        ULIMIT,
        re.compile(
            r"\((?:kbytes|kB), -l\)|^-l: locked-in-memory size|^locked memory\s*\(kbytes\)|^open files\s+\(-n\)"
            r"|^nofiles\s+\S+",
            re.M,
        ),
    ),
    (DRIVER_VERSION, re.compile(r"^[ \t]*NVRM version: NVIDIA UNIX\b", re.M)),
    (DMESG, re.compile(r"NVRM:|\bXid\s*\(", re.M)),
    (NCCL_TESTS, re.compile(r"^# nThread \d+ nGpus \d+ minBytes \d+ maxBytes \d+|^# Avg bus bandwidth\s+:", re.M)),
    (LAUNCH, re.compile(r"(?i:initializing ddp|Initializing distributed): GLOBAL_RANK: \d+, MEMBER: \d+/\d+"
                        r"|Rendezvous complete for workers\. Result:"
                        r"|The node '[^'\n]+' (?:attempts to join the next round|has joined round \d+)"
                        r" of the rendezvous '")),
    (NCCL, re.compile(r"\bNCCL (?:INFO|WARN)\b|NCCL version \d|^NCCL_[A-Z0-9_]+ set by environment to", re.M)),
    (
        COMMAND,
        re.compile(
            r"^\s*(?:[$#]\s*)?(?:sudo\s+)?(?:[A-Z_][A-Z0-9_]*=\S*\s+)*(?:docker|podman|nvidia-docker|singularity"
            r"|apptainer|enroot|srun"
            r"|mpirun|torchrun|kubectl)\s+\S",
            re.M,
        ),
    ),
]
#: literals of which every match of a format's pattern holds at least one: the pattern runs only where one is present
#: (a string search is ~100x faster than a multi-line regex scan of a large text; tests/test_fast_paths.py checks
#: each set against its pattern)
GATES: dict[str, tuple[str, ...]] = {
    SMI_XML: ("<nvidia_smi_log",),
    SMI_Q: ("NVSMI LOG", "Attached GPUs", "Product Name", "Remapped Rows", "Clocks ", "FB Memory Usage",
            "Performance State", "Persistence Mode", "Retired Pages", "ECC Errors"),
    TOPO: ("GPU0",),
    NVLINK: ("Link ",),
    SMI_CSV: ("pci.bus_id", "uuid", "temperature.gpu", "clocks_event_reasons.", "clocks_throttle_reasons.",
              "power.draw", "pcie.link.", "memory.total", "driver_version", "utilization.gpu", "ecc.errors.",
              "retired_pages.", "remapped_rows.", "mig.mode."),
    APPS_CSV: ("pid",),
    MEMINFO: ("MemTotal:",),
    SMI_L: ("GPU ",),
    P2P: ("cudaDeviceCanAccessPeer", "can_device_access_peer"),
    COLLECT_ENV: ("PyTorch version", "PyTorch Version", "Is debug build", "CUDA used to build PyTorch",
                  "Is CUDA available", "GPU models and configuration", "Nvidia driver version", "cuDNN version"),
    LSCPU: ("Architecture:",),
    LSPCI: ("LnkCap:", "LnkSta:", "ACSCtl:", "ACSCap:", "PCI bridge:", "3D controller:", "VGA compatible controller:",
            "Ethernet controller:", "Infiniband controller:", "Host bridge:", "Bridge:"),
    IBSTAT: ("CA '", "hca_id:"),
    K8S_ENV: ("Environment:", "- name:"),
    DF: ("Filesystem",),
    ULIMIT: ("(kbytes, -l)", "(kB, -l)", "-l: locked-in-memory", "locked memory", "open files", "nofiles"),
    DMESG: ("NVRM:", "Xid"),
    DRIVER_VERSION: ("NVRM version",),
    NCCL: ("NCCL ", " set by environment to"),
    LAUNCH: ("GLOBAL_RANK: ", "Rendezvous complete for workers", " of the rendezvous '"),
    NCCL_TESTS: ("# nThread ", "# Avg bus bandwidth"),
    COMMAND: ("docker", "podman", "singularity", "apptainer", "enroot", "srun", "mpirun", "torchrun", "kubectl"),
}
_OWN_GATES = {"cvc": ("cuda-version-check", "PASS  torch ", "FAIL  torch "),
              "format": ("<testsuites ", " gpudoctor_", "<title>gpudoctor ", "::", " LNT", "Severity: **",
                         "  error  ", "  warning  ", "  info  ")}


def _gate(text: str, kind: str) -> bool:
    """False when no match of ``kind``'s pattern can be in ``text`` (none of its GATES literals is there)."""
    if kind == SMI:  # its table rows hold '|'; its whole-output messages are matched at the start only (\A...\Z)
        return ("NVIDIA-SMI" in text or "|" in text or "nvidia-smi" in text
                or WHOLE_SMI_MESSAGE.match(text) is not None)
    lits = GATES.get(kind) or _OWN_GATES.get(kind)
    return lits is None or any(a in text for a in lits)


_ENV_LINE = re.compile(r"^(?:export\s+|declare -x\s+)?[A-Za-z_][A-Za-z0-9_]*=")


#: a journalctl / syslog line of a service ("Dec 04 06:05:43 hgx-node17 nv-fabricmanager[5532]: ...", ISO stamps of
#: journalctl -o short-iso): its prefix is stripped before the formats are recognised (parsers/_text.py)
_SYSLOG_LINE = re.compile(r"(?:[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\S*) [\w.-]+ "
                          r"[\w.@/-]+(?:\[\d+\])?: \S")


def is_service_log(text: str) -> bool:
    """Whether most of the first 20 non-empty lines of ``text`` are journald / syslog lines: a service's log (Fabric
    Manager, persistenced, the container runtime), read for its errors; a healthy one is a clean report."""
    lines = [x for x in text[:1 << 16].split("\n")[:40] if x.strip()][:20]
    return bool(lines) and sum(1 for x in lines if _SYSLOG_LINE.match(x)) * 2 > len(lines)


def looks_like_env(text: str) -> bool:
    """True when most non-empty lines are NAME=value (an `env` / `export -p` dump)."""
    lines = [x for x in text.split("\n") if x.strip()]
    if not lines:
        return False
    n = sum(bool(_ENV_LINE.match(x.strip())) for x in lines)
    return n >= 1 and n / len(lines) >= 0.6


def detect(text: str) -> list[str]:
    """The formats found in ``text`` (see the module constants), in a stable order; [] when none."""
    text = text.replace("\ufeff", "")  # a byte-order mark (Windows editors) hides the first line from ^ and \\A
    if text.lstrip().startswith("{"):  # a gpudoctor report or snapshot is a JSON object
        kind = _json_kind(text.strip())
        if kind is not None:
            return [kind]
    if _GD_HEADER.search(text) or ("→ fix" in text and len(_GD_FINDING.findall(text[:1 << 20])) >= 2):
        return [GD_TEXT]
    if _gate(text, "cvc") and _GD_CVC.search(text):
        return [GD_VERSIONCHECK]
    if _gate(text, "format") and _GD_FORMAT.search(text):
        return [GD_FORMAT]
    if is_code_table(text):
        return [CODE_TABLE]
    if ("import " in text[:1 << 16] or "def " in text[:1 << 16]) and is_python_source(text[:1 << 20]):
        return [PY_SOURCE]
    if len(text) < 1 << 20 and is_config(text):
        return [CONFIG]
    if is_bug_report_piece(text):  # a bundle of dumps and logs: its sections are recognised one by one
        return [BUG_REPORT]
    kinds = [kind for kind, rx in _RULES if _gate(text, kind) and rx.search(text)]
    if SMI_XML in kinds:
        return [SMI_XML]
    if COLLECT_ENV in kinds and LSCPU in kinds:  # collect_env embeds lscpu; its parser reads that block
        kinds.remove(LSCPU)
    if not kinds and len(text) < 1 << 20 and _package_list(text):
        kinds.append(PACKAGES)
    if looks_like_env(text):
        kinds.append(ENV)
    elif not kinds and len(text) < 64 * 1024 and _PATH_VALUE.match(text):
        kinds.append(PATH_VALUE)
    if has_errorish(text) or ("Warning:" in text and ".py:" in text and _PY_WARNING.search(text)):
        kinds.append(ERRORS)
    elif not kinds and len(text) <= SIGNATURE_PROBE_CHARS and _any_signature(text):
        kinds.append(ERRORS)  # a known message without an error word (a kernel IOMMU fault, a torch E-level log)
    elif not kinds and _LOG_LIKE.search(text[:LOG_LIKE_CHARS]):
        kinds.append(ERRORS)  # a log with no error in it (a clean run, warnings only) is diagnosed, not refused
    return kinds


LOG_LIKE_CHARS = 1 << 16
#: what makes unrecognised text a log: an error word in any form ("NCCL error in:", "unhandled system error"),
#: or the line furniture of a log: a timestamp, a level ("| INFO |", "INFO:", "[W", glog "W1203 12:00:00"), a
#: source location ("socket.cpp:464", "dataloader.py:1133"), a torchrun rank prefix, or a training run's own output:
#: a metric with its value ("loss 0.52", "'loss': 2.30", "epoch=3"), a tqdm progress bar ("100%|####| 782/782")
_LOG_LIKE = re.compile(
    r"(?i:\berrors?\b|\bfail(?:ed|ure|s)?\b|\bwarn(?:ing)?\b|exception|traceback|\bkilled\b|\babort|segmentation "
    r"fault|core dumped|timed? ?out\b)"
    r"|^\s*(?:\[?\d{4}-\d\d-\d\d[ T]\d\d:\d\d|\[?\d\d:\d\d:\d\d\b|\[?[IWEF]\d{4} \d\d:\d\d)"
    r"|(?:^|\s|\[)(?:INFO|DEBUG|WARNING|ERROR|CRITICAL)(?:\s*\||:|\]|\s)"
    r"|\b\w+\.(?:py|cpp|cc|cu|c|h|hpp):\d+\b|^\[(?:rank|default)\d+\]:"
    r"|(?i:\b(?:loss|epoch|step|iter(?:ation)?|learning_rate|grad_norm)\b['\"]?\s*[:=]?\s*-?\d)"
    r"|\b\d{1,3}%\|[^\n|]{0,80}\|\s*\d+/\d+",
    re.M,
)


def _package_list(text: str) -> bool:
    from gpudoctor.parsers.packages import looks_like_package_list

    return looks_like_package_list(text)


SIGNATURE_PROBE_CHARS = 1 << 20  # unrecognised text up to 1 MiB is also tried against the signature catalogue


def _any_signature(text: str) -> bool:
    """Whether any catalogue signature matches ``text``: what a signature names is an error text, whatever its
    wording (parsers/signatures.py)."""
    return bool(match_signatures(text, spans=[], errorish=[]))
