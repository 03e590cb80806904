"""The answer cache (``kgqa ask`` and ``kgqa serve``): keys from everything an answer
depends on (:mod:`kgqa.cache.keys`), values on disk (:mod:`kgqa.cache.store`)."""

from kgqa.cache.keys import answer_key, normalize_question
from kgqa.cache.store import AnswerCache, CacheInfo

__all__ = ["AnswerCache", "CacheInfo", "answer_key", "normalize_question"]
