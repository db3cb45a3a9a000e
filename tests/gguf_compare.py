"""What gguf's own GGUFReader reads from a file, beside what orch's header reader reads (unit and integration tests)."""

import hashlib

import gguf
import pytest

from orchestrator.models.gguf_read import DECODE_LIMIT, ArraySpan, read_header

V = gguf.GGUFValueType


def reader_view(path):
    """What GGUFReader reads: scalars and strings as values, arrays as (count, sha256 of the element bytes) and,
    when flat, their values; tensors as (name, type, shape, offset from the data section)."""
    reader = gguf.GGUFReader(path, "r")
    values, arrays = {}, {}
    for name, field in reader.fields.items():
        if name.startswith("GGUF."):
            continue
        if field.types[0] == V.ARRAY:
            raw = b"".join(part.tobytes() for part in field.parts[5:])  # after key, type, element type, count
            arrays[name] = (int(field.parts[4][0]), hashlib.sha256(raw).hexdigest())
            if len(field.types) == 2:  # gguf flattens nested arrays: compare those by bytes only
                values[name] = field.contents()
        else:
            values[name] = field.contents()
    tensors = [
        (t.name, int(t.tensor_type), tuple(int(d) for d in t.shape), t.data_offset - reader.data_offset)
        for t in reader.tensors
    ]
    return values, arrays, tensors


def assert_agrees_with_gguf(path):
    head = read_header(path)
    values, arrays, tensors = reader_view(path)
    assert {k: (s.count, s.sha256) for k, s in head.arrays.items()} == arrays
    for key, value in values.items():
        ours = head.fields[key]
        if isinstance(ours, ArraySpan):
            assert ours.count > DECODE_LIMIT and len(value) == ours.count, key
        else:
            assert ours == pytest.approx(value) if isinstance(value, float) else ours == value, key
    assert [(t.name, t.type_id, t.shape, t.offset) for t in head.tensors] == tensors
    return head
