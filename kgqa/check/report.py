"""The check of one answer (:class:`FaithReport`): its claims, the mistakes among them, the
omissions along the relation path, and how the report is printed (``ask --check``), stored
(an eval record's metrics) and served (``--json``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from kgqa.check.claims import STAGE_ANSWER, Claim, sub_answer_stage
from kgqa.graph.paths import RelationPath, describe_path
from kgqa.types import Answer

# How many omitted names a report lists (all of them are counted).
LISTED_OMISSIONS = 20


@dataclass(frozen=True)
class FaithReport:
    """The check of one answer. ``omissions`` and ``path_reached`` are ``None`` when no
    relation path was known (nothing to compare against)."""

    mistakes: tuple[Claim, ...]
    omissions: tuple[str, ...] | None
    claims: tuple[Claim, ...]
    path_reached: tuple[str, ...] | None
    path: RelationPath | None = None
    # "gold" (the question's own path, from the benchmark), "answer" (the path the answer
    # followed) or None.
    path_source: str | None = None
    hops: int = 0
    seconds: float = 0.0

    @property
    def answer_claims(self) -> tuple[Claim, ...]:
        return tuple(c for c in self.claims if c.stage == STAGE_ANSWER)

    @property
    def answer_mistakes(self) -> tuple[Claim, ...]:
        return tuple(c for c in self.mistakes if c.stage == STAGE_ANSWER)

    @property
    def off_path(self) -> tuple[Claim, ...]:
        """Final-answer claims the KB supports but the relation path does not reach."""
        return tuple(c for c in self.answer_claims if c.supported and c.on_path is False)

    def _path_json(self) -> list[list[str]] | None:
        return [s.as_list() for s in self.path] if self.path is not None else None

    def as_metrics(self, listed: int = LISTED_OMISSIONS) -> dict[str, Any]:
        """The fields an eval record's ``metrics`` gets: counts at the top (aggregated by
        :func:`kgqa.eval.metrics.aggregate` and :func:`kgqa.eval.faithfulness.summarize`),
        details under ``faith``."""
        out: dict[str, Any] = {
            "mistakes": len(self.mistakes),
            "answer_claims": len(self.answer_claims),
            "answer_mistakes": len(self.answer_mistakes),
        }
        if self.omissions is not None:
            out["omissions"] = len(self.omissions)
            out["off_path"] = len(self.off_path)
        out["faith"] = {
            "hops": self.hops,
            "path": self._path_json(),
            "path_source": self.path_source,
            "path_reached": len(self.path_reached) if self.path_reached is not None else None,
            "claims": len(self.claims),
            "mistakes": [c.as_dict() for c in self.mistakes],
            "omitted": list(self.omissions[:listed]) if self.omissions is not None else None,
            "seconds": round(self.seconds, 4),
        }
        return out

    def to_json(self) -> dict[str, Any]:
        """Everything, for ``ask --check --json``."""
        return {
            "hops": self.hops,
            "path": self._path_json(),
            "path_source": self.path_source,
            "claims": [c.as_dict() for c in self.claims],
            "mistakes": [c.as_dict() for c in self.mistakes],
            "omissions": list(self.omissions) if self.omissions is not None else None,
            "path_reached": list(self.path_reached) if self.path_reached is not None else None,
            "seconds": round(self.seconds, 4),
        }

    def format(self, answer: Answer | None = None, listed: int = LISTED_OMISSIONS) -> str:
        """The text ``ask --check`` prints: each mistake with its stage and span (and the
        sub-question it arose in), then the omissions count and the first names."""
        questions = (
            {sub_answer_stage(s.index): s.original for s in answer.sub_answers} if answer else {}
        )
        n_ans = len(self.answer_claims)
        lines = [
            f"{len(self.claims)} claim{'s' if len(self.claims) != 1 else ''} checked against "
            f"the KB ({n_ans} in the final answer), "
            f"within {self.hops} hop{'s' if self.hops != 1 else ''} of the topic entities"
        ]
        if self.mistakes:
            lines.append(f"mistakes: {len(self.mistakes)}")
            for c in self.mistakes:
                where = c.stage
                if c.stage in questions:
                    where += f" ({questions[c.stage]})"
                lines.append(f"  - {where}: {c.span!r}: {c.reason}")
        else:
            lines.append("mistakes: none")
        if self.omissions is None:
            lines.append("omissions: not computed (no relation path)")
        else:
            via = f"{describe_path(self.path or ())} ({self.path_source} path)"
            reached = len(self.path_reached or ())
            if self.omissions:
                shown = ", ".join(self.omissions[:listed])
                more = len(self.omissions) - min(listed, len(self.omissions))
                lines.append(
                    f"omissions: {len(self.omissions)} of {reached} entities reached by {via}: "
                    f"{shown}" + (f" (and {more} more)" if more else "")
                )
            else:
                lines.append(f"omissions: none ({reached} entities reached by {via})")
            if self.off_path:
                names = ", ".join(c.entity or c.span for c in self.off_path[:listed])
                lines.append(f"answers in the KB but off the path: {names}")
        return "\n".join(lines)
