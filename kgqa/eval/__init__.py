"""Benchmarks: MetaQA question files and seeded samples (:mod:`.metaqa`), answer metrics
(:mod:`.metrics`), resumable runs (:mod:`.runner`) and reports with charts (:mod:`.report`).

Nothing heavy is imported here; matplotlib loads only when a chart is drawn.
"""
