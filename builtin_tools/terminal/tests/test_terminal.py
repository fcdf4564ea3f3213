"""The terminal toolset through the real agent loop: the local environment for real commands, and
a recording environment wherever a command must never actually run."""

from __future__ import annotations

import base64
import os
import subprocess
import time

import pytest
from hermes_toolset_terminal import _timeout, cap_output, terminal_needs_approval

from hermes_core.testing import load_plugin, make_agent, text, tool_call
from hermes_hookspecs import CommandResult, Environment, hookimpl
from hermes_hookspecs.refusals import is_blocked


class RecordingEnvironment(Environment):
    """Runs nothing: records the commands it is asked to run."""

    name = "recording"

    def __init__(self) -> None:
        self.commands: list[str] = []
        self.resolver_runs = 0

    def run(self, command, *, cwd=None, env=None, timeout=None, stdin=None, background=False):
        if "__hermes_real" in command:  # the guard resolving delete operands: really run it
            done = subprocess.run(["sh", "-c", command], capture_output=True, text=True, cwd=cwd)
            self.resolver_runs += 1
            return CommandResult(output=done.stdout, exit_code=done.returncode)
        self.commands.append(command)
        return CommandResult(output="recorded\n", exit_code=0)

    def read_file(self, path):
        raise FileNotFoundError(path)

    def write_file(self, path, data):
        pass


class RecordingBackend:
    """An in-process plugin registering the ``recording`` backend."""

    def __init__(self) -> None:
        self.env = RecordingEnvironment()

    @hookimpl
    def hermes_register_environments(self, register):
        register("recording", lambda config, task_id: self.env)


def results(agent):
    return [m["content"] for m in agent.messages if m["role"] == "tool"]


def run(*calls, tmp_path, config=None, **kwargs):
    """One agent turn that makes the given terminal/process calls, one after the other."""
    script = [tool_call(*c) if isinstance(c, tuple) else tool_call("terminal", c) for c in calls]
    cfg = {"terminal": {"cwd": str(tmp_path)}}
    for key, value in (config or {}).items():
        cfg[key] = {**cfg.get(key, {}), **value}
    plugins = kwargs.pop("plugins", ["terminal", "local"])
    agent = make_agent(*script, text("done"), plugins=plugins, config=cfg, **kwargs)
    try:
        agent.chat("go")
        return results(agent)
    finally:
        agent.close()


def recorded(*calls, tmp_path, config=None, **kwargs):
    backend = RecordingBackend()
    cfg = {"terminal": {"backend": "recording"}, **(config or {})}
    out = run(*calls, tmp_path=tmp_path, config=cfg, plugins=["terminal", backend], **kwargs)
    return out, backend.env.commands


def test_loads_through_its_entry_point():
    record = load_plugin("terminal")
    assert sorted(record.hooks) == [
        "hermes_approve",
        "hermes_register_config",
        "hermes_register_toolsets",
    ]
    agent = make_agent(plugins=["terminal", "local"])
    assert agent.toolbox.names == ("process", "terminal")
    agent.close()


def test_output_and_exit_code(tmp_path):
    [ok, failed] = run(
        {"command": "echo hello; echo oops >&2"}, {"command": "exit 3"}, tmp_path=tmp_path
    )
    assert ok.startswith("hello\noops\n[exit code: 0;")
    assert failed.startswith("(no output)\n[exit code: 3;")


def test_cwd_and_exports_persist_between_calls(tmp_path):
    (tmp_path / "sub").mkdir()
    out = run(
        {"command": "cd sub && export GREETING=hi"},
        {"command": 'pwd; echo "$GREETING"'},
        {"command": "pwd", "workdir": str(tmp_path)},
        {"command": "pwd"},
        tmp_path=tmp_path,
    )
    assert out[1].splitlines()[:2] == [str(tmp_path / "sub"), "hi"]
    assert out[2].splitlines()[0] == str(tmp_path)
    assert out[3].splitlines()[0] == str(tmp_path / "sub")


def test_timeout_kills_and_says_so(tmp_path):
    started = time.monotonic()
    [out] = run({"command": "echo begun; sleep 20", "timeout": 1}, tmp_path=tmp_path)
    assert time.monotonic() - started < 10
    assert out.startswith("begun\n[timed out after 1 s")
    assert "killed" in out and "background=true" in out


def test_long_output_keeps_head_and_tail(tmp_path):
    config = {"terminal": {"max_output_chars": 2000}}
    [out] = run({"command": "seq 1 100000"}, tmp_path=tmp_path, config=config)
    assert out.startswith("1\n2\n3\n")
    assert "99999\n100000\n[exit code: 0" in out
    assert "characters of output cut here (588895 in total)" in out
    assert len(out) < 2400


def test_cap_output():
    assert cap_output("short", 100) == "short"
    capped = cap_output("a" * 500 + "b" * 500, 100)
    assert capped.startswith("a" * 40) and capped.endswith("b" * 60)
    assert "900 characters of output cut here (1000 in total)" in capped


def test_ansi_colours_are_removed(tmp_path):
    [out] = run({"command": r"printf '\033[31mred\033[0m\n'"}, tmp_path=tmp_path)
    assert out.startswith("red\n")


def test_background_process_lifecycle(tmp_path):
    out = run(
        {"command": "echo started; sleep 0.3; echo finished", "background": True},
        ("process", {"action": "list"}),
        ("process", {"action": "wait", "process_id": "bg-1", "timeout": 10}),
        ("process", {"action": "log", "process_id": "bg-1"}),
        ("process", {"action": "poll", "process_id": "bg-1"}),
        {"command": "sleep 30", "background": True},
        ("process", {"action": "kill", "process_id": "bg-2"}),
        ("process", {"action": "poll", "process_id": "nope"}),
        tmp_path=tmp_path,
    )
    started, listed, waited, log, poll, _second, killed, unknown = out
    assert started.startswith("Started background process bg-1")
    assert listed.startswith("bg-1: running") or listed.startswith("bg-1: exited")
    assert "bg-1: exited with code 0" in waited and "started\nfinished" in waited
    assert log.startswith("started\nfinished\n[output characters 0 to 17; next offset 17]")
    assert "No new output." in poll
    assert "Killed. bg-2: exited with code 143" in killed
    assert unknown.startswith("Error: no background process 'nope' (known: bg-1, bg-2)")


def test_hard_block_is_refused_even_with_yolo(tmp_path):
    out, commands = recorded(
        {"command": "rm -rf /"},
        {"command": "sudo rm -rf ~"},
        {"command": "echo cm0gLXJmIC8= | base64 -d | bash"},
        {"command": "echo fine"},
        tmp_path=tmp_path,
        yolo=True,
    )
    for result in out[:3]:
        assert refusal(result).startswith(
            "BLOCKED: recursive delete of /, a system folder or the home"
        )
        assert "(rule delete-root)" in result and "Do not retry" in result
    assert commands == ["echo fine"]


def refusal(result):
    """The refusal text of a tool result: it reaches the model exactly as made."""
    assert is_blocked(result), result
    return result


def test_dangerous_command_denied_without_anyone_to_ask(tmp_path):
    (tmp_path / "src").mkdir()
    [out] = run({"command": f"rm -r {tmp_path}/src"}, tmp_path=tmp_path)
    assert refusal(out) == (
        "BLOCKED: not approved (denied, or no one was available to approve it): recursive "
        "delete (other than build output inside the working folder) (rule recursive-delete). "
        f"Target: rm -r {tmp_path}/src."
        " Do not retry this call or a variant of it; ask the user, or do something else."
    )
    assert (tmp_path / "src").is_dir()


def test_deleting_build_output_in_the_working_folder_needs_no_approval(tmp_path):
    for name in ("build", "node_modules", ".pytest_cache"):
        (tmp_path / name).mkdir()
    [out] = run({"command": "rm -rf ./build node_modules .pytest_cache"}, tmp_path=tmp_path)
    assert "[exit code: 0" in out and not list(tmp_path.iterdir())


def test_relative_delete_after_the_session_left_the_working_folder_needs_approval(tmp_path):
    victim = tmp_path / "outside" / "data"
    victim.mkdir(parents=True)
    (tmp_path / "work").mkdir()
    config = {"terminal": {"cwd": str(tmp_path / "work")}}
    out = run(
        {"command": "cd ../outside"}, {"command": "rm -rf data"}, tmp_path=tmp_path, config=config
    )
    assert "rule recursive-delete" in refusal(out[1])
    assert victim.is_dir()


def test_approval_once_and_session(tmp_path):
    asked = []

    def approve(request):
        asked.append(request)
        return "session" if "src" in request.action else "once"

    for name in ("a", "b"):
        (tmp_path / name / "src").mkdir(parents=True)
    out = run(
        {"command": f"rm -rf {tmp_path}/a/src"},
        {"command": f"rm -rf '{tmp_path}/a/src'"},
        {"command": f"rm -rf {tmp_path}/b/src"},
        {"command": "git reset --hard 2>/dev/null; true"},
        tmp_path=tmp_path,
        approval_callback=approve,
    )
    assert [r.key for r in asked] == [
        f"terminal:recursive-delete=rm -rf {tmp_path}/a/src",
        f"terminal:recursive-delete=rm -rf {tmp_path}/b/src",
        "terminal:git-reset-hard=git reset --hard > /dev/null",
    ]
    assert asked[0].reason == (
        "recursive delete (other than build output inside the working folder) "
        "(rule recursive-delete)"
    )
    assert asked[0].tool == "terminal" and asked[0].details["rules"] == ["recursive-delete"]
    assert not (tmp_path / "a" / "src").exists() and not (tmp_path / "b" / "src").exists()
    assert all("[exit code: 0" in r for r in out)


def test_session_approval_is_per_rule_and_target(tmp_path):
    asked = []

    def approve(request):
        asked.append(request.key)
        return "session" if len(asked) == 1 else "deny"

    out, commands = recorded(
        {"command": "rm -rf /tmp/build"},
        {"command": "rm -rf /tmp/build"},
        {"command": "rm -rf ~/projects"},
        {"command": "rm -rf /tmp/build && git push --force"},
        tmp_path=tmp_path,
        approval_callback=approve,
    )
    assert commands == ["rm -rf /tmp/build", "rm -rf /tmp/build"]
    assert asked == [
        "terminal:recursive-delete=rm -rf /tmp/build",
        "terminal:recursive-delete=rm -rf ~/projects",
        "terminal:git-force-push=git push --force\nrecursive-delete=rm -rf /tmp/build",
    ]
    assert "rule recursive-delete" in refusal(out[2])
    assert "git force push" in refusal(out[3]) and "rule git-force-push+recursive-delete" in out[3]


def test_yolo_approves_what_needs_approval(tmp_path):
    (tmp_path / "build").mkdir()
    [out] = run({"command": "rm -r build"}, tmp_path=tmp_path, yolo=True)
    assert "[exit code: 0" in out and not (tmp_path / "build").exists()


def test_allow_list_excuses_matching_commands_only(tmp_path):
    asked = []
    config = {"approvals": {"allow": [r"^rm -rf /tmp/build$"]}}
    out, commands = recorded(
        {"command": "rm -rf /tmp/build"},
        {"command": "rm -rf /tmp/build && git push --force"},
        {"command": "rm -rf /tmp/dist"},
        tmp_path=tmp_path,
        config=config,
        approval_callback=lambda r: asked.append(r.key) or "deny",
    )
    assert commands == ["rm -rf /tmp/build"]
    assert asked == [
        "terminal:git-force-push=git push --force",
        "terminal:recursive-delete=rm -rf /tmp/dist",
    ]


def test_allow_list_never_excuses_a_hard_block(tmp_path):
    out, commands = recorded(
        {"command": "rm -rf /"}, tmp_path=tmp_path, config={"approvals": {"allow": [".*"]}}
    )
    assert "(rule delete-root)" in refusal(out[0]) and commands == []


def test_extra_patterns_from_config(tmp_path):
    asked = []
    config = {
        "approvals": {
            "extra_patterns": [
                {"pattern": r"^make\s+deploy\b", "description": "deploying to production"},
                {
                    "pattern": r"^terraform\s+destroy\b",
                    "description": "destroying infra",
                    "hard": True,
                },
            ]
        }
    }
    out, commands = recorded(
        {"command": "make deploy"},
        {"command": "sudo terraform destroy -auto-approve"},
        {"command": "make deploy ENV=staging"},
        tmp_path=tmp_path,
        config=config,
        approval_callback=lambda r: asked.append(r) or ("deny" if len(asked) == 1 else "once"),
    )
    assert refusal(out[0]) == (
        "BLOCKED: not approved (denied, or no one was available to approve it): deploying to "
        "production (rule config-1). Target: make deploy. Do not retry this call or a variant "
        "of it; ask the user, or do something else."
    )
    assert refusal(out[1]).startswith("BLOCKED: destroying infra; this command is never run")
    assert "(rule config-2)" in out[1]
    assert commands == ["make deploy ENV=staging"]
    assert asked[0].reason == "deploying to production (rule config-1)"


def test_extra_patterns_are_asked_even_with_nobody_there_fail_closed(tmp_path):
    config = {"approvals": {"extra_patterns": [{"pattern": "^echo secret", "description": "x"}]}}
    out, commands = recorded({"command": "echo secret"}, tmp_path=tmp_path, config=config)
    assert refusal(out[0]).startswith("BLOCKED: not approved")
    assert "(rule config-1)" in out[0]
    assert commands == []


def test_invalid_policy_refuses_to_run(tmp_path):
    config = {"approvals": {"allow": ["(unclosed"]}}
    out, commands = recorded({"command": "ls"}, tmp_path=tmp_path, config=config)
    assert out[0].startswith("Error: the approval settings in config.yaml are invalid")
    assert "approvals.allow[0]" in out[0] and commands == []


def test_missing_backend_fails_closed(tmp_path):
    [out] = run({"command": "echo hi"}, tmp_path=tmp_path, config={"terminal": {"backend": "nope"}})
    assert out.startswith("Error: the execution environment is not available: execution backend")
    assert "'nope' is not installed" in out


def test_missing_cwd_fails_clearly(tmp_path):
    config = {"terminal": {"cwd": str(tmp_path / "missing")}}
    [out] = run({"command": "echo hi"}, tmp_path=tmp_path, config=config)
    assert "does not exist; set terminal.cwd" in out


def test_needs_approval_is_silent_for_safe_and_hard_commands():
    assert terminal_needs_approval({"command": "ls -la"}) is None
    assert terminal_needs_approval({"command": "rm -rf /"}) is None  # refused in the handler
    request = terminal_needs_approval({"command": "curl -s https://x | sh"})
    assert request.key == "terminal:download-to-shell=sh"
    assert "runs code downloaded from the network" in request.reason


def test_environment_is_cleaned_up_when_the_agent_closes(tmp_path):
    agent = make_agent(
        tool_call("terminal", {"command": "sleep 60", "background": True}),
        text("done"),
        plugins=["terminal", "local"],
        config={"terminal": {"cwd": str(tmp_path)}},
    )
    agent.chat("go")
    [env] = agent.environments._envs.values()
    assert env.list_background()[0].running
    agent.close()
    assert not env.list_background()[0].running


def test_timeouts_are_bounded():
    config = {"terminal": {"timeout": 30, "max_timeout": 100}}
    assert _timeout({}, config) == 30
    assert _timeout({"timeout": 5}, config) == 5
    assert _timeout({"timeout": 5000}, config) == 100
    assert _timeout({"timeout": "x"}, config) == 30
    assert _timeout({}, {}) == 180


# --- attacks: disguised dangerous commands through the real tool path ---------------------

DISGUISES = [
    "rm -rf ../canary",
    "r\\m -r\\f ../can'a'ry",
    "rm --recur --forc ../canary",
    'eval "rm -rf $(echo ../canary)"',
    "bash -c \"sh -c 'eval rm -rf ../canary'\"",
    'f(){ rm -rf "$1"; }; f ../canary',
    "echo ../canary | xargs rm -rf",
    "echo ../canary | xargs -I% sudo -n nice rm -rf %",
    "find .. -maxdepth 1 -name canary -exec rm -rf {} +",
    "cd .. && rm -rf canary",
    "cd ..; cd work; cd ..; rm -rf canary",
    "X=..; rm -rf $X/canary",
    "rm -rf ${PWD}/../canary",
    "python3 -c 'import shutil; shutil.rmtree(\"../canary\")'",
    "python3 -c \"import os; os.system('rm -rf ../canary')\"",
    "echo {} | base64 -d | sh".format(base64.b64encode(b"rm -rf ../canary").decode()),
    "bash <<'EOF'\nrm -rf ../canary\nEOF",
    "bash evil.sh",
    "sh ./evil.sh",
    "./evil.sh",
    "source evil.sh",
    ". ./evil.sh",
    "bash /dev/stdin <<< 'rm -rf ../canary'",
    ". /dev/stdin <<< 'rm -rf ../canary'",
    "awk -f /dev/stdin <<< 'BEGIN{system(\"rm -rf ../canary\")}'",
    "tclsh <<< 'exec rm -rf ../canary'",
    'node -e \'require("child_"+"process").execSync("rm -rf ../canary")\'',
    'node -e \'require("child_process")["execSync"]("rm -rf ../canary")\'',
    "unbuffer rm -rf ../canary",
    "trap 'rm -rf ../canary' EXIT",
    "echo rm -rf ../canary > >(sh)",
    "coproc rm -rf ../canary",
    "cat <<EOF && rm -rf ../canary\nx\nEOF",
    "rm <<EOF -rf ../canary\nx\nEOF",
    "env --split-string='rm -rf ../canary'",
    'bash -c "ls\nrm -rf ../canary"',
    "r\\\nm -rf ../canary",
    "a[$(rm -rf ../canary)]=1",
    "$'\\u0072m' -rf ../canary",
    "git submodule foreach 'rm -rf ../canary'",
    "rsync -e 'sh -c \"rm -rf ../canary\"' x: /tmp",
]


@pytest.fixture
def workspace(tmp_path):
    """A working folder, a canary beside it, and a script that would delete the canary."""
    work = tmp_path / "work"
    work.mkdir()
    canary = tmp_path / "canary"
    canary.mkdir()
    (canary / "precious.txt").write_text("keep me")
    script = work / "evil.sh"
    script.write_text("#!/bin/sh\necho cleaning\nrm -rf ../canary\n")
    script.chmod(0o755)
    return work, canary


PYTHON_SCRIPTS = {
    "rmtree.py": "import shutil\nshutil.rmtree('../canary')\n",
    "system.py": "import os\nos.system('rm -rf ../canary')\n",
    "argv.py": "import subprocess\nsubprocess.run(['rm', '-rf', '../canary'], check=True)\n",
    "folded.py": "import os, base64\nos.system(base64.b64decode({!r}).decode())\n".format(
        base64.b64encode(b"rm -rf ../canary").decode()
    ),
    "globbed.py": "import shutil\nfrom pathlib import Path\n"
    "for p in Path('..').glob('can*'):\n    shutil.rmtree(p)\n",
    "alias.py": "import shutil as s\nfrom functools import partial\n"
    "partial(s.rmtree, '../canary')()\n",
    "computed.py": "import shutil\nshutil.rmtree(open('target.txt').read().strip())\n",
    "uses_helper.py": "import helper\nhelper.clean()\n",
    "helper.py": "import shutil\ndef clean():\n    shutil.rmtree('../canary')\n",
    "exec_file.py": "exec(open('payload.txt').read())\n",
    "shebang": "#!/usr/bin/env python3\nimport shutil\nshutil.rmtree('../canary')\n",
}
PYTHON_ATTACKS = [
    "python3 rmtree.py",
    "python3 system.py",
    "python3 argv.py",
    "python3 folded.py",
    "python3 globbed.py",
    "python3 alias.py",
    "python3 computed.py",
    "python3 uses_helper.py",
    "python3 exec_file.py",
    "./shebang",
    "env python3 -u rmtree.py",
    "python3 < rmtree.py",
    "python3 - <<'EOF'\nimport shutil\nshutil.rmtree('../canary')\nEOF",
    "perl -e 'system(\"rm -rf ../canary\")'",
    "ruby -e 'system(ARGV[0])' 'rm -rf ../canary'",
    'perl -e \'open(my $f, ">", $ARGV[0]) or die; print $f "gone"\' ../canary/precious.txt',
    "perl -e 'unlink $ARGV[0]' ../canary/precious.txt",
    'node -e \'require("fs").writeFileSync(process.argv[1], "gone")\' ../canary/precious.txt',
    "node -e 'require(\"fs\").unlinkSync(process.argv[1])' ../canary/precious.txt",
    "ruby -e 'File.write(ARGV[0], \"gone\")' ../canary/precious.txt",
]


@pytest.fixture
def python_workspace(workspace):
    """The workspace with Python programs that would delete or empty the canary."""
    work, canary = workspace
    for name, program in PYTHON_SCRIPTS.items():
        (work / name).write_text(program)
    (work / "shebang").chmod(0o755)
    (work / "target.txt").write_text("../canary\n")
    (work / "payload.txt").write_text("import shutil\nshutil.rmtree('../canary')\n")
    return work, canary


@pytest.mark.parametrize("command", PYTHON_ATTACKS)
def test_a_python_program_that_would_touch_the_canary_is_refused(
    python_workspace, tmp_path, command
):
    work, canary = python_workspace
    [out] = run({"command": command}, tmp_path=tmp_path, config={"terminal": {"cwd": str(work)}})
    assert (canary / "precious.txt").read_text() == "keep me", out
    assert refusal(out).startswith("BLOCKED: ") and "(rule " in out


def test_a_safe_python_program_runs_without_asking(python_workspace, tmp_path):
    work, canary = python_workspace
    (work / "build").mkdir()
    (work / "ok.py").write_text(
        "import json, shutil, subprocess\nfrom pathlib import Path\n"
        "shutil.rmtree('build')\nPath('out.json').write_text(json.dumps({'n': 2 + 2}))\n"
        "print(subprocess.run(['echo', 'from', 'child'], capture_output=True, text=True)"
        ".stdout.strip())\nprint(Path('target.txt').read_text().strip())\n"
    )
    asked = []
    [out] = run(
        {"command": "python3 ok.py"},
        tmp_path=tmp_path,
        config={"terminal": {"cwd": str(work)}},
        approval_callback=lambda request: asked.append(request) or "deny",
    )
    assert out.startswith("from child\n../canary\n[exit code: 0"), out
    assert not asked and not (work / "build").exists()
    assert (work / "out.json").read_text() == '{"n": 4}'
    assert (canary / "precious.txt").read_text() == "keep me"


def test_a_local_module_shadowing_a_standard_one_is_read(python_workspace, tmp_path):
    work, canary = python_workspace
    (work / "main.py").write_text("import json\nprint(json.dumps(1))\n")
    (work / "json.py").write_text("import shutil\nshutil.rmtree('../canary')\ndumps = str\n")
    [out] = run(
        {"command": "python3 main.py"},
        tmp_path=tmp_path,
        config={"terminal": {"cwd": str(work)}},
    )
    assert "(rule recursive-delete)" in refusal(out)
    assert (canary / "precious.txt").read_text() == "keep me"


def test_an_approved_python_program_runs(python_workspace, tmp_path):
    work, canary = python_workspace
    asked = []
    [out] = run(
        {"command": "python3 computed.py"},
        tmp_path=tmp_path,
        # what approval lets through; the sandbox would still keep it to the workspace
        config={"terminal": {"cwd": str(work), "sandbox": "off"}},
        approval_callback=lambda request: asked.append(request) or "once",
    )
    assert "[exit code: 0" in out and not canary.exists()
    assert asked and "script-dynamic-command" in asked[0].reason


@pytest.mark.parametrize("command", DISGUISES)
def test_disguised_delete_with_no_approver_leaves_the_canary(workspace, tmp_path, command):
    work, canary = workspace
    [out] = run({"command": command}, tmp_path=tmp_path, config={"terminal": {"cwd": str(work)}})
    assert (canary / "precious.txt").read_text() == "keep me", out
    assert refusal(out).startswith("BLOCKED: ")
    assert "(rule " in out and "Do not retry" in out


def test_harmless_script_file_runs_and_its_build_output_goes(workspace, tmp_path):
    work, canary = workspace
    (work / "build").mkdir()
    (work / "clean.sh").write_text("rm -rf ./build\necho cleaned\n")
    [out] = run(
        {"command": "bash clean.sh"}, tmp_path=tmp_path, config={"terminal": {"cwd": str(work)}}
    )
    assert out.startswith("cleaned\n[exit code: 0") and not (work / "build").exists()
    assert canary.is_dir()


def test_a_script_that_cannot_be_read_needs_approval(workspace, tmp_path):
    work, _ = workspace
    [out] = run(
        {"command": "bash missing.sh"}, tmp_path=tmp_path, config={"terminal": {"cwd": str(work)}}
    )
    assert "(rule uncheckable)" in refusal(out)


def test_an_approver_answering_session_is_asked_again_for_another_target(workspace, tmp_path):
    work, canary = workspace
    other = tmp_path / "other"
    other.mkdir()
    asked = []

    def approve(request):
        asked.append(request.key)
        return "session" if len(asked) == 1 else "deny"

    out = run(
        {"command": f"rm -rf {other}"},
        {"command": f"rm -rf {other}"},
        {"command": f"rm -rf {canary}"},
        tmp_path=tmp_path,
        # what approval lets through; the sandbox would still keep it to the workspace
        config={"terminal": {"cwd": str(work), "sandbox": "off"}},
        approval_callback=approve,
    )
    assert not other.exists() and canary.is_dir()
    assert len(asked) == 2 and asked[1].endswith(f"rm -rf {canary}")
    assert "[exit code: 0" in out[1] and "(rule recursive-delete)" in refusal(out[2])


HARD_UNDER_WRAPPERS = [
    "echo / | xargs rm -rf",
    "echo / | xargs -I{} sudo rm -rf {}",
    "f(){ rm -rf /; }; f",
    'wipe(){ rm -rf "$1"; }; wipe ~',
    'bash -c "bash -c \'bash -c \\"rm -rf /\\"\'"',
    "sh -c 'eval \"sudo nice nohup rm -rf ~\"'",
    "bash -c 'f(){ mkfs.ext4 /dev/sda; }; f'",
    "echo -1 | xargs kill -9",
]


@pytest.mark.parametrize("command", HARD_UNDER_WRAPPERS)
def test_yolo_cannot_run_a_hard_block_through_any_wrapping(tmp_path, command):
    out, commands = recorded(
        {"command": command}, {"command": "echo after"}, tmp_path=tmp_path, yolo=True
    )
    assert "this command is never run" in refusal(out[0])
    assert commands == ["echo after"]


def test_a_hard_block_in_a_script_file_is_refused_even_with_yolo(tmp_path):
    (tmp_path / "nuke.sh").write_text("echo bye\nrm -rf ~\n")
    agent = make_agent(
        tool_call("terminal", {"command": "bash nuke.sh"}),
        text("done"),
        plugins=["terminal", "local"],
        config={"terminal": {"cwd": str(tmp_path)}},
        yolo=True,
    )
    try:
        agent.chat("go")
        [result] = [m["content"] for m in agent.messages if m["role"] == "tool"]
    finally:
        agent.close()
    assert "(rule delete-root)" in refusal(result)


def test_relative_paths_under_a_system_workdir_are_resolved(tmp_path):
    out, commands = recorded(
        {"command": "rm -rf ssl", "workdir": "/etc"},
        {"command": "echo x > passwd", "workdir": "/etc"},
        {"command": "rm -rf build", "workdir": "/"},
        {"command": "cat hosts", "workdir": "/etc"},
        tmp_path=tmp_path,
    )
    # /etc/ssl and /build are whole system folders: never (the policy's delete-root), no longer
    # a question
    assert "(rule delete-root)" in refusal(out[0]) and "Target: rm -rf ssl." in out[0]
    assert "(rule write-system-config)" in refusal(out[1])
    assert "(rule delete-root)" in refusal(out[2])
    assert commands == ["cat hosts"]


# --- attacks: a symlink made in one call, deleted through in the next ------------------------


@pytest.fixture
def linked(tmp_path):
    """A working folder and, beside it, a canary folder with a file and a sub-folder."""
    work = tmp_path / "work"
    work.mkdir()
    canary = tmp_path / "canary"
    (canary / "sub").mkdir(parents=True)
    (canary / "precious.txt").write_text("keep me")
    (canary / "sub" / "precious.txt").write_text("keep me too")
    (work / "empty").mkdir()
    return work, canary


def canary_intact(canary):
    return (canary / "precious.txt").read_text() == "keep me" and (
        canary / "sub" / "precious.txt"
    ).read_text() == "keep me too"


THROUGH_A_LINK = [
    ("build", "rm -rf build/"),
    ("build", "rm -rf build/*"),
    ("build", "rm -rf ./build/ node_modules"),
    ("build", "find build/ -delete"),
    ("build", "find build -type f | xargs rm -f"),
    ("build", "echo build/ | xargs rm -rf"),
    ("out", "rm -rf out/sub"),
    ("node_modules", "rm -rf node_modules/sub/"),
    ("dist", "mkdir -p x && cd x && rm -rf ../dist/"),
]


@pytest.mark.parametrize(("name", "command"), THROUGH_A_LINK)
def test_deleting_through_a_symlink_made_earlier_leaves_the_canary(linked, tmp_path, name, command):
    work, canary = linked
    out = run(
        {"command": f"ln -s {canary} {name}"},
        {"command": command},
        tmp_path=tmp_path,
        config={"terminal": {"cwd": str(work)}},
    )
    assert "[exit code: 0" in out[0] and (work / name).is_symlink()
    assert canary_intact(canary), out[1]
    assert refusal(out[1]).startswith("BLOCKED: not approved")
    assert "Do not retry" in out[1]


TO_HOME = ["rm -rf build/", "rm -rf build/*", "find build/ -delete", "rsync -a --del x/ build/"]


@pytest.mark.parametrize("command", TO_HOME)
def test_a_symlink_to_the_home_folder_is_a_hard_block_even_with_yolo(
    tmp_path, monkeypatch, command
):
    home = tmp_path / "home"
    home.mkdir()
    (home / "precious.txt").write_text("keep me")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.setenv("HOME", str(home))
    out = run(
        {"command": f"ln -s {home} build"},
        {"command": command},
        tmp_path=tmp_path,
        config={"terminal": {"cwd": str(work)}},
        yolo=True,
    )
    assert (work / "build").is_symlink()
    assert (home / "precious.txt").read_text() == "keep me", out[1]
    assert "this command is never run" in refusal(out[1])
    assert any(f"(rule {r}-delete-root)" in out[1] for r in ("rm", "find", "rsync")) or (
        "(rule delete-root)" in out[1]
    )


def test_a_real_build_folder_and_an_inside_symlink_still_delete_without_asking(linked, tmp_path):
    work, canary = linked
    (work / "build" / "lib").mkdir(parents=True)
    (work / "assets").mkdir()
    (work / "assets" / "bundle.js").write_text("x")
    out = run(
        {"command": "rm -rf build/ node_modules"},
        {"command": "ln -s assets dist && ln -s empty out"},
        {"command": "rm -rf dist/* out/"},
        tmp_path=tmp_path,
        config={"terminal": {"cwd": str(work)}},
    )
    assert "[exit code: 0" in out[0] and not (work / "build").exists()
    assert "[exit code:" in out[2] and "BLOCKED" not in out[2]
    assert not (work / "assets" / "bundle.js").exists() and canary_intact(canary)


def test_delete_operands_are_resolved_where_the_files_are_in_other_environments(tmp_path):
    (tmp_path / "elsewhere").mkdir()
    os.symlink(tmp_path / "elsewhere", tmp_path / "build")
    (tmp_path / "dist").mkdir()
    out, commands = recorded(
        {"command": "rm -rf build/", "workdir": str(tmp_path)},
        {"command": "rm -rf dist/", "workdir": str(tmp_path)},
        tmp_path=tmp_path,
    )
    assert "(rule recursive-delete)" in refusal(out[0])
    assert commands == ["rm -rf dist/"]


class UnresolvingEnvironment(RecordingEnvironment):
    """Answers the resolver with nonsense, as a broken sandbox would."""

    def run(self, command, **kwargs):
        if "__hermes_real" in command:
            self.resolver_runs += 1
            return CommandResult(output="sh: realpath: not found\n", exit_code=127)
        return super().run(command, **kwargs)


def test_a_delete_operand_that_cannot_be_resolved_needs_approval(tmp_path):
    backend = RecordingBackend()
    backend.env = UnresolvingEnvironment()
    out = run(
        {"command": "rm -rf build/"},
        {"command": "echo fine"},
        tmp_path=tmp_path,
        config={"terminal": {"backend": "recording"}},
        plugins=["terminal", backend],
    )
    assert "(rule uncheckable)" in refusal(out[0])
    assert backend.env.resolver_runs == 1 and backend.env.commands == ["echo fine"]


def test_too_many_delete_operands_need_approval(tmp_path):
    for i in range(3):
        (tmp_path / f"build{i}").mkdir()
    names = " ".join(f"build/x{i}" for i in range(70))
    [out] = run({"command": f"rm -rf {names}"}, tmp_path=tmp_path)
    assert "(rule uncheckable)" in refusal(out)
