"""Plugin repositories: source parsing, real git clones, copying, and the install-safety rules."""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import stat
from pathlib import Path

import pytest
from kodelet import repos
from kodelet.places import Places
from kodelet.testing import write_hook

from tests.kit.cli import no_traceback, run_before_tool_call, run_kodelet
from tests.kit.hooks import BLOCKING_HOOK
from tests.kit.repos import (
    git,
    leftovers,
    make_claude_plugin,
    make_git_repo,
    make_plugin_tree,
)

# -- parsing sources --------------------------------------------------------------


def test_shorthand_uses_the_git_base_from_the_environment() -> None:
    src = repos.parse_source("acme/tools", env={"KODELET_PLUGIN_GIT_BASE": "file:///srv/git/"})
    assert (src.kind, src.location, src.name) == ("git", "file:///srv/git/acme/tools", "acme/tools")
    default = repos.parse_source("acme/tools.git", env={})
    assert default.location == "https://github.com/acme/tools.git"
    assert default.name == "acme/tools"


@pytest.mark.parametrize(
    ("url", "name"),
    [
        ("https://github.com/acme/tools.git", "acme/tools"),
        ("https://git.example.com/group/sub/acme/tools", "acme/tools"),
        ("git@github.com:acme/tools.git", "acme/tools"),
        ("file:///tmp/base/acme/tools", "acme/tools"),
        ("ssh://git@host:22/acme/tools.git", "acme/tools"),
    ],
)
def test_git_url_names_are_the_last_two_path_parts(url: str, name: str) -> None:
    src = repos.parse_source(url)
    assert (src.kind, src.location, src.name) == ("git", url, name)


def test_name_option_overrides_and_is_validated(tmp_path: Path) -> None:
    assert repos.parse_source("https://h/a/b", name="org/other").name == "org/other"
    with pytest.raises(repos.RepoError, match=r"invalid plugin name '\.\./etc'"):
        repos.parse_source("https://h/a/b", name="../etc")
    with pytest.raises(repos.RepoError, match="pass --name"):
        repos.parse_source("https://host/onlyone")


def test_directories_are_dir_or_git_sources(tmp_path: Path) -> None:
    plain = make_plugin_tree(tmp_path / "acme" / "plain")
    checkout = make_git_repo(tmp_path / "acme" / "checkout")
    assert repos.parse_source(str(plain)).kind == "dir"
    src = repos.parse_source(str(checkout))
    assert (src.kind, src.name, src.location) == ("git", "acme/checkout", str(checkout))
    rel = repos.parse_source("acme/plain", base=tmp_path)
    assert (rel.kind, rel.location) == ("dir", str(plain))


def test_unusable_sources_are_named() -> None:
    with pytest.raises(repos.RepoError, match="'a/b/c' is not an existing directory"):
        repos.parse_source("a/b/c")
    with pytest.raises(repos.RepoError, match="empty plugin source"):
        repos.parse_source(" ")


# -- installing ----------------------------------------------------------------------


def test_add_copies_the_three_dirs_keeps_the_exec_bit_and_writes_a_manifest(tmp_path: Path) -> None:
    src_dir = make_plugin_tree(tmp_path / "acme" / "tools")
    (src_dir / "hooks" / "guard").chmod(0o777)  # group/world-writable bits are dropped
    plugins = tmp_path / "proj" / ".kodelet" / "plugins"
    got = repos.add(repos.parse_source(str(src_dir)), plugins, location="local")
    target = plugins / "acme@tools"
    assert got.path == target
    assert sorted(os.listdir(target)) == [".kodelet-plugin.json", "hooks", "recipes", "skills"]
    assert stat.S_IMODE((target / "hooks" / "guard").stat().st_mode) == 0o755
    assert stat.S_IMODE((target / "hooks" / "README.txt").stat().st_mode) == 0o644
    assert (got.skills, got.recipes, got.hooks) == (
        ("pdf",),
        ("github/pr", "review"),
        ("README.txt", "guard"),
    )
    manifest = json.loads((target / ".kodelet-plugin.json").read_text())
    assert manifest["source"] == str(src_dir)
    assert manifest["ref"] is None and manifest["commit"] is None
    assert manifest["installed_at"].endswith("Z")
    assert leftovers(plugins) == ["acme@tools"]


def test_add_from_git_checks_out_a_tag_branch_or_commit(tmp_path: Path) -> None:
    repo = make_git_repo(tmp_path / "acme" / "tools", reason="v1")
    git(repo, "tag", "v1.0")
    first = git(repo, "rev-parse", "HEAD")
    (repo / "hooks" / "guard").write_text(BLOCKING_HOOK % "v2")
    git(repo, "commit", "--quiet", "-am", "second")
    git(repo, "checkout", "--quiet", "-b", "feature")
    (repo / "hooks" / "guard").write_text(BLOCKING_HOOK % "feature")
    git(repo, "commit", "--quiet", "-am", "feature")
    git(repo, "checkout", "--quiet", "main")
    plugins = tmp_path / "plugins"
    url = f"file://{repo}"

    def installed(ref: str | None) -> tuple[str, dict[str, object]]:
        got = repos.add(repos.parse_source(url), plugins, location="local", ref=ref, force=True)
        hook = (got.path / "hooks" / "guard").read_text()
        return hook, dict(got.manifest or {})

    hook, manifest = installed("v1.0")
    assert '"v1"' in hook and manifest["commit"] == first and manifest["ref"] == "v1.0"
    assert '"feature"' in installed("feature")[0]
    assert '"v1"' in installed(first[:10])[0]
    hook, manifest = installed(None)
    assert '"v2"' in hook and manifest["commit"] == git(repo, "rev-parse", "main")
    assert not (plugins / "acme@tools" / ".git").exists()
    with pytest.raises(repos.RepoError, match="--ref nope: no such tag, branch or commit"):
        installed("nope")
    with pytest.raises(repos.RepoError, match="not a tag, branch or commit"):
        installed("--upload-pack=evil")
    assert leftovers(plugins) == ["acme@tools"]


def test_ref_needs_git_and_git_errors_are_one_line(tmp_path: Path) -> None:
    plain = make_plugin_tree(tmp_path / "acme" / "plain")
    plugins = tmp_path / "plugins"
    with pytest.raises(repos.RepoError, match="--ref needs a git source"):
        repos.add(repos.parse_source(str(plain)), plugins, location="local", ref="v1")
    missing = repos.parse_source(f"file://{tmp_path}/acme/missing")
    with pytest.raises(repos.RepoError, match="git clone failed: ") as info:
        repos.add(missing, plugins, location="local")
    assert "\n" not in str(info.value)
    assert str(info.value) == (
        f"git clone failed: fatal: '{tmp_path}/acme/missing' does not appear to be a git repository"
    )
    assert leftovers(plugins) == []


@pytest.mark.parametrize(
    ("stderr", "shown"),
    [
        (
            "Cloning into 'x'...\nremote: Repository not found.\n"
            "fatal: repository 'https://github.com/acme/nope/' not found\n",
            "fatal: repository 'https://github.com/acme/nope/' not found",
        ),
        (
            "error: pathspec 'v9' did not match any file(s) known to git\nhint: something\n",
            "error: pathspec 'v9' did not match any file(s) known to git",
        ),
        ("Cloning into 'x'...\nsomething odd\n\nand the repository exists.\n", "something odd"),
        ("", "exit status 128"),
    ],
)
def test_git_failures_show_the_line_naming_the_cause(stderr: str, shown: str) -> None:
    assert repos._git_reason(stderr, 128) == shown


def test_existing_plugin_needs_force(tmp_path: Path) -> None:
    src = repos.parse_source(str(make_plugin_tree(tmp_path / "acme" / "tools")))
    plugins = tmp_path / "plugins"
    repos.add(src, plugins, location="local")
    with pytest.raises(repos.PluginExists, match=r"already installed .* use --force"):
        repos.add(src, plugins, location="local")
    (plugins / "acme@tools" / "stale").write_text("from the old install")
    repos.add(src, plugins, location="local", force=True)
    assert not (plugins / "acme@tools" / "stale").exists()
    assert leftovers(plugins) == ["acme@tools"]


def test_repo_without_plugin_dirs_installs_nothing(tmp_path: Path) -> None:
    empty = tmp_path / "acme" / "empty"
    (empty / "docs").mkdir(parents=True)
    plugins = tmp_path / "plugins"
    with pytest.raises(repos.RepoError, match="no skills/, recipes/ or hooks/ directory"):
        repos.add(repos.parse_source(str(empty)), plugins, location="local")
    assert leftovers(plugins) == []


def test_failed_add_leaves_nothing_and_keeps_the_old_install(tmp_path: Path) -> None:
    src_dir = make_plugin_tree(tmp_path / "acme" / "tools")
    plugins = tmp_path / "plugins"
    repos.add(repos.parse_source(str(src_dir)), plugins, location="local")
    before = (plugins / "acme@tools" / ".kodelet-plugin.json").read_text()
    os.mkfifo(src_dir / "skills" / "pdf" / "pipe")
    with pytest.raises(repos.RepoError, match="skills/pdf/pipe is not a regular file"):
        repos.add(repos.parse_source(str(src_dir)), plugins, location="local", force=True)
    assert leftovers(plugins) == ["acme@tools"]
    assert (plugins / "acme@tools" / ".kodelet-plugin.json").read_text() == before


@pytest.mark.parametrize(
    "layout",
    ["file-link", "dir-link", "top-level-link", "dangling-link", "relative-escape"],
)
def test_symlinks_out_of_the_repo_are_refused(tmp_path: Path, layout: str) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret").write_text("secret")
    src_dir = make_plugin_tree(tmp_path / "acme" / "tools")
    hooks = src_dir / "hooks"
    if layout == "file-link":
        (hooks / "evil").symlink_to(outside / "secret")
    elif layout == "dir-link":
        (src_dir / "skills" / "evil").symlink_to(outside)
    elif layout == "top-level-link":
        for p in hooks.iterdir():
            p.unlink()
        hooks.rmdir()
        hooks.symlink_to(outside)
    elif layout == "dangling-link":
        (hooks / "evil").symlink_to(outside / "not-there")
    else:
        (hooks / "evil").symlink_to("../../../outside/secret")
    plugins = tmp_path / "plugins"
    with pytest.raises(repos.RepoError, match=r"symlink .* points outside the repository"):
        repos.add(repos.parse_source(str(src_dir)), plugins, location="local")
    assert leftovers(plugins) == []
    assert sorted(os.listdir(outside)) == ["secret"]


def test_symlinks_inside_the_repo_are_copied_as_files_and_loops_refused(tmp_path: Path) -> None:
    src_dir = make_plugin_tree(tmp_path / "acme" / "tools")
    (src_dir / "scripts").mkdir()
    write_hook(src_dir / "scripts", "real-hook", BLOCKING_HOOK % "linked")
    (src_dir / "hooks" / "linked").symlink_to("../scripts/real-hook")
    plugins = tmp_path / "plugins"
    got = repos.add(repos.parse_source(str(src_dir)), plugins, location="local")
    linked = got.path / "hooks" / "linked"
    assert not linked.is_symlink() and '"linked"' in linked.read_text()
    assert os.access(linked, os.X_OK)
    (src_dir / "skills" / "pdf" / "loop").symlink_to("..")
    with pytest.raises(repos.RepoError, match="makes a loop"):
        repos.add(repos.parse_source(str(src_dir)), plugins, location="local", force=True)
    assert leftovers(plugins) == ["acme@tools"]


# -- listing, removing, locking --------------------------------------------------


def test_list_repos_reads_both_roots_and_reports_bad_manifests(tmp_path: Path) -> None:
    places = Places.resolve(tmp_path / "proj", tmp_path / "global")
    src = repos.parse_source(str(make_plugin_tree(tmp_path / "acme" / "tools")))
    repos.add(src, repos.plugins_dir(places, global_=False), location="local")
    repos.add(src, repos.plugins_dir(places, global_=True), location="global")
    (repos.plugins_dir(places, global_=True) / "acme@tools" / ".kodelet-plugin.json").write_text(
        "{"
    )
    handmade = repos.plugins_dir(places, global_=True) / "me@hooks" / "hooks"
    write_hook(handmade, "x", BLOCKING_HOOK % "x")
    found = [(r.name, r.location, r.error is None) for r in repos.list_repos(places)]
    assert found == [
        ("acme/tools", "local", True),
        ("acme/tools", "global", False),
        ("me/hooks", "global", True),
    ]
    assert repos.list_repos(places)[0].version_label == ""


def test_remove_deletes_only_directly_under_the_plugins_root(tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    repos.add(
        repos.parse_source(str(make_plugin_tree(tmp_path / "acme" / "tools"))),
        plugins,
        location="local",
    )
    assert repos.remove("acme/tools", plugins) == plugins / "acme@tools"
    assert leftovers(plugins) == []
    with pytest.raises(repos.UnknownPlugin, match="no plugin acme/tools installed"):
        repos.remove("acme/tools", plugins)
    with pytest.raises(repos.RepoError, match="invalid plugin name"):
        repos.remove("../..", plugins)
    victim = tmp_path / "victim"
    (victim / "hooks").mkdir(parents=True)
    (plugins / "evil@link").symlink_to(victim)
    with pytest.raises(repos.RepoError, match=r"refusing to remove .* outside"):
        repos.remove("evil/link", plugins)
    assert (victim / "hooks").is_dir() and (plugins / "evil@link").is_symlink()


def test_lock_is_exclusive_and_leaves_no_file(tmp_path: Path) -> None:
    plugins = tmp_path / "plugins"
    plugins.mkdir()
    waited: list[bool] = []
    with repos.locked(plugins, "acme/tools"):
        lock = plugins / ".acme@tools.lock"
        fd = os.open(lock, os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        finally:
            os.close(fd)
    assert leftovers(plugins) == []
    with repos.locked(plugins, "acme/tools", on_wait=lambda: waited.append(True)):
        pass
    assert waited == [] and leftovers(plugins) == []


# -- Claude Code's plugin layout -------------------------------------------------------


@pytest.mark.parametrize(
    ("repo", "plugin_name"),
    [("guard-repo", "guardkit"), ("guardkit", None)],
    ids=["named-in-plugin-json", "named-by-the-repository"],
)
def test_a_claude_plugin_that_imports_itself_guards_after_plugins_add(
    project: Path, tmp_path: Path, repo: str, plugin_name: str | None
) -> None:
    make_claude_plugin(tmp_path / "git" / "acme" / repo, plugin_name)
    env = {"KODELET_PLUGIN_GIT_BASE": f"file://{tmp_path / 'git'}"}
    added = run_kodelet("plugins", "add", f"acme/{repo}", cwd=project, env=env)
    assert added.returncode == 0, added.stderr
    rm = json.dumps({"tool_name": "bash", "tool_input": {"command": "rm -rf build"}})
    res = run_before_tool_call(project, rm)
    no_traceback(res)
    assert json.loads(res.stdout) == {"blocked": True, "reason": "guardkit: no rm"}, res.stderr
    ls = json.dumps({"tool_name": "bash", "tool_input": {"command": "ls"}})
    assert json.loads(run_before_tool_call(project, ls).stdout) == {"blocked": False}

    record = project / ".kodelet" / "plugins" / f"acme@{repo}"
    assert (record / "guardkit" / "hooks" / "hooks.json").is_file()
    (listed,) = [
        r
        for r in json.loads(run_kodelet("plugins", "list", "--json", cwd=project).stdout)
        if r["kind"] == "repo"
    ]
    assert listed["name"] == f"acme/{repo}" and listed["path"] == str(record)
    assert listed["hooks"] == ["hooks.json", "pretooluse.py"]
    readded = run_kodelet("plugins", "add", f"acme/{repo}", "--force", cwd=project, env=env)
    assert readded.returncode == 0, readded.stderr
    assert run_kodelet("plugins", "remove", f"acme/{repo}", cwd=project).returncode == 0
    assert leftovers(project / ".kodelet" / "plugins") == []


def test_a_claude_plugin_installed_in_place_earlier_is_still_read(tmp_path: Path) -> None:
    places = Places.resolve(tmp_path / "proj", tmp_path / "global")
    earlier = repos.plugins_dir(places, global_=False) / "acme@guardkit"
    shutil.copytree(make_claude_plugin(tmp_path / "acme" / "guardkit"), earlier)
    (found,) = repos.list_repos(places)
    assert (found.path, found.root) == (earlier, earlier)
    assert "hooks.json" in found.hooks


@pytest.mark.parametrize(
    ("manifest", "why"),
    [
        ('{"name": "../evil"}', "names the plugin '../evil', which cannot be a directory name"),
        ('{"name": 7}', "names the plugin 7, which cannot be a directory name"),
        ("{", ".claude-plugin/plugin.json is not JSON"),
    ],
)
def test_a_claude_plugin_name_that_cannot_be_a_directory_is_refused(
    tmp_path: Path, manifest: str, why: str
) -> None:
    tree = make_claude_plugin(tmp_path / "acme" / "guardkit")
    (tree / ".claude-plugin" / "plugin.json").write_text(manifest)
    git(tree, "commit", "--quiet", "-am", "renamed")
    plugins = tmp_path / "plugins"
    with pytest.raises(repos.RepoError, match=re.escape(why)) as info:
        repos.add(repos.parse_source(str(tree)), plugins, location="local")
    assert ".claude-plugin/plugin.json" in str(info.value) and "\n" not in str(info.value)
    assert leftovers(plugins) == []


def test_a_claude_plugin_json_linked_out_of_the_repository_is_refused(tmp_path: Path) -> None:
    outside = tmp_path / "outside.json"
    outside.write_text('{"name": "secret-name"}')
    tree = make_claude_plugin(tmp_path / "acme" / "guardkit")
    (tree / ".claude-plugin" / "plugin.json").unlink()
    (tree / ".claude-plugin" / "plugin.json").symlink_to(outside)
    shutil.rmtree(tree / ".git")
    plugins = tmp_path / "plugins"
    with pytest.raises(repos.RepoError, match="points outside the repository"):
        repos.add(repos.parse_source(str(tree)), plugins, location="local")
    assert leftovers(plugins) == []
