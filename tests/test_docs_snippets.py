"""Shell snippets of README.md and docs/PLUGINS.md, run as a user pastes them.

docs/REPLAY.md's are run by tests/test_replay.py."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
PLUGINS = ROOT / "docs" / "PLUGINS.md"
KODELET = f"{sys.executable} -m kodelet"


def blocks(path: Path, lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", path.read_text(encoding="utf-8"), re.S)


def shell(script: str, cwd: Path, env: dict[str, str] | None = None) -> str:
    """Run a snippet with bash -e, ``kodelet`` being this checkout's; its stdout."""
    script = re.sub(r"(^|\| *)kodelet ", lambda m: f"{m.group(1)}{KODELET} ", script, flags=re.M)
    done = subprocess.run(
        ["bash", "-e", "-c", script],
        cwd=cwd,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def shown_results(script: str) -> list[str]:
    """The ``# {...}`` lines a snippet says its commands print."""
    return [line[2:] for line in script.splitlines() if line.startswith("# {")]


# -- hooks run: README's guardrail, PLUGINS.md's native plugin -------------------------


def readme_guardrail(tmp_path: Path) -> tuple[str, list[str]]:
    (block,) = [b for b in blocks(README, "bash") if b.startswith("mkdir -p .kodelet/hooks")]
    script = "\n".join(line for line in block.splitlines() if "hooks list" not in line)
    return shell(script, tmp_path), shown_results(block)


def plugins_md_nosudo(tmp_path: Path) -> tuple[str, list[str]]:
    """The page's module and pyproject.toml, installed the way pip lays them out."""
    (module,) = [b for b in blocks(PLUGINS, "python") if b.startswith("# kodelet_plugin_nosudo")]
    (pyproject,) = [b for b in blocks(PLUGINS, "toml") if "kodelet.plugins" in b]
    (run,) = [b for b in blocks(PLUGINS, "bash") if "sudo ls" in b]
    meta = tomllib.loads(pyproject)["project"]
    site = tmp_path / "site"
    info = site / f"{meta['name'].replace('-', '_')}-{meta['version']}.dist-info"
    info.mkdir(parents=True)
    (site / "kodelet_plugin_nosudo.py").write_text(module)
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {meta['name']}\nVersion: {meta['version']}\n"
    )
    points = meta["entry-points"]["kodelet.plugins"]
    lines = "".join(f"{name} = {target}\n" for name, target in points.items())
    (info / "entry_points.txt").write_text(f"[kodelet.plugins]\n{lines}")
    commands = run[run.index("echo ") :]
    out = shell(commands, tmp_path, env={"PYTHONPATH": str(site)})
    return out, shown_results(commands)


SNIPPETS = {"README guardrail": readme_guardrail, "PLUGINS.md nosudo": plugins_md_nosudo}


@pytest.mark.parametrize("name", list(SNIPPETS))
def test_hooks_run_answers_what_the_docs_show(name: str, tmp_path: Path) -> None:
    out, shown = SNIPPETS[name](tmp_path)
    assert len(shown) == 1, shown
    decoder = json.JSONDecoder()
    printed, _ = decoder.raw_decode(out.strip())
    assert printed == json.loads(shown[0])


@pytest.mark.parametrize("name", list(SNIPPETS))
def test_hooks_run_prints_the_one_line_the_docs_show(name: str, tmp_path: Path) -> None:
    out, shown = SNIPPETS[name](tmp_path)
    assert out.splitlines()[: len(shown)] == shown


# -- replay: README's first run ------------------------------------------------------


def test_readme_first_run_commands(tmp_path: Path) -> None:
    text = README.read_text(encoding="utf-8")
    try_it = text[text.index("## Try it") : text.index("## A guardrail")]
    commands = set(re.findall(r"`(kodelet replay(?: --[a-z-]+)*)`", try_it))
    commands |= {
        line.split("#")[0].strip()
        for b in blocks(README, "bash")
        for line in b.splitlines()
        if line.startswith("kodelet replay")
    }
    assert {
        "kodelet replay",
        "kodelet replay --only-acted",
        "kodelet replay --my-hooks",
    } <= commands
    for command in sorted(commands):
        out = shell(command, tmp_path)
        assert "Summary" in out, command
        if command == "kodelet replay":
            for kind in (
                "message-blocked",
                "call-blocked",
                "input-rewritten",
                "output-rewritten",
                "follow-up",
                "compacted",
            ):
                assert f" {kind} " in out, kind


# -- what the docs point a reader to is in the repository ----------------------------

JARGON = re.compile(r"\bseeds?\b|Spec 07|DESIGN\.md|\bADR \d|HOOKS\.md|\.\./shared", re.I)


@pytest.mark.parametrize(
    "page", [README, *sorted((ROOT / "docs").glob("*.md"))], ids=lambda p: p.name
)
def test_user_docs_name_no_document_outside_the_repository(page: Path) -> None:
    found = [
        f"{page.name}:{n}: {line.strip()}"
        for n, line in enumerate(page.read_text(encoding="utf-8").splitlines(), 1)
        if JARGON.search(line)
    ]
    assert not found, "\n".join(found)
