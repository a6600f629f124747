. benchmarks/device/env.sh /tmp/gpudoctor-diag
for i in 1 2 3; do /usr/bin/time -f "main probe %e s" python3 gpudoctor/probes/torch_script.py | tail -c 600; done
for i in 1 2; do /usr/bin/time -f "vision probe %e s" python3 gpudoctor/probes/torch_script.py vision; done
for i in 1 2; do /usr/bin/time -f "import torch %e s" python3 -c "import torch"; done
for i in 1 2; do /usr/bin/time -f "import torch+is_available %e s" python3 -c "import torch; torch.cuda.is_available()"; done
for i in 1 2; do /usr/bin/time -f "import torchvision %e s" python3 -c "import torchvision"; done
for i in 1 2; do /usr/bin/time -f "scan --no-confirm %e s" python3 -m gpudoctor scan --json --no-confirm > /tmp/s.json; python3 -c "import json; d=json.load(open('/tmp/s.json'))['snapshot']; print(d['probe_seconds'])"; done
nproc
