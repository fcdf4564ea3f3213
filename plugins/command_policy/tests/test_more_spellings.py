"""Spellings tried against the policy as an attacker would, after its corpora were written:
interpreters it has no front end for, programs read from standard input or a descriptor,
wrappers, git subcommands and options that run a program, computed calls in node, variables
that change what later programs load, folders of credentials. Each must ask (or be refused);
the harmless look-alikes beside them must still run without asking."""

from __future__ import annotations

import pytest
from hermes_policy_commands import decide

STRICT = {"ask", "never"}

DANGEROUS = [
    # code in a language the policy cannot read
    "tclsh <<< 'exec rm -rf ~'",
    "Rscript -e 'unlink(\"~\", recursive=TRUE)'",
    "julia -e 'rm(homedir(), recursive=true)'",
    "osascript -e 'do shell script \"rm -rf ~\"'",
    "pwsh -c 'Remove-Item -Recurse ~'",
    "powershell -EncodedCommand UgBlAG0AbwB2AGUALQBJAHQAZQBtAA==",
    "deno eval 'Deno.removeSync(Deno.env.get(\"HOME\"), {recursive: true})'",
    'bun -e \'require("fs").rmSync(require("os").homedir(),{recursive:true})\'',
    "lua -e 'os.execute(\"rm -rf ~\")'",
    "expect -c 'spawn rm -rf ~'",
    "echo 'os.execute(\"rm -rf ~\")' | lua",
    # a program read from standard input or a descriptor
    ". /dev/stdin <<< 'rm -rf ~'",
    "bash /dev/stdin <<< 'rm -rf ~'",
    "bash /proc/self/fd/0 <<< 'rm -rf ~'",
    "python3 /dev/stdin <<< 'import os; os.system(\"rm -rf ~\")'",
    "awk -f /dev/stdin <<< 'BEGIN{system(\"rm -rf ~\")}'",
    "make -f /dev/stdin <<< $'all:\\n\\trm -rf ~'",
    # wrappers
    "pkexec rm -rf /",
    "chrt 1 rm -rf ~",
    "unbuffer rm -rf ~",
    "parallel rm -rf ::: ~",
    "numactl -N 0 rm -rf ~",
    "runuser -u bob -c 'rm -rf ~'",
    "gosu bob rm -rf /",
    "faketime '2020-01-01' rm -rf ~",
    # git and other programs whose options run a program
    "git submodule foreach 'rm -rf ~'",
    "git bisect run rm -rf ~",
    "git rebase --exec 'rm -rf ~' HEAD~1",
    "git filter-branch --tree-filter 'rm -rf ~' HEAD",
    "git --exec-path=/tmp status",
    "git clone --upload-pack='rm -rf ~' x y",
    "GIT_DIR=/tmp/evil git status",
    "HOME=/tmp/evil git log",
    "zip /tmp/x.zip /etc/hosts -T -TT 'rm -rf ~ #'",
    "rsync -e 'sh -c \"rm -rf ~\"' x: /tmp",
    # node calls computed at run time
    'node -e \'const c=require("child_"+"process"); c.execSync("rm -rf ~")\'',
    'node -e \'require("child_process")["exec"+"Sync"]("rm -rf ~")\'',
    'node -e \'require("child_process")["execSync"]("rm -rf ~")\'',
    'node -e \'const c=require("child_process"); const m="execSync"; c[m]("rm -rf ~")\'',
    "node -e 'process.binding(\"spawn_sync\")'",
    # folders of credentials
    "grep -r . ~/.aws",
    "tar czf /tmp/k.tgz ~/.ssh",
    "cp -r ~/.gnupg /tmp/g",
]

HARMLESS = [
    "Rscript analysis.R",
    "julia --project=. test/runtests.jl",
    "lua script.lua",
    "deno test",
    "bun run build",
    "pwsh -File build.ps1",
    "bash build.sh",
    "valgrind ./a.out",
    "xvfb-run pytest",
    "numactl --cpunodebind=0 make test",
    "git submodule update --init",
    "git rebase main",
    "git cherry-pick -x abc123",
    "zip -r out.zip src",
    "rsync -e ssh -a host:src/ ./dst/",
    "rsync -av src/ dst/",
    "node -e 'console.log([1,2][0])'",
    "node -e 'const o={a:1}; console.log(o[\"a\"])'",
    "node -p 'process.version'",
    "cat ~/.ssh/id_ed25519.pub",
    "ls ~/.ssh",
    "grep -r TODO src",
    "cp -r ~/.config/nvim /tmp/n",
]


@pytest.mark.parametrize("command", DANGEROUS)
def test_asks_or_refuses(command: str) -> None:
    decision = decide(command)
    assert decision.decision in STRICT, (command, decision)


@pytest.mark.parametrize("command", HARMLESS)
def test_runs_without_asking(command: str) -> None:
    decision = decide(command)
    assert decision.decision == "allow", (command, decision)
