"""Graph mode's decomposition with the step grammar checked on the model's own choice first
(``llm.grammar_check_first``, the default) against the grammar in llama-cpp-python's sampler
chain, where llama.cpp holds every token of the vocabulary to it at each step (before
session 24), in one process.

Each seeded dev question of each hop is answered both ways by one pipeline (one model; the
setting is switched between calls), alternating which way goes first, after one untimed
question each way (benchmarks/_ab.py). It prints, per hop and overall, the decomposition's
seconds (p50 / mean) and generated tokens per question, the ratio of the old way's mean
seconds to the new one's, how many questions got the same reasoning (steps and walk) and
the same answer entities (greedy decoding: the tokens cannot differ), and how often the
grammar refused the model's best token. The settings come from the environment and
kgqa.toml as for `kgqa ask` (a loaded KB).

    .venv/bin/python benchmarks/bench_grammar_check.py --data ../shared/metaqa --limit 10 --seed 0
"""

from __future__ import annotations

from _ab import arguments, compare

from kgqa.factory import Factory
from kgqa.llm.llama_cpp import LlamaCppLLM
from kgqa.settings import load_settings


def main() -> None:
    args = arguments(__doc__)
    factory = Factory(load_settings())
    llm = factory.llm()
    if not isinstance(llm, LlamaCppLLM):
        raise SystemExit("bench_grammar_check.py measures the llama_cpp backend (llm.backend)")
    pipe = factory.pipeline("graph")

    def check_first(on: bool) -> None:
        llm.grammar_check_first = on

    ways = {
        "grammar in the chain": lambda: check_first(False),
        "checked first": lambda: check_first(True),
    }
    rows = compare(pipe, ways, args.data, args.hops, args.limit, args.seed)
    generated = sum(r["checked first"]["generated"] for r in rows)
    print(
        f"# checked first: the grammar refused the model's best token {llm.grammar_refused} "
        f"times (every token checked {llm.grammar_whole} times), warm-up included; "
        f"{generated} tokens generated in the timed calls"
    )
    check_first(True)
    factory.close()


if __name__ == "__main__":
    main()
