"""Recipes: front matter, resolution order, templates, the two runners and the registry."""

from __future__ import annotations

import json
import logging
import sys
import tomllib
from fnmatch import fnmatch
from pathlib import Path

import pytest
from kodelet import (
    CallbackRegistry,
    ExtractiveRunner,
    LLMRunner,
    Message,
    Recipe,
    RecipeError,
    RecipeLibrary,
    RunnerError,
    ToolCall,
)
from kodelet.places import Places
from kodelet.recipes import RecipeNotFound, UnknownCallback, read_recipe
from kodelet.recipes.loader import builtin_recipe_dirs
from kodelet.recipes.runners import SECTIONS, paths_in, paths_of

REPO = Path(__file__).resolve().parents[1]
SHIPPED = REPO / "plugins" / "builtin_compact" / "recipes" / "compact.md"
FIXTURE = Path(__file__).parent / "fixtures" / "conversation_compact.json"


def write_recipe(directory: Path, name: str, body: str, description: str = "") -> Path:
    path = directory / f"{name}.md"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"---\nname: {name}\ndescription: {description or name}\n---\n{body}")
    return path


def load_fixture() -> tuple[list[Message], list[ToolCall]]:
    data = json.loads(FIXTURE.read_text())
    messages = [Message(m["role"], m["content"]) for m in data["messages"]]
    return messages, [ToolCall.from_wire(c) for c in data["tool_calls"]]


@pytest.fixture
def places(tmp_path: Path, kodelet_home: Path) -> Places:
    cwd = tmp_path / "project"
    cwd.mkdir()
    return Places(cwd=cwd, global_root=kodelet_home)


# -- the shipped recipe -------------------------------------------------------


def test_shipped_compact_recipe_has_the_adr_front_matter_and_sections() -> None:
    recipe = read_recipe(SHIPPED)
    assert recipe.name == "compact"
    assert recipe.description == "Compact conversation context into a structured summary"
    assert recipe.allowed_tools == ()
    assert recipe.body.startswith("You are a conversation summarizer.")
    for title in SECTIONS:
        assert f"**{title}**" in recipe.body
    assert recipe.body.rstrip().endswith(
        "The conversation history is provided in the context above."
    )


def test_shipped_recipe_is_package_data_of_the_wheel() -> None:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"]
    package_dir = REPO / "plugins" / "builtin_compact"
    shipped = [p.relative_to(package_dir).as_posix() for p in package_dir.rglob("*.md")]
    assert "recipes/compact.md" in shipped
    globs = patterns.get("kodelet_builtin_compact", []) + patterns.get("*", [])
    # setuptools matches package-data globs against the path relative to the package.
    for rel in shipped:
        assert any(fnmatch(rel, g) and rel.count("/") == g.count("/") for g in globs), rel


def test_builtin_recipes_are_found_through_the_installed_entry_point() -> None:
    assert SHIPPED.parent in builtin_recipe_dirs()


# -- front matter -------------------------------------------------------------


def test_front_matter_fields_are_read(tmp_path: Path) -> None:
    path = tmp_path / "review.md"
    path.write_text(
        "---\nname: review\ndescription: Review a diff\nallowed_tools: [file_read, grep_tool]\n"
        "defaults:\n  focus: security\n---\nReview with a focus on {{ focus }}.\n"
    )
    recipe = read_recipe(path)
    assert recipe.description == "Review a diff"
    assert recipe.allowed_tools == ("file_read", "grep_tool")
    assert recipe.render() == "Review with a focus on security.\n"
    assert recipe.render({"focus": "speed"}) == "Review with a focus on speed.\n"


def test_a_recipe_without_front_matter_is_all_body(tmp_path: Path) -> None:
    path = tmp_path / "plain.md"
    path.write_text("Just a prompt.\n")
    recipe = read_recipe(path)
    assert (recipe.body, recipe.description, recipe.allowed_tools) == ("Just a prompt.\n", "", ())


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("---\nname: x\nno closing fence\n", "never closed"),
        ("---\nname: [unclosed\n---\nbody\n", "not valid YAML"),
        ("---\n- a\n- b\n---\nbody\n", "must be a mapping"),
        ("---\ndescription: [1, 2]\n---\nbody\n", "'description' must be a string"),
        ("---\nallowed_tools: bash\n---\nbody\n", "'allowed_tools' must be a list of strings"),
        ("---\nname: 3\n---\nbody\n", "'name' must be a string"),
    ],
)
def test_broken_front_matter_names_the_file(tmp_path: Path, text: str, problem: str) -> None:
    path = tmp_path / "broken.md"
    path.write_text(text)
    with pytest.raises(RecipeError) as err:
        read_recipe(path)
    message = str(err.value)
    assert message.startswith(f"{path}: ")
    assert problem in message
    assert "\n" not in message


def test_template_variables(tmp_path: Path) -> None:
    path = write_recipe(tmp_path, "t", "Hello {{ name }}, {{name}} and {{ .name }}; {{ missing }}.")
    recipe = read_recipe(path)
    assert recipe.variables == ("name", "missing")
    assert recipe.render({"name": "Ada"}) == "Hello Ada, Ada and Ada; ."


# -- resolution order ---------------------------------------------------------


def test_resolution_order_across_the_five_places(places: Places, tmp_path: Path) -> None:
    builtin = tmp_path / "builtin"
    local, glob = places.local_root, places.global_root
    write_recipe(builtin, "compact", "builtin")
    write_recipe(glob / "plugins" / "acme@tools" / "recipes", "compact", "global plugin")
    write_recipe(glob / "recipes", "compact", "global")
    write_recipe(local / "plugins" / "acme@tools" / "recipes", "compact", "local plugin")
    write_recipe(local / "recipes", "compact", "local")
    lib = RecipeLibrary(places, builtin_dirs=[builtin])

    assert lib.load("compact").body == "local"
    assert lib.load("compact").location == "local"
    assert lib.load("acme/tools/compact").body == "local plugin"
    assert lib.load("acme/tools/compact").plugin == "acme/tools"
    (local / "recipes" / "compact.md").unlink()
    assert lib.load("compact").body == "global"
    (local / "plugins" / "acme@tools" / "recipes" / "compact.md").unlink()
    assert lib.load("acme/tools/compact").body == "global plugin"
    assert lib.load("acme/tools/compact").location == "global"
    (glob / "recipes" / "compact.md").unlink()
    assert lib.load("compact").body == "builtin"
    assert lib.load("compact").location == "builtin"


def test_plugin_recipes_are_only_reachable_by_their_prefixed_name(places: Places) -> None:
    write_recipe(places.local_root / "plugins" / "acme@tools" / "recipes", "deploy", "d")
    lib = RecipeLibrary(places, builtin_dirs=[])
    assert lib.load("acme/tools/deploy").body == "d"
    with pytest.raises(RecipeNotFound):
        lib.load("deploy")


def test_nested_names_and_traversal(places: Places) -> None:
    write_recipe(places.local_root / "recipes" / "github", "pr", "nested")
    (places.cwd / "secret.md").write_text("outside")
    lib = RecipeLibrary(places, builtin_dirs=[])
    assert lib.load("github/pr").body == "nested"
    for bad in ("../../secret", "github/../../../secret", "", "/etc/passwd"):
        assert lib.find(bad) is None


def test_available_lists_each_name_once_with_its_winner(places: Places, tmp_path: Path) -> None:
    write_recipe(places.local_root / "recipes", "compact", "mine")
    write_recipe(places.global_root / "plugins" / "acme@tools" / "recipes", "deploy", "d")
    lib = RecipeLibrary(places, builtin_dirs=[SHIPPED.parent])
    listing = {name: location for name, _, location in lib.available()}
    assert listing == {"compact": "local", "acme/tools/deploy": "global"}


# -- the extractive runner ----------------------------------------------------


def test_path_extraction() -> None:
    text = (
        "Edit src/app/main.py, then setup.cfg and ./scripts/run.sh. See https://x.org/a/b.html "
        "and version 0.80, e.g. and/or."
    )
    assert paths_in(text) == ["src/app/main.py", "setup.cfg", "./scripts/run.sh"]
    assert paths_of({"file_path": "a.py", "paths": ["b.py", 3], "command": "ls c.py"}) == [
        "a.py",
        "b.py",
    ]


def test_extractive_summary_of_the_fixture_has_the_five_sections() -> None:
    messages, calls = load_fixture()
    recipe = read_recipe(SHIPPED)
    text = ExtractiveRunner().run(recipe, messages, {}, tool_calls=calls)
    headings = [line[4:] for line in text.splitlines() if line.startswith("### ")]
    assert headings == list(SECTIONS)
    assert text == ExtractiveRunner().run(recipe, messages, {}, tool_calls=calls)


def test_extractive_runner_uses_a_recipes_own_section_titles(tmp_path: Path) -> None:
    body = "".join(f"{i}. **{{{{ prefix }}}} {t}**: ...\n" for i, t in enumerate("ABCDE", 1))
    recipe = read_recipe(write_recipe(tmp_path, "mine", body))
    text = ExtractiveRunner().run(recipe, [Message("user", "hi")], {"prefix": "Part"})
    assert [ln for ln in text.splitlines() if ln.startswith("### ")] == [
        f"### Part {t}" for t in "ABCDE"
    ]


def test_extractive_runner_has_nothing_to_say_about_an_empty_conversation() -> None:
    assert ExtractiveRunner().run(read_recipe(SHIPPED), [], {}) == ""


def test_tool_call_from_wire_rejects_bad_records() -> None:
    with pytest.raises(ValueError, match="tool_name"):
        ToolCall.from_wire({"tool_input": {}})
    with pytest.raises(ValueError, match="tool_input"):
        ToolCall.from_wire({"tool_name": "bash", "tool_input": "ls"})


# -- the llm runner (through the real llm-echo plugin) ------------------------


@pytest.fixture
def llm_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "llm"
    path.mkdir()
    monkeypatch.setenv("LLM_USER_PATH", str(path))
    return path


def test_llm_runner_sends_conversation_and_recipe_to_the_model(llm_home: Path) -> None:
    messages, calls = load_fixture()
    recipe = read_recipe(SHIPPED)
    out = LLMRunner("echo").run(recipe, messages, {}, tool_calls=calls)
    prompt = json.loads(out)["prompt"]
    assert prompt.startswith("<conversation>\n[user]\nAdd retry with exponential backoff")
    assert '- bash {"command": "pytest tests/test_retry.py -q"} -> failed: exit status 1' in prompt
    assert prompt.rstrip().endswith(recipe.body.rstrip())
    assert prompt.index("</conversation>") < prompt.index("You are a conversation summarizer")


def test_llm_runner_unknown_model(llm_home: Path) -> None:
    with pytest.raises(RunnerError, match="unknown model 'no-such-model'"):
        LLMRunner("no-such-model").run(read_recipe(SHIPPED), [Message("user", "x")], {})


def test_llm_runner_without_llm_installed_says_which_extra(
    llm_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "llm", None)  # how Python itself marks a blocked import
    with pytest.raises(RunnerError, match=r"pip install 'kodelet\[llm\]'"):
        LLMRunner("echo").run(read_recipe(SHIPPED), [Message("user", "x")], {})


# -- the registry -------------------------------------------------------------


def test_default_registry_is_offline_unless_a_model_is_named(
    places: Places, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert isinstance(CallbackRegistry.default(places).runner, ExtractiveRunner)
    assert CallbackRegistry.default(places, model="echo").runner == LLMRunner("echo")
    monkeypatch.setenv("KODELET_MODEL", "echo")
    assert CallbackRegistry.default(places).runner == LLMRunner("echo")
    assert CallbackRegistry.default(places, env={}).runner == ExtractiveRunner()


def test_registry_runs_the_default_model_from_the_environment(
    places: Places, llm_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("KODELET_MODEL", "echo")
    done = CallbackRegistry.default(places).run("compact", [Message("user", "summarize me")])
    assert "summarize me" in json.loads(done.output)["prompt"]
    assert done.messages == [Message("user", done.output)]


def test_unknown_callback_is_a_warning_and_none(
    places: Places, caplog: pytest.LogCaptureFixture
) -> None:
    registry = CallbackRegistry.default(places)
    with caplog.at_level(logging.WARNING, logger="kodelet.callbacks"):
        assert registry.execute("nope", [Message("user", "x")]) is None
    assert "unknown callback 'nope'" in caplog.text
    with pytest.raises(UnknownCallback):
        registry.run("nope", [Message("user", "x")])


def test_callback_aliases_and_args(places: Places) -> None:
    write_recipe(places.local_root / "recipes", "shout", "{{ word }}!")
    seen: list[tuple[str, str]] = []

    class Echo:
        def run(
            self, recipe: Recipe, messages: object, args: dict[str, str], *, tool_calls: object = ()
        ) -> str:
            seen.append((recipe.name, recipe.render(args)))
            return recipe.render(args)

    registry = CallbackRegistry(RecipeLibrary(places), Echo(), aliases={"loud": "shout"})
    assert registry.run("loud", [], {"word": "hey"}).output == "hey!"
    assert seen == [("shout", "hey!")]


def test_extractive_runner_copes_with_punctuation_only_messages() -> None:
    messages = [Message("user", "ship it"), Message("assistant", "---")]
    text = ExtractiveRunner().run(read_recipe(SHIPPED), messages, {})
    assert "ship it" in text and "Status:" not in text
