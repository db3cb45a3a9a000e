"""A full disk told apart from other errors however it is wrapped (DuckDB's words, a ROLLBACK's error after it)."""

import errno

from orchestrator import disk


def test_no_space_is_found_through_the_chain_and_named_with_its_file():
    wal = RuntimeError('Failed to commit: Could not write file "/data/r.duckdb.wal": No space left on device')
    try:
        try:
            raise wal
        except RuntimeError:
            raise RuntimeError("cannot rollback - no transaction is active") from None
    except RuntimeError as masked:
        masked.__context__ = wal  # what `except: ROLLBACK; raise` leaves when the ROLLBACK fails too
        assert disk.no_space(masked) is wal
    assert disk.no_space(OSError(errno.EDQUOT, "Disk quota exceeded")) is not None
    assert disk.no_space(OSError(errno.EACCES, "Permission denied")) is None
    assert disk.no_space(RuntimeError("no such table: runs")) is None
    line = str(disk.full(wal))
    assert line.startswith("no space left on the file system of /data/r.duckdb.wal (") and " free of " in line
