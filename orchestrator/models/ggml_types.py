"""ggml's tensor types and llama.cpp's file types, by number: what a GGUF header names, without importing gguf.

Copied from the gguf package (0.19): importing it costs a sixth of a second (numpy and more), a large part of
a --dry-run. A unit test checks both tables against the installed package; a type number this table lacks
(a newer quantisation) is looked up in gguf itself.
"""

from __future__ import annotations

# id -> (name, weights per block, bytes per block)
TENSOR_TYPES: dict[int, tuple[str, int, int]] = {
    0: ("F32", 1, 4),
    1: ("F16", 1, 2),
    2: ("Q4_0", 32, 18),
    3: ("Q4_1", 32, 20),
    6: ("Q5_0", 32, 22),
    7: ("Q5_1", 32, 24),
    8: ("Q8_0", 32, 34),
    9: ("Q8_1", 32, 40),
    10: ("Q2_K", 256, 84),
    11: ("Q3_K", 256, 110),
    12: ("Q4_K", 256, 144),
    13: ("Q5_K", 256, 176),
    14: ("Q6_K", 256, 210),
    15: ("Q8_K", 256, 292),
    16: ("IQ2_XXS", 256, 66),
    17: ("IQ2_XS", 256, 74),
    18: ("IQ3_XXS", 256, 98),
    19: ("IQ1_S", 256, 50),
    20: ("IQ4_NL", 32, 18),
    21: ("IQ3_S", 256, 110),
    22: ("IQ2_S", 256, 82),
    23: ("IQ4_XS", 256, 136),
    24: ("I8", 1, 1),
    25: ("I16", 1, 2),
    26: ("I32", 1, 4),
    27: ("I64", 1, 8),
    28: ("F64", 1, 8),
    29: ("IQ1_M", 256, 56),
    30: ("BF16", 1, 2),
    34: ("TQ1_0", 256, 54),
    35: ("TQ2_0", 256, 66),
    39: ("MXFP4", 32, 17),
    40: ("NVFP4", 64, 36),
    41: ("Q1_0", 128, 18),
}

# general.file_type -> llama.cpp's name for the quantisation (LlamaFileType without MOSTLY_/ALL_)
FILE_TYPES: dict[int, str] = {
    0: "F32",
    1: "F16",
    2: "Q4_0",
    3: "Q4_1",
    7: "Q8_0",
    8: "Q5_0",
    9: "Q5_1",
    10: "Q2_K",
    11: "Q3_K_S",
    12: "Q3_K_M",
    13: "Q3_K_L",
    14: "Q4_K_S",
    15: "Q4_K_M",
    16: "Q5_K_S",
    17: "Q5_K_M",
    18: "Q6_K",
    19: "IQ2_XXS",
    20: "IQ2_XS",
    21: "Q2_K_S",
    22: "IQ3_XS",
    23: "IQ3_XXS",
    24: "IQ1_S",
    25: "IQ4_NL",
    26: "IQ3_S",
    27: "IQ3_M",
    28: "IQ2_S",
    29: "IQ2_M",
    30: "IQ4_XS",
    31: "IQ1_M",
    32: "BF16",
    36: "TQ1_0",
    37: "TQ2_0",
    38: "MXFP4_MOE",
    39: "NVFP4",
    40: "Q1_0",
    1024: "GUESSED",
}


def tensor_type(type_id: int) -> tuple[str, int, int] | None:
    """(name, block size, block bytes) of a ggml type number; None when neither this table nor gguf knows it."""
    if type_id in TENSOR_TYPES:
        return TENSOR_TYPES[type_id]
    import gguf  # only for a type newer than the table

    try:
        member = gguf.GGMLQuantizationType(type_id)
        return (member.name, *gguf.GGML_QUANT_SIZES[member])
    except (ValueError, KeyError):
        return None


def tensor_type_by_name(name: str) -> tuple[str, int, int] | None:
    """The same for a type name (case-insensitive), as KV cache types are given: "q8_0" -> ("Q8_0", 32, 34)."""
    wanted = name.upper()
    return next((t for t in TENSOR_TYPES.values() if t[0] == wanted), None)


def file_type_name(value: int | None) -> str | None:
    """general.file_type as llama.cpp names quantisations: 1 -> "F16", 15 -> "Q4_K_M"."""
    if value is None:
        return None
    return FILE_TYPES.get(value, f"unknown ({value})")
