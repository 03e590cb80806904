"""Naming a relation with the LLM: from its name and a few real triples, the words a person
would use for it (what its subjects and objects are called, the verb between them, and how
one asks for each side). Asked once per relation when a profile is derived, decoded greedily
under a JSON schema, checked, and replaced by the name-only rules when the answer does not
hold up. The prompt's own examples are invented relations, not any KB's.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path

from kgqa.llm.base import LLM, GenParams
from kgqa.profile.model import RelationWords

_SCHEMA = json.dumps(
    {
        "type": "object",
        "properties": {
            "subjects": {"type": "string", "maxLength": 40},
            "objects": {"type": "string", "maxLength": 40},
            "verb": {"type": "string", "maxLength": 40},
            "ask_object": {"type": "string", "maxLength": 80},
            "ask_subject": {"type": "string", "maxLength": 80},
        },
        "required": ["subjects", "objects", "verb", "ask_object", "ask_subject"],
    }
)

_SYSTEM = (
    "You name the relations of a knowledge graph. Given a relation and example triples "
    "(subject, relation, object), answer in JSON: 'subjects' and 'objects' are short plural "
    "nouns for what the subjects and the objects are; 'verb' is a short phrase so that "
    "'<subjects> <verb> <objects>' reads as English; 'ask_object' asks for the object of a "
    "subject X; 'ask_subject' asks which subjects have the object X. Use X for the entity."
)
# Invented relations: they teach the shape of the answer, not any KB's words.
_EXAMPLES = (
    (
        "relation: authored_by\n(The Silent Shore, authored_by, Mara Kell)\n"
        "(Winter Roads, authored_by, Tom Ayre)",
        {
            "subjects": "books",
            "objects": "authors",
            "verb": "written by",
            "ask_object": "who wrote X",
            "ask_subject": "which books did X write",
        },
    ),
    (
        "relation: locatedIn\n(Port Avel, locatedIn, Norland)\n(Kessa, locatedIn, Ostmark)",
        {
            "subjects": "cities",
            "objects": "countries",
            "verb": "located in",
            "ask_object": "which country is X in",
            "ask_subject": "which cities are in X",
        },
    ),
    (
        "relation: __org__company__founded_year\n(Brightline Labs, __org__company__founded_year, "
        "1998)\n(Orvo Foods, __org__company__founded_year, 2004)",
        {
            "subjects": "companies",
            "objects": "years",
            "verb": "founded in",
            "ask_object": "when was X founded",
            "ask_subject": "which companies were founded in X",
        },
    ),
)
_WORD = re.compile(r"^[\w][\w '&/\-.]*$", re.UNICODE)


def _prompt(relation: str, examples: Sequence[tuple[str, str]]) -> list[dict[str, str]]:
    messages = [{"role": "system", "content": _SYSTEM}]
    for user, answer in _EXAMPLES:
        messages.append({"role": "user", "content": user})
        messages.append({"role": "assistant", "content": json.dumps(answer)})
    lines = [f"relation: {relation}"] + [f"({s}, {relation}, {o})" for s, o in examples[:4]]
    messages.append({"role": "user", "content": "\n".join(lines)})
    return messages


def _clean(text: object, max_words: int) -> str | None:
    if not isinstance(text, str):
        return None
    value = " ".join(text.strip().lower().split())
    if not value or len(value.split()) > max_words or not _WORD.match(value):
        return None
    return value


def _question(text: object) -> str | None:
    if not isinstance(text, str):
        return None
    value = " ".join(text.strip().rstrip("?").split())
    if not re.search(r"\bX\b", value) or len(value.split()) > 14:
        return None
    return value[0].lower() + value[1:] if value else None


class RelationNamer:
    """``name(relation, words, examples) -> RelationWords | None`` with the LLM (``None``:
    the answer did not hold up; the caller keeps the rule-based words).

    ``cache``: a JSON file of earlier answers keyed by model and prompt (decoding is greedy,
    so an answer never changes): deriving the profile of the same KB again asks nothing."""

    def __init__(self, llm: LLM, max_tokens: int = 120, cache: Path | None = None):
        self.llm = llm
        self.params = GenParams(max_tokens=max_tokens, temperature=0.0, grammar=_SCHEMA)
        self.cache = cache
        self._answers: dict[str, str] | None = None

    def _cached(self) -> dict[str, str]:
        if self._answers is None:
            self._answers = {}
            if self.cache is not None and self.cache.is_file():
                try:
                    loaded = json.loads(self.cache.read_text(encoding="utf-8"))
                    self._answers = {str(k): str(v) for k, v in loaded.items()}
                except (OSError, ValueError, AttributeError):
                    self._answers = {}  # a damaged cache is only a slower derivation
        return self._answers

    def _ask(self, messages: list[dict[str, str]]) -> str:
        key = hashlib.sha256(
            json.dumps([self.llm.name, messages], sort_keys=True).encode()
        ).hexdigest()
        answers = self._cached()
        if key not in answers:
            answers[key] = self.llm.complete(messages, self.params).text  # type: ignore[arg-type]
            if self.cache is not None:
                self.cache.parent.mkdir(parents=True, exist_ok=True)
                tmp = self.cache.with_name(f".{self.cache.name}.tmp-{os.getpid()}")
                tmp.write_text(json.dumps(answers), encoding="utf-8")
                os.replace(tmp, self.cache)
        return answers[key]

    @property
    def name_(self) -> str:
        return f"llm:{self.llm.name}"

    def name(
        self, relation: str, words: str, examples: Sequence[tuple[str, str]]
    ) -> RelationWords | None:
        try:
            data = json.loads(self._ask(_prompt(relation, examples)))
        except ValueError:
            return None
        if not isinstance(data, dict):
            return None
        subject = _clean(data.get("subjects"), 4)
        obj = _clean(data.get("objects"), 4)
        verb = _clean(data.get("verb"), 5)
        if not (subject and obj and verb) or subject == obj and not verb:
            return None
        return RelationWords(
            words=words,
            subject=subject,
            object=obj,
            verb=verb,
            ask_object=_question(data.get("ask_object")) or "",
            ask_subject=_question(data.get("ask_subject")) or "",
            source="llm",
        )
