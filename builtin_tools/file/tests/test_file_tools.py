"""The file toolset through the real agent loop and the local environment."""

from __future__ import annotations

import shutil
import subprocess

import pytest
from hermes_env_local import LocalEnvironment
from hermes_toolset_file import apply_unified_diff, parse_unified_diff, search_files, to_ere

from hermes_core.testing import load_plugin, make_agent, text, tool_call
from hermes_hookspecs import ToolContext, ToolError, blocked


def run(tmp_path, *calls, **kwargs):
    """One agent turn making ``calls`` (``(tool, args)``); returns the tool results."""
    config = {"terminal": {"cwd": str(tmp_path)}, **kwargs.pop("config", {})}
    agent = make_agent(
        *[tool_call(name, args) for name, args in calls],
        text("done"),
        plugins=["file", "local"],
        config=config,
        **kwargs,
    )
    try:
        agent.chat("go")
        return [m["content"] for m in agent.messages if m["role"] == "tool"]
    finally:
        agent.close()


def one(tmp_path, name, args, **kwargs):
    return run(tmp_path, (name, args), **kwargs)[0]


def test_loads_through_its_entry_point():
    record = load_plugin("file")
    assert record.hooks == ["hermes_register_config", "hermes_register_toolsets"]
    agent = make_agent(plugins=["file", "local"])
    assert agent.toolbox.names == ("patch", "read_file", "search_files", "write_file")
    agent.close()


# --- read_file ------------------------------------------------------------------------------


def test_read_numbered_lines(tmp_path):
    (tmp_path / "a.txt").write_text("one\ntwo\nthree\n")
    assert (
        one(tmp_path, "read_file", {"path": "a.txt"}) == "     1\tone\n     2\ttwo\n     3\tthree"
    )


def test_read_a_range_says_how_to_go_on(tmp_path):
    (tmp_path / "big.txt").write_text("".join(f"line {i}\n" for i in range(1, 101)))
    out = one(tmp_path, "read_file", {"path": "big.txt", "offset": 10, "limit": 3})
    assert out == (
        "    10\tline 10\n    11\tline 11\n    12\tline 12\n"
        "[showing lines 10-12 of 100; call read_file with offset=13 to read on]"
    )
    tail = one(tmp_path, "read_file", {"path": "big.txt", "offset": 99})
    assert tail == "    99\tline 99\n   100\tline 100\n[lines 99-100 of 100]"


def test_read_refuses_binary(tmp_path):
    (tmp_path / "doc.pdf").write_bytes(b"%PDF-1.4\n" + bytes(100))
    (tmp_path / "blob").write_bytes(b"abc\x00def")
    pdf = one(tmp_path, "read_file", {"path": "doc.pdf"})
    assert pdf.startswith("Error: doc.pdf is a PDF document (109 bytes), not text")
    assert one(tmp_path, "read_file", {"path": "blob"}).startswith(
        "Error: blob is binary data (7 bytes), not text"
    )


def test_read_shows_images_to_the_model(tmp_path):
    png = bytes.fromhex(
        "89504e470d0a1a0a0000000d49484452000000010000000108020000009077"
        "53de0000000c4944415408d763f8cfc000000301010018dd8db00000000049454e44ae426082"
    )
    (tmp_path / "img.png").write_bytes(png)
    agent = make_agent(
        tool_call("read_file", {"path": "img.png"}),
        text("a red pixel"),
        plugins=["file", "local"],
        config={"terminal": {"cwd": str(tmp_path)}},
    )
    with agent:
        agent.chat("look")
    shown = agent.client.requests[-1].messages
    assert shown[-2]["content"] == f"img.png is a PNG image ({len(png)} bytes), shown to you."
    picture = shown[-1]["content"][1]["image_url"]["url"]
    assert picture.startswith("data:image/png;base64,iVBORw0KGgo")


def test_read_errors(tmp_path):
    (tmp_path / "d").mkdir()
    (tmp_path / "empty").write_text("")
    (tmp_path / "short").write_text("x\n")
    assert one(tmp_path, "read_file", {"path": "nope"}) == "Error: file not found: nope"
    assert one(tmp_path, "read_file", {"path": "d"}).startswith("Error: d is a directory")
    assert one(tmp_path, "read_file", {"path": "empty"}) == "empty is empty."
    assert one(tmp_path, "read_file", {"path": "short", "offset": 5}) == (
        "Error: offset 5 is past the end of short (1 lines)"
    )


def test_read_size_cap_and_long_lines(tmp_path):
    (tmp_path / "huge").write_text("x" * 5000 + "\n")
    out = one(tmp_path, "read_file", {"path": "huge"})
    assert out.endswith("... [line cut: 5000 characters]")
    capped = one(tmp_path, "read_file", {"path": "huge"}, config={"file": {"max_read_bytes": 100}})
    assert capped.startswith("Error: huge is 5001 bytes, more than read_file handles (100)")


def test_read_latin1_text_with_replacement(tmp_path):
    (tmp_path / "latin").write_bytes(b"caf\xe9 au lait\n" + b"plain ascii line\n" * 20)
    out = one(tmp_path, "read_file", {"path": "latin"})
    assert out.startswith("     1\tcaf\ufffd au lait")
    assert "not valid UTF-8" in out


# --- write_file -----------------------------------------------------------------------------


def test_write_creates_folders_and_reports(tmp_path):
    out = one(tmp_path, "write_file", {"path": "a/b/c.txt", "content": "hello\nworld\n"})
    assert out == "Wrote 12 bytes (2 lines) to a/b/c.txt."
    assert (tmp_path / "a/b/c.txt").read_text() == "hello\nworld\n"


def test_write_keeps_permissions_and_leaves_no_temporary_files(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("old")
    script.chmod(0o755)
    one(tmp_path, "write_file", {"path": "run.sh", "content": "#!/bin/sh\necho new\n"})
    assert script.read_text() == "#!/bin/sh\necho new\n"
    assert script.stat().st_mode & 0o777 == 0o755
    assert sorted(p.name for p in tmp_path.iterdir()) == ["run.sh"]


def test_write_to_sensitive_paths_needs_approval(tmp_path):
    asked = []
    out = run(
        tmp_path,
        ("write_file", {"path": ".env", "content": "KEY=1\n"}),
        ("write_file", {"path": ".env.example", "content": "KEY=\n"}),
        approval_callback=lambda r: asked.append(r) or "deny",
    )
    target = str(tmp_path.resolve() / ".env")
    assert out[0] == blocked(
        "write-env-file",
        "not approved: writes a .env file (secrets the project's programs load)",
        target,
    )
    assert out[1].startswith("Wrote")
    assert not (tmp_path / ".env").exists()
    assert [r.key for r in asked] == [f"file:write-env-file:{target}"]


# --- patch ----------------------------------------------------------------------------------


def test_patch_replaces_unique_text(tmp_path):
    (tmp_path / "m.py").write_text("def f():\n    return 1\n\n\ndef g():\n    return 2\n")
    out = one(
        tmp_path,
        "patch",
        {"path": "m.py", "old_string": "    return 2", "new_string": "    return 3"},
    )
    assert out.startswith("Patched m.py: replaced 1 occurrence (line 6).")
    assert "     6\t    return 3" in out
    assert (tmp_path / "m.py").read_text().endswith("def g():\n    return 3\n")


def test_patch_missing_text_fails_with_a_hint(tmp_path):
    (tmp_path / "m.py").write_text("def f():\n    return 1\n")
    out = one(tmp_path, "patch", {"path": "m.py", "old_string": "return  2", "new_string": "x"})
    assert out.startswith("Error: old_string was not found in m.py. The closest line is 2:")
    spaced = one(
        tmp_path, "patch", {"path": "m.py", "old_string": "def f():\n  return 1", "new_string": "x"}
    )
    assert "matches lines 1-2 when whitespace is ignored" in spaced
    assert (tmp_path / "m.py").read_text() == "def f():\n    return 1\n"


def test_patch_ambiguous_text_fails_unless_replace_all(tmp_path):
    (tmp_path / "t.txt").write_text("a = 1\nb = 1\nc = 1\n")
    out = one(tmp_path, "patch", {"path": "t.txt", "old_string": "= 1", "new_string": "= 2"})
    assert out.startswith("Error: old_string occurs 3 times in t.txt (lines 1, 2, 3)")
    every = one(
        tmp_path,
        "patch",
        {"path": "t.txt", "old_string": "= 1", "new_string": "= 2", "replace_all": True},
    )
    assert every.startswith("Patched t.txt: replaced 3 occurrences (3 places, first at line 1)")
    assert (tmp_path / "t.txt").read_text() == "a = 2\nb = 2\nc = 2\n"


def test_patch_keeps_crlf_files_working(tmp_path):
    (tmp_path / "w.txt").write_bytes(b"one\r\ntwo\r\n")
    one(tmp_path, "patch", {"path": "w.txt", "old_string": "one\ntwo", "new_string": "1\n2"})
    assert (tmp_path / "w.txt").read_bytes() == b"1\r\n2\r\n"


def git_diff(tmp_path, name, before, after):
    """A real unified diff made by git."""
    a, b = tmp_path / "diff-a", tmp_path / "diff-b"
    a.write_text(before)
    b.write_text(after)
    proc = subprocess.run(
        ["git", "diff", "--no-index", "--no-prefix", str(a), str(b)], capture_output=True, text=True
    )
    a.unlink()
    b.unlink()
    body = proc.stdout.split("@@", 1)[1]
    return f"--- a/{name}\n+++ b/{name}\n@@" + body


def test_patch_applies_a_real_unified_diff(tmp_path):
    before = "".join(f"line {i}\n" for i in range(1, 40))
    after = (
        before.replace("line 5\n", "line five\n")
        .replace("line 30\n", "")
        .replace("line 39\n", "line 39\nline 40\n")
    )
    diff = git_diff(tmp_path, "f.txt", before, after)
    (tmp_path / "f.txt").write_text(before)
    out = one(tmp_path, "patch", {"mode": "diff", "diff": diff})
    assert out.startswith("Applied the diff: f.txt (")
    assert (tmp_path / "f.txt").read_text() == after


def test_patch_diff_with_moved_lines_and_new_file(tmp_path):
    (tmp_path / "a.py").write_text("import os\n\n# added above\n\ndef main():\n    pass\n")
    diff = (
        "--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,3 @@\n def main():\n-    pass\n+    print('hi')\n"
        "--- /dev/null\n+++ b/new/b.py\n@@ -0,0 +1,2 @@\n+x = 1\n+y = 2\n"
    )
    out = one(tmp_path, "patch", {"diff": diff})
    assert out == "Applied the diff: a.py (1 hunk), new/b.py (1 hunk)."
    assert (tmp_path / "a.py").read_text().endswith("def main():\n    print('hi')\n")
    assert (tmp_path / "new/b.py").read_text() == "x = 1\ny = 2\n"


def test_patch_diff_that_does_not_apply_writes_nothing(tmp_path):
    (tmp_path / "a.txt").write_text("alpha\nbeta\n")
    (tmp_path / "b.txt").write_text("gamma\n")
    diff = (
        "--- a/a.txt\n+++ b/a.txt\n@@ -1,2 +1,2 @@\n alpha\n-beta\n+BETA\n"
        "--- a/b.txt\n+++ b/b.txt\n@@ -1 +1 @@\n-delta\n+DELTA\n"
    )
    out = one(tmp_path, "patch", {"diff": diff})
    assert out.startswith("Error: hunk 1 of the diff for b.txt does not match the file")
    assert "delta" in out
    assert (tmp_path / "a.txt").read_text() == "alpha\nbeta\n"


def test_patch_diff_without_headers_uses_path(tmp_path):
    (tmp_path / "c.txt").write_text("a\nb\n")
    out = one(tmp_path, "patch", {"path": "c.txt", "diff": "@@ -1,2 +1,2 @@\n a\n-b\n+c\n"})
    assert out == "Applied the diff: c.txt (1 hunk)."
    assert (tmp_path / "c.txt").read_text() == "a\nc\n"


def test_patch_errors(tmp_path):
    (tmp_path / "x").write_text("x\n")
    assert one(tmp_path, "patch", {"path": "x"}).startswith(
        "Error: replace mode needs path, old_string and new_string"
    )
    assert one(tmp_path, "patch", {"path": "gone", "old_string": "a", "new_string": "b"}) == (
        "Error: file not found: gone"
    )
    assert one(tmp_path, "patch", {"diff": "just text"}).startswith(
        "Error: the diff contains no hunks"
    )
    same = one(tmp_path, "patch", {"path": "x", "old_string": "x", "new_string": "x"})
    assert same.startswith("Error: old_string and new_string are the same")


def test_diff_newline_at_end_of_file():
    [p] = parse_unified_diff(
        "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-old\n\\ No newline at end of file\n+new\n"
    )
    assert apply_unified_diff("old", p, "f") == "new\n"
    [q] = parse_unified_diff(
        "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-old\n+new\n\\ No newline at end of file\n"
    )
    assert apply_unified_diff("old\n", q, "f") == "new"


def test_diff_deleting_a_file_is_refused():
    with pytest.raises(ToolError):
        parse_unified_diff("no hunks here")


# --- search_files ---------------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path):
    files = {
        "src/app.py": "import os\n\ndef main():\n    return os.getcwd()\n",
        "src/util.py": "def helper():\n    return 42\n",
        "tests/test_app.py": "from src.app import main\n\ndef test_main():\n    assert main()\n",
        "README.md": "# Project\nmain entry point\n",
        "node_modules/lib/index.js": "function main() {}\n",
        "build/out.py": "def main(): pass\n",
        "image.bin": "",
    }
    for name, content in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(content)
    (tmp_path / "image.bin").write_bytes(b"main\x00\x01\x02")
    return tmp_path


def git_init(path):
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    (path / ".gitignore").write_text("build/\n")


def test_search_content_skips_node_modules_and_binary(tree):
    out = one(tree, "search_files", {"pattern": r"def main\("})
    assert out.splitlines() == [
        "build/out.py:1: def main(): pass",
        "src/app.py:3: def main():",
    ]


def test_search_content_respects_gitignore(tree):
    git_init(tree)
    out = one(tree, "search_files", {"pattern": r"main"})
    assert "build/out.py" not in out and "node_modules" not in out and "image.bin" not in out
    assert "README.md:2: main entry point" in out
    assert "src/app.py:3: def main():" in out
    assert "tests/test_app.py:1: from src.app import main" in out


def test_search_content_with_glob_path_and_case(tree):
    out = one(
        tree, "search_files", {"pattern": "MAIN", "file_glob": "test_*.py", "ignore_case": True}
    )
    assert out.splitlines() == [
        "tests/test_app.py:1: from src.app import main",
        "tests/test_app.py:3: def test_main():",
        "tests/test_app.py:4: assert main()",
    ]
    inside = one(tree, "search_files", {"pattern": r"return \d+", "path": "src"})
    assert inside == "src/util.py:2: return 42"
    single = one(tree, "search_files", {"pattern": "helper", "path": "src/util.py"})
    assert single == "src/util.py:1: def helper():"


def test_search_results_are_capped(tmp_path):
    (tmp_path / "many.txt").write_text("hit\n" * 300)
    out = one(tmp_path, "search_files", {"pattern": "hit", "max_results": 5})
    lines = out.splitlines()
    assert lines[:5] == [f"many.txt:{i}: hit" for i in range(1, 6)]
    assert lines[5] == "[showing 5 of 101+ matching lines; narrow the pattern, path or file_glob]"


def test_search_file_names(tree):
    git_init(tree)
    assert one(tree, "search_files", {"pattern": "*.py", "target": "files"}).splitlines() == [
        "src/app.py",
        "src/util.py",
        "tests/test_app.py",
    ]
    assert one(tree, "search_files", {"pattern": "src/*.py", "target": "files", "path": "."}) == (
        "src/app.py\nsrc/util.py"
    )
    assert one(tree, "search_files", {"pattern": "*.py", "target": "files", "path": "tests"}) == (
        "tests/test_app.py"
    )
    capped = one(tree, "search_files", {"pattern": "*", "target": "files", "max_results": 2})
    assert capped.endswith("[showing 2 of 6 files; narrow the pattern or the path]")


def test_search_errors(tree):
    assert one(tree, "search_files", {"pattern": "("}).startswith(
        "Error: invalid regular expression '('"
    )
    assert one(tree, "search_files", {"pattern": "x", "path": "missing"}) == (
        "Error: no such file or directory: missing"
    )
    assert one(tree, "search_files", {"pattern": "zzz-nothing"}) == (
        "No matches for 'zzz-nothing' under '.'."
    )


def test_search_pattern_cannot_inject_commands(tree):
    out = one(tree, "search_files", {"pattern": "'; touch injected; '"})
    assert out.startswith("No matches")
    assert not (tree / "injected").exists()


def test_searching_does_not_move_the_working_directory(tree):
    out = run(
        tree,
        ("search_files", {"pattern": "helper", "path": "src"}),
        ("search_files", {"pattern": "*.py", "target": "files", "path": "tests"}),
        ("read_file", {"path": "README.md"}),
    )
    assert out[2].startswith("     1\t# Project")


def test_tools_act_through_the_configured_environment(tmp_path):
    out = one(tmp_path, "read_file", {"path": "x"}, config={"terminal": {"backend": "nope"}})
    assert out.startswith("Error: the execution environment is not available")


def test_to_ere():
    assert to_ere(r"return \d+") == "return [0-9]+"
    assert to_ere(r"[\d\s]+\.\w") == r"[0-9[:space:]]+\.[[:alnum:]_]"
    assert to_ere(r"[^\d]") == "[^0-9]"


@pytest.mark.skipif(shutil.which("busybox") is None, reason="busybox is not installed")
def test_search_with_busybox_tools_only(tree, tmp_path_factory):
    """What a minimal container offers: busybox find/grep/xargs (no git, no grep -P or -I)."""
    bin_dir = tmp_path_factory.mktemp("bb")
    applets = "find grep xargs tr head sed cat printf od cut mktemp rm readlink sh pwd".split()
    for applet in applets:
        (bin_dir / applet).symlink_to(shutil.which("busybox"))
    env = LocalEnvironment(str(tree), env={"PATH": str(bin_dir)})
    ctx = ToolContext(task_id="t", environment_factory=lambda: env)
    try:
        assert search_files({"pattern": r"return \d+"}, ctx) == "src/util.py:2: return 42"
        assert search_files({"pattern": "main", "file_glob": "*.md"}, ctx) == (
            "README.md:2: main entry point"
        )
        names = search_files({"pattern": "*.py", "target": "files"}, ctx)
        assert "node_modules" not in names and "src/app.py" in names
    finally:
        env.cleanup()
