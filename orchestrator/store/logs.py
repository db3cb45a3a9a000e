"""A run's raw logs in the results file: one gzipped row per stream (stdout, stderr, a server's logs)."""

from __future__ import annotations

import gzip
import zlib
from collections import deque

import duckdb

from orchestrator.errors import StoredLogDamaged

MAX_LOG_BYTES = 256 << 20  # one stream read back whole: far above any run's log
CHUNK = 1 << 20


def save_logs(con: duckdb.DuckDBPyConnection, run_id: int, logs: dict[str, bytes]) -> None:
    for stream, data in logs.items():
        con.execute(
            "INSERT OR REPLACE INTO run_logs VALUES (?, ?, ?, ?)",
            [run_id, stream, len(data), gzip.compress(data, compresslevel=6)],
        )


def unpacked(gz, size: int | None, cap: int = MAX_LOG_BYTES, *, keep: bool = True, tail: int | None = None) -> bytes:
    """A stored stream's bytes, decompressed in pieces and never past its stated size or the cap: a row is data (an
    import may have brought it), so 200 KB of gzip saying 5 bytes stops at byte 6, not at 200 MB. ValueError saying
    what is wrong: not gzip, truncated, another size than size_bytes, or larger than the cap. keep=False: checked
    only (b"" returned, nothing held); tail: only the last `tail` bytes held and returned (the whole checked)."""
    limit = cap if size is None else min(size, cap)
    d = zlib.decompressobj(16 + zlib.MAX_WBITS)
    out, total, held, data = deque(), 0, 0, bytes(gz or b"")
    try:
        while data and not d.eof:
            piece = d.decompress(data, CHUNK)
            total += len(piece)
            if total > limit:
                break
            if keep:
                out.append(piece)
                held += len(piece)
                while tail is not None and out and held - len(out[0]) >= tail:  # pieces wholly before the tail
                    held -= len(out.popleft())
            data = d.unconsumed_tail
        if total <= limit and d.eof:
            whole = b"".join(out)
            return _sized(whole if tail is None else whole[-tail:] if tail else b"", total, size)
    except zlib.error as exc:
        raise ValueError(f"not gzip data ({exc})") from None
    if total > limit:
        raise ValueError(f"it decompresses to more than {'its stated ' if limit == size else 'the '}{limit:,} bytes")
    raise ValueError("a truncated gzip stream")


def _sized(data: bytes, total: int, size: int | None) -> bytes:
    if size is not None and total != size:
        raise ValueError(f"{total:,} bytes where its size_bytes says {size:,}")
    return data


def read_logs(
    con: duckdb.DuckDBPyConnection, run_id: int, *, damaged_as_note: bool = False, tail: int | None = None
) -> dict[str, str]:
    """A run's logs as text (tail: each stream's last `tail` bytes); StoredLogDamaged for a row that does not unpack
    (with damaged_as_note, that stream reads as one line saying why: `orch show` shows the rest of the run)."""
    out = {}
    for stream, data in _log_rows(con, run_id, raising=not damaged_as_note, tail=tail).items():
        out[stream] = data.decode(errors="replace") if isinstance(data, bytes) else f"[orch: {data}]"
    return out


def stdout_text(con: duckdb.DuckDBPyConnection, run_id: int) -> str | None:
    """A run's stdout as text; None when its stored row does not unpack (nothing to compare it by)."""
    data = _log_rows(con, run_id, raising=False).get("stdout", b"")
    return data.decode(errors="replace") if isinstance(data, bytes) else None


def stored_logs(con: duckdb.DuckDBPyConnection, run_id: int) -> dict[str, bytes]:
    """A run's raw logs by stream name (stdout, stderr, server_tail), exactly as captured, in stream order;
    StoredLogDamaged for a row that does not unpack."""
    return _log_rows(con, run_id, raising=True)


def log_sizes(con: duckdb.DuckDBPyConnection, run_id: int) -> dict[str, int]:
    """Each stored stream's size in bytes, as stored (size_bytes)."""
    return dict(
        con.execute("SELECT stream, size_bytes FROM run_logs WHERE run_id = ? ORDER BY stream", [run_id]).fetchall()
    )


def _log_rows(
    con: duckdb.DuckDBPyConnection, run_id: int, *, raising: bool, tail: int | None = None
) -> dict[str, bytes | str]:
    """stream -> its bytes, or (not raising) why it cannot be read."""
    out: dict[str, bytes | str] = {}
    for stream, size, gz in con.execute(
        "SELECT stream, size_bytes, gz FROM run_logs WHERE run_id = ? ORDER BY stream", [run_id]
    ).fetchall():
        try:
            out[stream] = unpacked(gz, size, tail=tail)
        except ValueError as exc:
            why = f"run {run_id}'s stored {stream} log cannot be read: {exc}"
            if raising:
                raise StoredLogDamaged(
                    f"{why}; the row is damaged (an import or a hand edit): the run's figures stay as stored"
                ) from None
            out[stream] = why
    return out
