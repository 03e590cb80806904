"""Shared set-up of the benchmarks that read a dataset in MetaQA's layout with a stored KB
profile and no Neo4j (bench_relation_signals.py, bench_step_paths.py)."""

from __future__ import annotations

from pathlib import Path

from kgqa.eval.datasets import Question, read_questions, sample
from kgqa.graph.memory_store import MemoryStore
from kgqa.profile.files import apply_profile_file
from kgqa.profile.model import KBProfile


def load_dev_kb(
    data: Path, profile_dir: Path, profile_file: str | None, set_name: str, n: int, seed: int
) -> tuple[KBProfile, MemoryStore, list[Question]]:
    """The profile (with ``profile_file`` applied), the KB in memory and ``n`` seeded dev
    questions of ``set_name``."""
    profile = KBProfile.read(profile_dir)
    if profile_file:
        profile = apply_profile_file(profile, profile_file)
    store = MemoryStore.from_file(data / "kb.txt")
    questions = sample(read_questions(data / set_name / "qa_dev.txt"), n, seed)
    return profile, store, list(questions)
