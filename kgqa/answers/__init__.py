"""Reading answer text: the answer line, the items it lists, the name spans in prose, and the
``[bracketed]`` names of a question. One definition of each, shared by the pipeline (grounding),
the faithfulness check and the metrics, so that they all read an answer the same way.

- :mod:`~kgqa.answers.line`: ``answer_line``, ``answer_names``, ``complete_answer_line``,
  ``split_cut_line``
- :mod:`~kgqa.answers.items`: ``answer_items``, ``clean_item``, ``first_entity``, ``Item``,
  ``EntityNames``, ``norm``
- :mod:`~kgqa.answers.names`: ``name_spans``, ``pick_names``, ``looks_like_name``,
  ``declines``, ``text_candidates``, ``mentions``, ``STOP_WORDS``
- :mod:`~kgqa.answers.brackets`: ``bracketed_entities``, ``topic_names``, ``strip_brackets``,
  ``BRACKETED``
"""

from kgqa.answers.brackets import BRACKETED, bracketed_entities, strip_brackets, topic_names
from kgqa.answers.items import EntityNames, Item, answer_items, clean_item, first_entity, norm
from kgqa.answers.line import answer_line, answer_names, complete_answer_line, split_cut_line
from kgqa.answers.names import (
    MAX_ITEM_WORDS,
    STOP_WORDS,
    TITLE_ENDINGS,
    Span,
    declines,
    looks_like_name,
    mentions,
    name_spans,
    pick_names,
    text_candidates,
)

__all__ = [
    "BRACKETED",
    "MAX_ITEM_WORDS",
    "STOP_WORDS",
    "TITLE_ENDINGS",
    "EntityNames",
    "Item",
    "Span",
    "answer_items",
    "answer_line",
    "answer_names",
    "bracketed_entities",
    "complete_answer_line",
    "clean_item",
    "declines",
    "first_entity",
    "looks_like_name",
    "mentions",
    "name_spans",
    "norm",
    "pick_names",
    "split_cut_line",
    "strip_brackets",
    "text_candidates",
    "topic_names",
]
