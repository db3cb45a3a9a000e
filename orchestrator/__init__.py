"""orch: benchmark speculative decoding across llama.cpp commits."""

__version__ = "0.1.0"
