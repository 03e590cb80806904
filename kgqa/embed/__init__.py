"""Sentence embedders: one interface (:class:`~kgqa.embed.base.Embedder`), one file per
implementation. Nothing heavy is imported here."""

from kgqa.embed.base import Embedder

__all__ = ["Embedder"]
