"""A user's KB profile file: overrides any part of the derived profile (TOML).

::

    after_out_step = "back"          # optional: after an out-step, only back (see KBProfile)
    stop_words = ["film", "films"]   # added to the derived ones

    [relations.directed_by]          # any relation of the KB; all keys optional
    subject = "movies"               # what its subjects are called
    object = "directors"             # what its objects are called (alias: noun)
    verb = "directed by"             # "<subject> <verb> <object>"
    ask_object = "who directed X"
    ask_subject = "which movies did X direct"
    out = ["who directed X", ...]    # phrasings of the step out of X (replace the derived)
    in = ["movies directed by X"]    # ... and into X

    [[examples]]                     # replace the derived in-context examples when given
    question = "who directed the movies written by [John Shirley]"
    steps = ["movies written by [John Shirley]", "directors of those movies"]
    sub_questions = ["Which movies were written by [John Shirley]?", "Who directed those movies?"]
    reasoning = "I first need the movies written by [John Shirley], then their directors."

A top-level ``subject_noun`` is the default ``subject`` of every relation the file names.
Packaged profiles are chosen by name (``metaqa``: ``kgqa/data/profiles/metaqa.toml``, the
hand-written MetaQA vocabulary; optional, never the default).
"""

from __future__ import annotations

import tomllib
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Any

from kgqa.errors import ConfigError
from kgqa.graph.paths import PathStep
from kgqa.profile.model import KBProfile, RelationProfile, StepExample

_WORD_KEYS = ("subject", "object", "verb", "ask_object", "ask_subject")


def packaged_profiles() -> list[str]:
    root = resources.files("kgqa") / "data" / "profiles"
    return sorted(p.name[: -len(".toml")] for p in root.iterdir() if p.name.endswith(".toml"))


def read_profile_file(spec: str | Path) -> tuple[dict[str, Any], str]:
    """The parsed TOML of a profile file (a path, or the name of a packaged profile) and the
    source it came from."""
    text_spec = str(spec)
    if text_spec in packaged_profiles():
        resource = resources.files("kgqa") / "data" / "profiles" / f"{text_spec}.toml"
        text, source = resource.read_text(encoding="utf-8"), f"packaged:{text_spec}"
    else:
        path = Path(text_spec).expanduser()
        if not path.is_file():
            known = ", ".join(packaged_profiles())
            raise ConfigError(
                f"profile file {path} does not exist (packaged profiles: {known or 'none'})"
            )
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as e:
            raise ConfigError(f"cannot read profile file {path}: {e}") from e
        source = str(path)
    try:
        return tomllib.loads(text), source
    except tomllib.TOMLDecodeError as e:
        raise ConfigError(f"profile file {source} is not valid TOML: {e}") from e


def apply_profile_file(profile: KBProfile, spec: str | Path) -> KBProfile:
    """``profile`` with the parts the file gives replaced (see the module doc). A file that
    names none of the KB's relations is an error: a profile written for another KB must not
    pass silently (relations the KB lacks are left out: a KB may be a sample of another)."""
    data, source = read_profile_file(spec)
    relations = dict(profile.relations)
    phrases = dict(profile.phrases)
    phrased = False
    tables = data.get("relations", {})
    if not isinstance(tables, dict):
        raise ConfigError(f"profile file {source}: [relations] must be a table")
    # A file may describe more relations than a KB (a sample of the KB it was written for
    # has fewer); one that shares none of them was written for another KB.
    if relations and tables and not set(tables) & set(relations):
        raise ConfigError(
            f"profile file {source} names none of this KB's relations "
            f"({', '.join(sorted(tables)[:3])}, ...); is it the profile of another KB?"
        )
    tables = {k: v for k, v in tables.items() if k in relations or not relations}
    default_subject = data.get("subject_noun")
    for name, table in tables.items():
        if not isinstance(table, dict):
            raise ConfigError(f"profile file {source}: [relations.{name}] must be a table")
        base = relations.get(name)
        words = base.words if base is not None else profile.words(name)
        given = {k: str(table[k]) for k in _WORD_KEYS if table.get(k)}
        if table.get("noun") and "object" not in given:
            given["object"] = str(table["noun"])
        if default_subject and "subject" not in given:
            given["subject"] = str(default_subject)
        words = replace(words, **given, source="file") if given else words
        relations[name] = (
            replace(base, words=words)
            if base is not None
            else RelationProfile(name, 0, 0, 0, words)
        )
        for key, outgoing in (("out", True), ("in", False)):
            if table.get(key):
                phrases[PathStep(name, outgoing)] = tuple(str(p) for p in table[key])
                phrased = True
    changes: dict[str, Any] = {
        "relations": relations,
        "phrases": phrases,
        "source": f"{profile.source}+{source}",
    }
    if phrased:
        changes["phrases_from"] = "file"
    if data.get("after_out_step"):
        if data["after_out_step"] not in ("any", "back"):
            raise ConfigError(f"profile file {source}: after_out_step is 'any' or 'back'")
        changes["after_out_step"] = str(data["after_out_step"])
    if data.get("stop_words"):
        changes["stop_words"] = profile.stop_words | {str(w) for w in data["stop_words"]}
    if data.get("examples"):
        changes["examples"] = tuple(_example(e, source) for e in data["examples"])
    return replace(profile, **changes)


def _example(table: Any, source: str) -> StepExample:
    if not isinstance(table, dict) or not table.get("question"):
        raise ConfigError(f"profile file {source}: each [[examples]] needs a question")
    if not table.get("steps") and not table.get("sub_questions"):
        raise ConfigError(
            f"profile file {source}: example {table['question']!r} needs steps (graph mode) "
            "or sub_questions (the paper's modes)"
        )
    subs = tuple(str(s) for s in table.get("sub_questions", ()))
    return StepExample(
        str(table["question"]),
        (),
        tuple(str(s) for s in table.get("steps", ())),
        subs,
        str(table.get("reasoning", "")),
    )


def profile_without_graph(spec: str | Path) -> KBProfile:
    """A profile from a file alone (no graph derivation): for tests and for a KB whose
    profile is written by hand in full."""
    return apply_profile_file(KBProfile("file", "", {}), spec)
