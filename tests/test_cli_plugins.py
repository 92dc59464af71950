"""`kodelet plugins ...` driven in real subprocesses, against real git repositories."""

from __future__ import annotations

import fcntl
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.kit.cli import no_traceback, run_kodelet
from tests.kit.hooks import BLOCKING_HOOK
from tests.kit.repos import GIT_ENV, git, leftovers, make_git_repo, make_plugin_tree
from tests.kit.wheels import build_wheel, venv_seeing_this_interpreter

LIST_KEYS = {
    "name",
    "kind",
    "location",
    "path",
    "version",
    "distribution",
    "hooks",
    "skills",
    "recipes",
    "error",
    "warnings",
}


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    root.mkdir()
    return root


def global_plugins() -> Path:
    return Path(os.environ["KODELET_HOME"]) / "plugins"


def listing(proj: Path, **kw: object) -> list[dict[str, object]]:
    res = run_kodelet("--cwd", str(proj), "plugins", "list", "--json")
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert isinstance(data, list)
    return data


def test_add_from_a_local_git_repo_at_a_tag(tmp_path: Path, proj: Path) -> None:
    repo = make_git_repo(tmp_path / "src" / "acme" / "tools", reason="tagged")
    git(repo, "tag", "v1.0")
    tagged = git(repo, "rev-parse", "HEAD")
    (repo / "hooks" / "later").write_text(BLOCKING_HOOK % "later")
    (repo / "hooks" / "later").chmod(0o755)
    git(repo, "add", "-A")
    git(repo, "commit", "--quiet", "-m", "later")

    res = run_kodelet("plugins", "add", str(repo), "--ref", "v1.0", cwd=proj)
    assert res.returncode == 0, res.stderr
    assert res.stdout == "Installed acme/tools:\n  Skills:  1\n  Recipes: 2\n  Hooks:   2\n"
    target = proj / ".kodelet" / "plugins" / "acme@tools"
    assert sorted(os.listdir(target / "hooks")) == ["README.txt", "guard"]
    manifest = json.loads((target / ".kodelet-plugin.json").read_text())
    assert manifest["ref"] == "v1.0" and manifest["commit"] == tagged
    assert manifest["source"] == str(repo)

    table = run_kodelet("--cwd", str(proj), "plugins", "list")
    line = next(ln for ln in table.stdout.splitlines() if ln.startswith("acme/tools"))
    assert line.split() == [
        "acme/tools",
        "repo",
        "local",
        "v1.0",
        f"({tagged[:7]})",
        "-",
        "1",
        "2",
        "2",
    ]
    assert table.stdout.splitlines()[0].split() == [
        "NAME",
        "KIND",
        "LOCATION",
        "VERSION",
        "DISTRIBUTION",
        "SKILLS",
        "RECIPES",
        "HOOKS",
    ]
    installed = table.stdout.split("\nInstalled from:\n", 1)[1].splitlines()[0]
    assert installed.startswith(f"  acme/tools: {repo} @ v1.0 ({tagged[:12]}), installed 20")
    assert manifest["installed_at"] in installed


def test_add_from_a_plain_directory_with_a_chosen_name(tmp_path: Path, proj: Path) -> None:
    src = make_plugin_tree(tmp_path / "somewhere" / "my-hooks")
    res = run_kodelet("--cwd", str(proj), "plugins", "add", str(src), "--name", "me/hooks")
    assert res.returncode == 0, res.stderr
    assert res.stdout.startswith("Installed me/hooks:\n")
    [row] = [r for r in listing(proj) if r["kind"] == "repo"]
    assert row == {
        "name": "me/hooks",
        "kind": "repo",
        "location": "local",
        "path": str(proj / ".kodelet" / "plugins" / "me@hooks"),
        "version": None,
        "distribution": None,
        "hooks": ["README.txt", "guard"],
        "skills": ["pdf"],
        "recipes": ["github/pr", "review"],
        "error": None,
        "warnings": [],
    }


def test_add_org_repo_shorthand_from_the_git_base(tmp_path: Path, proj: Path) -> None:
    base = tmp_path / "forge"
    make_git_repo(base / "acme" / "tools")
    env = {"KODELET_PLUGIN_GIT_BASE": f"file://{base}"}
    res = run_kodelet("--cwd", str(proj), "plugins", "add", "acme/tools", env=env)
    assert res.returncode == 0, res.stderr
    manifest = json.loads((proj / ".kodelet/plugins/acme@tools/.kodelet-plugin.json").read_text())
    assert manifest["source"] == f"file://{base}/acme/tools"
    assert len(manifest["commit"]) == 40
    missing = run_kodelet("--cwd", str(proj), "plugins", "add", "acme/nope", env=env)
    assert missing.returncode == 1
    assert missing.stderr.startswith("kodelet: error: git clone failed: ")
    assert "does not appear to be a git repository" in missing.stderr
    assert "and the repository exists" not in missing.stderr
    assert len(missing.stderr.strip().splitlines()) == 1
    assert leftovers(proj / ".kodelet" / "plugins") == ["acme@tools"]


def test_existing_plugin_force_and_global(tmp_path: Path, proj: Path) -> None:
    src = make_plugin_tree(tmp_path / "src" / "acme" / "tools")
    assert run_kodelet("--cwd", str(proj), "plugins", "add", str(src)).returncode == 0
    again = run_kodelet("--cwd", str(proj), "plugins", "add", str(src))
    assert again.returncode == 1
    assert again.stderr == (
        "kodelet: error: plugin acme/tools is already installed at "
        f"{proj / '.kodelet/plugins/acme@tools'}; use --force\n"
    )
    (src / "hooks" / "extra").write_text(BLOCKING_HOOK % "extra")
    forced = run_kodelet("--cwd", str(proj), "plugins", "add", str(src), "--force")
    assert forced.returncode == 0 and "Hooks:   3" in forced.stdout

    glob = run_kodelet("--cwd", str(proj), "plugins", "add", str(src), "--global")
    assert glob.returncode == 0, glob.stderr
    assert (global_plugins() / "acme@tools" / "hooks" / "extra").is_file()
    rows = [(r["name"], r["location"]) for r in listing(proj) if r["kind"] == "repo"]
    assert rows == [("acme/tools", "local"), ("acme/tools", "global")]


def test_remove_local_and_global(tmp_path: Path, proj: Path) -> None:
    src = make_plugin_tree(tmp_path / "src" / "acme" / "tools")
    assert run_kodelet("--cwd", str(proj), "plugins", "add", str(src), "--global").returncode == 0
    local = run_kodelet("--cwd", str(proj), "plugins", "remove", "acme/tools")
    assert local.returncode == 1
    assert "no plugin acme/tools installed" in local.stderr
    assert "installed globally: use --global" in local.stderr
    res = run_kodelet("--cwd", str(proj), "plugins", "remove", "acme/tools", "--global")
    assert res.returncode == 0, res.stderr
    assert res.stdout == f"Removed acme/tools ({global_plugins() / 'acme@tools'})\n"
    assert leftovers(global_plugins()) == []
    assert [r for r in listing(proj) if r["kind"] == "repo"] == []
    bad = run_kodelet("--cwd", str(proj), "plugins", "remove", "not-a-name")
    assert bad.returncode == 1 and "invalid plugin name 'not-a-name'" in bad.stderr


def test_remove_refuses_a_plugin_dir_that_resolves_elsewhere(tmp_path: Path, proj: Path) -> None:
    victim = tmp_path / "precious"
    (victim / "hooks").mkdir(parents=True)
    plugins = proj / ".kodelet" / "plugins"
    plugins.mkdir(parents=True)
    (plugins / "acme@tools").symlink_to(victim)
    res = run_kodelet("--cwd", str(proj), "plugins", "remove", "acme/tools")
    assert res.returncode == 1
    assert "refusing to remove" in res.stderr
    assert (victim / "hooks").is_dir()


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nope/missing/deeper"], "is not an existing directory, a git URL or org/repo"),
        (["EMPTY"], "has no skills/, recipes/ or hooks/ directory; nothing installed"),
        (["PLAIN", "--ref", "v1"], "--ref needs a git source"),
        (["GIT", "--ref", "no-such-tag"], "--ref no-such-tag: no such tag, branch or commit"),
        (["https://example.invalid/solo"], "pass --name org/repo"),
        (["PLAIN", "--name", "a/b/c"], "invalid plugin name 'a/b/c'"),
        (["ESCAPE"], "symlink hooks/evil points outside the repository"),
    ],
)
def test_add_errors_are_one_line_and_install_nothing(
    tmp_path: Path, proj: Path, args: list[str], message: str
) -> None:
    empty = tmp_path / "src" / "acme" / "empty"
    (empty / "docs").mkdir(parents=True)
    plain = make_plugin_tree(tmp_path / "src" / "acme" / "plain")
    repo = make_git_repo(tmp_path / "src" / "acme" / "git")
    escape = make_plugin_tree(tmp_path / "src" / "acme" / "escape")
    (tmp_path / "secret").write_text("secret\n")
    (escape / "hooks" / "evil").symlink_to(tmp_path / "secret")
    subst = {"EMPTY": str(empty), "PLAIN": str(plain), "GIT": str(repo), "ESCAPE": str(escape)}
    res = run_kodelet("--cwd", str(proj), "plugins", "add", *[subst.get(a, a) for a in args])
    assert res.returncode == 1, res.stdout
    assert res.stderr.startswith("kodelet: error: ") and message in res.stderr
    assert len(res.stderr.splitlines()) == 1
    no_traceback(res)
    assert res.stdout == ""
    assert leftovers(proj / ".kodelet" / "plugins") == []


def test_list_json_has_exactly_the_documented_keys(tmp_path: Path, proj: Path) -> None:
    src = make_plugin_tree(tmp_path / "src" / "acme" / "tools")
    assert run_kodelet("--cwd", str(proj), "plugins", "add", str(src)).returncode == 0
    rows = listing(proj)
    assert all(set(r) == LIST_KEYS for r in rows)
    builtin = next(r for r in rows if r["kind"] == "builtin")
    assert builtin["name"] == "builtin:compact-trigger"
    assert builtin["location"] == "builtin" and builtin["error"] is None
    assert builtin["hooks"] == ["after_turn"]
    assert builtin["skills"] == [] and builtin["recipes"] == ["compact"]
    plugin_file = Path(str(builtin["path"]))
    assert plugin_file.name == "plugin.py" and plugin_file.is_file()
    assert (plugin_file.parent / "recipes" / "compact.md").is_file()
    assert isinstance(builtin["version"], str)
    singular = run_kodelet("--cwd", str(proj), "plugin", "list", "--json")
    assert json.loads(singular.stdout) == rows


def test_disabled_native_plugins_are_still_listed(proj: Path) -> None:
    (proj / ".kodelet").mkdir()
    (proj / ".kodelet" / "config.toml").write_text(
        '[plugins]\ndisabled = ["builtin:compact-trigger"]\n'
    )
    builtin, guard = [r for r in listing(proj) if r["kind"] == "builtin"]
    assert builtin["hooks"] == ["after_turn"]
    assert (guard["name"], guard["hooks"]) == ("builtin:protect-kodelet", ["before_tool_call"])
    table = run_kodelet("--cwd", str(proj), "plugins", "list")
    assert "builtin:compact-trigger: disabled in config.toml" in table.stdout


def test_bad_config_is_exit_2(proj: Path) -> None:
    (proj / ".kodelet").mkdir()
    (proj / ".kodelet" / "config.toml").write_text("[plugins]\nbogus = 1\n")
    res = run_kodelet("--cwd", str(proj), "plugins", "list")
    assert res.returncode == 2
    assert "plugins.bogus" in res.stderr and len(res.stderr.splitlines()) == 1


def test_a_waiting_add_blocks_until_the_lock_is_released(tmp_path: Path, proj: Path) -> None:
    src = make_plugin_tree(tmp_path / "src" / "acme" / "tools")
    plugins = proj / ".kodelet" / "plugins"
    plugins.mkdir(parents=True)
    lock = plugins / ".acme@tools.lock"
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    fcntl.flock(fd, fcntl.LOCK_EX)
    env = {**os.environ, **GIT_ENV}
    cmd = [sys.executable, "-m", "kodelet", "--cwd", str(proj), "plugins", "add", str(src)]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        # The first line on stderr says it is waiting: by then it has reached the lock.
        assert "waiting for another install of acme/tools" in proc.stderr.readline()
        time.sleep(0.5)
        assert proc.poll() is None, "the second add did not wait for the lock"
        assert not (plugins / "acme@tools").exists()
    finally:
        os.unlink(lock)
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)
        out, err = proc.communicate(timeout=60)
    assert proc.returncode == 0, err
    assert out.startswith("Installed acme/tools:")
    assert leftovers(plugins) == ["acme@tools"]


def test_concurrent_forced_adds_end_with_one_consistent_install(tmp_path: Path, proj: Path) -> None:
    sources = []
    for n in range(2):
        src = tmp_path / f"src{n}"
        (src / "hooks").mkdir(parents=True)
        for i in range(200):
            (src / "hooks" / f"h{n}-{i:03d}").write_text(f"{n}\n")
        sources.append(src)
    env = {**os.environ, **GIT_ENV}
    procs = [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "kodelet",
                "--cwd",
                str(proj),
                "plugins",
                "add",
                str(src),
                "--name",
                "acme/tools",
                "--force",
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for src in sources * 2
    ]
    for p in procs:
        _, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    plugins = proj / ".kodelet" / "plugins"
    assert leftovers(plugins) == ["acme@tools"]
    target = plugins / "acme@tools"
    hooks = sorted(os.listdir(target / "hooks"))
    manifest = json.loads((target / ".kodelet-plugin.json").read_text())
    winner = sources.index(Path(manifest["source"]))
    assert hooks == [f"h{winner}-{i:03d}" for i in range(200)]


# -- pip install / uninstall into kodelet's own environment ----------------------


def test_install_and_uninstall_use_pip_in_kodelets_environment(tmp_path: Path, proj: Path) -> None:
    python = venv_seeing_this_interpreter(tmp_path / "venv")
    venv = tmp_path / "venv"
    wheel = build_wheel(tmp_path)
    env = {"PIP_NO_INDEX": "1", "PIP_DISABLE_PIP_VERSION_CHECK": "1"}

    res = run_kodelet("plugins", "install", str(wheel), python=python, env=env, cwd=proj)
    assert res.returncode == 0, res.stderr
    assert "Successfully installed kodelet-plugin-demo-1.2.3" in res.stdout
    assert list(venv.glob("lib/python*/site-packages/kodelet_plugin_demo.py"))
    rows = json.loads(run_kodelet("plugins", "list", "--json", python=python, cwd=proj).stdout)
    demo = next(r for r in rows if r["name"] == "demo")
    assert (demo["kind"], demo["location"], demo["version"]) == ("python", "installed", "1.2.3")
    assert demo["hooks"] == ["before_tool_call"] and demo["error"] is None
    blocked = run_kodelet(
        "hooks",
        "run",
        "before_tool_call",
        "--payload",
        "-",
        python=python,
        cwd=proj,
        stdin='{"tool_name": "rm"}',
    )
    assert json.loads(blocked.stdout) == {"blocked": True, "reason": "demo says no"}
    # The package went into the venv, not into the interpreter running the tests.
    outside = run_kodelet("plugins", "list", "--json", cwd=proj)
    assert "demo" not in [r["name"] for r in json.loads(outside.stdout)]

    res = run_kodelet(
        "plugins", "uninstall", "kodelet-plugin-demo", python=python, env=env, cwd=proj
    )
    assert res.returncode == 0, res.stderr
    assert "Successfully uninstalled kodelet-plugin-demo-1.2.3" in res.stdout
    rows = json.loads(run_kodelet("plugins", "list", "--json", python=python, cwd=proj).stdout)
    assert "demo" not in [r["name"] for r in rows]

    fail = run_kodelet(
        "plugins", "install", str(tmp_path / "missing.whl"), python=python, env=env, cwd=proj
    )
    assert fail.returncode == 1
    last = fail.stderr.strip().splitlines()[-1]
    assert last.startswith(f"kodelet: error: {python} -m pip install ")
    assert last.endswith("missing.whl failed (exit status 1)")
    no_traceback(fail)


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["plugins"],
        ["plugins", "add"],
        ["plugins", "list"],
        ["plugins", "remove"],
        ["plugins", "install"],
        ["plugins", "uninstall"],
        ["plugins", "enable"],
        ["plugins", "disable"],
        ["hooks"],
        ["hooks", "list"],
        ["hooks", "run"],
        ["hooks", "enable"],
        ["hooks", "disable"],
        ["hooks", "new"],
    ],
)
def test_help_reads_well(args: list[str]) -> None:
    res = run_kodelet(*args, "--help")
    assert res.returncode == 0, res.stderr
    assert "Usage:" in res.stdout
    no_traceback(res)
