#!/bin/bash
# gpudoctor in a Slurm job prolog: a short static check of the node before each job starts.
#
# slurm.conf:
#     Prolog=/usr/local/sbin/gpudoctor-prolog.sh
#     PrologFlags=Alloc          # run it when the job is allocated, not at its first step
#
# Slurm runs the prolog as root on each allocated node. A non-zero exit makes Slurm drain the node and
# requeue the job; so this exits 1 only when gpudoctor found a problem (after draining the node with
# "gpudoctor: <rule id> <title>"; some Slurm versions then replace the reason with "Prolog error": the
# gpudoctor reason is also in syslog, tag gpudoctor-healthcheck). If gpudoctor itself cannot run, the job
# goes ahead (exit 0): a broken tool must not drain a cluster.
#
# Keep it short: the prolog delays every job. The default is the static scan (no GPU work), its torch
# probe limited to 45 s, the whole bounded to 60 s.
here=$(dirname "$(readlink -f "$0")")
export GPUDOCTOR_TIMEOUT=${GPUDOCTOR_TIMEOUT:-60}
export GPUDOCTOR_CMD=${GPUDOCTOR_CMD:-gpudoctor scan --no-confirm --torch-timeout 45}
"$here/gpudoctor-healthcheck.sh"
rc=$?
[ "$rc" = 1 ] && exit 1
exit 0
