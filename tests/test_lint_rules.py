"""Each lint rule on hand-written fixtures: it fires on the pitfall, stays quiet without it, and stays quiet
on the correct idiom (the precision cases of issue 18: aliases, positional arguments, helpers, rank guards,
unwrapped state dicts, divided losses, conditional no_sync, bf16 without scaler, unscale_ before clipping)."""
from __future__ import annotations

import textwrap

import pytest

from gpudoctor.lint.engine import lint_source
from gpudoctor.lint.registry import load

HEAD = """\
import os, contextlib
import torch
import torch.nn as nn
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, DistributedSampler
"""

# (rule, code, fires?) — code is appended to HEAD
CASES = [
    # L1 DataParallel
    ("LNT001", "model = nn.DataParallel(net)", True),
    ("LNT001", "from torch.nn import DataParallel as DP\nm = DP(net)", True),
    ("LNT001", "model = torch.nn.parallel.DataParallel(net)", True),
    ("LNT001", "model = DDP(net, device_ids=[0])", False),
    ("LNT001", "class DataParallel: pass\nm = DataParallel()", False),  # a local class of that name
    # L2 set_device
    ("LNT002", 'dist.init_process_group("nccl")\nmodel = DDP(net.cuda())', True),
    ("LNT002", 'dist.init_process_group(backend="nccl")', True),
    ("LNT002", 'torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))\ndist.init_process_group("nccl")', False),
    ("LNT002", 'dist.init_process_group("gloo")', False),
    ("LNT002", 'dist.init_process_group("nccl")\nmodel = DDP(net, device_ids=[local_rank])', False),
    ("LNT002", 'dist.init_process_group("nccl")\ndevice = torch.device("cuda", local_rank)', False),
    ("LNT002", 'dist.init_process_group("nccl")\nnet.to(f"cuda:{rank}")', False),
    ("LNT002", 'import deepspeed\ndist.init_process_group("nccl")', False),
    # L3 sampler + shuffle
    ("LNT003", "loader = DataLoader(ds, sampler=DistributedSampler(ds), shuffle=True)", True),
    ("LNT003", "s = DistributedSampler(ds)\nloader = DataLoader(ds, 32, True, s)", True),  # positional
    ("LNT003", "s = DistributedSampler(ds)\nloader = DataLoader(ds, sampler=s, shuffle=False)", False),
    ("LNT003", "loader = DataLoader(ds, shuffle=True)", False),
    # L3 set_epoch
    ("LNT004", "s = DistributedSampler(ds)\nloader = DataLoader(ds, sampler=s)\nfor e in range(3):\n"
               "    for b in loader: pass", True),
    ("LNT004", "def make(ds):\n    return DataLoader(ds, sampler=DistributedSampler(ds))\nloader = make(ds)\n"
               "for e in range(3):\n    loader.sampler.set_epoch(e)\n    for b in loader: pass", False),
    ("LNT004", "s = DistributedSampler(ds)\nloader = DataLoader(ds, sampler=s)\nfor e in range(3):\n"
               "    s.set_epoch(e)\n    for b in loader: pass", False),
    ("LNT004", "s = DistributedSampler(ds, shuffle=False)\nloader = DataLoader(ds, sampler=s)\n"
               "for b in loader: pass", False),
    ("LNT004", "s = DistributedSampler(ds)\nloader = DataLoader(ds, sampler=s)\ntrain(loader, s)", False),
    # L4 map_location
    ("LNT005", 'dist.init_process_group("nccl")\nsd = torch.load("c.pt")', True),
    ("LNT005", 'dist.init_process_group("nccl")\nsd = torch.load("c.pt", "cpu")', False),  # positional
    ("LNT005", 'dist.init_process_group("nccl")\nsd = torch.load("c.pt", map_location=f"cuda:{r}")', False),
    ("LNT005", 'sd = torch.load("c.pt")', False),  # not a distributed file
    ("LNT005", 'dist.init_process_group("nccl")\nif gpu is None:\n    sd = torch.load(p)\nelse:\n'
               '    sd = torch.load(p, map_location=loc)', False),
    # L5 every rank saves
    ("LNT006", 'dist.init_process_group("nccl")\ntorch.save(sd, "c.pt")', True),
    ("LNT006", 'dist.init_process_group("nccl")\nif rank == 0:\n    torch.save(sd, "c.pt")', False),
    ("LNT006", 'dist.init_process_group("nccl")\nif dist.get_rank() == 0:\n    torch.save(sd, "c.pt")', False),
    ("LNT006", 'dist.init_process_group("nccl")\nif local_rank in (-1, 0):\n    torch.save(sd, "c.pt")', False),
    ("LNT006", 'dist.init_process_group("nccl")\nif is_main_process():\n    torch.save(sd, "c.pt")', False),
    ("LNT006", 'dist.init_process_group("nccl")\nclass T:\n    def snap(self):\n        torch.save(sd, "c.pt")\n'
               '    def run(self):\n        if self.gpu_id == 0:\n            self.snap()', False),
    ("LNT006", 'dist.init_process_group("nccl")\ndef save():\n    if dist.get_rank() != 0:\n        return\n'
               '    torch.save(sd, "c.pt")', False),
    ("LNT006", 'dist.init_process_group("nccl")\ndef save():\n    torch.save(sd, "c.pt")\nsave()', True),
    ("LNT006", 'dist.init_process_group("nccl")\ntorch.save(sd, f"shard_{rank}.pt")', False),
    ("LNT006", 'import torch.multiprocessing as mp\ndef worker(r):\n    dist.init_process_group("nccl")\n'
               '    torch.save(sd, "c.pt")\nmp.spawn(worker, nprocs=2)', True),  # spawned on every rank
    ("LNT006", 'def worker(r):\n    dist.init_process_group("nccl")\n    torch.save(sd, "c.pt")', False),
    # L5 wrapper's state_dict
    ("LNT007", "model = DDP(net)\ntorch.save(model.state_dict(), p)", True),
    ("LNT007", "model = DDP(net)\ntorch.save({'model': model.state_dict(), 'step': 1}, p)", True),
    ("LNT007", "model = DDP(net)\ntorch.save(model.module.state_dict(), p)", False),
    ("LNT007", "torch.save(model.state_dict(), p)\nmodel = DDP(model)", False),  # saved before wrapping
    ("LNT007", "model = DDP(net)\nmodel = model.module\ntorch.save(model.state_dict(), p)", False),
    # L7 auto-wrap
    ("LNT008", 'rank = int(os.environ["LOCAL_RANK"])\nif torch.cuda.device_count() > 1:\n'
               '    model = nn.DataParallel(model)', True),
    ("LNT008", "if torch.cuda.device_count() > 1:\n    model = nn.DataParallel(model)", False),  # no torchrun
    ("LNT008", 'rank = int(os.environ["LOCAL_RANK"])\nif dist.is_initialized():\n    model = DDP(model)', False),
    # L8 find_unused_parameters
    ("LNT009", "model = DDP(net, device_ids=[r], find_unused_parameters=True)", True),
    ("LNT009", "model = DDP(net, device_ids=[r], find_unused_parameters=False)", False),
    ("LNT009", "model = DDP(net, device_ids=[r], find_unused_parameters=args.unused)", False),
    # L12 NCCL in script
    ("LNT010", 'os.environ["NCCL_ALGO"] = "Tree"', True),
    ("LNT010", 'os.environ.setdefault("NCCL_IB_DISABLE", "1")', True),
    ("LNT010", 'os.environ.update(NCCL_P2P_DISABLE="1")', True),
    ("LNT010", 'os.environ["NCCL_DEBUG"] = "INFO"', False),
    ("LNT010", 'os.environ["MASTER_PORT"] = "29500"', False),
    # L6 loss not divided
    ("LNT011", "for i, b in enumerate(loader):\n    loss = model(b)\n    loss.backward()\n"
               "    if (i + 1) % accum == 0:\n        optimizer.step()", True),
    ("LNT011", "for i, b in enumerate(loader):\n    loss = model(b)\n    loss = loss / accum\n    loss.backward()\n"
               "    if (i + 1) % accum == 0:\n        optimizer.step()", False),
    ("LNT011", "for i, b in enumerate(loader):\n    loss = model(b)\n    scaler.scale(loss / accum).backward()\n"
               "    if (i + 1) % accum == 0:\n        scaler.step(optimizer)", False),
    ("LNT011", "for b in loader:\n    for m in range(accum):\n        loss = model(b)\n        loss.backward()\n"
               "    optimizer.step()", True),
    ("LNT011", "for b in loader:\n    loss = model(b)\n    loss.backward()\n    optimizer.step()", False),
    ("LNT011", "for b in loader:\n    for m in range(6):\n        model.zero_grad()\n        model(b).backward()\n"
               "    optimizer.step()", False),  # zeroed every micro-step: nothing accumulates
    ("LNT011", "for i, b in enumerate(loader):\n    optimizer.zero_grad()\n    model(b).backward()\n"
               "    if i % 10 == 0:\n        optimizer.step()", False),
    ("LNT002", 'dist.init_process_group(backend=dist.Backend.GLOO)', False),
    ("LNT002", 'dist.init_process_group(dist.Backend.NCCL)', True),
    ("LNT005", 'dist.init_process_group("nccl")\ntorch.save(m, b)\nm2 = torch.load(b)', False),  # round trip
    # L6 no_sync
    ("LNT012", "model = DDP(net)\nfor i, b in enumerate(loader):\n    (model(b) / accum).backward()\n"
               "    if (i + 1) % accum == 0:\n        optimizer.step()", True),
    ("LNT012", "model = DDP(net)\nfor i, b in enumerate(loader):\n"
               "    ctx = model.no_sync() if (i + 1) % accum else contextlib.nullcontext()\n    with ctx:\n"
               "        (model(b) / accum).backward()\n    if (i + 1) % accum == 0:\n        optimizer.step()", False),
    ("LNT012", "model = DDP(net)\nfor i, b in enumerate(loader):\n    with contextlib.ExitStack() as st:\n"
               "        if (i + 1) % accum:\n            st.enter_context(model.no_sync())\n"
               "        (model(b) / accum).backward()\n    if (i + 1) % accum == 0:\n        optimizer.step()", False),
    ("LNT012", "for i, b in enumerate(loader):\n    (model(b) / accum).backward()\n"
               "    if (i + 1) % accum == 0:\n        optimizer.step()", False),  # no DDP
    # L9 workers / pinning
    ("LNT013", "ds = datasets.ImageFolder(d, transform=t)\ns = DistributedSampler(ds)\n"
               "loader = DataLoader(ds, batch_size=8, sampler=s)\nloss.backward()", True),
    ("LNT013", "from torchvision import datasets\nds = datasets.CIFAR10(d)\ns = DistributedSampler(ds)\n"
               "loader = DataLoader(ds, 8, False, s, None, 0)\nloss.backward()", True),
    ("LNT013", "s = DistributedSampler(ds)\nloader = DataLoader(ds, batch_size=8, sampler=s)\nloss.backward()",
     False),  # a dataset the file does not show: left alone
    ("LNT013", "s = DistributedSampler(ds)\nloader = DataLoader(ds, sampler=s, num_workers=4)\nloss.backward()", False),
    ("LNT013", "s = DistributedSampler(ds)\nloader = DataLoader(ds, sampler=s, **kw)\nloss.backward()", False),
    ("LNT013", "s = DistributedSampler(ds)\nloader = DataLoader(torch.utils.data.TensorDataset(x), sampler=s)\n"
               "loss.backward()", False),
    ("LNT013", "s = DistributedSampler(ds)\nval = DataLoader(ds, batch_size=8)\nloss.backward()", False),  # eval
    ("LNT014", "s = DistributedSampler(ds)\nl = DataLoader(ds, sampler=s, num_workers=4)\nloss.backward()", True),
    ("LNT014", "s = DistributedSampler(ds)\nl = DataLoader(ds, sampler=s, num_workers=4, pin_memory=True)\n"
               "loss.backward()", False),
    ("LNT014", "s = DistributedSampler(ds)\nl = DataLoader(ds, sampler=s)\nloss.backward()", False),
    # L10 seeds
    ("LNT015", "torch.manual_seed(42)\nmodel = DDP(net)\nl = DataLoader(ds)", True),
    ("LNT015", "torch.manual_seed(42 + dist.get_rank())\nmodel = DDP(net)\nl = DataLoader(ds)", False),
    ("LNT015", "seed = args.seed + get_rank()\ntorch.manual_seed(seed)\nmodel = DDP(net)\nl = DataLoader(ds)", False),
    ("LNT015", "from torch.distributed.fsdp import fully_shard\ntorch.manual_seed(0)\nfully_shard(net)\n"
               "model = DDP(net)\nl = DataLoader(ds)", False),
    # L10 BatchNorm
    ("LNT016", "bn = nn.BatchNorm2d(64)\nmodel = DDP(net)", True),
    ("LNT016", "bn = nn.BatchNorm2d(64)\nnet = nn.SyncBatchNorm.convert_sync_batchnorm(net)\nmodel = DDP(net)", False),
    ("LNT016", "bn = nn.BatchNorm2d(64)", False),
    # L11 deprecated amp
    ("LNT017", "with torch.cuda.amp.autocast():\n    y = net(x)", True),
    ("LNT017", "from torch.cuda.amp import GradScaler\nscaler = GradScaler()", True),
    ("LNT017", 'with torch.autocast("cuda", dtype=torch.float16):\n    y = net(x)', False),
    ("LNT017", "try:\n    s = torch.amp.GradScaler('cuda')\nexcept AttributeError:\n"
               "    s = torch.cuda.amp.GradScaler()", False),
    # L11 GradScaler + bf16
    ("LNT018", 'scaler = torch.amp.GradScaler("cuda")\nwith torch.autocast("cuda", dtype=torch.bfloat16):\n'
               '    y = net(x)', True),
    ("LNT018", 'scaler = torch.amp.GradScaler("cuda")\nwith torch.autocast("cuda", torch.bfloat16):\n'
               '    y = net(x)', True),  # dtype positional
    ("LNT018", 'scaler = torch.amp.GradScaler("cuda", enabled=(dtype == "float16"))\n'
               'with torch.autocast("cuda", dtype=torch.bfloat16):\n    y = net(x)', False),
    ("LNT018", 'scaler = torch.amp.GradScaler("cuda")\nwith torch.autocast("cuda", dtype=torch.float16):\n'
               '    y = net(x)', False),
    # L11 clipping scaled gradients
    ("LNT019", "scaler.scale(loss).backward()\ntorch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)\n"
               "scaler.step(opt)", True),
    ("LNT019", "from torch.nn.utils import clip_grad_norm_\nscaler.scale(loss).backward()\n"
               "scaler.unscale_(opt)\nclip_grad_norm_(net.parameters(), 1.0)\nscaler.step(opt)", False),
    ("LNT019", "scaler.scale(loss).backward()\ntorch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)\n"
               "scaler.unscale_(opt)", True),  # unscale_ after the clip: too late
    ("LNT019", "if amp:\n    scaler.scale(loss).backward()\n    scaler.step(opt)\nelse:\n    loss.backward()\n"
               "    torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)", False),
]


def ids_fired(code: str) -> set[str]:
    return {f.rule_id for f in lint_source(HEAD + textwrap.dedent(code), "t.py")}


@pytest.mark.parametrize("rule,code,fires", CASES, ids=[f"{r}-{i}" for i, (r, _, _) in enumerate(CASES)])
def test_rule_case(rule: str, code: str, fires: bool) -> None:
    assert (rule in ids_fired(code)) is fires


def test_every_rule_has_a_firing_and_a_quiet_case() -> None:
    for rid in load():
        assert any(r == rid and f for r, _, f in CASES), rid
        assert any(r == rid and not f for r, _, f in CASES), rid


def test_every_rule_names_checklist_and_pytorch_doc() -> None:
    for spec in load().values():
        assert spec.checklist.startswith("L") and spec.what and spec.bad and spec.good
        assert spec.doc_url.startswith("https://pytorch.org/"), spec.id


def test_inline_ignore() -> None:
    code = HEAD + "m = nn.DataParallel(n)  # gpudoctor: ignore[LNT001]\nk = nn.DataParallel(n)  # gpudoctor: ignore\n"
    assert lint_source(code, "t.py") == []
    code = HEAD + "m = nn.DataParallel(n)  # gpudoctor: ignore[LNT005]\n"
    assert [f.rule_id for f in lint_source(code, "t.py")] == ["LNT001"]
    code = HEAD + 's = "# gpudoctor: ignore[LNT001]"; m = nn.DataParallel(n)\n'  # in a string: not a comment
    assert [f.rule_id for f in lint_source(code, "t.py")] == ["LNT001"]


def test_position_is_the_call() -> None:
    (f,) = lint_source(HEAD + "x = 1\nmodel = nn.DataParallel(net)\n", "t.py")
    assert (f.line, f.col) == (HEAD.count("\n") + 2, 8)


def test_lint_package_imports_no_cli_probes_or_confirm() -> None:
    """The layering contract: gpudoctor/lint reads source text only; it never imports the CLI, the probes or the
    confirmation runs."""
    import ast as _ast
    from pathlib import Path

    pkg = Path(__file__).resolve().parents[1] / "gpudoctor" / "lint"
    for f in pkg.glob("*.py"):
        for node in _ast.walk(_ast.parse(f.read_text())):
            names = ([a.name for a in node.names] if isinstance(node, _ast.Import)
                     else [node.module or ""] if isinstance(node, _ast.ImportFrom) else [])
            for n in names:
                assert not n.startswith(("gpudoctor.cli", "gpudoctor.probes", "gpudoctor.confirm")), (f.name, n)
                assert n.split(".")[0] != "torch", (f.name, n)
