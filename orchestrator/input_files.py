"""Files a user names (recipes, vars, spaces, workloads, prompt sets, logs to parse), read only when they are regular
files under a size cap: `--vars /dev/zero` grew orch to 24 GB, and a FIFO blocked for ever. The refusals are
OSErrors whose strerror says why, so every reader's existing "cannot be read (...)" line names them."""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

TEXT_CAP = 16 << 20  # a recipe, vars file, tune space, workload or prompt set: far above any real one
LOG_CAP = 256 << 20  # a llama.cpp log given to `orch parse`


def read_bytes(path: Path | str, cap: int | None = None) -> bytes:
    """The file's bytes; FileNotFoundError, IsADirectoryError, or an OSError saying it is no regular file or is
    larger than cap (checked before reading, and the read itself stops at cap)."""
    cap = TEXT_CAP if cap is None else cap
    mode = os.stat(path).st_mode
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(errno.EISDIR, "is a directory", str(path))
    if not stat.S_ISREG(mode):
        raise OSError(errno.EINVAL, "not a regular file but a FIFO, a device or a socket", str(path))
    with open(path, "rb") as f:
        data = f.read(cap + 1)
    if len(data) > cap:
        size = f"{cap >> 20} MiB" if cap >= 1 << 20 else f"{cap} bytes"
        raise OSError(errno.EFBIG, f"larger than {size}, more than orch reads from such a file", str(path))
    return data


def read_text(path: Path | str, cap: int | None = None) -> str:
    """The file as UTF-8 text (UnicodeDecodeError when it is not), under the same checks as read_bytes."""
    return read_bytes(path, cap).decode("utf-8")
