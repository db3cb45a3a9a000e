"""Files a user names (recipes, vars, spaces, workloads, prompt sets, logs to parse), read only when they are regular
files under a size cap: `--vars /dev/zero` grew orch to 24 GB, and a FIFO blocked for ever. The refusals are
OSErrors whose strerror says why, so every reader's existing "cannot be read (...)" line names them."""

from __future__ import annotations

import errno
import os
import stat
import tomllib
from dataclasses import dataclass
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


@dataclass(frozen=True)
class Named:
    """A user's file as its refusals name it: `{what} {path} ...; {give}`, raised as `error` (the caller's OrchError:
    this floor imports none). missing: what to say where it does not exist (None: nothing more)."""

    what: str
    give: str
    error: type[Exception]
    missing: str | None = None


def read_named_text(path: Path | str, named: Named, cap: int | None = None) -> str:
    """read_text, every refusal one line of named.error naming the file and the fix."""

    def refuse(why: str, hint: str | None) -> Exception:
        return named.error(f"{named.what} {path} {why}" + (f"; {hint}" if hint else ""))

    try:
        return read_text(path, cap)
    except FileNotFoundError:
        raise refuse("does not exist", named.missing) from None
    except IsADirectoryError:
        raise refuse("is a directory", named.give) from None
    except UnicodeDecodeError:
        raise refuse("is not text (not UTF-8)", named.give) from None
    except OSError as exc:
        raise refuse(f"cannot be read ({exc.strerror or exc})", named.give) from None


def read_named_toml(path: Path | str, named: Named) -> dict:
    """read_named_text as TOML; TOML that does not read (a syntax error, an integer of over 4,300 digits, nesting
    deeper than Python's stack) is one line too."""
    text = read_named_text(path, named)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise named.error(f"{named.what} {path} is not valid TOML: {exc}") from None
    except ValueError:  # an integer of over 4300 digits
        raise named.error(f"{named.what} {path} holds a number too long to read; give a smaller one") from None
    except RecursionError:
        raise named.error(f"{named.what} {path} nests tables or arrays too deep to read; {named.give}") from None
