"""Sweeps over a Ray cluster: executor.py dispatches rounds and merges shards, worker.py runs one on a node.

A stage above run/ and build/: a node finds its build by name (build/) and runs it with the local executor's
code (run/). Ray itself is an optional extra, imported only when `--executor ray` is asked for.
"""
