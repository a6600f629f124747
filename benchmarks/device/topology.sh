#!/usr/bin/env bash
# Topology capture on a GPU host (run from the repo root through `device`; finishes in well under a minute).
# Writes to $OUT (8 files at most):
#   topo-m.txt            nvidia-smi topo -m (raw, with its escape codes)
#   topo-p2p.txt          nvidia-smi topo -p2p r / w / n / a (P2P status per capability, for comparing with NVML)
#   nvml-topology.jsonl   NVML worker, topology mode (GPU pairs: common ancestor, P2P; NVLink state/errors)
#   nvml-fabric.jsonl     NVML worker, fabric mode (versioned nvmlGpuFabricInfo struct; exit code appended)
#   sysfs-pci.txt         sysfs link speed/width of every PCI function on the GPUs' paths, iommu, IB, net, modules
#   scan-v.txt            gpudoctor scan -v (terminal report with the topology section)
#   scan.json             gpudoctor scan --json
#   host.txt              date, kernel, nvidia-smi -L, nvidia-smi -q fabric lines, exit codes
set -u
. benchmarks/device/env.sh /tmp/gpudoctor-topology
{ date -u; uname -a; nvidia-smi -L; nvidia-smi -q | grep -A4 -i fabric; } > "$OUT/host.txt" 2>&1
timeout 30 nvidia-smi topo -m > "$OUT/topo-m.txt" 2>&1
for c in r w n a; do echo "== nvidia-smi topo -p2p $c"; timeout 30 nvidia-smi topo -p2p $c; done > "$OUT/topo-p2p.txt" 2>&1
timeout 60 python3 gpudoctor/probes/nvml_worker.py topology > "$OUT/nvml-topology.jsonl" 2>&1
echo "topology worker exit code: $?" >> "$OUT/host.txt"
timeout 60 python3 gpudoctor/probes/nvml_worker.py fabric > "$OUT/nvml-fabric.jsonl" 2>&1
echo "fabric worker exit code: $? (negative/139 = crashed; the scan survives it)" >> "$OUT/host.txt"
{
  for g in $(ls /sys/bus/pci/devices); do
    d=/sys/bus/pci/devices/$g
    case "$(cat $d/class 2>/dev/null)" in 0x0302*|0x0300*|0x0604*|0x0207*|0x0200*) ;; *) continue;; esac
    echo "$(readlink -f $d) class=$(cat $d/class) vendor=$(cat $d/vendor) cur=$(cat $d/current_link_speed 2>/dev/null)" \
         "x$(cat $d/current_link_width 2>/dev/null) max=$(cat $d/max_link_speed 2>/dev/null) x$(cat $d/max_link_width 2>/dev/null)" \
         "numa=$(cat $d/numa_node 2>/dev/null) iommu=$(cat $d/iommu_group/type 2>/dev/null) config_bytes=$(wc -c < $d/config 2>/dev/null)"
  done
  echo "== iommu groups: $(ls /sys/kernel/iommu_groups 2>/dev/null | wc -l)"; echo "== cmdline: $(cat /proc/cmdline)"
  echo "== infiniband:"; ls -l /sys/class/infiniband 2>&1
  for p in /sys/class/infiniband/*/ports/*; do [ -d "$p" ] && echo "$p $(cat $p/state) $(cat $p/phys_state) $(cat $p/rate) $(cat $p/link_layer)"; done
  echo "== net:"; for n in /sys/class/net/*; do echo "$n $(cat $n/operstate) $(readlink -f $n/device 2>/dev/null)"; done
  echo "== peermem:"; grep -E '^(nvidia_peermem|nv_peer_mem) ' /proc/modules || echo "not loaded"
  echo "== lspci: $(command -v lspci || echo absent)"
} > "$OUT/sysfs-pci.txt" 2>&1
timeout 240 python3 -m gpudoctor scan -v --no-confirm > "$OUT/scan-v.txt" 2>&1; echo "exit code: $?" >> "$OUT/scan-v.txt"
timeout 240 python3 -m gpudoctor scan --json --no-confirm > "$OUT/scan.json" 2>>"$OUT/host.txt"; echo "json exit code: $?" >> "$OUT/host.txt"
