"""Rules whose facts a text dump lacks say 'not assessed', never pass."""
from gpudoctor.parsers.offline import build_snapshot
from gpudoctor.rules import evaluate


def _status(fix, *files):
    snap, errors = build_snapshot([str(fix / f) for f in files])
    assert not errors
    rep = evaluate(snap)
    return {o.rule_id: o.status for o in rep.outcomes}, rep


def test_table_only(fix):
    st, _ = _status(fix, "h200-text/nvidia-smi.txt")
    # the table has no slowdown threshold, default power limit, clock reasons, PCIe or remapped rows
    for rid in ("GPU001", "GPU002", "GPU003", "GPU005", "PCI001", "PCI002"):
        assert st[rid] == "not_assessed", rid
    for rid in ("GPU004", "GPU006", "GPU007", "GPU008", "GPU009"):
        assert st[rid] == "pass", rid
    assert st["TRC001"] == "not_assessed" and st["HST003"] == "not_assessed"


def test_query_gives_more(fix):
    st, _ = _status(fix, "h200-text/nvidia-smi-q-busy.txt")
    for rid in ("GPU002", "GPU003", "GPU005", "PCI001", "PCI002"):
        assert st[rid] == "pass", rid
    assert st["GPU001"] == "not_assessed"  # new -q shows only T.Limit margins, not the slowdown temperature


def test_collect_env_gpus_without_nvml_details(fix):
    st, rep = _status(fix, "h200-text/collect_env.txt")
    assert st["DRV001"] == "pass" and st["TRC002"] == "pass"
    # TRC004 reads the compute capability from the model name (H200: 9.0, gpudoctor's GPU table) like CMP004
    assert st["TRC004"] == "pass" and st["TRC005"] == "not_assessed" and st["GPU008"] == "not_assessed"
    assert rep.snapshot.known_fields["nvml.gpus"] == ["index", "name"]


def test_df_without_devshm_and_remapped_rows_excerpt(fix, tmp_path):
    p = tmp_path / "df.txt"
    p.write_text("Filesystem      Size  Used Avail Use% Mounted on\n/dev/vda1        97G   40G   57G  42% /\n")
    snap, _ = build_snapshot([str(p)])
    st = {o.rule_id: o.status for o in evaluate(snap).outcomes}
    assert st["HST003"] == "not_assessed"
    st, rep = _status(fix, "corpus/raw/smi-q/005-remapped-rows-pending-snippet.txt")
    assert "GPU005" in {f.rule_id for f in rep.findings} and st["GPU004"] == "not_assessed"


def test_env_from_nccl_log_is_partial(fix):
    st, rep = _status(fix, "corpus/017-a100-nvswitch-0-nvls-and-p2p-level-loc/env.txt")
    assert st["NCL005"] == "fail" and st["NCL006"] == "not_assessed" and st["NCL001"] == "not_assessed"


def test_full_env_dump_is_complete(tmp_path):
    p = tmp_path / "env.txt"
    p.write_text("PATH=/usr/bin\nHOME=/root\nNCCL_DEBUG=INFO\nCUDA_LAUNCH_BLOCKING=1\nHF_TOKEN=hf_abcdefghijklmnopqrstuvwxyz\n")
    snap, _ = build_snapshot([str(p)])
    rep = evaluate(snap)
    st = {o.rule_id: o.status for o in rep.outcomes}
    assert st["NCL006"] == "fail" and st["NCL001"] == "pass"
    assert "HF_TOKEN" not in snap.env.variables and "PATH" not in snap.env.variables


def test_devshm_small_fires(fix):
    st, rep = _status(fix, "h200-errors/devshm-1m-dataloader.txt")
    assert st["HST003"] == "fail"
    st, _ = _status(fix, "h200-text/devshm.txt")
    assert st["HST003"] == "pass"
