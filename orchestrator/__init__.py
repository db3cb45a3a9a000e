"""orch: benchmark speculative decoding across llama.cpp commits."""

__version__ = "0.2.0"
