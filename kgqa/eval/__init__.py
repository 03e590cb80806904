"""Benchmarks: data folders in MetaQA's layout and seeded samples (:mod:`.datasets`), what only
MetaQA has (:mod:`.metaqa`: its qtype paths), answer metrics (:mod:`.metrics`), resumable runs
(:mod:`.runner`), the faithfulness check in runs (:mod:`.faithfulness`), the experiments
(:mod:`.experiments`) and reports with charts (:mod:`.report`).

Nothing heavy is imported here; matplotlib loads only when a chart is drawn.
"""
