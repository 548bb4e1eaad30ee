"""Whole-run benchmarks of sitelens: ingestion, read routes beside DuckDB and ClickHouse (chdb), dashboard, seeding.

Run with ``python -m bench`` (``make bench``); see ``python -m bench --help`` for partial runs. Each run writes
``BENCHMARKS.md`` and ``bench/results.json``. Nothing here is part of the test suite: figures are measurements of a
whole run on one machine, never assertions.
"""
