"""orch's GGUF header reader against gguf's own GGUFReader, on files with every value type, both byte orders,
long and nested arrays; and damaged files, which must fail with one GGUFFormatError, whatever the damage."""

import random
import struct

import gguf
import numpy as np
import pytest
from gguf_compare import assert_agrees_with_gguf

from orchestrator.models import ggml_types
from orchestrator.models.gguf_read import DECODE_LIMIT, ArraySpan, GGUFFormatError, raw_strings, read_header

V = gguf.GGUFValueType
SCALARS = {
    V.UINT8: (0, 255),
    V.INT8: (-128, 127),
    V.UINT16: (0, 65535),
    V.INT16: (-32768, 32767),
    V.UINT32: (0, 2**32 - 1),
    V.INT32: (-(2**31), 2**31 - 1),
    V.UINT64: (0, 2**64 - 1),
    V.INT64: (-(2**63), 2**63 - 1),
}


def fuzzed_values(seed: int) -> list[tuple[str, object, V, V | None]]:
    """(key, value, type, array element type): every scalar type at its limits and at random, strings with
    multi-byte and NUL characters, arrays of every type below and above DECODE_LIMIT, nested arrays."""
    rng = random.Random(seed)
    text = lambda: "".join(rng.choice("aZ09 _é漢字🦙\0\n") for _ in range(rng.randint(0, 12)))  # noqa: E731
    items = []
    for vtype, (low, high) in SCALARS.items():
        for i, value in enumerate((low, high, rng.randint(low, high))):
            items.append((f"s.{vtype.name}.{i}", value, vtype, None))
        count = rng.choice([1, 7, DECODE_LIMIT, DECODE_LIMIT + 1, 5000])
        items.append((f"a.{vtype.name}", [rng.randint(low, high) for _ in range(count)], V.ARRAY, vtype))
    items += [
        ("s.f32", 0.1, V.FLOAT32, None),
        ("s.f64", -1e300, V.FLOAT64, None),
        ("s.bool", True, V.BOOL, None),
        ("s.str", text(), V.STRING, None),
        ("s.empty", "", V.STRING, None),
        ("a.f32", [rng.uniform(-1, 1) for _ in range(3000)], V.ARRAY, V.FLOAT32),
        ("a.f64", [rng.uniform(-1, 1) for _ in range(5)], V.ARRAY, V.FLOAT64),
        ("a.bool", [rng.random() < 0.5 for _ in range(2000)], V.ARRAY, V.BOOL),
        ("a.str.short", [text() for _ in range(9)], V.ARRAY, V.STRING),
        ("a.str.long", [text() for _ in range(4000)], V.ARRAY, V.STRING),
        ("a.nested", [[1, 2, 3], [4], [5, 6]], V.ARRAY, V.ARRAY),
        ("a.nested.str", [["x", "yz"], ["é"]], V.ARRAY, V.ARRAY),
    ]
    return items


def write_fuzzed(path, seed=0, endianess=gguf.GGUFEndian.LITTLE):
    writer = gguf.GGUFWriter(path, "llama", endianess=endianess)
    for key, value, vtype, sub in fuzzed_values(seed):
        writer.add_key_value(key, value, vtype, sub_type=sub)
    writer.add_tensor("a", np.zeros((3, 32), dtype=np.float32))
    writer.add_tensor("b.q8", np.zeros((4, 34 * 2), dtype=np.uint8), raw_dtype=gguf.GGMLQuantizationType.Q8_0)
    writer.add_tensor("c", np.zeros((2, 3, 5), dtype=np.float16))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.mark.parametrize("endianess", [gguf.GGUFEndian.LITTLE, gguf.GGUFEndian.BIG], ids=["little", "big"])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_every_value_type_agrees_with_gguf(tmp_path, seed, endianess):
    head = assert_agrees_with_gguf(write_fuzzed(tmp_path / "f.gguf", seed, endianess))
    assert head.byte_order == (">" if endianess == gguf.GGUFEndian.BIG else "<")
    assert isinstance(head.fields["a.str.long"], ArraySpan) and isinstance(head.fields["a.str.short"], list)
    assert head.fields["a.nested"] == [[1, 2, 3], [4], [5, 6]] and head.fields["a.nested.str"] == [["x", "yz"], ["é"]]
    assert [t.n_elements for t in head.tensors] == [96, 4 * 64, 30]


def test_raw_strings_index_a_long_array_without_decoding_it(tmp_path):
    path = write_fuzzed(tmp_path / "f.gguf")
    expected = next(v for k, v, *_ in fuzzed_values(0) if k == "a.str.long")
    with raw_strings(path, read_header(path).arrays["a.str.long"]) as items:
        assert len(items) == 4000
        assert [items.item(i).decode() for i in (0, 1, 3999)] == [expected[i] for i in (0, 1, 3999)]
        assert items.block(2, 4) == b"".join(struct.pack("<Q", len(s.encode())) + s.encode() for s in expected[2:4])


def test_hashing_can_be_left_out(tmp_path):
    head = read_header(write_fuzzed(tmp_path / "f.gguf"), hash_arrays=False)
    assert head.arrays["a.str.long"].sha256 is None and head.arrays["a.str.long"].count == 4000


def test_every_truncation_is_a_format_error(tmp_path):
    data = write_fuzzed(tmp_path / "f.gguf").read_bytes()
    header_end = data.index(b"\x00" * 32, data.index(b"b.q8"))  # the tensor data (zeros) follows the header
    cut = tmp_path / "cut.gguf"
    for size in sorted({*range(0, 200), *range(200, header_end, 97), header_end - 1}):
        cut.write_bytes(data[:size])
        with pytest.raises(GGUFFormatError):
            read_header(cut)


def test_corrupted_bytes_give_a_format_error_or_a_header(tmp_path):
    data = bytearray(write_fuzzed(tmp_path / "f.gguf").read_bytes())
    rng = random.Random(7)
    bad = tmp_path / "bad.gguf"
    outcomes = set()
    for _ in range(300):
        damaged = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            damaged[rng.randrange(0, 4096)] = rng.randrange(256)
        bad.write_bytes(damaged)
        try:
            read_header(bad)
            outcomes.add("read")
        except GGUFFormatError:
            outcomes.add("refused")
    assert outcomes == {"read", "refused"}  # nothing else escaped, and both happen


@pytest.mark.parametrize(
    "content, message",
    [
        (b"GGML" + bytes(40), "no GGUF magic"),
        (b"GGUF" + struct.pack("<IQQ", 1, 0, 0), "GGUF version 1"),
        (b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 1) + b"k" + struct.pack("<I", 99), "value type 99"),
        (b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + struct.pack("<Q", 2) + b"\xff\xfe", "not UTF-8"),
    ],
)
def test_refusals_say_why(tmp_path, content, message):
    path = tmp_path / "x.gguf"
    path.write_bytes(content + bytes(8))
    with pytest.raises(GGUFFormatError, match=message):
        read_header(path)


def test_empty_array_and_duplicate_key(tmp_path):
    kv = struct.pack("<Q", 1) + b"k" + struct.pack("<IIQ", 9, 4, 0)  # k: empty array of uint32
    path = tmp_path / "x.gguf"
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + kv)
    assert read_header(path).fields == {"k": []}
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 2) + kv + kv)
    with pytest.raises(GGUFFormatError, match="key k appears twice"):
        read_header(path)


def test_type_tables_match_the_gguf_package():
    for member in gguf.GGMLQuantizationType:
        assert ggml_types.tensor_type(member.value) == (member.name, *gguf.GGML_QUANT_SIZES[member])
        assert ggml_types.tensor_type_by_name(member.name.lower())[0] == member.name
    for member in gguf.LlamaFileType:
        assert ggml_types.file_type_name(member.value) == member.name.removeprefix("MOSTLY_").removeprefix("ALL_")
    assert ggml_types.tensor_type(9999) is None and ggml_types.tensor_type_by_name("q9_9") is None


def test_arrays_nested_past_the_bound_are_a_format_error_not_a_recursion(tmp_path):
    """10,000 arrays each holding the next overflowed Python's stack (RecursionError, a traceback)."""
    from orchestrator.models.gguf_read import MAX_ARRAY_DEPTH

    def nested(levels: int) -> bytes:
        return struct.pack("<IQ", 9, 1) * (levels - 1) + struct.pack("<IQ", 4, 0)  # arrays down to an empty uint32[]

    path = tmp_path / "deep.gguf"
    kv = struct.pack("<Q", 1) + b"k" + struct.pack("<I", 9)
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + kv + nested(10_000))
    with pytest.raises(GGUFFormatError, match=f"arrays nested more than {MAX_ARRAY_DEPTH} deep"):
        read_header(path)
    path.write_bytes(b"GGUF" + struct.pack("<IQQ", 3, 0, 1) + kv + nested(MAX_ARRAY_DEPTH))
    assert "k" in read_header(path).fields  # as deep as the bound: read
