"""LLM costs on this machine: load time, prompt/generation speed, what prefix reuse saves,
and per-stage seconds and tokens per mode for one dev question per hop.

    .venv/bin/python benchmarks/bench_llm.py speed  --model qwen2.5-coder-0.5b
    .venv/bin/python benchmarks/bench_llm.py prefix --model qwen2.5-coder-1.5b
    .venv/bin/python benchmarks/bench_llm.py stages --model qwen2.5-coder-1.5b --modes qd,llm
    .venv/bin/python benchmarks/bench_llm.py settings --model qwen2.5-coder-1.5b

Prints one JSON object per measurement (and a table for ``stages``). The machine is shared:
the load average is printed with every run so slow numbers can be told from slow neighbours.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path

from kgqa.llm.base import GenParams
from kgqa.llm.llama_cpp import LlamaCppLLM
from kgqa.llm.models import resolve_model
from kgqa.prompts import PromptTemplate
from kgqa.settings import load_settings

METAQA = Path(os.environ.get("METAQA_DIR", "/work/shared/metaqa"))


def emit(**record: object) -> None:
    record["loadavg"] = round(os.getloadavg()[0], 2)
    print(json.dumps(record), flush=True)


def build_llm(model: str, n_threads: int) -> LlamaCppLLM:
    settings = load_settings({"llm.model": model, "llm.n_threads": n_threads})
    start = time.perf_counter()
    path = resolve_model(model, settings.cache_dir)
    emit(what="resolve", model=model, seconds=round(time.perf_counter() - start, 3))
    llm = LlamaCppLLM(path, name=model, n_ctx=settings.llm.n_ctx, n_threads=settings.llm.n_threads)
    llm.warm_up()
    emit(what="load", model=model, seconds=round(llm.load_seconds or 0, 3))
    return llm


def speed(llm: LlamaCppLLM) -> None:
    """Prompt tokens/s from a ~300-token prompt with 1 output token; generation tokens/s from
    the same (now cached) prompt with 64 output tokens."""
    facts = "\n".join(f"(Movie {i}, has genre, Genre {i % 7})" for i in range(30))
    prompt = [{"role": "user", "content": f"Facts:\n{facts}\nName three genres, comma-separated."}]
    llm.complete("warm", GenParams(max_tokens=1))  # a different prompt: no prefix to reuse
    p = llm.complete(prompt, GenParams(max_tokens=1))
    # A raw-text prompt that keeps going (no end of turn), so all 64 tokens are generated;
    # its prompt is a few tokens, so the time is generation.
    g = llm.complete("Count: 1, 2, 3, 4, 5,", GenParams(max_tokens=64, temperature=0.0))
    emit(
        what="speed",
        model=llm.name,
        prompt_tokens=p.prompt_tokens,
        prompt_tok_s=round(p.prompt_tokens / p.seconds, 1),
        gen_tokens=g.completion_tokens,
        gen_tok_s=round(g.completion_tokens / g.seconds, 1),
    )


def prefix(llm: LlamaCppLLM) -> None:
    """What keeping the decomposition prompt's fixed prefix evaluated saves.

    llama.cpp reuses the longest common prefix with the *previous* call only, so in the
    pipeline (decompose, other stages, the next question's decompose) the in-context examples
    are re-evaluated per question. ``pin_prefix`` keeps their state and restores it.
    Four questions, each: decompose + one other prompt (prompt processing only, 1 token out).
    """
    decompose = PromptTemplate("decompose")
    answer = PromptTemplate("answer_llm")
    params = GenParams(max_tokens=1)
    questions = [
        "who directed the movies written by [Nora Ephron]",
        "what languages are the films starring [Jet Li] in",
        "which years were the movies directed by [Ridley Scott] released",
        "who acted in the films whose writers also wrote [Heat]",
    ]
    for pinned in (False, True):
        if pinned:
            llm.pin_prefix(decompose.render(question=""))
        dec, other, tokens = [], 0.0, 0
        for q in questions:
            out = llm.complete(decompose.render(question=q), params)
            dec.append(round(out.seconds, 2))
            tokens = out.prompt_tokens
            other += llm.complete(answer.render(question=q), params).seconds
        emit(
            what="prefix",
            model=llm.name,
            pinned=pinned,
            decompose_prompt_tokens=tokens,
            decompose_s=dec,
            decompose_total_s=round(sum(dec), 2),
            other_total_s=round(other, 2),
        )


def dev_question(hops: int, seed: int) -> tuple[str, list[str]]:
    lines = (METAQA / f"{hops}-hop" / "qa_dev.txt").read_text(encoding="utf-8").splitlines()
    question, gold = random.Random(seed).choice(lines).split("\t")
    return question, gold.split("|")


def stages(llm: LlamaCppLLM, modes: list[str], hop_list: list[int], seed: int) -> None:
    from kgqa.commands.ask_cmd import entities_in_question, stage_totals
    from kgqa.pipeline.pipeline import GRAPH_MODES, KGRAGPipeline, PipelineParams
    from kgqa.pipeline.synthesize import answer_line

    settings = load_settings({"llm.model": llm.name})
    retriever = None
    if any(m in GRAPH_MODES for m in modes):
        from kgqa.factory import Factory

        retriever = Factory(settings).retriever()
    params = PipelineParams.from_settings(settings)
    for hops in hop_list:
        question, gold = dev_question(hops, seed)
        for mode in modes:
            pipe = KGRAGPipeline(llm, retriever if mode in GRAPH_MODES else None, params, mode)
            answer = pipe.answer(question, entities_in_question(question))
            totals = stage_totals(answer)
            emit(
                what="stages",
                model=llm.name,
                mode=mode,
                hops=hops,
                question=question,
                gold=gold,
                answer=answer_line(answer.text),
                sub_questions=[s.reformulated for s in answer.sub_answers],
                total_s=round(sum(c.seconds for c in answer.costs), 2),
                stages={k: {kk: round(vv, 2) for kk, vv in v.items()} for k, v in totals.items()},
            )


# llama.cpp context settings tried for prompt evaluation, beside the load kgqa does for
# `kgqa ask` (weights as stored, llama-cpp-python's batch of 512, no flash attention, f16 KV).
VARIANTS: dict[str, tuple[bool, dict[str, object]]] = {
    "kgqa ask (as stored)": (False, {}),
    "repacked (serve, eval)": (True, {}),
    "repacked + flash attention": (True, {"flash_attn": True}),
    "repacked, batch 128": (True, {"n_batch": 128, "n_ubatch": 128}),
    "repacked, batch 2048": (True, {"n_batch": 2048, "n_ubatch": 2048}),
    "repacked + flash attention, KV q8_0": (True, {"flash_attn": True, "type_k": 8, "type_v": 8}),
}


def prompt_settings(model: str, threads: int, repeats: int = 4) -> None:
    """Prompt evaluation speed of a paper-pipeline answer prompt (its instructions and 30
    facts, ~490 tokens: two thirds of `kgrag`'s time per question) under each of
    :data:`VARIANTS`, each a fresh model load, the prompt evaluated from an empty context
    ``repeats`` times (median of all but the first), and the ratio to kgqa's load."""
    import statistics

    import llama_cpp

    from kgqa.llm.llama_cpp import _extra_buffers

    settings = load_settings({"llm.model": model, "llm.n_threads": threads})
    path = resolve_model(model, settings.cache_dir)
    n_threads = threads or (os.cpu_count() or 1)
    facts = "\n".join(f"(Movie {i}, directed by, Person {i * 7 % 13} Smith)" for i in range(30))
    prompt = PromptTemplate("answer").render(question="who directed Movie 3?", triples=facts)
    base = None
    for name, (repack, extra) in VARIANTS.items():
        with _extra_buffers(repack):
            llama = llama_cpp.Llama(
                model_path=str(path),
                n_ctx=settings.llm.n_ctx,
                n_threads=n_threads,
                n_threads_batch=n_threads,
                verbose=False,
                **extra,  # type: ignore[arg-type]
            )
        seconds = []
        for _ in range(repeats):
            llama.reset()
            start = time.perf_counter()
            out = llama.create_chat_completion(messages=prompt, max_tokens=1, temperature=0.0)
            seconds.append(time.perf_counter() - start)
        tokens = out["usage"]["prompt_tokens"]  # type: ignore[index]
        rate = tokens / statistics.median(seconds[1:])
        base = base or rate
        emit(
            what="prompt_settings",
            variant=name,
            prompt_tokens=tokens,
            prompt_tok_s=round(rate, 1),
            ratio=round(rate / base, 3),
            threads=n_threads,
        )
        del llama


def main(argv: list[str]) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=["speed", "prefix", "stages", "settings"])
    ap.add_argument("--model", default="qwen2.5-coder-0.5b")
    ap.add_argument("--threads", type=int, default=0, help="0: all cores")
    ap.add_argument("--modes", default="qd,llm")
    ap.add_argument("--hops", default="1,2,3")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    if args.what == "settings":
        prompt_settings(args.model, args.threads)
        return
    llm = build_llm(args.model, args.threads)
    if args.what == "speed":
        speed(llm)
    elif args.what == "prefix":
        prefix(llm)
    else:
        hop_list = [int(h) for h in args.hops.split(",")]
        stages(llm, args.modes.split(","), hop_list, args.seed)


if __name__ == "__main__":
    main(sys.argv[1:])
