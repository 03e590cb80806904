"""MetaQA (vanilla) question files and the paper's seeded samples.

A question file has one question a line, ``question with [Topic Entity]<TAB>answer1|answer2``;
the file ``qa_<split>_qtype.txt`` beside it holds one relation-path label per line
(``movie_to_writer_to_movie``). A question's id is its 1-based line number in the file, so a
record in a run's ``records.jsonl`` can always be traced back to the line it came from.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from kgqa.errors import ConfigError, KBFormatError

HOPS = (1, 2, 3)
SPLITS = ("dev", "test", "train")

_ENTITY = re.compile(r"\[([^\[\]]+)\]")


@dataclass(frozen=True)
class Question:
    """One benchmark question. ``id`` is its 1-based line number in ``source``."""

    id: int
    text: str
    entities: tuple[str, ...]
    answers: tuple[str, ...]
    qtype: str | None = None
    hops: int | None = None
    source: str = ""

    @property
    def entity(self) -> str:
        """The topic entity (MetaQA questions name exactly one)."""
        return self.entities[0]

    @property
    def plain_text(self) -> str:
        """The question with the brackets around the entity removed."""
        return _ENTITY.sub(r"\1", self.text)


def parse_line(line: str, number: int, source: str = "<memory>") -> Question:
    """Parse ``question with [Entity]<TAB>a1|a2``; a malformed line is a :class:`KBFormatError`
    naming the file and line."""
    text = line.rstrip("\r\n")
    if number == 1 and text.startswith("\ufeff"):
        text = text[1:]
    parts = text.split("\t")
    if len(parts) != 2:
        raise KBFormatError(
            f"{source}:{number}: expected 'question<TAB>answers', found {len(parts)} field(s)"
        )
    question, answers = parts[0].strip(), parts[1].strip()
    entities = tuple(e.strip() for e in _ENTITY.findall(question))
    if not entities:
        raise KBFormatError(f"{source}:{number}: no [bracketed] topic entity in {question!r}")
    gold = tuple(a.strip() for a in answers.split("|") if a.strip())
    if not gold:
        raise KBFormatError(f"{source}:{number}: no gold answers")
    return Question(id=number, text=question, entities=entities, answers=gold, source=source)


def read_questions(
    path: Path, qtype_path: Path | None = None, hops: int | None = None
) -> list[Question]:
    """Every question of ``path`` in file order, with its qtype label when ``qtype_path`` is
    given (it must have exactly one line per question)."""
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except FileNotFoundError as e:
        raise KBFormatError(f"question file {path} does not exist") from e
    except (OSError, UnicodeDecodeError) as e:
        raise KBFormatError(f"cannot read question file {path}: {e}") from e
    qtypes: list[str] | None = None
    if qtype_path is not None:
        try:
            qtypes = qtype_path.read_text(encoding="utf-8").splitlines()
        except OSError as e:
            raise KBFormatError(f"cannot read qtype file {qtype_path}: {e}") from e
    questions: list[Question] = []
    for number, line in enumerate(lines, start=1):
        if not line.strip():
            continue
        q = parse_line(line, number, str(path))
        qtype = None
        if qtypes is not None:
            if number > len(qtypes):
                raise KBFormatError(
                    f"{qtype_path} has {len(qtypes)} lines but {path} has a question on line {number}"
                )
            qtype = qtypes[number - 1].strip() or None
        questions.append(
            Question(q.id, q.text, q.entities, q.answers, qtype=qtype, hops=hops, source=str(path))
        )
    return questions


def question_file(data_dir: Path, hops: int, split: str) -> Path:
    """``<data_dir>/<hops>-hop/qa_<split>.txt``, checked, with an error that says what exists."""
    if hops not in HOPS:
        raise ConfigError(f"--hops must be one of {', '.join(map(str, HOPS))}, not {hops}")
    if split not in SPLITS:
        raise ConfigError(f"--split must be one of {', '.join(SPLITS)}, not {split!r}")
    path = data_dir / f"{hops}-hop" / f"qa_{split}.txt"
    if not path.is_file():
        have = sorted(p.name for p in (data_dir / f"{hops}-hop").glob("qa_*.txt"))
        hint = f"; found: {', '.join(have)}" if have else ""
        raise ConfigError(f"no {split} split for {hops}-hop questions: {path} is missing{hint}")
    return path


def load_split(data_dir: Path, hops: int, split: str) -> list[Question]:
    """The questions of one MetaQA split, with qtypes from ``qa_<split>_qtype.txt`` if present."""
    path = question_file(data_dir, hops, split)
    qtype = path.with_name(f"qa_{split}_qtype.txt")
    return read_questions(path, qtype if qtype.is_file() else None, hops=hops)


def sample(questions: Sequence[Question], limit: int | None, seed: int) -> list[Question]:
    """The paper's seeded sample: ``random.Random(seed).sample`` over the questions in file
    order, cut to ``limit``.

    The whole file is permuted and then cut, so a smaller sample with the same seed is always
    a prefix of a larger one (the first 30 of a 100-question sample are the 30-question sample):
    runs of different sizes share their questions. ``limit=None`` (or a limit at least the
    file's size) returns every question in file order."""
    if limit is None or limit >= len(questions):
        return list(questions)
    if limit < 0:
        raise ConfigError(f"--limit must be positive, not {limit}")
    return random.Random(seed).sample(list(questions), k=len(questions))[:limit]


def read_entity_names(kb_path: Path) -> set[str]:
    """Every subject and object name of a ``subject|relation|object`` KB file (used to
    recognise entities in free-text answers). Malformed lines are skipped: this is a
    vocabulary, not a load."""
    names: set[str] = set()
    try:
        with kb_path.open(encoding="utf-8-sig") as f:
            for line in f:
                parts = line.rstrip("\r\n").split("|")
                if len(parts) == 3:
                    names.add(parts[0].strip())
                    names.add(parts[2].strip())
    except OSError as e:
        raise KBFormatError(f"cannot read KB file {kb_path}: {e}") from e
    names.discard("")
    return names
