"""Terminal view of the GPU self-test (issue 16): per GPU the GEMM and device-copy figures and what NVML
showed while they ran. Rendering only; the PRF rules judge."""
from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from gpudoctor.facts.perf import SelfTestFacts, explain


def render_selftest(st: SelfTestFacts, console: Console) -> None:
    """Print the self-test's figures (TFLOP/s, GB/s = 1e9 B/s, MHz, W, °C) and each GPU's reason."""
    head = f"[bold]GPU self-test[/] · {st.status}" + (f" · {st.seconds:.1f} s" if st.seconds else "")
    console.print(head, highlight=False)
    if st.reason:
        console.print(f"  {escape(st.reason)}", highlight=False)
    if not st.gpus:
        return
    t = Table(title="GEMM 8192^3 and device copy (bytes read + written), medians", title_justify="left",
              show_edge=False)
    for col in ("GPU", "name", "GEMM TFLOP/s", "dtype", "copy GB/s", "SM MHz (max)", "power W (limit)", "max °C",
                "why"):
        t.add_column(col, justify="right" if col in ("GEMM TFLOP/s", "copy GB/s") else "left")
    for g in st.gpus:
        s = g.samples
        t.add_row(str(g.index), escape(g.name or "?"), f"{g.gemm_tflops:.1f}" if g.gemm_tflops else "-",
                  g.gemm_dtype or "-", f"{g.d2d_gbs:.0f}" if g.d2d_gbs else "-",
                  f"{s.sm_mhz_median:.0f} ({s.max_sm_mhz or 0:.0f})" if s and s.sm_mhz_median else "-",
                  f"{s.power_w_median:.0f} ({s.power_limit_w:.0f})" if s and s.power_w_median and s.power_limit_w
                  else "-", f"{s.temp_c_max:.0f}" if s and s.temp_c_max is not None else "-",
                  escape(g.error or explain(g)[1]))
    console.print(t)
