#!/bin/sh
# node-problem-detector custom plugin: reports what the gpudoctor DaemonSet's last static scan found.
#
# It reads the Prometheus textfile the DaemonSet writes (gpudoctor-daemonset.yaml), so it needs only a POSIX
# shell and awk (node-problem-detector's own image has both; no Python, no GPU access in NPD).
# Exit codes follow NPD's custom-plugin protocol:
#   0  OK       the last scan found nothing at or above its --fail-on (gpudoctor_healthy 1)
#   1  NonOK    it found a problem; the first line of stdout is the condition's message:
#               "gpudoctor: <rule id> <title>" of the worst finding (+N more)
#   2  Unknown  no textfile, or one older than GPUDOCTOR_MAX_AGE seconds (the DaemonSet is not running)
TEXTFILE=${GPUDOCTOR_TEXTFILE:-/var/lib/node_exporter/textfile_collector/gpudoctor.prom}
MAX_AGE=${GPUDOCTOR_MAX_AGE:-7200}

if [ ! -r "$TEXTFILE" ]; then
    echo "gpudoctor: no report at $TEXTFILE (is the gpudoctor DaemonSet running on this node?)"
    exit 2
fi
now=$(date +%s)
awk -v now="$now" -v max_age="$MAX_AGE" '
function label(s, name,    m, rest) {
    # value of name="..." in a sample line (label values are escaped: \" \\ \n)
    m = index(s, name "=\"")
    if (m == 0) return ""
    rest = substr(s, m + length(name) + 2)
    out = ""
    while (length(rest) > 0) {
        c = substr(rest, 1, 1)
        if (c == "\\") { out = out substr(rest, 2, 1); rest = substr(rest, 3); continue }
        if (c == "\"") break
        out = out c; rest = substr(rest, 2)
    }
    return out
}
/^gpudoctor_healthy / { healthy = $2 }
/^gpudoctor_scan_timestamp_seconds / { ts = $2 }
/^gpudoctor_finding\{/ {
    sev = label($0, "severity"); rank = (sev == "error") ? 3 : (sev == "warning") ? 2 : 1
    n++
    if (rank > best) { best = rank; what = label($0, "rule_id") " " label($0, "title") }
}
END {
    if (healthy == "" || ts == "") { print "gpudoctor: unreadable report"; exit 2 }
    if (now - ts > max_age) { printf "gpudoctor: last scan is %d s old\n", now - ts; exit 2 }
    if (healthy == 1) { print "gpudoctor: healthy"; exit 0 }
    more = (n > 1) ? sprintf(" (+%d more)", n - 1) : ""
    print "gpudoctor: " what more
    exit 1
}' "$TEXTFILE"
