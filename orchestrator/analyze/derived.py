"""Figures derived from stored measurements, defined once: every table, message and plot uses these.

The decode roofline: memory bandwidth / bytes read per decode step = the tok/s plain decoding cannot beat
(machine/roofline says where the bandwidth comes from). A speculative arm verifies several tokens per target
pass, so its share can pass 100%: that excess is the speculation's gain, not a measuring error.
"""

from __future__ import annotations


def decode_bound_tps(bandwidth_bytes_per_s: float | None, decode_bytes: int | None) -> float | None:
    """The roofline decode speed in tok/s; None when either side is unknown."""
    if not bandwidth_bytes_per_s or not decode_bytes:
        return None
    return bandwidth_bytes_per_s / decode_bytes


def roofline_pct(measured_tps: float | None, bound_tps: float | None) -> float | None:
    """measured / bound in percent; None when either side is unknown."""
    if measured_tps is None or not bound_tps:
        return None
    return 100.0 * measured_tps / bound_tps
