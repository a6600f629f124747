#!/bin/bash
# gpudoctor as Slurm's HealthCheckProgram (the role LBNL NHC usually plays).
#
# slurm.conf, on every node (the script must exist at the same path on each):
#     HealthCheckProgram=/usr/local/sbin/gpudoctor-healthcheck.sh
#     HealthCheckInterval=300
#     HealthCheckNodeState=ANY,CYCLE
#
# slurmd runs it as root. It runs gpudoctor's static scan (no GPU work: --no-confirm), bounded by
# timeout(1). On a finding at or above GPUDOCTOR_FAIL_ON it drains this node:
#     scontrol update nodename=<node> state=drain reason="gpudoctor: <rule id> <title>"
# It never resumes a node: an operator does (`scontrol update nodename=<node> state=resume`) after the fix.
# It leaves alone a node an operator drained for another reason (a reason not starting with "gpudoctor:").
#
# Exit status: 0 healthy; 1 drained (or would be: already drained); 2 gpudoctor itself could not run
# (usage or internal error: the node is NOT drained for that, the message goes to syslog).
#
# Settings (environment, or edit the defaults):
#   GPUDOCTOR_CMD      the check to run (default: "gpudoctor scan --no-confirm"; slurmd's PATH is short: use
#                      the full path, e.g. /opt/gpudoctor/bin/gpudoctor, for a virtual environment); the script adds
#                      --format/--output/--save/--fail-on itself
#   GPUDOCTOR_FAIL_ON  error (default) | warning | info
#   GPUDOCTOR_TIMEOUT  seconds before the scan is killed and the node drained as hung (default 120)
#   GPUDOCTOR_TEXTFILE also write the Prometheus textfile here (e.g. /var/lib/node_exporter/gpudoctor.prom)
#   SCONTROL           scontrol to call (default: scontrol on PATH)
set -u

CMD=${GPUDOCTOR_CMD:-gpudoctor scan --no-confirm}
FAIL_ON=${GPUDOCTOR_FAIL_ON:-error}
TIMEOUT=${GPUDOCTOR_TIMEOUT:-120}
SCONTROL=${SCONTROL:-scontrol}
PYTHON=${GPUDOCTOR_PYTHON:-python3}
NODE=${SLURMD_NODENAME:-$(hostname -s)}

log() { logger -t gpudoctor-healthcheck -- "$*" 2>/dev/null; echo "gpudoctor-healthcheck: $*" >&2; }

work=$(mktemp -d "${TMPDIR:-/tmp}/gpudoctor-hc.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT

# The report as JSON (for the reason), and the textfile in the same run when asked for.
if [ -n "${GPUDOCTOR_TEXTFILE:-}" ]; then
    out=(--format prometheus --output "$GPUDOCTOR_TEXTFILE" --save "$work/report.json")
else
    out=(--format json --output "$work/report.json")
fi
# shellcheck disable=SC2086  # CMD is a command line on purpose
timeout -k 10 "$TIMEOUT" $CMD "${out[@]}" --fail-on "$FAIL_ON" >"$work/stdout" 2>"$work/stderr"
rc=$?

case $rc in
    0) exit 0 ;;
    1) reason=$("$PYTHON" - "$work/report.json" "$FAIL_ON" <<'PY'
import json, sys
order = {"info": 1, "warning": 2, "error": 3}
doc = json.load(open(sys.argv[1]))
bar = order.get(sys.argv[2], 3)
found = list(doc.get("findings", []))
for node in doc.get("nodes", []) or []:
    found += (node.get("report") or {}).get("findings", [])
found = [f for f in found if order.get(f.get("severity"), 0) >= bar] or found
found.sort(key=lambda f: -order.get(f.get("severity"), 0))
if found:
    f = found[0]
    more = f" (+{len(found) - 1} more)" if len(found) > 1 else ""
    text = f"gpudoctor: {f['rule_id']} {f['title']}{more}"
else:
    text = "gpudoctor: findings (report unreadable)"
# one line, no double quotes (scontrol's argument), bounded length
print(" ".join(text.replace('"', "'").split())[:200])
PY
)
       [ -n "$reason" ] || reason="gpudoctor: findings at or above $FAIL_ON" ;;
    124|137) reason="gpudoctor: scan hung (killed after ${TIMEOUT} s)" ;;
    *) log "gpudoctor could not run (exit $rc): $(tail -n 3 "$work/stderr" | tr '\n' ' ')"
       exit 2 ;;
esac

# An operator's drain (another reason) stays as it is.
current=$("$SCONTROL" show node "$NODE" 2>/dev/null)
state=$(sed -n 's/.*[[:space:]]State=\([^[:space:]]*\).*/\1/p' <<<"$current" | head -n 1)
old_reason=$(sed -n 's/.*[[:space:]]Reason=\(.*\)$/\1/p' <<<"$current" | head -n 1)
if [[ "$state" == *DRAIN* && -n "$old_reason" && "$old_reason" != gpudoctor:* ]]; then
    log "$NODE already drained by someone else ($old_reason); not touching it; would drain: $reason"
    exit 1
fi
log "draining $NODE: $reason"
"$SCONTROL" update nodename="$NODE" state=drain reason="$reason" || { log "scontrol failed"; exit 2; }
exit 1
