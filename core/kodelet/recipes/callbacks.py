"""The callback registry: what a hook's ``{"result": "callback", "callback": NAME}`` runs.

A callback name resolves to a recipe (by default the recipe of the same name)
and runs through a runner. The registry also knows whether it is inside a
callback right now: a host asks :attr:`CallbackRegistry.in_callback` before it
sets ``auto_compact_enabled`` in a payload, so a compaction can never trigger
itself, and the helpers in :mod:`kodelet.host.apply` cut chains that nest too deep.
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Iterator, Mapping, Sequence

import attrs

from ..errors import KodeletError
from ..payloads import Message
from ..places import Places
from .loader import Recipe, RecipeLibrary, RecipeNotFound
from .runners import ExtractiveRunner, LLMRunner, RecipeRunner, RunnerError, ToolCall

log = logging.getLogger("kodelet.callbacks")

MODEL_ENV = "KODELET_MODEL"


class UnknownCallback(KodeletError, LookupError):
    """A hook asked for a callback that resolves to no recipe."""


@attrs.frozen(kw_only=True)
class CallbackResult:
    recipe: Recipe
    output: str

    @property
    def messages(self) -> list[Message]:
        """What replaces the conversation: the recipe's output as one user message."""
        return [Message("user", self.output)]


class CallbackRegistry:
    def __init__(
        self,
        recipes: RecipeLibrary,
        runner: RecipeRunner,
        *,
        aliases: Mapping[str, str] | None = None,
    ) -> None:
        self.recipes = recipes
        self.runner = runner
        self.aliases = dict(aliases or {})
        self._stack: list[str] = []

    @classmethod
    def default(
        cls,
        places: Places,
        model: str | None = None,
        *,
        env: Mapping[str, str] | None = None,
    ) -> CallbackRegistry:
        """Offline extractive runner, unless a model is named here or in ``$KODELET_MODEL``."""
        env = os.environ if env is None else env
        name = model or env.get(MODEL_ENV) or None
        runner: RecipeRunner = LLMRunner(name) if name else ExtractiveRunner()
        return cls(RecipeLibrary(places), runner)

    @property
    def running(self) -> tuple[str, ...]:
        """The callbacks running right now, outermost first."""
        return tuple(self._stack)

    @property
    def depth(self) -> int:
        return len(self._stack)

    @property
    def in_callback(self) -> bool:
        """True while a callback runs: hosts report auto-compact as disabled then."""
        return bool(self._stack)

    def recipe_for(self, name: str) -> Recipe:
        """The recipe a callback name runs; ``UnknownCallback`` or ``RecipeError`` otherwise."""
        recipe_name = self.aliases.get(name, name)
        try:
            return self.recipes.load(recipe_name)
        except RecipeNotFound:
            why = f"unknown callback {name!r}: no recipe named {recipe_name!r}"
            raise UnknownCallback(why) from None

    @contextlib.contextmanager
    def _entered(self, name: str) -> Iterator[None]:
        self._stack.append(name)
        try:
            yield
        finally:
            self._stack.pop()

    def run(
        self,
        name: str,
        messages: Sequence[Message],
        args: Mapping[str, str] | None = None,
        *,
        tool_calls: Sequence[ToolCall] = (),
    ) -> CallbackResult:
        """Run a callback; raises ``UnknownCallback``, ``RecipeError`` or ``RunnerError``.

        Empty output is an error too: a blank summary must never replace a
        conversation."""
        recipe = self.recipe_for(name)
        with self._entered(name):
            try:
                output = self.runner.run(
                    recipe, list(messages), dict(args or {}), tool_calls=tuple(tool_calls)
                )
            except RunnerError:
                raise
            except Exception as exc:
                why = f"recipe {recipe.name!r} failed: {type(exc).__name__}: {exc}"
                raise RunnerError(why) from exc
        if not isinstance(output, str) or not output.strip():
            raise RunnerError(f"recipe {recipe.name!r} produced no text")
        return CallbackResult(recipe=recipe, output=output)

    def execute(
        self,
        name: str,
        messages: Sequence[Message],
        args: Mapping[str, str] | None = None,
        *,
        tool_calls: Sequence[ToolCall] = (),
    ) -> CallbackResult | None:
        """Like :meth:`run`, but an unknown callback is a logged warning and None."""
        try:
            return self.run(name, messages, args, tool_calls=tool_calls)
        except UnknownCallback as exc:
            log.warning("%s", exc)
            return None
