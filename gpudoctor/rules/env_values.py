"""NCCL & environment rules on the *values* of variables that fail only at run time: NCL008
(PYTORCH_ALLOC_CONF / PYTORCH_CUDA_ALLOC_CONF that torch rejects at its first allocation) and NCL009 (NCCL_NET /
NCCL_IB_HCA naming a network or HCA this host lacks), NCL010 (launcher variables), NCL011 (NCCL_SOCKET_IFNAME against
the interfaces NCCL selected), NCL012 (container bridges NCCL selected by itself), NCL013 (integer variables NCCL
reads as another number). Tables: rules/alloc_conf.toml, rules/nccl_env.toml, rules/nccl_env_names.toml."""
from __future__ import annotations

import re

from gpudoctor.compat import data
from gpudoctor.compat.versions import vtuple
from gpudoctor.rules.engine import NotApplicable, NotAssessed, rule
from gpudoctor.rules.nccl_env import multi_node

ALLOC_URL = "https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf"
#: signatures of a failed NCCL socket connection (rules/signatures.toml): connect / accept / bootstrap errors
SOCKET_FAILURES = frozenset({"SIG008", "SIG031", "SIG032", "SIG033", "SIG036"})
BUILTIN_NETS = ("IB", "Socket")  # NCCL's internal network modules (NCCL env docs, NCCL_NET)


def split_alloc_conf(text: str) -> list[tuple[str, str | None]]:
    """``key:value,key:[a:b,c:d]`` -> [(key, value)], commas inside brackets kept; a token without ':' has value
    None. Whitespace around tokens is dropped (torch's tokenizer skips it too)."""
    out: list[tuple[str, str | None]] = []
    depth, cur = 0, ""
    for ch in text + ",":
        if ch == "," and depth == 0:
            tok = cur.strip()
            cur = ""
            if tok:
                key, sep, val = tok.partition(":")
                out.append((key.strip(), val.strip() if sep else None))
            continue
        depth += {"[": 1, "]": -1}.get(ch, 0)
        cur += ch
    return out


def _pow2(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _bad_value(kind: str, value: str | None, table: dict) -> str | None:
    """Why torch rejects ``value`` for a key of ``kind`` (rules/alloc_conf.toml), or None when it is accepted."""
    if value is None or value == "":
        return "has no value (key:value)"
    lim = table["limits"]
    if kind == "bool":
        return None if value in ("True", "False") else "must be True or False (capitalised)"
    if kind == "backend":
        return None if value in lim["backends"] else f"must be one of {', '.join(lim['backends'])}"
    if kind in ("fraction", "fraction_incl"):
        try:
            x = float(value)
        except ValueError:
            return "must be a number between 0 and 1"
        ok = 0.0 < x < 1.0 if kind == "fraction" else 0.0 < x <= 1.0
        return None if ok else "must be between 0 and 1"
    if kind == "divisions":
        if value.startswith("["):
            return None if value.endswith("]") else "opens '[' without a closing ']'"
        return None if value.isdigit() and (int(value) == 0 or _pow2(int(value))) else "must be a power of 2 (or 0)"
    if not value.isdigit():
        return "must be a whole number"
    if kind == "int_pow2" and not _pow2(int(value)):
        return "must be a power of 2"
    return None


@rule("NCL008")
def alloc_conf(ctx):
    """Parses each allocator variable like torch does (comma-separated key:value, brackets for roundup lists):
    unknown keys, missing or malformed values. An unknown key is an error when the target torch is no newer
    than the torch whose keys were read (rules/alloc_conf.toml), else a warning (a newer torch may know it)."""
    env = ctx.env()
    table = data.load("alloc_conf")
    keys: dict[str, str] = table["keys"]
    t = ctx.snap.torch
    tv = vtuple(t.version) if t is not None and t.installed and t.version else None
    read = vtuple(table["keys_read_from"]) or ()
    newer = tv is None or tv[:2] > read[:2]
    for name in table["variables"]:
        text = env.get(name)
        if text is None:
            continue
        for key, value in split_alloc_conf(text):
            if key not in keys:
                close = [k for k in keys if k.lower() == key.lower() or k.startswith(key[:6])]
                hint = f" (did you mean {close[0]}?)" if close else ""
                yield ctx.finding(
                    [f"{name}={text}", f"key {key!r} is not an allocator option{hint}",
                     f"known keys (torch {table['keys_read_from']}): {', '.join(sorted(keys))}"],
                    subject=name, severity="warning" if newer else "error",
                    data={"variable": name, "key": key, "torch": t.version if t else None})
                continue
            first = table.get("min_torch", {}).get(key)
            if first and tv is not None and tv[:2] < (vtuple(first) or ())[:2]:
                yield ctx.finding([f"{name}={text}", f"{key} needs torch {first} or newer; torch {t.version} raises "
                                   f"'Unrecognized CachingAllocator option: {key}' at its first CUDA allocation"],
                                  subject=name, data={"variable": name, "key": key, "torch": t.version})
                continue
            why = _bad_value(keys[key], value, table)
            if why is None and key == "max_split_size_mb" and value is not None:
                low = table["limits"]["max_split_size_mb_min"]
                why = None if int(value) >= low else f"must be >= {low} (MiB)"
            if why:
                yield ctx.finding([f"{name}={text}", f"{key}:{value}: {why}"], subject=name,
                                  data={"variable": name, "key": key, "value": value})


@rule("NCL009")
def nccl_net(ctx):
    """NCCL_NET=IB against the RDMA ports in /sys/class/infiniband (error when none is ACTIVE). Another name than
    IB/Socket: a warning (only a net plugin can provide it, and a plugin's network name cannot be read without
    loading it). NCCL_IB_HCA: HCA names matched with NCCL's prefix/'^'/'=' rules; no match is a warning for a
    multi-node job, info otherwise; moot (quiet) on a host without RDMA devices."""
    from gpudoctor.rules.nccl_env import _socket_if_match
    from gpudoctor.rules.topology import _active_rdma

    env = ctx.env()
    net, hca = env.get("NCCL_NET"), env.get("NCCL_IB_HCA")
    if net is None and not hca:
        return
    name = (net or "").strip()
    topo = ctx.snap.topology
    needs_ib = name.lower() == "ib" or bool(hca)
    if needs_ib and (topo is None or topo.ib_present is None):
        raise NotAssessed("InfiniBand facts missing (/sys/class/infiniband not read)")
    if name.lower() == "ib":
        if not _active_rdma(topo):
            ports = ", ".join(f"{p.device}/{p.port} {p.state}" for p in topo.ib_ports) or "no RDMA device"
            yield ctx.finding([f"NCCL_NET={net}", f"active RDMA ports: none ({ports})"], subject="NCCL_NET",
                              data={"NCCL_NET": net})
    elif net is not None and name.lower() != "socket":
        plugin = env.get("NCCL_NET_PLUGIN")
        yield ctx.finding([f"NCCL_NET={net}: not one of NCCL's own networks ({', '.join(BUILTIN_NETS)})",
                           f"NCCL_NET_PLUGIN={plugin}: that plugin must provide a network named {name!r}" if plugin
                           else "NCCL_NET_PLUGIN unset: only a libnccl-net.so on the loader's path can provide it",
                           "if none does, communicator init fails: 'Failed to initialize any NET plugin'"],
                          subject="NCCL_NET", severity="warning", data={"NCCL_NET": net, "NCCL_NET_PLUGIN": plugin})
    if hca and topo is not None:
        devices = sorted({p.device for p in topo.ib_ports})
        if not devices:
            return  # no RDMA device at all: NCCL uses sockets whatever NCCL_IB_HCA says
        entries = ",".join(e.split(":")[0] for e in hca.split(","))  # mlx5_0:1 -> mlx5_0 (port suffix)
        _exclude, selected, _dead = _socket_if_match(entries, devices)
        if not selected:
            mn = multi_node(env)
            yield ctx.finding([f"NCCL_IB_HCA={hca} selects no HCA; HCAs: {', '.join(devices)}",
                               "NCCL then has no RDMA device and falls back to TCP sockets"],
                              subject="NCCL_IB_HCA", severity="warning" if mn else "info",
                              data={"hcas": devices, "multi_node": mn})


LAUNCH_VARS = ("WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE", "MASTER_PORT")


def _ints(env: dict[str, str]) -> tuple[dict[str, int], list[str]]:
    """The launcher variables that are set: (parsed values, evidence lines for those that are not integers)."""
    vals: dict[str, int] = {}
    bad: list[str] = []
    for k in LAUNCH_VARS:
        if k in env:
            try:
                vals[k] = int(env[k].strip())
            except ValueError:
                bad.append(f"{k}={env[k]!r} is not an integer")
    return vals, bad


@rule("NCL010")
def launch_vars(ctx):
    """Checks the launcher variables present in the environment: integers; RANK < WORLD_SIZE; LOCAL_RANK <
    LOCAL_WORLD_SIZE <= WORLD_SIZE; MASTER_PORT in 1-65535; MASTER_ADDR not a loopback address in a multi-node job;
    LOCAL_RANK and LOCAL_WORLD_SIZE against the GPUs NVML
    sees after CUDA_VISIBLE_DEVICES (that part only when the GPU list is known)."""
    from gpudoctor.compat.versions import visible_device_count

    env = ctx.env()
    vals, ev = _ints(env)
    ws, rank, lr, lws = (vals.get(k) for k in ("WORLD_SIZE", "RANK", "LOCAL_RANK", "LOCAL_WORLD_SIZE"))
    if ws is not None and rank is not None and not 0 <= rank < ws:
        ev.append(f"RANK={rank} with WORLD_SIZE={ws}: a rank must be below the world size")
    if lws is not None and lr is not None and not 0 <= lr < lws:
        ev.append(f"LOCAL_RANK={lr} with LOCAL_WORLD_SIZE={lws}")
    if ws is not None and lws is not None and lws > ws:
        ev.append(f"LOCAL_WORLD_SIZE={lws} exceeds WORLD_SIZE={ws}")
    port = vals.get("MASTER_PORT")
    if port is not None and not 1 <= port <= 65535:
        ev.append(f"MASTER_PORT={port} is outside 1-65535")
    addr = env.get("MASTER_ADDR", "").strip().strip("[]").lower()
    if (addr in ("localhost", "::1") or addr.startswith("127.")) and multi_node(env):
        ev.append(f"MASTER_ADDR={env['MASTER_ADDR']} in a job that spans nodes: every node looks for the store on "
                  "itself, so the nodes never meet (each waits until the timeout); set MASTER_ADDR to the first "
                  "node's name (Slurm: `scontrol show hostnames $SLURM_JOB_NODELIST | head -n1`) and one MASTER_PORT")
    gpu_ev: list[str] = []  # against the visible GPUs: a warning (a script may map ranks to GPUs its own way)
    nv = ctx.snap.nvml
    if (lr is not None or lws is not None) and nv is not None and nv.available and nv.gpus:
        gpus = nv.gpus
        visible = visible_device_count(env.get("CUDA_VISIBLE_DEVICES"), len(gpus), [g.uuid for g in gpus])
        if lr is not None and visible and lr >= visible:
            gpu_ev.append(f"LOCAL_RANK={lr}, but this process sees {visible} GPU(s): torch.cuda.set_device({lr}) "
                          "fails with 'invalid device ordinal'")
        if lws is not None and visible and lws > visible:
            gpu_ev.append(f"LOCAL_WORLD_SIZE={lws} ranks on {visible} visible GPU(s): ranks would share a GPU")
    if ev or gpu_ev:
        yield ctx.finding(ev + gpu_ev, severity="error" if ev else "warning",
                          data={k: env[k] for k in LAUNCH_VARS if k in env})


# NCCL's names for NCCL_ALGO / NCCL_PROTO elements and NCCL_ALGO's per-collective prefixes (src/init.cc ncclAlgoStr,
# ncclProtoStr, ncclFuncStr, v2.12-v2.29; "CollNet" is the pre-2.14 name). From 2.24 (src/graph/tuning.cc
# parseList) an element NCCL does not know is "Unrecognized element token" and communicator init fails with
# ncclInvalidUsage on every multi-rank communicator; up to 2.23 it was silently ignored.
NCCL_LIST_ELEMS = {
    "NCCL_ALGO": ("Tree", "Ring", "CollNet", "CollNetDirect", "CollNetChain", "NVLS", "NVLSTree", "PAT"),
    "NCCL_PROTO": ("LL", "LL128", "Simple"),
}
NCCL_FUNCS = ("Broadcast", "Reduce", "AllGather", "ReduceScatter", "AllReduce")
NCCL_STRICT_LISTS = (2, 24)


def nccl_list_problems(name: str, value: str) -> list[str]:
    """What NCCL's parser (src/graph/tuning.cc parseList, 2.24+) refuses in NCCL_ALGO / NCCL_PROTO: elements it
    does not know, collective prefixes it does not know, entries after the first without a prefix. [] = valid.
    Syntax: ``elem,elem;func:elem,^elem`` (case-insensitive)."""
    elems = {e.lower() for e in NCCL_LIST_ELEMS[name]}
    funcs = {f.lower() for f in NCCL_FUNCS}
    out: list[str] = []
    for i, entry in enumerate(e for e in value.split(";") if e.strip()):
        prefix, sep, items = entry.partition(":")
        if not sep:
            prefix, items = "", entry
            if i:
                out.append(f"entry {entry!r}: every entry after the first needs a collective prefix (allreduce:...)")
        if prefix and prefix.strip().lower() not in funcs:
            out.append(f"{prefix.strip()!r} is not a collective NCCL knows ({', '.join(NCCL_FUNCS)})")
        for tok in items.strip().lstrip("^").split(","):
            if tok.strip() and tok.strip().lower() not in elems:
                what = "an algorithm" if name == "NCCL_ALGO" else "a protocol"
                out.append(f"{tok.strip()!r} is not {what} NCCL knows "
                           f"({', '.join(NCCL_LIST_ELEMS[name])})")
    return out


@rule("NCL011")
def socket_ifname_matches(ctx):
    """NCCL_SOCKET_IFNAME (the environment, or NCCL's 'set by environment' line) against the interfaces the NCCL log
    says it selected ('Bootstrap : Using ...', 'NET/Socket : Using [0]bond0:... [1]bond0.2973:...'): a value without
    '=' is a prefix (NCCL env docs), so 'bond0' also takes bond0.2973 and bond0:1 (VLANs, aliases, link-local only
    sub-interfaces); a 'Bootstrap : Using' line naming nothing means the value matched no interface (NCCL 2.27 goes
    on with an empty address, nccl#1837)."""
    if not ctx.snap.inputs:
        raise NotApplicable("a live scan reads no NCCL log: pass one to `gpudoctor check`")
    logs = ctx.snap.logs
    nccl = logs.nccl if logs is not None else None
    if nccl is None or not (nccl.socket_interfaces or nccl.bootstrap_no_interface):
        raise NotAssessed("no 'Bootstrap : Using' / 'NET/Socket : Using' line of an NCCL_DEBUG=INFO log in the inputs")
    env = ctx.snap.env.variables if ctx.snap.env is not None else {}
    value = (env.get("NCCL_SOCKET_IFNAME") or nccl.env_set.get("NCCL_SOCKET_IFNAME") or "").strip()
    if not value:
        raise NotAssessed("NCCL_SOCKET_IFNAME is not set in the inputs (NCCL chose the interfaces itself)")
    if nccl.bootstrap_no_interface and not nccl.socket_interfaces:
        yield ctx.finding([f"NCCL_SOCKET_IFNAME={value}", "'Bootstrap : Using' names no interface: the value "
                           "matched none of this host's interfaces, so NCCL had no address to give its peers"],
                          severity="error", title=f"NCCL_SOCKET_IFNAME={value} matches no interface of this host",
                          remedy="Set NCCL_SOCKET_IFNAME to an interface this host has (`ip -br addr`; a comma "
                          "list or a prefix that exists on every node, or per node in /etc/nccl.conf), or unset it.",
                          data={"value": value, "interfaces": []})
        return
    if value.startswith(("^", "=")):
        return  # an exclusion list or an exact match: what it selects is what was asked
    prefixes = [p.strip() for p in value.split(",") if p.strip()]
    extra = [i for i in nccl.socket_interfaces if i not in prefixes and any(i.startswith(p) for p in prefixes)]
    if extra:
        failed = sorted({h.id for h in logs.signatures if h.id in SOCKET_FAILURES})
        yield ctx.finding([f"NCCL_SOCKET_IFNAME={value}: NCCL selected {', '.join(nccl.socket_interfaces)}",
                           f"{', '.join(extra)} only start with the name: NCCL reads the value as a prefix, so its "
                           "connections can go over these (VLAN / alias / link-local only) interfaces too"]
                          + ([f"socket connections failed in the same log ({', '.join(failed)}): over one of the "
                              "extra interfaces, likeliest"] if failed else []),
                          severity="error" if failed else "warning",
                          title=f"NCCL_SOCKET_IFNAME={value} is a prefix: NCCL also selected {', '.join(extra[:3])}",
                          remedy=f"Ask for the interface exactly: NCCL_SOCKET_IFNAME=={prefixes[0]} (two '='), or "
                          f"exclude the others (NCCL_SOCKET_IFNAME=^{extra[0]}).",
                          data={"value": value, "interfaces": nccl.socket_interfaces, "extra": extra})


@rule("NCL012")
def virtual_socket_interfaces(ctx):
    """The interfaces NCCL picked by itself (NCCL_SOCKET_IFNAME unset: 'Bootstrap : Using' / 'NET/Socket : Using')
    that other nodes cannot reach: container bridges, veth pairs and tunnel devices (rules/nccl_env.toml
    virtual_interfaces, whole names), and any interface whose address there is link-local (fe80::, 169.254.x.x).
    NCCL's automatic choice (src/misc/socket.cc ncclFindInterfaces, every release since 2.4) prefers ib*, then takes
    every interface except docker*, lo and virbr*, so these come beside the real NIC, and in the order the kernel lists
    them: the first one is what NCCL advertises."""
    if not ctx.snap.inputs:
        raise NotApplicable("a live scan reads no NCCL log: pass one to `gpudoctor check`")
    logs = ctx.snap.logs
    nccl = logs.nccl if logs is not None else None
    if nccl is None or not nccl.socket_interfaces:
        raise NotAssessed("no 'Bootstrap : Using' / 'NET/Socket : Using' line of an NCCL_DEBUG=INFO log in the inputs")
    env = ctx.snap.env.variables if ctx.snap.env is not None else {}
    value = (env.get("NCCL_SOCKET_IFNAME") or nccl.env_set.get("NCCL_SOCKET_IFNAME") or "").strip()
    if len(value) > 1 and not value.startswith("^"):  # NCCL reads a value of two characters or more (socket.cc)
        raise NotApplicable(f"NCCL_SOCKET_IFNAME={value}: the interfaces were chosen by the user (NCL011)")
    # (an exclusion list, ^lo,docker, still lets NCCL take every other interface: they are judged as NCCL's own pick)
    names = [re.compile(p) for p in data.load("nccl_env").get("virtual_interfaces", ())]
    why = {}
    for i in nccl.socket_interfaces:
        addr = nccl.socket_addresses.get(i, "")
        if any(p.fullmatch(i) for p in names):
            why[i] = "a container bridge / virtual or tunnel interface"
        elif addr.lower().startswith("fe80:") or addr.startswith("169.254."):
            why[i] = f"only a link-local address ({addr.split('%')[0]})"
    if not why:
        return
    real = [i for i in nccl.socket_interfaces if i not in why]
    failed = sorted({h.id for h in logs.signatures if h.id in SOCKET_FAILURES})
    listed = [f"{i}:{nccl.socket_addresses[i]}" if nccl.socket_addresses.get(i) else i
              for i in nccl.socket_interfaces[:6]]
    how = f"beside NCCL_SOCKET_IFNAME={value}" if value else "by itself"
    ev = [f"NCCL selected {len(nccl.socket_interfaces)} interface(s) {how}: {', '.join(listed)}"
          + (" ..." if len(nccl.socket_interfaces) > 6 else "")]
    ev += [f"{i}: {w}, which other nodes cannot reach" for i, w in list(why.items())[:4]]
    if len(why) > 4:
        ev.append(f"and {len(why) - 4} more such interface(s)")
    if nccl.socket_interfaces[0] in why:
        ev.append(f"{nccl.socket_interfaces[0]} comes first: it is the address NCCL gives its peers")
    if failed:
        ev.append(f"socket connections failed in the same log ({', '.join(failed)}): over one of these, likeliest")
    one_node = nccl.nnodes == 1 or multi_node(env) is False
    if one_node and not failed:
        ev.append("the job runs on one node (NCCL's nNodes 1 / the launcher's variables): harmless there; a "
                  "multi-node run from this host would advertise these addresses")
    exclude = sorted({_name_prefix(i) for i in why} | {"docker", "lo"})
    remedy = (f"Name the interface that reaches the other nodes: NCCL_SOCKET_IFNAME=={real[0]} (two '=': exactly "
              "that one)" if real else
              "Set NCCL_SOCKET_IFNAME to the interface that routes between the nodes (`ip -br addr`, `ip route get "
              "<other node's IP>`)")
    remedy += f", or exclude the others: NCCL_SOCKET_IFNAME=^{','.join(exclude)}; set it on every node."
    yield ctx.finding(ev, severity="error" if failed else "info" if one_node else "warning",
                      subject="NCCL_SOCKET_IFNAME", remedy=remedy,
                      data={"interfaces": nccl.socket_interfaces, "virtual": list(why), "failures": failed})


def _name_prefix(name: str) -> str:
    """The letters an interface name starts with, for an NCCL_SOCKET_IFNAME=^ list: br-05ab.. -> 'br-', veth6163fba
    -> 'veth', ip6tnl0 -> 'ip6tnl'."""
    m = re.match(r"[A-Za-z_]+(?:6[A-Za-z_]+)?-?", name)
    return m.group(0) if m else name


@rule("NCL013")
def integer_values(ctx):
    """NCCL_* variables NCCL reads as an int64 (NCCL_PARAM; rules/nccl_env_names.toml ``integer``, generated from the
    sources) whose value is not an integer: ncclLoadParam (src/misc/param.cc) calls strtoll(value, NULL, 0) and keeps
    what it read up to the first other character, without a warning: NCCL_BUFFSIZE=8M is 8 bytes, NCCL_IB_DISABLE=true
    is 0 (IB enabled), NCCL_IB_GID_INDEX=08 is 0 (a leading 0 is octal)."""
    env = ctx.env()
    integers = nccl_integers()
    sizes = data.load("nccl_env").get("byte_sizes", {})
    logged = ctx.snap.logs.nccl.env_set if ctx.snap.logs is not None and ctx.snap.logs.nccl is not None else {}
    for name in sorted(n for n in env if n in integers):
        value = env[name]
        read = misread(value)
        if read is not None and name in logged and logged[name] != value and misread(logged[name]) is None:
            continue  # NCCL's own line shows the number it used (another run than the environment dump's)
        if read is None and name in sizes and 0 < _int(value) < 1024:
            default = f"NCCL's default is {sizes[name]} bytes" if sizes[name] else "NCCL sizes it by protocol"
            yield ctx.finding([f"{name}={value}: {_int(value)} bytes ({default}); a size written with a unit (8M, "
                               "4MB) reaches NCCL as its digits only: strtoll stops at the letter"],
                              subject=name, title=f"{name}={value}: only {_int(value)} bytes",
                              remedy=f"Give {name} in bytes (8 MiB = 8388608), or unset it to keep NCCL's default.",
                              data={"value": value, "read": _int(value)})
            continue
        if read is None:
            continue
        octal = " (a leading 0 is octal)" if _octal(value) else ""
        yield ctx.finding([f"{name}={value}: NCCL parses it with strtoll(value, NULL, 0) and reads {read}{octal}"],
                          subject=name, title=f"{name}={value} is read by NCCL as {read}",
                          remedy=f"Give {name} a plain integer in the unit NCCL documents for it (bytes, a count, "
                                 f"0 / 1 for a switch), without suffixes or words: {_suggest(name, value, sizes)}",
                          data={"value": value, "read": read})


def misread(value: str) -> int | None:
    """The number NCCL uses for ``value`` when that is not the number written (a suffix, a word, an exponent, a
    decimal with a leading 0), else None (a plain integer, 0x hexadecimal, or empty: NCCL then keeps its default)."""
    if not value.strip():
        return None
    read, rest = strtoll(value)
    if read is None or rest:
        return read or 0
    v = value.strip().lstrip("+-")
    if _octal(value) and v.isdigit() and int(v, 10) != abs(read):
        return read  # (010 is 8; 00 and 07 are what they say)
    return None


def strtoll(text: str) -> tuple[int | None, str]:
    """C's strtoll(text, &end, 0) as NCCL uses it: (the value read, or None when no digit was read; the text left
    after it, stripped). Base 0: '0x' / '0X' hexadecimal, a leading '0' octal, otherwise decimal."""
    t = text.lstrip()
    sign = -1 if t[:1] == "-" else 1
    t = t[1:] if t[:1] in "+-" else t
    if t[:2].lower() == "0x" and t[2:3] and t[2:3] in "0123456789abcdefABCDEF":
        base, t = 16, t[2:]
    elif t[:1] == "0":
        base = 8
    else:
        base = 10
    digits = "0123456789abcdef"[:base]
    n = 0
    while n < len(t) and t[n].lower() in digits:
        n += 1
    if n == 0:
        return None, text.strip()
    return sign * int(t[:n], base), t[n:].strip()


def _int(value: str) -> int:
    """The integer NCCL reads from ``value`` (0 without digits)."""
    return strtoll(value)[0] or 0


def _octal(value: str) -> bool:
    v = value.strip().lstrip("+-")
    return len(v) > 1 and v[0] == "0" and v[1:2].lower() != "x"


_UNITS = {"k": 1 << 10, "m": 1 << 20, "g": 1 << 30}


def nccl_integers() -> set[str]:
    """The NCCL_* variables NCCL parses as integers: NCCL_PARAM's (rules/nccl_env_names.toml) and those it reads with
    strtol itself (rules/nccl_env.toml strtol_read)."""
    return set(data.load("nccl_env_names").get("integer", ())) | set(data.load("nccl_env").get("strtol_read", ()))


def _suggest(name: str, value: str, sizes: dict) -> str:
    """The value the user likely meant: 8M -> 8388608 (a byte size of ``sizes`` only), true -> 1, 08 -> 8."""
    v = value.strip()
    low = v.lower()
    if low in ("true", "yes", "on", "enable", "enabled"):
        return f"{name}=1"
    if low in ("false", "no", "off", "disable", "disabled"):
        return f"{name}=0"
    num = v.rstrip("bB").rstrip("iI")
    if name in sizes and num[:-1].isdigit() and num[-1:].lower() in _UNITS:
        return f"{name}={int(num[:-1]) * _UNITS[num[-1].lower()]}"
    if v.isdigit():
        return f"{name}={int(v)}"
    try:
        exact = float(v)
    except ValueError:
        return f"{name}=<integer>"
    return f"{name}={int(exact)}" if exact.is_integer() else f"{name}=<integer>"
