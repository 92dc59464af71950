"""Shell snippets of README.md, docs/PLUGINS.md and docs/CLI.md, run as a user pastes
them, and what they print compared with what the page shows.

docs/REPLAY.md's are run by tests/test_replay.py."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest
from kodelet.testing import write_hook

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


# -- docs/CLI.md: every console example, run in the scene it describes ----------------

CLI = ROOT / "docs" / "CLI.md"
GIT = {
    "GIT_AUTHOR_NAME": "Demo",
    "GIT_AUTHOR_EMAIL": "demo@example.com",
    "GIT_COMMITTER_NAME": "Demo",
    "GIT_COMMITTER_EMAIL": "demo@example.com",
    "GIT_CONFIG_NOSYSTEM": "1",
}
NO_FORCE_PUSH = """#!/bin/bash
case "$1" in
  hook) echo before_tool_call ;;
  run) if grep -q 'push --force'; then
         echo '{"blocked": true, "reason": "no force pushes here"}'; fi ;;
esac
"""
LOG_TOOL_CALLS = """#!/bin/bash
case "$1" in
  hook) echo after_tool_call ;;
  run) cat >> "$HOME/tool-calls.log" ;;
esac
"""
TYPO = "from kodelet import hookimpl\n\n\ndef before_tool_cal(tool_name):\n    return None\n"


class Demo:
    """The scene CLI.md's examples were run in: ``/tmp/demo/project`` with the hook
    ``no-force-push``, ``HOME=/tmp/demo/home``, the example plugin repository as
    ``acme/code-review`` (tag ``v1.0``) in a git forge, the guardrail example plugin
    installed, and a repository ``me/my-hooks`` installed globally."""

    def __init__(self, tmp: Path, *, acme: bool = True, python: str = sys.executable) -> None:
        self.root = tmp / "demo"
        self.project = self.root / "project"
        self.home = self.root / "home"
        self.site = self.root / "venv" / "lib" / "python3.11" / "site-packages"
        self.python = python
        forge = self.root / "forge" / "acme" / "code-review"
        shutil.copytree(ROOT / "plugins" / "examples" / "code-review-repo", forge)
        for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-qm", "v1"]):
            subprocess.run(["git", *args], cwd=forge, env={**os.environ, **GIT}, check=True)
        subprocess.run(["git", "tag", "v1.0"], cwd=forge, check=True)
        self.commit = subprocess.run(
            ["git", "rev-parse", "HEAD"], cwd=forge, capture_output=True, text=True, check=True
        ).stdout.strip()
        write_hook(self.project / ".kodelet" / "hooks", "no-force-push", NO_FORCE_PUSH)
        self.home.mkdir()
        self.install("kodelet-plugin-guardrail", "guardrail = kodelet_plugin_guardrail:Guardrail")
        (self.site / "kodelet_plugin_guardrail.py").write_text(
            (
                ROOT / "plugins" / "examples" / "guardrail" / "kodelet_plugin_guardrail.py"
            ).read_text()
        )
        mine = self.root / "src" / "my-hooks"
        write_hook(mine / "hooks", "log-tool-calls", LOG_TOOL_CALLS)
        self.run(f"kodelet plugins add {mine} --global --name me/my-hooks")
        if acme:
            self.run("kodelet plugins add acme/code-review --ref v1.0")

    def install(self, dist: str, entry_point: str, version: str = "0.1.0") -> None:
        """A distribution's metadata as pip leaves it in site-packages."""
        info = self.site / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir(parents=True)
        (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n")
        (info / "entry_points.txt").write_text(f"[kodelet.plugins]\n{entry_point}\n")

    def run(self, script: str, cwd: Path | None = None) -> str:
        """``script`` in bash, ``kodelet`` being this checkout's; stdout and stderr as a
        terminal shows them, one after the other."""
        kodelet = f"{self.python} -m kodelet"
        script = re.sub(
            r"(^|\| *)kodelet ", lambda m: f"{m.group(1)}{kodelet} ", script, flags=re.M
        )
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("PIP_")},
            **GIT,
            "PIP_CONFIG_FILE": os.devnull,
            "PIP_NO_INDEX": "1",
            "PIP_DISABLE_PIP_VERSION_CHECK": "1",
            "HOME": str(self.home),
            "KODELET_PLUGIN_GIT_BASE": f"file://{self.root / 'forge'}",
            "PYTHONPATH": str(self.site),
            "COLUMNS": "200",
        }
        env.pop("KODELET_HOME")
        done = subprocess.run(
            ["bash", "-c", script],
            cwd=cwd or self.project,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            timeout=120,
        )
        return done.stdout

    def shown(self, text: str) -> str:
        """``text`` as the docs show it: the scene's paths, commit and times as in
        /tmp/demo, runs of blanks as one (column widths follow the path lengths)."""
        text = text.replace(str(self.root), "/tmp/demo").replace(str(ROOT), "/work/main")
        for n in (40, 12, 7):
            text = text.replace(self.commit[:n], DOC_COMMIT[:n])
        text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", "2026-11-21T23:29:51Z", text)
        text = re.sub(r'"duration_ms": [0-9.]+', '"duration_ms": 11.207', text)
        return "\n".join(re.sub(r"[ \t]+", " ", line).rstrip() for line in text.splitlines())


DOC_COMMIT = "bb3fe0a70650403a45d75e832dbcf15217839341"


def console_examples(path: Path) -> list[list[tuple[str, str]]]:
    """Each console block as (command, the output shown for it) pairs; a command
    continues over lines ending in a backslash."""
    examples = []
    for block in blocks(path, "console"):
        pairs: list[tuple[str, list[str]]] = []
        continued = False
        for line in block.splitlines():
            if line.startswith("$ ") or continued:
                if continued:
                    pairs[-1] = (pairs[-1][0] + "\n" + line, pairs[-1][1])
                else:
                    pairs.append((line[2:], []))
                continued = line.endswith("\\")
            else:
                pairs[-1][1].append(line)
        examples.append([(command, "\n".join(out)) for command, out in pairs])
    return examples


def matches(shown: str, real: str) -> bool:
    """``real`` is what ``shown`` shows, a ``...`` or ``[…`` line standing for any lines."""
    pattern = "".join(
        r"(?:.*\n)*?" if line == "..." or line.startswith("[…") else re.escape(line) + r"\n"
        for line in shown.splitlines()
    )
    return re.fullmatch(pattern, real + "\n" if real else "") is not None


def _typo(demo: Demo) -> None:
    demo.install("kodelet-plugin-typo", "typo = kodelet_plugin_typo")
    (demo.site / "kodelet_plugin_typo.py").write_text(TYPO)


def _pip_venv(demo: Demo) -> None:
    """A venv of its own, where ``plugins install`` may pip install a real wheel."""
    from tests.kit.wheels import record_line, venv_seeing_this_interpreter

    demo.python = venv_seeing_this_interpreter(demo.root / "pipvenv")
    shutil.rmtree(demo.site / "kodelet_plugin_guardrail-0.1.0.dist-info")
    source = ROOT / "plugins" / "examples" / "guardrail" / "kodelet_plugin_guardrail.py"
    info = "kodelet_plugin_guardrail-0.1.0.dist-info"
    files = {
        "kodelet_plugin_guardrail.py": source.read_bytes(),
        f"{info}/METADATA": b"Metadata-Version: 2.1\nName: kodelet-plugin-guardrail\n"
        b"Version: 0.1.0\nRequires-Dist: kodelet>=0.1\n",
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\n"
        b"Tag: py3-none-any\n",
        f"{info}/entry_points.txt": b"[kodelet.plugins]\n"
        b"guardrail = kodelet_plugin_guardrail:Guardrail\n",
    }
    lines = [record_line(n, d) for n, d in files.items()] + [f"{info}/RECORD,,"]
    files[f"{info}/RECORD"] = ("\n".join(lines) + "\n").encode()
    import zipfile

    with zipfile.ZipFile(
        demo.project / "kodelet_plugin_guardrail-0.1.0-py3-none-any.whl", "w"
    ) as zf:
        for name, data in files.items():
            zf.writestr(name, data)


# Per console block of CLI.md, in order: its first command, and what the scene holds
# beyond the base one (Demo's docstring) when it runs.
SCENES: list[tuple[str, dict[str, Any]]] = [
    ("kodelet plugins add acme/code-review --ref v1.0", {"acme": False}),
    ("kodelet plugins add acme/code-review", {}),
    ("kodelet plugins list", {}),
    ("kodelet plugins list", {"then": _typo}),
    ("kodelet plugins list --json", {}),
    ("kodelet plugins remove me/my-hooks", {}),
    ("kodelet plugins remove guardrail", {}),
    (
        "kodelet plugins install ./kodelet_plugin_guardrail-0.1.0-py3-none-any.whl",
        {"then": _pip_venv},
    ),
    ("kodelet plugins disable guardrail", {}),
    ("kodelet plugins new secret-scanner", {"cwd": "work"}),
    (
        "kodelet hooks list",
        {
            "setup": "kodelet hooks list\n"  # the discovery cache learns no-force-push's event
            "kodelet hooks disable no-force-push\nkodelet hooks disable guardrail"
        },
    ),
    ("kodelet hooks list --event before_tool_call --json", {}),
    ("kodelet hooks run before_tool_call -p -", {"setup": "chmod -x .kodelet/hooks/no-force-push"}),
    ('echo \'{"tool_name": "bash", "tool_input"', {}),
    ("kodelet hooks run nope", {}),
    ("kodelet hooks schema before_tool_call --result", {}),
    ("kodelet hooks disable no-force-push", {}),
    ("kodelet hooks new no-force-push", {"setup": "rm .kodelet/hooks/no-force-push"}),
    ("kodelet config show", {"setup": "printf '[hooks]\\ntimeout = 10\\n' > .kodelet/config.toml"}),
]


def test_every_console_block_of_cli_md_has_a_scene() -> None:
    examples = console_examples(CLI)
    assert len(examples) == len(SCENES)
    for example, (start, _) in zip(examples, SCENES, strict=True):
        assert example[0][0].startswith(start), (example[0][0], start)


@pytest.mark.parametrize("n", range(len(SCENES)), ids=[s[0][8:40] for s in SCENES])
def test_cli_md_console_example_prints_what_it_shows(n: int, tmp_path: Path) -> None:
    example = console_examples(CLI)[n]
    scene = SCENES[n][1]
    demo = Demo(tmp_path, acme=scene.get("acme", True))
    if "then" in scene:
        scene["then"](demo)
    cwd = demo.root / scene["cwd"] if "cwd" in scene else demo.project
    cwd.mkdir(exist_ok=True)
    if "setup" in scene:
        demo.run(scene["setup"])
    for command, shown in example:
        real = demo.shown(demo.run(command, cwd))
        assert matches(demo.shown(shown), real), (
            f"$ {command}\n--- shown\n{shown}\n--- real\n{real}"
        )


def test_cli_md_manifest_is_what_plugins_add_writes(tmp_path: Path) -> None:
    (shown,) = [b for b in blocks(CLI, "json") if '"installed_at"' in b]
    demo = Demo(tmp_path)
    manifest = demo.project / ".kodelet" / "plugins" / "acme@code-review" / ".kodelet-plugin.json"
    assert json.loads(demo.shown(manifest.read_text())) == json.loads(shown)
