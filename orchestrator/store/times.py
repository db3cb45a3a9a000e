"""Timestamps as every TIMESTAMP column stores them: naive UTC (TIMESTAMPTZ would need pytz in every Python client
reading the file)."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    return datetime.now(UTC).replace(tzinfo=None)


def utc_from_epoch(seconds: float) -> datetime:
    return datetime.fromtimestamp(seconds, UTC).replace(tzinfo=None)


def utc(value):
    """An ISO string or aware datetime as naive UTC, the way every timestamp column stores it."""
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    if isinstance(value, datetime) and value.tzinfo is not None:
        value = value.astimezone(UTC).replace(tzinfo=None)
    return value
