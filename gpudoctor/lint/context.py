"""What the lint rules know about one file: its syntax tree (stdlib ``ast``), the names its imports bind,
the parent of every node, and the helpers the rules share (qualified names of calls, arguments by keyword or
position, rank guards).

Why ``ast`` and not libcst: the rules only read the code, ``ast`` is in the standard library, fast (a 7,000-file
tree in seconds) and keeps exact positions (``end_lineno``/``end_col_offset``) for the few mechanical fixes,
which replace one call's text and need no concrete syntax tree. Sources:
https://docs.python.org/3/library/ast.html
"""
from __future__ import annotations

import ast
from collections.abc import Iterator

#: spellings of the same PyTorch object, mapped to one canonical name
CANONICAL = {
    "torch.nn.parallel.DataParallel": "torch.nn.DataParallel",
    "torch.nn.parallel.data_parallel.DataParallel": "torch.nn.DataParallel",
    "torch.nn.parallel.DistributedDataParallel": "torch.nn.DistributedDataParallel",
    "torch.nn.parallel.distributed.DistributedDataParallel": "torch.nn.DistributedDataParallel",
    "torch.utils.data.distributed.DistributedSampler": "torch.utils.data.DistributedSampler",
    "torch.utils.data.dataloader.DataLoader": "torch.utils.data.DataLoader",
    "torch.cuda.amp.autocast_mode.autocast": "torch.cuda.amp.autocast",
    "torch.cuda.amp.grad_scaler.GradScaler": "torch.cuda.amp.GradScaler",
    "torch.amp.autocast": "torch.autocast",
    "torch.amp.autocast_mode.autocast": "torch.autocast",
    "torch.cuda.amp.GradScaler": "torch.cuda.amp.GradScaler",
    "torch.amp.grad_scaler.GradScaler": "torch.amp.GradScaler",
    "torch.nn.utils.clip_grad.clip_grad_norm_": "torch.nn.utils.clip_grad_norm_",
}

#: words that make an ``if`` test (or a function / decorator name) a rank guard: ``rank == 0``,
#: ``dist.get_rank() == 0``, ``self.gpu_id == 0``, ``is_main_process()``, ``local_rank in (-1, 0)``,
#: ``master_process``, ``trainer.is_global_zero``, ``accelerator.is_local_main_process`` ...
RANK_WORDS = ("rank", "master", "main_process", "is_main", "gpu_id", "zero", "primary", "chief", "is_root")


def mentions_rank(node: ast.AST) -> bool:
    """True when an identifier in ``node`` names a rank or a main-process flag."""
    for n in ast.walk(node):
        ident = n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else None
        if ident is not None and any(w in ident.lower() for w in RANK_WORDS):
            return True
    return False


class FileContext:
    """One parsed file and the facts every rule reads."""

    def __init__(self, path: str, source: str, tree: ast.Module):
        self.path = path
        self.source = source
        self.tree = tree
        self.parents: dict[ast.AST, ast.AST] = {}
        self.imports: dict[str, str] = {}  # local name -> dotted name it is bound to
        self.nodes: list[ast.AST] = []  # every node, walked once (the rules filter this list, never re-walk)
        stack: list[ast.AST] = [tree]
        parents, nodes, AST = self.parents, self.nodes, ast.AST
        while stack:  # ast.walk + iter_child_nodes, inlined: this loop is most of lint's time after parsing
            node = stack.pop()
            nodes.append(node)
            for name in node._fields:
                value = getattr(node, name, None)
                if isinstance(value, AST):
                    parents[value] = node
                    stack.append(value)
                elif isinstance(value, list):
                    for item in value:
                        if isinstance(item, AST):
                            parents[item] = node
                            stack.append(item)
            if isinstance(node, ast.Import):
                for a in node.names:
                    if a.asname:
                        self.imports[a.asname] = a.name
                    else:
                        root = a.name.split(".")[0]
                        self.imports[root] = root
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for a in node.names:
                    if a.name != "*":
                        self.imports[a.asname or a.name] = f"{node.module}.{a.name}"
        #: every call, with its qualified name (or None), in source order
        self.calls: list[tuple[ast.Call, str | None]] = sorted(
            ((n, self.qualname(n.func)) for n in self.nodes if isinstance(n, ast.Call)),
            key=lambda c: (c[0].lineno, c[0].col_offset))
        self.attr_calls = {c.func.attr for c, _ in self.calls if isinstance(c.func, ast.Attribute)}

    # --- names ---------------------------------------------------------------------------------------------
    def qualname(self, node: ast.AST) -> str | None:
        """The dotted name ``node`` refers to through the file's imports (``DDP`` ->
        ``torch.nn.DistributedDataParallel``), canonicalised; None for anything not rooted in an import."""
        parts: list[str] = []
        while isinstance(node, ast.Attribute):
            parts.append(node.attr)
            node = node.value
        if not isinstance(node, ast.Name) or node.id not in self.imports:
            return None
        name = ".".join([self.imports[node.id], *reversed(parts)])
        return CANONICAL.get(name, name)

    def calls_to(self, *names: str) -> Iterator[ast.Call]:
        """Calls whose qualified name is one of ``names`` (in source order)."""
        for call, q in self.calls:
            if q in names:
                yield call

    def has_call(self, *names: str) -> bool:
        return next(self.calls_to(*names), None) is not None

    @property
    def is_distributed(self) -> bool:
        """The file sets up or uses torch.distributed itself (process group, DDP, DistributedSampler)."""
        return self.has_call("torch.distributed.init_process_group", "torch.nn.DistributedDataParallel",
                             "torch.utils.data.DistributedSampler")

    # --- arguments -----------------------------------------------------------------------------------------
    @staticmethod
    def arg(call: ast.Call, name: str, pos: int | None = None) -> ast.expr | None:
        """The argument given for parameter ``name`` (by keyword, or at position ``pos``), else None."""
        for kw in call.keywords:
            if kw.arg == name:
                return kw.value
        if pos is not None and pos < len(call.args) and not any(isinstance(a, ast.Starred)
                                                                 for a in call.args[:pos + 1]):
            return call.args[pos]
        return None

    @staticmethod
    def opaque(call: ast.Call) -> bool:
        """The call passes ``*args`` or ``**kwargs``: which parameters it sets cannot be read."""
        return any(isinstance(a, ast.Starred) for a in call.args) or any(kw.arg is None for kw in call.keywords)

    # --- structure -----------------------------------------------------------------------------------------
    def ancestors(self, node: ast.AST) -> Iterator[ast.AST]:
        while node in self.parents:
            node = self.parents[node]
            yield node

    def function_of(self, node: ast.AST) -> ast.FunctionDef | ast.AsyncFunctionDef | None:
        for a in self.ancestors(node):
            if isinstance(a, ast.FunctionDef | ast.AsyncFunctionDef):
                return a
        return None

    def rank_guarded(self, node: ast.AST, depth: int = 2) -> bool:
        """True when ``node`` runs only on some ranks, as far as this file shows: inside an ``if``/``while``/
        conditional expression whose test names a rank, after an early ``return`` on such a test, in a
        function named or decorated as rank-only (``save_on_master``, ``@rank_zero_only``), or in a function
        of this file whose every call site is itself guarded (``depth`` levels). A function never called in
        this file counts as guarded: nothing shows it runs on every rank."""
        for a in self.ancestors(node):
            if isinstance(a, ast.If | ast.While | ast.IfExp) and mentions_rank(a.test):
                return True
        fn = self.function_of(node)
        if fn is None:
            return False
        if any(w in fn.name.lower() for w in RANK_WORDS) or any(mentions_rank(d) for d in fn.decorator_list):
            return True
        for stmt in ast.walk(fn):
            if (isinstance(stmt, ast.If) and stmt.lineno < getattr(node, "lineno", 0) and mentions_rank(stmt.test)
                    and any(isinstance(s, ast.Return | ast.Raise) for s in stmt.body)):
                return True
        sites = [c for c, _ in self.calls if (isinstance(c.func, ast.Name) and c.func.id == fn.name)
                 or (isinstance(c.func, ast.Attribute) and c.func.attr == fn.name)
                 # handed to a launcher: mp.spawn(main_worker, ...), Process(target=main_worker)
                 or any(isinstance(a, ast.Name) and a.id == fn.name for a in [*c.args, *(k.value for k in c.keywords)])]
        if not sites or depth == 0:
            return True
        return all(self.rank_guarded(c, depth - 1) for c in sites)

    def exclusive(self, a: ast.AST, b: ast.AST) -> bool:
        """``a`` and ``b`` are in different branches of one ``if`` (never both run in one pass)."""
        anc_a, anc_b = set(self.ancestors(a)), set(self.ancestors(b))
        for node in self.ancestors(a):
            if node in anc_b and isinstance(node, ast.If | ast.IfExp):
                branches: list[list[ast.AST]] = ([list(node.body), list(node.orelse)] if isinstance(node, ast.If)
                                                 else [[node.body], [node.orelse]])
                where = [next((i for i, br in enumerate(branches) if any(s is x or s in anc for s in br)), None)
                         for x, anc in ((a, anc_a), (b, anc_b))]
                if None not in where and where[0] != where[1]:
                    return True
        return False

    def in_version_branch(self, node: ast.AST) -> bool:
        """``node`` is under an ``if`` whose test names a version (``is_torch_version(...)``,
        ``torch.__version__``) or in an ``except`` handler: compatibility code kept on purpose."""
        for a in self.ancestors(node):
            if isinstance(a, ast.ExceptHandler):
                return True  # the fallback of a try (e.g. `except AttributeError:` on an old torch)
            if isinstance(a, ast.If):
                for n in ast.walk(a.test):
                    ident = n.id if isinstance(n, ast.Name) else n.attr if isinstance(n, ast.Attribute) else ""
                    if "version" in ident.lower():
                        return True
        return False

    @property
    def framework_managed(self) -> bool:
        """The file hands devices and processes to a framework (DeepSpeed, Accelerate, HF Trainer, Lightning)."""
        roots = {v.split(".")[0] for v in self.imports.values()}
        return bool(roots & {"deepspeed", "accelerate", "lightning", "pytorch_lightning"}) or any(
            v in ("transformers.Trainer", "transformers.TrainingArguments") for v in self.imports.values())

    def assigned_from(self, name: str, *qualnames: str) -> list[ast.Call]:
        """Calls to ``qualnames`` whose result is assigned to the plain name or attribute ``name``
        (``model = DDP(...)``, ``self.model = DDP(...)``)."""
        out = []
        for node in self.nodes:
            if isinstance(node, ast.Assign | ast.AnnAssign) and isinstance(node.value, ast.Call):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(target_name(t) == name for t in targets) and self.qualname(node.value.func) in qualnames:
                    out.append(node.value)
        return out


def target_name(node: ast.AST) -> str | None:
    """``x`` -> 'x', ``self.model`` -> 'self.model'; None for subscripts, tuples and the like."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        inner = target_name(node.value)
        return None if inner is None else f"{inner}.{node.attr}"
    return None


def is_true(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is True


def const_str(node: ast.AST | None) -> str | None:
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None
