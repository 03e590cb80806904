"""Moved to :mod:`kgqa.answers` (session 4). Kept for callers outside that change
(``benchmarks/bench_retrieval.py``); new code imports from :mod:`kgqa.answers`."""

from kgqa.answers.brackets import bracketed_entities, strip_brackets

__all__ = ["bracketed_entities", "strip_brackets"]
