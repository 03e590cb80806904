"""The LLM layer: one interface (:mod:`kgqa.llm.base`), the llama.cpp implementation, model
sources (:mod:`kgqa.llm.models`) and a scripted fake for tests. Nothing heavy is imported here."""

from kgqa.llm.base import LLM, ChatMessage, Completion, GenParams, Prompt

__all__ = ["LLM", "ChatMessage", "Completion", "GenParams", "Prompt"]
