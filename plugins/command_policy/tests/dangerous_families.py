"""Dangerous commands spelled many ways, family by family, each family with harmless
look-alikes: the tests check the rule ("what cannot be read asks"), not one spelling.

Nothing here is ever run: the strings are handed to the policy only. :data:`FAMILIES` maps a
family to ``(dangerous spellings, look-alikes)``; :func:`dangerous` and :func:`look_alikes`
flatten them.
"""

from __future__ import annotations

import base64

HOME = "/home/user"

# --- the base commands, spelled many ways --------------------------------------------------

BASES = [["rm", "-rf", "~"], ["mkfs.ext4", "/dev/sda"], ["shred", "-u", "~/.ssh/id_rsa"]]


def computed_names(argv: list[str]) -> list[str]:
    """``argv`` with its program's name computed: variables, substitutions, escapes, quoting."""
    name, rest = argv[0], " ".join(argv[1:])
    hexed = "".join(f"\\x{ord(c):02x}" for c in name)
    octal = "".join(f"\\{ord(c):03o}" for c in name)
    coded = base64.b64encode(name.encode()).decode()
    return [
        f"c={name}; $c {rest}",
        f'c="{name}"; "$c" {rest}',
        f"c=$(echo -e '{hexed}'); $c {rest}",
        f"c=$(echo -e '{octal}'); $c {rest}",
        f"c=$(printf '{octal}'); $c {rest}",
        f"c=$(printf '%b' '{hexed}'); $c {rest}",
        f"$'{hexed}' {rest}",
        f"x='{name}'; ${{x@P}} {rest}",
        f"x='{name}'; ${{x@L}} {rest}",
        f"${{CMD:-{name}}} {rest}",
        f"$(echo {name}) {rest}",
        f"`echo {name}` {rest}",
        f"{name[0]}\\{name[1:]} {rest}",
        f'"{name[0]}""{name[1:]}" {rest}',
        f"'{name}' {rest}",
        f"$CMD {rest}",
        f"r=CMD; ${{!r}} {rest}",
        f"a=({name}); ${{a[0]}} {rest}",
        f'eval "$(echo {name}) {rest}"',
        f"read -r c <<< '{name}'; $c {rest}",
        f"c=$(cat name.txt); $c {rest}",
        f"c=$(base64 -d <<< {coded}); $c {rest}",
        f"c=$(echo {coded} | base64 -d); $c {rest}",
        f"c=$(rev <<< {name[::-1]}); $c {rest}",
        f"c=$(tr a-z a-z <<< {name}); $c {rest}",
        f"{name[0]}${{u}}{name[1:]} {rest}",
        f"{name[0]}''{name[1:]} {rest}",
        f"\\{name} {rest}",
        f"command {name} {rest}",
        f"builtin exec {name} {rest}",
        f'x=({name} {rest}); "${{x[@]}}"',
        f'set -- {name} {rest}; "$@"',
        f"declare -n r=c; c={name}; $r {rest}",
        f"c=x{name}; ${{c:1}} {rest}",
        f"c={name.upper()}; ${{c,,}} {rest}",
    ]


# --- interpreters and shells, by every name they go by ----------------------------------------

PY_CODE = 'import os; os.system("rm -rf ~")'
PYTHONS = ["python", "python3", "python3.13", "python3.15", "python2.7", "pypy", "pypy3",
           "pypy3.10", "ipython", "ipython3", "/usr/bin/python3", "/opt/py/bin/python3.12",
           "micropython", "graalpy", "python3.12-dbg"]  # fmt: skip


def interpreter_spellings(name: str, code: str) -> list[str]:
    """``code`` handed to the interpreter ``name`` every way it takes code."""
    return [
        f"{name} -c '{code}'",
        f"echo '{code}' | {name}",
        f"{name} - <<'EOF'\n{code}\nEOF",
        f"{name} <<< '{code}'",
        f"env {name} -c '{code}'",
        f"uv run {name} -c '{code}'",
        f"{name} -Bc '{code}'",
        f"{name} -I -c '{code}'",
        f"timeout 5 {name} -c '{code}'",
    ]


DYNAMIC_PY = [
    "import base64; exec(base64.b64decode(open(0).read()))",
    "exec(input())",
    "import builtins; builtins.exec(input())",
    "import builtins as b; b.eval(input())",
    "import timeit; timeit.timeit(input(), number=1)",
    "from timeit import timeit; timeit(input())",
    "import pdb; pdb.run(input())",
    "import cProfile; cProfile.run(input())",
    'import operator, os; operator.methodcaller("system", "id")(os)',
    'import operator, os; operator.attrgetter("system")(os)("id")',
    'getattr(__import__("o" + "s"), input())("id")',
    "import importlib; importlib.import_module(input()).system('id')",
    "__import__(input()).system('id')",
    'import os; f = getattr(os, input()); f("id")',
    "import pydoc; pydoc.locate(input())('id')",
    "import code; code.InteractiveConsole().push(input())",
    "import sys; sys.modules['os'].system(input())",
    "globals()['__builtins__'].exec(input())",
    "import pickle; pickle.loads(open('x', 'rb').read())",
    "import types; types.FunctionType(compile(input(), 'x', 'exec'), {})()",
    'import builtins; getattr(builtins, "ex" + "ec")(input())',
    "import yaml; yaml.unsafe_load(open('x.yml'))",
    "import jinja2; jinja2.Template(input()).render()",
    "import os; print(os.environb)",
]
PY_LOOK_ALIKES = [
    "python3 -c 'print(1)'",
    "pypy3 -c 'print(sum(range(10)))'",
    "ipython -c 'import math; print(math.pi)'",
    "python2.7 -c 'print(1)'",
    "python3 -m pytest -q",
    "python3 -c 'import timeit; print(timeit.timeit(\"1+1\", number=10))'",
    "python3 -c 'import operator; print(operator.add(1, 2))'",
    "python3 -c 'import json, sys; print(json.dumps({\"a\": 1}))'",
]

FOREIGN = [
    *(
        f"perl -e 'print qx{o}rm -rf ~{c}'"
        for o, c in ("{}", "[]", "()", "<>", "!!", "||", "//", "^^")
    ),
    "perl -e 'readpipe(\"rm -rf ~\")'",
    "perl -e '$c = <STDIN>; readpipe($c)'",
    "perl -e 'my $f = \\&CORE::system; $f->(\"id\")'",
    "perl -e 'system qw(rm -rf ~)'",
    *(f"ruby -e 'puts %x{o}rm -rf ~{c}'" for o, c in ("{}", "[]", "()", "<>", "||", "!!")),
    "ruby -e 'method(:system).call(\"rm -rf ~\")'",
    "ruby -e 'Kernel.send(:system, \"rm -rf ~\")'",
    "ruby -e 'Kernel.public_send(:exec, \"id\")'",
    "ruby -e 'm = :system; Kernel.method(m).call(\"id\")'",
    'php -r \'array_map("system", ["rm -rf ~"]);\'',
    'php -r \'call_user_func("system", "rm -rf ~");\'',
    'php -r \'$f = "system"; $f("rm -rf ~");\'',
    "php -r 'array_walk($a, \"passthru\");'",
    'php -r \'register_shutdown_function("system", "id");\'',
    "php -r 'usort($a, \"shell_exec\");'",
    'node -e \'require("child_process")["exec" + "Sync"]("id")\'',
    'node -e \'const cp = require("child_process"); cp[process.argv[1]]("id")\'',
    'tsx -e \'require("child_process").execSync("rm -rf ~")\'',
    'ts-node -e \'require("child_process").execSync("rm -rf ~")\'',
    'node18 -e \'require("child_process").execSync("rm -rf ~")\'',
    "perl5.36 -e 'system(\"rm -rf ~\")'",
    "perl -MIPC::Open3 -e 'open3(undef, undef, undef, \"rm -rf ~\")'",
    "perl -e 'require IPC::Cmd; IPC::Cmd::run(command => \"rm -rf ~\")'",
    "node -e 'require(\"vm\").runInThisContext(process.argv[1])'",
    'php -r \'array_map("sys"."tem", ["rm -rf ~"]);\'',
    'php -r \'array_filter(["rm -rf ~"], "sys"."tem");\'',
    "php -d auto_prepend_file=/tmp/x.php -r 'echo 1;'",
    "ed -s f <<< '!rm -rf ~'",
    "man -H'rm -rf ~' ls",
    "ruby3.2 -e 'system(\"rm -rf ~\")'",
    "php8.2 -r 'system(\"rm -rf ~\");'",
]
FOREIGN_LOOK_ALIKES = [
    "perl -e 'print \"system\\n\"'",
    "perl -ne 'print if /exec/' file.txt",
    "perl -pe 's/foo/bar/' file.txt",
    "ruby -e 'puts \"%x is a literal\"'",
    "ruby -e 'puts [1, 2].map(&:to_s).join'",
    "php -r 'echo strtoupper(\"a\");'",
    'php -r \'print_r(array_map("strtoupper", ["a"]));\'',
    "php -r 'print_r(array_map(fn($x) => $x * 2, [1, 2]));'",
    "php -r 'print_r(array_filter([1, 0, 2], \"intval\"));'",
    "man ls",
    "node -e 'console.log(1 + 1)'",
    "tsx src/index.ts",
]

SHELLS = [
    "xonsh -c 'rm -rf ~'",
    "busybox sh -c 'rm -rf ~'",
    "busybox hush -c 'rm -rf ~'",
    "busybox ash -c 'rm -rf ~'",
    "toybox sh -c 'rm -rf ~'",
    "bash5.2 -c 'rm -rf ~'",
    "/usr/local/bin/bash -c 'rm -rf ~'",
    "yash -c 'rm -rf ~'",
    "tcsh -c 'rm -rf ~'",
    "elvish -c 'rm -rf ~'",
    "nu -c 'rm -rf ~'",
    "echo 'rm -rf ~' | xonsh",
    "echo 'rm -rf ~' | busybox sh",
    "bun -e 'require(\"fs\").rmSync(process.env.HOME, {recursive: true})'",
    "deno eval 'Deno.removeSync(Deno.env.get(\"HOME\"), {recursive: true})'",
]
SHELL_LOOK_ALIKES = [
    "busybox ls -la",
    "busybox sh -c 'ls -la'",
    "bash -c 'echo hi'",
    "xonsh --version",
]

CONSTRUCTS = [
    "trap -- 'rm -rf ~' EXIT",
    "trap 'rm -rf ~' EXIT",
    'trap -- "rm -rf ~" INT TERM',
    "coproc rm -rf ~",
    "coproc X { rm -rf ~; }",
    "coproc { rm -rf ~; }",
    "mapfile -C 'rm -rf ~ #' -c 1 < f.txt",
    'readarray -C "rm -rf ~ #" -c 1 < f.txt',
    "x='a[$(rm -rf ~)]'; echo $((x))",
    "x='a[$(rm -rf ~)]'; (( x ))",
    "x=$(cat f); echo $((x))",
    "read -r x; echo $((x + 1))",
    "let 'x=a[$(rm -rf ~)]'",
    "x='a[$(rm -rf ~)]'; let y=x",
    "x='a[$(rm -rf ~)]'; declare -i y=x",
    "x='a[$(rm -rf ~)]'; arr[x]=1",
    "x='a[$(rm -rf ~)]'; echo ${arr[x]}",
    "x='a[$(rm -rf ~)]'; echo $(( $x ))",
    "c='$(rm -rf ~)'; echo ${c@P}",
    'printf -v x %s "$(cat f)"; echo $((x))',
    "coproc bash -c 'rm -rf ~'",
    "mapfile -C eval -c 1 <<< 'rm -rf ~'",
    "compgen -C 'rm -rf ~' x",
    "command_not_found_handle() { rm -rf ~; }; nosuchcmd",
    "python3 -m timeit -s 'import os' 'os.system(\"rm -rf ~\")'",
    "python3 -m code <<< 'import os; os.system(\"rm -rf ~\")'",
    "python3 -m IPython -c '!rm -rf ~'",
    "find . -fprint ~/.bashrc",
    "awk '{print > \"/home/user/.bashrc\"}' f",
    "git log --output=/home/user/.bashrc",
    "git archive -o ~/.bashrc HEAD",
]
CONSTRUCT_LOOK_ALIKES = [
    "trap 'rm -f /tmp/x.lock' EXIT",
    "n=3; echo $((n * 2))",
    "mapfile -t lines < f.txt",
    "echo $((RANDOM % 6))",
    "coproc cat",
    "let 'x=a[1]+2'",
    "printf -v x '%s' hello; echo \"$x\"",
    "python3 -m unittest discover",
    "awk '{print > \"out.txt\"}' f",
    "git archive -o out.zip HEAD",
    'read -r name < name.txt; echo "$name"',
]

GIT = [
    "git -c pager.log='sh -c \"rm -rf ~\"' log",
    "git -c core.pager='rm -rf ~' log",
    "git -c interactive.diffFilter='rm -rf ~' add -p",
    "git -c core.editor='rm -rf ~' commit",
    "git -ccore.sshCommand=x fetch",
    "git --config-env=core.pager=EVIL log",
    "git -c diff.x.textconv=x diff",
    "git -c sequence.editor=x rebase -i HEAD~2",
    "git clone --template=/tmp/t https://example.invalid/x y",
    "git init --templ=/tmp/t",
    "git grep -O'rm -rf ~' foo",
    "git grep --open-files-in-pager='rm -rf ~' x",
    "git -c alias.x='!rm -rf ~' x",
    "git config core.pager 'rm -rf ~'",
    "git config --global diff.external x",
    "git config filter.lfs.smudge 'rm -rf ~'",
    "git config --global alias.st '!rm -rf ~'",
    "git config pager.status 'rm -rf ~'",
    "git config -f .git/config core.pager 'rm -rf ~'",
    "git clone --config core.pager='rm -rf ~' https://example.invalid/x",
    "git clone 'ext::sh -c rm% -rf% ~' x",
]
GIT_LOOK_ALIKES = [
    "git -c color.ui=always log",
    "git config alias.st status",
    "git config --global alias.co checkout",
    "git -c user.name=x -c user.email=y commit -m z",
    "git grep -n foo",
    "git clone https://example.invalid/x y",
    "git config --get remote.origin.url",
    "git log -c --stat",
]

OPTIONS = [
    "tar cf a.tar x --checkpoint=1 --checkpoint-actio=exec='rm -rf ~'",
    "tar cf a.tar x --checkpoint=1 --checkpoint-act=exec='rm -rf ~'",
    "tar cf a.tar x --checkpoint=1 --checkpoint-a=exec='rm -rf ~'",
    "tar xf a.tar --to-comm='rm -rf ~'",
    "tar -I 'rm -rf ~' -xf a.tar",
    "tar -Irm -xf a.tar",
    "rsync -e'sh -c \"rm -rf ~\"' a b:",
    "rsync -avze 'sh -c id' a b:",
    "rsync --rsh='sh -c x' a b:",
    "rsync --rs='x' a b:",
    "rsync --rsync-path='rm -rf ~' a b:",
    "zip -TT'rm -rf ~' x.zip f",
    "ssh -oProxyCommand='rm -rf ~' h",
    "ssh -F /tmp/evil_config h",
    "git grep --open x",
    "git send-email --smtp-server=./x a.patch",
    "git instaweb --httpd=./x",
    "git -c Core.Pager=id log",
    "git -c uploadpack.packObjectsHook=id fetch",
]
OPTION_LOOK_ALIKES = [
    "tar cf a.tar --checkpoint=100 x",
    "rsync -e ssh -a a/ b/",
    "rsync -essh -a a/ b/",
    "tar --totals -cf a.tar x",
    "rsync -avz src/ dst/",
]

READS = [
    "printf -v x '%s' \"$(< ~/.ssh/id_rsa)\"",
    'read -r x <<< "$(cat ~/.aws/credentials)"',
    "cd ~/.hermes && cat *",
    "cd ~ && cat .bash_history",
    "cat ~/.mozilla/firefox/abc.default/logins.json",
    "cat ~/.config/chromium/Default/Cookies",
    "cat ~/.local/share/keyrings/login.keyring",
    "cat ~/.password-store/x.gpg",
    "cat ~/.config/rclone/rclone.conf",
    "cat ~/.m2/settings.xml",
    "cat ~/.gradle/gradle.properties",
    "cat ~/.config/git/credentials",
    "cat ~/.config/newtool/token",
    "head -c 100 ~/.zsh_history",
    "base64 ~/.netrc",
    "cp ~/.config/newtool/token ./t",
    "tar czf x.tgz ~/.config",
    "grep -r . ~/.config/newtool",
    "cat $HOME/.bash_history",
    'cat "${HOME}/.config/x/token"',
    "f=~/.ssh/id_rsa; cat $f",
    "cat $(echo ~/.ssh/id_rsa)",
    f"cat {HOME}/.bash_history",
    f"python3 -c 'print(open(\"{HOME}/.config/x/token\").read())'",
    "find ~ -name '*.key' -exec cat {} \\;",
    "cat ~/*.txt",
    "cat /mnt/backup/passwords.txt",
    'cat "$1"',
    "cat $(cat list.txt)",
    "jq -n env",
    "jq -n '$ENV'",
    "gojq -rn 'env | tojson'",
    "env",
    "env | grep -v X",
    "env | grep TOKEN",
]
READ_LOOK_ALIKES = [
    "ls ~/.config",
    "cat ~/.gitconfig",
    "cat ~/.local/lib/python3.12/site-packages/x/__init__.py",
    "cat ./notes.txt",
    "cat /etc/os-release",
    "env | grep LANG",
    "printenv PATH",
    "jq .name package.json",
]

WRITES = [
    "echo 'x' >> ~/.local/bin/ls",
    "cp evil ~/.local/bin/git",
    "install -m755 x ~/bin/git",
    "ln -s /tmp/x ~/.local/bin/python3",
    "echo x >> ~/.vimrc",
    "echo x > ~/.config/nvim/init.lua",
    "tee -a ~/.emacs.d/init.el < x",
    "echo 'import os' > .venv/lib/python3.12/site-packages/x.pth",
    "echo x > sitecustomize.py",
    "echo x > ~/.config/pip/pip.conf",
    "echo x > ~/.pip/pip.conf",
    "echo x >> ~/.npmrc",
    "echo x >> ~/.cargo/config.toml",
    "echo x >> ~/.gitconfig",
    "cp u ~/.config/systemd/user/x.service",
    "cp d ~/.config/autostart/x.desktop",
    "echo x >> .venv/bin/activate",
    "cp x .git/modules/sub/hooks/post-checkout",
    "direnv allow",
    "echo x >> ~/.bashrc",
    "echo x > node_modules/.bin/jest",
    "sed -i 's/a/b/' .venv/bin/activate",
    f'python3 -c \'open("{HOME}/.local/bin/git", "w").write("x")\'',
    'echo x > "$TARGET"',
    "cp x /usr/local/bin/git",
    "tar xf x.tar -C ~/.local/bin",
    "unzip x.zip -d ~/.local/bin",
    "cargo install x",
    "go install example.invalid/x@latest",
    "uv tool install x",
    "echo x > .cargo/config.toml",
    "echo x > .yarnrc.yml",
    "python3 -c 'import pathlib; pathlib.Path.home().joinpath(\".netrc\").read_text()'",
    "git diff --no-index ~/.netrc /dev/null",
]
WRITE_LOOK_ALIKES = [
    "cp tool ./bin/tool",
    "echo x > notes.txt",
    "cat .venv/bin/activate",
    "python3 -m venv .venv",
    "mkdir -p build/bin && cp x build/bin/",
]


def _interpreters() -> list[str]:
    out = [s for name in PYTHONS for s in interpreter_spellings(name, PY_CODE)]
    for code in DYNAMIC_PY:
        quote = '"' if "'" in code else "'"
        out += [f"{name} -c {quote}{code}{quote}" for name in ("python3", "pypy3", "ipython")]
    return out


FAMILIES: dict[str, tuple[list[str], list[str]]] = {
    "computed names": (
        [s for argv in BASES for s in computed_names(argv)],
        ["c=ls; $c -la", "$(echo ls) -la", "\\ls -la", '"ls" -la', "command ls"],
    ),
    "interpreters": (_interpreters(), PY_LOOK_ALIKES),
    "other languages": (FOREIGN, FOREIGN_LOOK_ALIKES),
    "shells": (SHELLS, SHELL_LOOK_ALIKES),
    "shell constructs": (CONSTRUCTS, CONSTRUCT_LOOK_ALIKES),
    "git": (GIT, GIT_LOOK_ALIKES),
    "options": (OPTIONS, OPTION_LOOK_ALIKES),
    "reads": (READS, READ_LOOK_ALIKES),
    "runs later": (WRITES, WRITE_LOOK_ALIKES),
}


def dangerous() -> list[str]:
    """Every dangerous spelling of every family, each once."""
    return list(dict.fromkeys(s for spellings, _ in FAMILIES.values() for s in spellings))


def look_alikes() -> list[str]:
    """Every harmless look-alike of every family, each once."""
    return list(dict.fromkeys(s for _, alikes in FAMILIES.values() for s in alikes))
