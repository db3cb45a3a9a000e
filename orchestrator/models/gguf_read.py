"""A GGUF header reader that decodes only what orch looks at.

gguf's GGUFReader makes numpy views for every array element: a 32k-token vocabulary takes seconds, a 150k
one far longer. Here a long array stays an `ArraySpan` (its element type, count, byte range and the sha256 of
those bytes): a vocabulary costs one walk over its length prefixes and one hash, no Python string per token.

Layout (versions 2 and 3, either byte order): "GGUF", u32 version, u64 tensor count, u64 KV count; each KV is a
string key, a u32 value type and the value; then per tensor a string name, u32 dimension count, u64 dimensions,
u32 ggml type and u64 data offset. A string is a u64 byte length and UTF-8; an array a u32 element type, a u64
count and the elements (arrays may nest).
"""

from __future__ import annotations

import hashlib
import math
import mmap
import os
import struct
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

MAGIC = b"GGUF"
SUPPORTED_VERSIONS = (2, 3)  # as gguf's reader: version 1 used 32-bit counts and is long gone
STRING, ARRAY = 8, 9
MAX_ARRAY_DEPTH = 16  # arrays within arrays: llama.cpp's own files hold none nested
SCALAR_FORMATS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
DECODE_LIMIT = 1024  # arrays up to this many elements are decoded into lists (per-layer values, small tags)


class GGUFFormatError(ValueError):
    """The bytes are not a GGUF header this reader understands; the message says where and why."""


@dataclass(frozen=True)
class ArraySpan:
    """An array value by position: its elements are the bytes [start, end) of the file."""

    item_type: int
    count: int
    start: int
    end: int
    sha256: str | None  # of those bytes; None when read with hash_arrays=False


@dataclass(frozen=True)
class TensorEntry:
    name: str
    type_id: int
    shape: tuple[int, ...]
    offset: int  # from the start of the data section

    @property
    def n_elements(self) -> int:
        return math.prod(self.shape)


@dataclass
class Header:
    version: int
    byte_order: str  # "<" or ">"
    # Scalars as Python values, strings as str, arrays of at most DECODE_LIMIT elements as lists,
    # longer arrays as their ArraySpan.
    fields: dict[str, Any] = field(default_factory=dict)
    arrays: dict[str, ArraySpan] = field(default_factory=dict)  # every top-level array, decoded or not
    tensors: list[TensorEntry] = field(default_factory=list)


def read_header(path: str | Path, *, hash_arrays: bool = True) -> Header:
    """Parse path's metadata and tensor table; GGUFFormatError when it is not a (whole) GGUF header."""
    with _mapped(path) as buf:
        return _Parser(buf, hash_arrays).header()


@contextmanager
def raw_strings(path: str | Path, span: ArraySpan) -> Iterator[RawStrings]:
    """`with raw_strings(path, span) as items:` an array of strings as undecoded bytes, by index."""
    with _mapped(path) as buf:
        unpack = struct.Struct(_byte_order(buf) + "Q").unpack_from
        offsets, pos = [], span.start
        for _ in range(span.count):
            offsets.append(pos)
            pos += 8 + unpack(buf, pos)[0]
        offsets.append(pos)
        yield RawStrings(buf, offsets)


@dataclass
class RawStrings:
    buf: mmap.mmap
    offsets: list[int]  # of each element's length prefix, then the end of the array

    def __len__(self) -> int:
        return len(self.offsets) - 1

    def item(self, i: int) -> bytes:
        return self.buf[self.offsets[i] + 8 : self.offsets[i + 1]]

    def block(self, i: int, j: int) -> bytes:
        """Elements i..j-1 with their length prefixes: equal blocks hold equal strings."""
        return self.buf[self.offsets[i] : self.offsets[j]]


def _mapped(path: str | Path) -> mmap.mmap:
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        if size < 24:
            raise GGUFFormatError(f"{size} bytes, too short for a GGUF header")
        return mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)  # stays valid after the file is closed


def _byte_order(buf) -> str:
    if buf[:4] != MAGIC:
        raise GGUFFormatError(f"no GGUF magic (the file starts with {bytes(buf[:4])!r})")
    # A file written on the other byte order reads as version << 16 here.
    return ">" if struct.unpack_from("<I", buf, 4)[0] & 0xFFFF == 0 else "<"


class _Parser:
    def __init__(self, buf, hash_arrays: bool):
        self.buf, self.hash_arrays, self.size = buf, hash_arrays, len(buf)
        self.order = _byte_order(buf)
        self.scalars = {t: struct.Struct(self.order + fmt) for t, fmt in SCALAR_FORMATS.items()}
        self.u32, self.u64 = self.scalars[4], self.scalars[10]
        self.pos = 4

    def header(self) -> Header:
        version = self._unpack(self.u32)
        if version not in SUPPORTED_VERSIONS:
            raise GGUFFormatError(f"GGUF version {version}; orch reads versions 2 and 3")
        n_tensors, n_kv = self._unpack(self.u64), self._unpack(self.u64)
        head = Header(version=version, byte_order=self.order)
        try:
            for _ in range(n_kv):
                key, vtype = self._string(), self._unpack(self.u32)
                if key in head.fields:
                    raise GGUFFormatError(f"key {key} appears twice")
                if vtype == ARRAY:
                    head.arrays[key] = span = self._array_span()
                    head.fields[key] = span if span.count > DECODE_LIMIT else self._decode(span)
                else:
                    head.fields[key] = self._value(vtype)
            names = set()
            for _ in range(n_tensors):
                entry = self._tensor()
                if entry.name in names:
                    raise GGUFFormatError(f"tensor {entry.name} appears twice")
                names.add(entry.name)
                head.tensors.append(entry)
        except struct.error:
            raise GGUFFormatError(f"the header is cut off at byte {self.pos} of {self.size}") from None
        return head

    def _unpack(self, st: struct.Struct):
        value = st.unpack_from(self.buf, self.pos)[0]
        self.pos += st.size
        return value

    def _string(self) -> str:
        n = self._unpack(self.u64)
        end = self.pos + n
        if end > self.size:
            raise struct.error("string past the end")
        raw = self.buf[self.pos : end]
        self.pos = end
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise GGUFFormatError(f"a string at byte {end - n} is not UTF-8 ({exc.reason})") from None

    def _value(self, vtype: int):
        if vtype == STRING:
            return self._string()
        if vtype == ARRAY:
            return self._decode(self._array_span())
        if vtype not in self.scalars:
            raise GGUFFormatError(f"unknown value type {vtype} at byte {self.pos - 4}")
        return self._unpack(self.scalars[vtype])

    def _array_span(self) -> ArraySpan:
        item_type, count = self._unpack(self.u32), self._unpack(self.u64)
        start = self.pos
        self._skip(item_type, count)
        digest = hashlib.sha256(self.buf[start : self.pos]).hexdigest() if self.hash_arrays else None
        return ArraySpan(item_type, count, start, self.pos, digest)

    def _skip(self, item_type: int, count: int, depth: int = 1) -> None:
        if depth > MAX_ARRAY_DEPTH:  # a file is data: 10,000 nested arrays overflowed Python's stack
            raise GGUFFormatError(f"arrays nested more than {MAX_ARRAY_DEPTH} deep at byte {self.pos}")
        if item_type in self.scalars:
            self.pos += count * self.scalars[item_type].size
        elif item_type == STRING:  # the hot loop: one unpack per token, nothing decoded
            unpack, buf, pos = self.u64.unpack_from, self.buf, self.pos
            for _ in range(count):
                pos += 8 + unpack(buf, pos)[0]
            self.pos = pos
        elif item_type == ARRAY:
            for _ in range(count):
                inner_type, inner_count = self._unpack(self.u32), self._unpack(self.u64)
                self._skip(inner_type, inner_count, depth + 1)
        else:
            raise GGUFFormatError(f"unknown array element type {item_type} at byte {self.pos}")
        if self.pos > self.size:
            raise struct.error("array past the end")

    def _decode(self, span: ArraySpan) -> list:
        """The elements of a span this parser has just stepped over."""
        end, self.pos = self.pos, span.start
        fmt = SCALAR_FORMATS.get(span.item_type)
        if fmt is not None:
            values = list(struct.unpack_from(f"{self.order}{span.count}{fmt}", self.buf, self.pos))
            self.pos = span.end
        else:
            values = [self._value(span.item_type) for _ in range(span.count)]
        self.pos = end
        return values

    def _tensor(self) -> TensorEntry:
        name = self._string()
        n_dims = self._unpack(self.u32)
        shape = struct.unpack_from(f"{self.order}{n_dims}Q", self.buf, self.pos)
        self.pos += 8 * n_dims
        type_id, offset = self._unpack(self.u32), self._unpack(self.u64)
        return TensorEntry(name, type_id, tuple(shape), offset)
