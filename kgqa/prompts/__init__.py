"""Prompt templates: package files that a user can override by name.

A template file is plain text with ``{placeholder}`` fields (lower-case names in braces; any
other brace is literal). Lines ``### system``, ``### user`` and ``### assistant`` split it into
chat messages, so in-context examples can be real turns; a file without them is one user
message. Each prompt declares its placeholders, and a template that lacks one or has an
unknown one fails when it is loaded, not in the middle of a run.

Overrides: ``<settings.llm.prompts_dir>/<name>.txt`` replaces the packaged ``<name>.txt``.

In-context examples are the KB's own (its profile's, :mod:`kgqa.profile`): a line
``{examples}`` on its own in a decomposition prompt is replaced, when the template is built,
by the example turns the caller passes (``### user`` / ``### assistant`` pairs). A user's own
prompt file may leave the line out and write its examples itself.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from importlib import resources
from pathlib import Path

from kgqa.errors import PromptError
from kgqa.llm.base import ChatMessage

# Every packaged prompt and the placeholders it must contain (no more, no fewer).
PLACEHOLDERS: Mapping[str, frozenset[str]] = {
    "decompose": frozenset({"question"}),
    # Graph mode: the same job in terse steps (fewer tokens to generate; docs/results.md).
    "decompose_steps": frozenset({"question"}),
    "reformulate": frozenset({"sub_question", "previous"}),
    "answer": frozenset({"question", "triples"}),
    "answer_llm": frozenset({"question"}),
    "synthesize": frozenset({"question", "reasoning", "sub_answers"}),
}

# Prompts that take the KB's in-context examples (the ``{examples}`` line).
WITH_EXAMPLES = frozenset({"decompose", "decompose_steps"})
EXAMPLES_LINE = "{examples}"

_FIELD = re.compile(r"\{([a-z_][a-z0-9_]*)\}")
_ROLE = re.compile(r"^### (system|user|assistant)[ \t]*$", re.MULTILINE)


class PromptTemplate:
    """One prompt, loaded and checked at construction; :meth:`render` fills it in."""

    def __init__(
        self,
        name: str,
        prompts_dir: Path | None = None,
        *,
        required: frozenset[str] | None = None,
        text: str | None = None,
        examples: Sequence[tuple[str, str]] = (),
    ):
        if required is None:
            if name not in PLACEHOLDERS:
                raise PromptError(
                    f"unknown prompt {name!r}; known: {', '.join(sorted(PLACEHOLDERS))}"
                )
            required = PLACEHOLDERS[name]
        self.name = name
        self.required = required
        if text is not None:
            self.source = "<text>"
        else:
            text, self.source = _read(name, prompts_dir)
        text = _with_examples(text, examples)
        self.text = text
        found = set(_FIELD.findall(text))
        missing = sorted(required - found)
        unknown = sorted(found - required)
        if missing:
            raise PromptError(
                f"prompt {name!r} ({self.source}) lacks placeholder(s) "
                + ", ".join("{" + m + "}" for m in missing)
            )
        if unknown:
            raise PromptError(
                f"prompt {name!r} ({self.source}) has unknown placeholder(s) "
                + ", ".join("{" + u + "}" for u in unknown)
                + f"; allowed: {', '.join(sorted(required))}"
            )
        self._parts = _split_roles(text, name, self.source)

    def render(self, **values: str) -> list[ChatMessage]:
        """The chat messages with every placeholder replaced (values are inserted verbatim,
        never re-scanned, so braces in a question cannot inject another field)."""
        given = set(values)
        if given != self.required:
            raise PromptError(
                f"prompt {self.name!r} needs {sorted(self.required)}, got {sorted(given)}"
            )
        return [
            {"role": role, "content": _FIELD.sub(lambda m: values[m.group(1)], body)}
            for role, body in self._parts
        ]


def _with_examples(text: str, examples: Sequence[tuple[str, str]]) -> str:
    """``text`` with its ``{examples}`` line replaced by the example turns (none: removed).
    A field-shaped ``{name}`` inside an example is broken up, so an example cannot add a
    field."""
    lines = text.splitlines()
    if EXAMPLES_LINE not in (ln.strip() for ln in lines):
        return text
    turns: list[str] = []
    for user, assistant in examples:
        turns += ["### user", _literal(user), "### assistant", _literal(assistant)]
    out: list[str] = []
    for ln in lines:
        out.extend(turns if ln.strip() == EXAMPLES_LINE else [ln])
    return "\n".join(out) + ("\n" if text.endswith("\n") else "")


def _literal(text: str) -> str:
    # A literal brace pair that is not a field stays as it is (the field pattern is strict);
    # a field-shaped one in an example ("{question}") is broken with a zero-width space.
    return _FIELD.sub(lambda m: "{\u200b" + m.group(1) + "}", text)


def _read(name: str, prompts_dir: Path | None) -> tuple[str, str]:
    if prompts_dir is not None:
        override = Path(prompts_dir) / f"{name}.txt"
        if override.is_file():
            try:
                return override.read_text(encoding="utf-8"), str(override)
            except OSError as e:
                raise PromptError(f"cannot read prompt {override}: {e}") from e
    resource = resources.files(__package__).joinpath(f"{name}.txt")
    try:
        return resource.read_text(encoding="utf-8"), f"kgqa/prompts/{name}.txt"
    except (OSError, FileNotFoundError) as e:
        raise PromptError(f"packaged prompt {name}.txt is missing: reinstall kgqa") from e


def _split_roles(text: str, name: str, source: str) -> list[tuple[str, str]]:
    marks = list(_ROLE.finditer(text))
    if not marks:
        return [("user", text.strip())]
    if text[: marks[0].start()].strip():
        raise PromptError(f"prompt {name!r} ({source}): text before the first '### <role>' line")
    parts = []
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(text)
        parts.append((mark.group(1), text[mark.end() : end].strip()))
    if parts[-1][0] != "user":
        raise PromptError(f"prompt {name!r} ({source}): the last message must be '### user'")
    return parts
