"""Answer metrics: pure functions over answers and gold answers (see docs/eval.md).

- :func:`hit1_paper`: the paper's Hit@1, the whole generated answer (lower-cased, stripped)
  equals a gold answer. A correct but verbose answer fails it.
- :func:`hit1_entity`: the standard KGQA Hit@1, the top-ranked answer entity is a gold answer.
  Grounded answers carry ranked entities; for free text, :func:`kgqa.answers.answer_items`
  reads them out.
- :func:`set_prf`: precision, recall and F1 of the predicted answer set against the gold set.
- :func:`retrieval_ceiling`: whether any gold answer was reachable at all (among the candidate
  triples and among the top-K), the bound on what any LLM stage could answer.
- :func:`aggregate`: the means and medians of a run's per-question records.

Every comparison is case-insensitive exact match after stripping whitespace. MetaQA has names
that differ only by case ("clint eastwood" the tag, "Clint Eastwood" the person); the gold
answers do not tell them apart, so neither do the metrics.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence, Sized
from dataclasses import dataclass
from typing import Any

from kgqa.answers import EntityNames, answer_items, first_entity, norm
from kgqa.types import Answer, Candidates, ScoredTriple, Triple


def gold_set(gold: Iterable[str]) -> frozenset[str]:
    """The gold answers in comparison form."""
    return EntityNames.of(gold)


def hit1_paper(answer_text: str, gold: Iterable[str]) -> bool:
    """The paper's Hit@1 (section 4.2.1): the generated answer, lower-cased and stripped,
    equals one of the gold answers. "Pitt is the actor in question" for "Brad Pitt" is a miss."""
    return norm(answer_text) in gold_set(gold)


# -- free-text answers (read by kgqa.answers) -----------------------------------------


def _answer_parts(answer: Answer | str) -> tuple[str, list[str]]:
    if isinstance(answer, str):
        return answer, []
    return answer.text, [e.name for e in answer.ranked_entities]


def hit1_entity(
    answer: Answer | str, gold: Iterable[str], entity_names: Collection[str] | None = None
) -> bool:
    """Standard KGQA Hit@1: the top-ranked answer entity is a gold answer.

    With ``Answer.answer_entities`` the top one is ``answer_entities[0]``; otherwise (free
    text, or a plain string) it is :func:`first_entity` of the answer text."""
    gold = list(gold)
    text, names = _answer_parts(answer)
    top = names[0] if names else first_entity(text, gold, entity_names)
    return top is not None and norm(top) in gold_set(gold)


def predicted_answers(
    answer: Answer | str, gold: Iterable[str], entity_names: Collection[str] | None = None
) -> list[str]:
    """The predicted answer set, de-duplicated case-insensitively, in rank order: the answer
    entities when the answer has them; else the items of the text that name a gold answer or
    KB entity when ``entity_names`` is given; else every item of the text (an unknown phrase
    then counts as a wrong answer)."""
    text, names = _answer_parts(answer)
    if names:
        chosen = names
    else:
        items = answer_items(text, gold, entity_names)
        chosen = [i.text for i in items if i.known or not entity_names]
    seen: dict[str, str] = {}
    for name in chosen:
        seen.setdefault(norm(name), name)
    return list(seen.values())


@dataclass(frozen=True)
class PRF:
    precision: float
    recall: float
    f1: float


def set_prf(predicted: Iterable[str], gold: Iterable[str]) -> PRF:
    """Precision, recall and F1 of a predicted answer set (case-insensitive exact match).
    An empty prediction scores 0 on all three."""
    pred = {norm(p) for p in predicted if norm(p)}
    ref = gold_set(gold)
    if not pred or not ref:
        return PRF(0.0, 0.0, 0.0)
    hits = len(pred & ref)
    p, r = hits / len(pred), hits / len(ref)
    return PRF(p, r, 0.0 if hits == 0 else 2 * p * r / (p + r))


# -- retrieval ceiling ----------------------------------------------------------------------


def triple_names(triples: Iterable[Triple | ScoredTriple]) -> set[str]:
    """Lower-cased subject and object names of the triples."""
    names: set[str] = set()
    for t in triples:
        triple = t.triple if isinstance(t, ScoredTriple) else t
        names.add(norm(triple.subject))
        names.add(norm(triple.object))
    return names


def gold_reachable(gold: Iterable[str], triples: Iterable[Triple | ScoredTriple]) -> bool:
    """Whether some gold answer is the subject or object of one of the triples."""
    return bool(gold_set(gold) & triple_names(triples))


@dataclass(frozen=True)
class Ceiling:
    """Retrieval ceiling of one question: gold among the candidates, and among each top-K."""

    in_candidates: bool | None
    in_top_k: dict[int, bool]


def retrieval_ceiling(
    gold: Iterable[str],
    candidates: Candidates | None = None,
    top: Mapping[int, Sequence[ScoredTriple]] | Sequence[ScoredTriple] | None = None,
) -> Ceiling:
    """Whether a gold answer is among the candidates' entity names and among the top-K
    triples' entity names. ``top`` is one top-K list or ``{K: list}``; a list sorted best
    first may be given once for the largest K, and smaller K are its prefixes."""
    gold = list(gold)
    in_cands = gold_reachable(gold, candidates.triples) if candidates is not None else None
    in_top: dict[int, bool] = {}
    if isinstance(top, Mapping):
        in_top = {k: gold_reachable(gold, v) for k, v in top.items()}
    elif top is not None:
        in_top = {len(top): gold_reachable(gold, top)}
    return Ceiling(in_cands, in_top)


def top_k_prefixes(
    ranked: Sequence[ScoredTriple], ks: Iterable[int]
) -> dict[int, list[ScoredTriple]]:
    """``{K: ranked[:K]}`` for each K: the top-K of a best-first list are its first K."""
    return {k: list(ranked[:k]) for k in ks}


# -- aggregates -----------------------------------------------------------------------------


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _count(value: Any) -> int:
    """A faithfulness field may hold a count or the list of offending items."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float):
        return int(value)
    if isinstance(value, Sized):
        return len(value)
    return 0


def aggregate(records: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The run's summary from its per-question records (as written to ``records.jsonl``).

    ``n`` counts every question, errors included; an error counts as a miss in the Hit@1 and
    F1 means (as a wrong answer would). ``cut_answers`` counts the answers in which an LLM
    stage stopped at the token limit (``cut_by_stage``: how many per stage). Seconds, sub-questions and tokens are over the
    questions that produced an answer. Ceiling means are over the records that have them;
    ``mistakes``/``omissions`` appear only when records carry them."""
    records = [r for r in records if r.get("kind", "answer") == "answer"]
    ok = [r for r in records if r.get("status") == "ok"]
    metrics = [r.get("metrics") or {} for r in records]

    def mean_of(key: str, rows: Sequence[Mapping[str, Any]]) -> float | None:
        return _mean([float(m.get(key) or 0) for m in rows])

    seconds = [float(r.get("seconds", 0.0)) for r in ok]
    out: dict[str, Any] = {
        "n": len(records),
        "errors": len(records) - len(ok),
        "hit1_paper": mean_of("hit1_paper", metrics),
        "hit1_entity": mean_of("hit1_entity", metrics),
        "precision": mean_of("precision", metrics),
        "recall": mean_of("recall", metrics),
        "f1": mean_of("f1", metrics),
        "seconds_median": statistics.median(seconds) if seconds else None,
        "seconds_mean": _mean(seconds),
        "seconds_total": sum(seconds),
        "sub_questions_mean": _mean(
            [float((r.get("metrics") or {}).get("n_sub_questions", 0)) for r in ok]
        ),
    }
    # Answers with a stage whose LLM output stopped at the token limit, and per stage.
    cut = [(r.get("answer") or {}).get("cut_stages") or [] for r in ok]
    out["cut_answers"] = sum(1 for c in cut if c)
    out["cut_by_stage"] = dict(Counter(stage for c in cut for stage in c).most_common())
    stages: dict[str, dict[str, float]] = {}
    for r in ok:
        for c in r.get("costs", []):
            s = stages.setdefault(
                c["stage"], {"calls": 0, "seconds": 0.0, "prompt_tokens": 0, "completion_tokens": 0}
            )
            s["calls"] += 1
            s["seconds"] += float(c.get("seconds", 0.0))
            s["prompt_tokens"] += int(c.get("prompt_tokens", 0))
            s["completion_tokens"] += int(c.get("completion_tokens", 0))
    # Per question, so that runs of different sizes compare.
    out["per_stage"] = {
        stage: {k: v / len(ok) for k, v in s.items()} for stage, s in sorted(stages.items())
    }
    cand = [m["in_candidates"] for m in metrics if m.get("in_candidates") is not None]
    if cand:
        out["in_candidates"] = _mean([float(x) for x in cand])
    top = [m["in_top_k"] for m in metrics if m.get("in_top_k") is not None]
    if top:
        out["in_top_k"] = _mean([float(x) for x in top])
    for key in ("mistakes", "omissions"):
        rows = [m[key] for m in metrics if key in m]
        if rows:
            counts = [_count(v) for v in rows]
            out[key] = _mean([float(c) for c in counts])
            out[f"{key}_total"] = sum(counts)
    if "mistakes_total" in out:
        # Graph mode's answer entities; a free-text answer's (read from the text) are not its
        # answer set, so they do not count here.
        entities = sum(len(_grounded_entities(r.get("answer") or {})) for r in ok)
        out["answer_entities_total"] = entities
        # Every stage's mistakes (a sub-answer entity off the topic's paths counts too) over
        # the final answer entities: not the mistake rate, which counts final answers only.
        out["stage_mistakes_per_answer_entity"] = (
            out["mistakes_total"] / entities if entities else None
        )
        claimed = [m for m in metrics if "answer_claims" in m]
        if claimed:
            # As kgqa.eval.faithfulness.summarize: mistaken final-answer claims / claims.
            claims = sum(int(m["answer_claims"]) for m in claimed)
            out["mistake_rate"] = (
                sum(int(m.get("answer_mistakes", 0)) for m in claimed) / claims if claims else None
            )
    return out


def _grounded_entities(answer: Mapping[str, Any]) -> list[Any]:
    r"""An answer record's answer entities, unless they were read from its free text. Records
    are :func:`kgqa.document.answer_document`\ s (``answer_entities``); runs written before
    session 4 named the fields ``entities`` and ``entities_from_text``."""
    if "answer_entities" in answer:
        from_text, entities = answer.get("answer_entities_from_text"), answer["answer_entities"]
    else:
        from_text, entities = answer.get("entities_from_text"), answer.get("entities")
    return [] if from_text else list(entities or [])


def running_hit1(hits: Sequence[bool]) -> float:
    return sum(hits) / len(hits) if hits else 0.0
