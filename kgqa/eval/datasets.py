"""Benchmarks in MetaQA's layout: question files, question sets, seeded samples, KB names.

A data folder holds ``kb.txt`` (``subject|relation|object``, optional: the names used to read
entities out of free-text answers) and one folder per question set: ``<n>-hop/`` (questions
answered ``n`` hops from their topic entity) and ``conj/`` (questions naming two or more
entities, answered by what they share). Each set folder has ``qa_<split>.txt``, one question a
line, ``question with [Topic Entity]<TAB>answer1|answer2`` (several ``[entities]`` allowed),
and optionally ``qa_<split>_qtype.txt`` beside it, one label a line (MetaQA's
``movie_to_writer_to_movie``; :mod:`kgqa.eval.metaqa` reads those labels as relation paths).

A question's id is its 1-based line number in its file, so a record in a run's
``records.jsonl`` can always be traced back to the line it came from. Nothing here knows a
particular dataset: a new benchmark in this layout needs no code.
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

from kgqa.answers import EntityNames, bracketed_entities, strip_brackets
from kgqa.errors import ConfigError, KBFormatError
from kgqa.graph.paths import RelationPath

SPLITS = ("dev", "test", "train")
KB_FILE = "kb.txt"
CONJ = "conj"
_HOP_SET = re.compile(r"^(\d+)-hop$")


@dataclass(frozen=True)
class Question:
    """One benchmark question. ``id`` is its 1-based line number in ``source``; ``hops`` the
    hop count of its set (``None`` for a set without one, e.g. ``conj``)."""

    id: int
    text: str
    entities: tuple[str, ...]
    answers: tuple[str, ...]
    qtype: str | None = None
    hops: int | None = None
    source: str = ""

    @property
    def entity(self) -> str:
        """The first topic entity (a hop-set question names exactly one)."""
        return self.entities[0]

    @property
    def plain_text(self) -> str:
        """The question with the brackets around its entities removed."""
        return strip_brackets(self.text)


# The gold relation path of a question, read from its qtype label by a benchmark that has them.
GoldPath = Callable[[Question], RelationPath | None]


@dataclass(frozen=True)
class QuestionSet:
    """One question folder of a data folder: ``2-hop`` (``hops`` 2) or ``conj`` (``hops`` None)."""

    name: str
    hops: int | None = None

    @classmethod
    def named(cls, name: str) -> QuestionSet:
        """``"2-hop"``, ``"2"`` or ``"conj"``."""
        name = name.strip()
        if name.isdigit():
            name = f"{int(name)}-hop"
        m = _HOP_SET.match(name)
        if m:
            return cls(name, int(m.group(1)))
        if not name or "/" in name or name.startswith("."):
            raise ConfigError(f"{name!r} is not a question set (1-hop, 2-hop, ..., conj)")
        return cls(name)

    @property
    def sort_key(self) -> tuple[int, int, str]:
        """Hop sets first, by hop count, then the others by name."""
        return (0, self.hops, self.name) if self.hops is not None else (1, 0, self.name)

    @property
    def key(self) -> int | str:
        """What result rows and reports call it: the hop count, or the folder name."""
        return self.hops if self.hops is not None else self.name

    @property
    def slug(self) -> str:
        """The run-name part: ``2hop``, ``conj``."""
        return f"{self.hops}hop" if self.hops is not None else self.name


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
    entities = tuple(bracketed_entities(question))
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


@dataclass(frozen=True)
class Dataset:
    """A data folder in MetaQA's layout. ``gold_path`` reads a question's qtype label as its
    relation path (the faithfulness check's omissions); ``None``: the labels are kept on the
    questions but not interpreted."""

    root: Path
    gold_path: GoldPath | None = None

    @classmethod
    def open(cls, root: Path, gold_path: GoldPath | None = None) -> Dataset:
        if not root.is_dir():
            raise ConfigError(f"--data {root} is not a directory")
        return cls(root, gold_path)

    @property
    def name(self) -> str:
        """The data folder's name: what run names start with."""
        return self.root.resolve().name

    def sets(self) -> list[QuestionSet]:
        """The question sets the folder has (folders ``<n>-hop`` and ``conj`` with a
        ``qa_*.txt`` in them), hop sets first."""
        found = []
        for d in self.root.iterdir():
            if (
                d.is_dir()
                and (_HOP_SET.match(d.name) or d.name == CONJ)
                and any(d.glob("qa_*.txt"))
            ):
                found.append(QuestionSet.named(d.name))
        return sorted(found, key=lambda s: s.sort_key)

    def question_file(self, qset: QuestionSet, split: str) -> Path:
        """``<root>/<set>/qa_<split>.txt``, checked, with an error that says what exists."""
        if split not in SPLITS:
            raise ConfigError(f"--split must be one of {', '.join(SPLITS)}, not {split!r}")
        folder = self.root / qset.name
        if not folder.is_dir():
            have = ", ".join(s.name for s in self.sets()) or "none"
            raise ConfigError(
                f"no {qset.name} questions in {self.root} (no folder {qset.name}/; "
                f"question sets there: {have})"
            )
        path = folder / f"qa_{split}.txt"
        if not path.is_file():
            files = sorted(p.name for p in folder.glob("qa_*.txt"))
            hint = f"; found: {', '.join(files)}" if files else ""
            raise ConfigError(
                f"no {split} split for {qset.name} questions: {path} is missing{hint}"
            )
        return path

    def load(self, qset: QuestionSet, split: str) -> list[Question]:
        """The questions of one set and split, with qtypes from ``qa_<split>_qtype.txt`` if
        present."""
        path = self.question_file(qset, split)
        qtype = path.with_name(f"qa_{split}_qtype.txt")
        return read_questions(path, qtype if qtype.is_file() else None, hops=qset.hops)

    def kb_file(self) -> Path | None:
        kb = self.root / KB_FILE
        return kb if kb.is_file() else None

    def entity_names(self) -> EntityNames | None:
        """The names of ``kb.txt`` (``None`` without one: answers are then read against the
        gold answers only)."""
        kb = self.kb_file()
        return EntityNames.of(read_entity_names(kb)) if kb is not None else None


def question_file(data_dir: Path, hops: int | str, split: str) -> Path:
    """``<data_dir>/<n>-hop/qa_<split>.txt`` (or another set's), checked."""
    return Dataset(data_dir).question_file(QuestionSet.named(str(hops)), split)


def load_split(data_dir: Path, hops: int | str, split: str) -> list[Question]:
    """The questions of one split of one set (``2``, ``"2-hop"``, ``"conj"``)."""
    return Dataset(data_dir).load(QuestionSet.named(str(hops)), split)
