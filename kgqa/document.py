"""One answer as a JSON document: what ``kgqa ask --json`` prints, what an eval record keeps
under ``answer`` and what a server will send. Written once, here, so that the three never
drift apart."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

from kgqa.answers import answer_line, answer_names
from kgqa.types import Answer, Candidates, ScoredTriple


def stage_totals(answer: Answer) -> dict[str, dict[str, float]]:
    """Calls, seconds and tokens per stage, in the order the stages first ran."""
    totals: dict[str, dict[str, float]] = {}
    for c in answer.costs:
        t = totals.setdefault(
            c.stage, {"calls": 0, "seconds": 0.0, "prompt_tokens": 0, "completion_tokens": 0}
        )
        t["calls"] += 1
        t["seconds"] += c.seconds
        t["prompt_tokens"] += c.prompt_tokens
        t["completion_tokens"] += c.completion_tokens
    return totals


def answer_document(answer: Answer) -> dict[str, Any]:
    """Everything about one answer, JSON-ready: the question and topic entities, the answer
    line, its names and its KG entities (node ids, support triple ids), the reasoning, every
    sub-question with its evidence (ids, scores, verbalized triples) and entities, the
    evidence ids, the candidate count, the stages cut at the token limit, the stage totals and
    the pipeline's parameters."""
    return {
        "question": answer.question,
        "entities": list(answer.entities_in),
        "mode": answer.mode,
        "model": answer.parameters.get("model"),
        "answer": answer_line(answer.text),
        "answer_text": answer.text,
        "answer_names": answer_names(answer.text),
        "answer_entities": [dataclasses.asdict(e) for e in answer.answer_entities],
        # True: the entities were read from the free text (the metrics read the text).
        "answer_entities_from_text": answer.from_text,
        "reasoning": answer.reasoning,
        "sub_questions": [
            {
                "index": s.index,
                "original": s.original,
                "reformulated": s.reformulated,
                "answer": s.answer,
                "cut": s.cut,
                "entities": list(s.entities),
                "triple_ids": [st.triple.id for st in s.evidence],
                "scores": [round(st.score, 6) for st in s.evidence],
                "triples": [
                    {"id": st.triple.id, "text": st.triple.verbalize(), "score": st.score}
                    for st in s.evidence
                ],
            }
            for s in answer.sub_answers
        ],
        "evidence_ids": list(answer.evidence_ids),
        "candidates_count": answer.candidates_count,
        "truncated": answer.truncated,
        # Stages whose LLM output stopped at the token limit (llm.max_tokens): possibly cut.
        "cut_stages": list(answer.cut_stages),
        "timings": {
            "stages": stage_totals(answer),
            "total_seconds": round(sum(c.seconds for c in answer.costs), 3),
            "prompt_tokens": sum(c.prompt_tokens for c in answer.costs),
            "completion_tokens": sum(c.completion_tokens for c in answer.costs),
        },
        "parameters": dict(answer.parameters),
    }


def retrieval_document(
    question: str,
    entities: Sequence[str],
    hops: int,
    candidates: Candidates,
    top: Sequence[ScoredTriple],
) -> dict[str, Any]:
    """The candidates around the topic entities and the top-K triples for a question:
    ``kgqa retrieve --json`` and ``GET /v1/retrieve``."""
    return {
        "question": question,
        "entities": list(entities),
        "hops": hops,
        "candidates_per_hop": [len(h) for h in candidates.by_hop],
        "truncated": candidates.truncated,
        "skipped_hubs": [list(h) for h in candidates.skipped_hubs],
        "seconds": round(candidates.seconds, 4),
        "top_k": [
            {"id": s.triple.id, "triple": s.triple.verbalize(), "score": round(s.score, 4)}
            for s in top
        ],
    }
