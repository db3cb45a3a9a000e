"""NVML through `pynvml`, initialised at most once per process, and "no GPU" at no cost when it is absent.

Every reader of GPU state (telemetry, envinfo, roofline, memfit) goes through here, so a machine
without a driver pays for one failed nvmlInit (well under a millisecond) and never again.
nvmlShutdown is never called: NVML counts inits, and a sampler thread may still be reading.
"""

from __future__ import annotations

import threading
from typing import Any

_lock = threading.Lock()
_state: dict[str, Any] = {"tried": False, "ok": False, "handles": []}


def available() -> bool:
    """True when NVML initialised and sees at least one GPU; the first call does the work."""
    with _lock:
        if not _state["tried"]:
            _state["tried"] = True
            _state["ok"], _state["handles"] = _init()
    return _state["ok"]


def handles() -> list[tuple[int, Any]]:
    """(index, handle) for every visible GPU; [] without NVML."""
    return list(_state["handles"]) if available() else []


def handle(index: int) -> Any | None:
    return dict(handles()).get(index)


def call(name: str, *args: Any) -> Any:
    """pynvml.<name>(*args), or None when NVML is absent or the query is unsupported on this GPU."""
    if not available():
        return None
    import pynvml

    try:
        return text(getattr(pynvml, name)(*args))
    except (pynvml.NVMLError, AttributeError):
        # AttributeError: an older nvidia-ml-py without this function.
        return None


def text(value: Any) -> Any:
    """Old nvidia-ml-py versions return bytes for names and versions."""
    return value.decode() if isinstance(value, bytes) else value


def reset() -> None:
    """Forget the cached state (tests only: the next call tries nvmlInit again)."""
    with _lock:
        _state.update(tried=False, ok=False, handles=[])


def _init() -> tuple[bool, list[tuple[int, Any]]]:
    try:
        import pynvml

        pynvml.nvmlInit()
        found = [(i, pynvml.nvmlDeviceGetHandleByIndex(i)) for i in range(pynvml.nvmlDeviceGetCount())]
    except Exception:  # no library, no driver, driver/library mismatch: all mean "no GPU"
        return False, []
    return bool(found), found
