"""Graph mode's decomposition stopped where the step grammar's END begins (``END_LINE``, the
default) against stopped after the whole END (before session 22), in one process.

Each seeded dev question of each hop is answered both ways by one pipeline (one model; the
stop string is switched between calls), alternating which way goes first, after one untimed
question each way (the model's load, the pinned prefix). It prints, per hop and overall, the
decomposition's seconds (p50 / mean) and generated tokens per question, the ratio of the old
way's mean seconds to the new one's, and how many questions got the same reasoning (steps and
walk) and the same answer entities (greedy decoding: the text before END cannot differ)
(benchmarks/_ab.py). The settings come from the environment and kgqa.toml as for `kgqa ask`
(a loaded KB).

    .venv/bin/python benchmarks/bench_step_end.py --data ../shared/metaqa --limit 10 --seed 0
"""

from __future__ import annotations

from _ab import arguments, compare

import kgqa.graphmode.pipeline as graph_pipeline
from kgqa.factory import Factory
from kgqa.graphmode.vocabulary import END, END_LINE
from kgqa.settings import load_settings


def main() -> None:
    args = arguments(__doc__)
    factory = Factory(load_settings())
    pipe = factory.pipeline("graph")

    def stop_at(end: str) -> None:
        graph_pipeline.END_LINE = end  # read by GraphPipeline.plan at each call

    ways = {"whole END": lambda: stop_at(END), "END_LINE": lambda: stop_at(END_LINE)}
    compare(pipe, ways, args.data, args.hops, args.limit, args.seed)
    stop_at(END_LINE)
    factory.close()


if __name__ == "__main__":
    main()
