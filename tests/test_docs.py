"""The documentation keeps up with the contract.

- every hook in ``hermes_hookspecs.specs`` has exactly one ``## name(params)`` section in
  ``docs/hooks/*.md``, whose code block repeats the spec's typed signature, and no section documents
  a hook that no longer exists;
- every public class of ``hermes_hookspecs`` has a ``## Name`` section in ``docs/contract.md``,
  which mentions each of its dataclass fields;
- every relative link in ``docs/**/*.md`` points to an existing file (and, with a ``#fragment``, to
  an existing heading);
- the Python examples compile, and the example plugins register against the hook specs.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import re
import types
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path

import pluggy
import pytest

import hermes_hookspecs
from hermes_hookspecs import specs

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
HOOK_DOCS = DOCS / "hooks"
CONTRACT = DOCS / "contract.md"

HOOKS: dict[str, Callable[..., object]] = {
    name: func
    for name, func in vars(specs).items()
    if name.startswith("hermes_") and inspect.isfunction(func)
}

PUBLIC_CLASSES = sorted(
    name for name in hermes_hookspecs.__all__ if inspect.isclass(getattr(hermes_hookspecs, name))
)

FENCE_RE = re.compile(r"^\s*(```|~~~)")
HOOK_HEADING_RE = re.compile(r"^##\s+(hermes_\w+)\s*(?:\((.*)\))?\s*$")
HEADING_RE = re.compile(r"^(#{1,6})\s+(.*?)\s*#*\s*$")
# [text](target "title") and ![alt](target); the text may hold one level of brackets.
INLINE_LINK_RE = re.compile(
    r"!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]"  # [text] or ![alt]
    r"\(\s*(<[^>]*>|[^()\s]+)(?:\s+[^)]*)?\)"  # (target "optional title")
)
REFERENCE_LINK_RE = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*(<[^>]*>|\S+)")
INLINE_CODE_RE = re.compile(r"(`+).*?\1")
SCHEME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*:")


# --- markdown helpers ------------------------------------------------------------------------


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _prose_lines(text: str) -> Iterator[tuple[int, str]]:
    """(line number, line) for every line outside fenced code blocks."""
    fence: str | None = None
    for number, line in enumerate(text.splitlines(), start=1):
        match = FENCE_RE.match(line)
        if fence is None:
            if match:
                fence = match.group(1)
                continue
            yield number, line
        elif match and match.group(1) == fence and line.strip() == fence:
            fence = None


def _code_blocks(text: str) -> list[tuple[int, str, str]]:
    """(line number of the opening fence, info string, body) of every fenced code block."""
    blocks: list[tuple[int, str, str]] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        match = FENCE_RE.match(lines[i])
        if not match:
            i += 1
            continue
        fence, info, start = match.group(1), lines[i].strip()[3:].strip(), i
        body: list[str] = []
        i += 1
        while i < len(lines) and lines[i].strip() != fence:
            body.append(lines[i])
            i += 1
        blocks.append((start + 1, info, "\n".join(body)))
        i += 1
    return blocks


def _slug(heading: str) -> str:
    """The anchor GitHub gives a heading."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # links keep their text only
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    for _, line in _prose_lines(path.read_text(encoding="utf-8")):
        match = HEADING_RE.match(line)
        if not match:
            continue
        slug = _slug(match.group(2))
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        anchors.add(slug if count == 0 else f"{slug}-{count}")
    return anchors


def _hook_pages() -> list[Path]:
    return sorted(HOOK_DOCS.glob("*.md"))


def _all_pages() -> list[Path]:
    return sorted(DOCS.rglob("*.md"))


# --- hook sections ---------------------------------------------------------------------------


@dataclasses.dataclass
class HookSection:
    name: str
    params: list[str] | None  # None: the heading has no parameter list
    page: Path
    line: int
    code_lines: list[str]  # lines of the first code block of the section

    @property
    def where(self) -> str:
        return f"{_rel(self.page)}:{self.line}"


def _hook_sections() -> list[HookSection]:
    sections: list[HookSection] = []
    for page in _hook_pages():
        text = page.read_text(encoding="utf-8")
        blocks = _code_blocks(text)
        headings = [(number, line) for number, line in _prose_lines(text) if HEADING_RE.match(line)]
        for index, (number, line) in enumerate(headings):
            match = HOOK_HEADING_RE.match(line)
            if not match:
                continue
            end = headings[index + 1][0] if index + 1 < len(headings) else float("inf")
            inside = [body for start, _, body in blocks if number < start < end]
            params = None
            if match.group(2) is not None:
                params = [p.strip() for p in match.group(2).split(",") if p.strip()]
            sections.append(
                HookSection(
                    name=match.group(1),
                    params=params,
                    page=page,
                    line=number,
                    code_lines=inside[0].splitlines() if inside else [],
                )
            )
    return sections


class _Text:
    """An annotation that prints as its source text (annotations are strings here)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def _annotation(annotation: object) -> object:
    if annotation is inspect.Parameter.empty:
        return annotation
    if isinstance(annotation, str):
        return _Text(annotation)
    return _Text(inspect.formatannotation(annotation))


def _typed_signature(name: str) -> str:
    """``def name(p: ann, ...) -> ret`` as written in specs.py."""
    signature = inspect.signature(HOOKS[name])
    signature = signature.replace(
        parameters=[
            p.replace(annotation=_annotation(p.annotation)) for p in signature.parameters.values()
        ],
        return_annotation=_annotation(signature.return_annotation),
    )
    return f"def {name}{signature}"


def _heading(name: str) -> str:
    return f"## {name}({', '.join(inspect.signature(HOOKS[name]).parameters)})"


def test_there_are_hooks_to_document() -> None:
    assert HOOKS, "no hermes_* functions found in hermes_hookspecs.specs"
    assert _hook_pages(), f"no hook pages in {_rel(HOOK_DOCS)}"


@pytest.mark.parametrize("name", sorted(HOOKS))
def test_hook_is_documented_once(name: str) -> None:
    expected = list(inspect.signature(HOOKS[name]).parameters)
    found = [s for s in _hook_sections() if s.name == name]
    assert found, (
        f"hook {name} is not documented: add a section headed `{_heading(name)}` "
        f"to a page in {_rel(HOOK_DOCS)}/"
    )
    assert len(found) == 1, f"hook {name} is documented more than once: " + ", ".join(
        s.where for s in found
    )
    section = found[0]
    assert section.params == expected, (
        f"{section.where}: the heading of {name} lists parameters {section.params}, "
        f"the spec has {expected}; the heading should be `{_heading(name)}`"
    )


def test_no_documented_hook_is_unknown() -> None:
    unknown = [f"{s.name} ({s.where})" for s in _hook_sections() if s.name not in HOOKS]
    assert not unknown, "documented hooks that hermes_hookspecs.specs does not define: " + (
        ", ".join(unknown)
    )


@pytest.mark.parametrize("name", sorted(HOOKS))
def test_hook_signature_matches_spec(name: str) -> None:
    expected = _typed_signature(name)
    sections = [s for s in _hook_sections() if s.name == name]
    if not sections:
        pytest.fail(f"hook {name} is not documented (see test_hook_is_documented_once)")
    for section in sections:
        code = [line.strip() for line in section.code_lines]
        defs = [line for line in code if line.startswith(f"def {name}(")]
        assert defs, (
            f"{section.where}: the section of {name} must start with a python code block "
            f"holding its signature:\n{expected}"
        )
        assert defs[0] == expected, (
            f"{section.where}: the documented signature of {name} differs from the spec\n"
            f"  documented: {defs[0]}\n  spec:       {expected}"
        )


# --- the contract page -----------------------------------------------------------------------


def _contract_sections() -> dict[str, str]:
    """Level-2 heading text -> the prose of its section, in docs/contract.md."""
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for _, line in _prose_lines(CONTRACT.read_text(encoding="utf-8")):
        match = HEADING_RE.match(line)
        if match and len(match.group(1)) <= 2:
            level_two = match.group(1) == "##"
            current = sections.setdefault(match.group(2).strip(), []) if level_two else None
            continue
        if current is not None:
            current.append(line)
    return {title: "\n".join(lines) for title, lines in sections.items()}


def test_there_are_public_classes() -> None:
    assert PUBLIC_CLASSES, "hermes_hookspecs.__all__ names no class"
    assert CONTRACT.is_file(), f"{_rel(CONTRACT)} is missing"


@pytest.mark.parametrize("name", PUBLIC_CLASSES)
def test_public_class_is_in_contract(name: str) -> None:
    if name not in _contract_sections():
        pytest.fail(
            f"hermes_hookspecs.{name} is not documented: add a `## {name}` section to "
            f"{_rel(CONTRACT)}"
        )


@pytest.mark.parametrize(
    "name",
    [n for n in PUBLIC_CLASSES if dataclasses.is_dataclass(getattr(hermes_hookspecs, n))],
)
def test_dataclass_fields_are_in_contract(name: str) -> None:
    section = _contract_sections().get(name)
    if section is None:
        pytest.fail(f"hermes_hookspecs.{name} is not documented in {_rel(CONTRACT)}")
    missing = [
        f.name
        for f in dataclasses.fields(getattr(hermes_hookspecs, name))
        if f"`{f.name}`" not in section
    ]
    assert not missing, (
        f"the `## {name}` section of {_rel(CONTRACT)} does not mention the fields: "
        + ", ".join(missing)
    )


# --- links -----------------------------------------------------------------------------------


def _links(path: Path) -> Iterator[tuple[int, str]]:
    """(line number, target) of every link outside code."""
    for number, line in _prose_lines(path.read_text(encoding="utf-8")):
        line = INLINE_CODE_RE.sub("", line)
        for match in INLINE_LINK_RE.finditer(line):
            yield number, match.group(1).strip("<>")
        match = REFERENCE_LINK_RE.match(line)
        if match:
            yield number, match.group(1).strip("<>")


def _relative_links() -> list[tuple[Path, int, str]]:
    return [
        (page, number, target)
        for page in _all_pages()
        for number, target in _links(page)
        if not SCHEME_RE.match(target) and not target.startswith("//")
    ]


def _resolve(page: Path, target: str) -> tuple[Path, str]:
    path_part, _, fragment = target.partition("#")
    path_part = urllib.parse.unquote(path_part)
    if not path_part:
        return page, fragment
    base = ROOT if path_part.startswith("/") else page.parent
    return (base / path_part.lstrip("/")).resolve(), fragment


def test_docs_have_links() -> None:
    assert _relative_links(), "no relative links found in docs/: is the link parser broken?"


def test_relative_links_point_to_existing_files() -> None:
    broken = []
    for page, number, target in _relative_links():
        resolved, _ = _resolve(page, target)
        if not resolved.exists():
            broken.append(f"{_rel(page)}:{number}: {target}")
    assert not broken, "links to files that do not exist:\n" + "\n".join(broken)


def test_link_fragments_point_to_existing_headings() -> None:
    broken = []
    for page, number, target in _relative_links():
        resolved, fragment = _resolve(page, target)
        if not fragment or resolved.suffix != ".md" or not resolved.is_file():
            continue
        if fragment.lower() not in _anchors(resolved):
            broken.append(f"{_rel(page)}:{number}: {target}")
    assert not broken, "links to headings that do not exist:\n" + "\n".join(broken)


# --- examples --------------------------------------------------------------------------------


def _python_examples() -> list[tuple[Path, int, str]]:
    examples = []
    for page in _all_pages():
        for line, info, body in _code_blocks(page.read_text(encoding="utf-8")):
            if info.split()[:1] != ["python"]:
                continue
            stripped = body.strip()
            if stripped.startswith("def ") and "\n" not in stripped and not stripped.endswith(":"):
                continue  # a bare signature line, not a runnable example
            examples.append((page, line, body))
    return examples


def _example_params(only_plugins: bool = False) -> list[object]:
    return [
        pytest.param(page, line, body, id=f"{_rel(page)}:{line}")
        for page, line, body in _python_examples()
        if not only_plugins or "@hookimpl" in body
    ]


@pytest.mark.parametrize("page, line, body", _example_params())
def test_python_example_compiles(page: Path, line: int, body: str) -> None:
    compile(body, f"{_rel(page)}:{line}", "exec")


@functools.cache
def _declared_hookspecs() -> list[object]:
    """The ``hookspecs`` of the installed plugins that declare hooks of their own (the gateway's
    platform adapters): examples on their pages implement them."""
    from hermes_core.plugins.manager import PluginManager

    manager = PluginManager(environ={})
    plugins = [r.plugin for r in manager.list_records() if r.status == "loaded"]
    return [p.hookspecs for p in plugins if getattr(p, "hookspecs", None) is not None]


@pytest.mark.parametrize("page, line, body", _example_params(only_plugins=True))
def test_example_plugin_registers(page: Path, line: int, body: str) -> None:
    """The example's hook implementations name real hooks and only arguments the spec has."""
    module = types.ModuleType(f"docs_example_{page.stem}_{line}".replace("-", "_"))
    exec(compile(body, f"{_rel(page)}:{line}", "exec"), module.__dict__)
    pm = pluggy.PluginManager(hermes_hookspecs.PROJECT_NAME)
    pm.add_hookspecs(specs)
    for declared in _declared_hookspecs():
        pm.add_hookspecs(declared)
    pm.register(module)
    pm.check_pending()
    marker = f"{hermes_hookspecs.PROJECT_NAME}_impl"
    implementations = [v for v in vars(module).values() if getattr(v, marker, None) is not None]
    assert implementations, "the example defines no hook"
