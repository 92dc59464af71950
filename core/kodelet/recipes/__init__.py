"""Recipes: markdown prompts that callbacks run, such as ``compact``."""

from __future__ import annotations

from .callbacks import CallbackRegistry, CallbackResult, UnknownCallback
from .loader import Recipe, RecipeError, RecipeLibrary, RecipeNotFound, read_recipe
from .runners import ExtractiveRunner, LLMRunner, RecipeRunner, RunnerError, ToolCall

__all__ = [
    "CallbackRegistry",
    "CallbackResult",
    "ExtractiveRunner",
    "LLMRunner",
    "Recipe",
    "RecipeError",
    "RecipeLibrary",
    "RecipeNotFound",
    "RecipeRunner",
    "RunnerError",
    "ToolCall",
    "UnknownCallback",
    "read_recipe",
]
