"""One root exception, specific subclasses.

The CLI turns any :class:`KGQAError` into one line on stderr and the exit code of the class,
so a user error never shows a traceback. Messages name the setting, path or choice to fix.
"""

from __future__ import annotations


class KGQAError(Exception):
    """Root of every error kgqa raises on purpose."""

    exit_code = 1


class ConfigError(KGQAError):
    """A setting has an invalid value, or a config file cannot be read."""

    exit_code = 2


class KBFormatError(KGQAError):
    """A knowledge-base file has malformed lines (see ``problems``) or cannot be read."""

    exit_code = 3

    def __init__(self, message: str, problems: list[tuple[int, str]] | None = None):
        super().__init__(message)
        self.problems = problems or []


class GraphUnavailable(KGQAError):
    """Neo4j cannot be reached, or refused the credentials."""

    exit_code = 4


class Neo4jServerError(KGQAError):
    """The local Neo4j server could not be installed, started or stopped."""

    exit_code = 4


class EntityNotFound(KGQAError):
    """A topic entity is not in the graph; ``suggestions`` holds close names."""

    exit_code = 5

    def __init__(self, name: str, suggestions: list[str] | None = None):
        self.name = name
        self.suggestions = suggestions or []
        hint = (
            f"; did you mean: {', '.join(repr(s) for s in self.suggestions)}"
            if self.suggestions
            else ""
        )
        super().__init__(f"entity {name!r} is not in the graph{hint}")


class AmbiguousEntity(KGQAError):
    """Entity linking found several equally good matches and will not guess."""

    exit_code = 5


class IndexMismatch(KGQAError):
    """The vector index is missing, or was built with another model or KB."""

    exit_code = 6


class ModelNotFound(KGQAError):
    """An LLM or embedding model cannot be found or loaded."""

    exit_code = 7


class LLMUnavailable(KGQAError):
    """The LLM server cannot be reached, refused the API key, or cannot do what was asked
    (a grammar it does not enforce, say)."""

    exit_code = 8


class PromptError(KGQAError):
    """A prompt template is missing a placeholder or cannot be read."""

    exit_code = 2


class PromptTooLong(KGQAError):
    """A prompt does not fit the LLM's context window (``llm.n_ctx``), even cut to fit."""

    exit_code = 2


class BadQuestion(KGQAError):
    """The question itself cannot be asked as written (empty ``[]`` brackets, say)."""

    exit_code = 2
