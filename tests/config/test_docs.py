"""The design in the repository: docs/configuration.md names every setting, and every docs/
link resolves.

Three guards, each shown to catch a planted violation:
- every environment variable `config/settings.py` (and the config modules it imports) reads is
  in the environment table of docs/configuration.md;
- every `docs/<file>.md` and `docs/<file>.md#anchor` reference in the project's Python, HTML and
  markdown files names a file that exists and a heading it has (GitHub's anchor rules);
- no comment or docstring points at design files or sections a clone does not have.
"""

from __future__ import annotations

import ast
import io
import os
import re
import tokenize
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SETTINGS = ROOT / "config" / "settings.py"
ENV_MODULE = ROOT / "config" / "env.py"
CONFIGURATION = ROOT / "docs" / "configuration.md"

SKIPPED_DIRS = {".git", ".venv", "node_modules", "var", "__pycache__", ".ruff_cache"}
SKIPPED_PREFIXES = ("static/vendor/",)


def project_files(*suffixes: str) -> Iterator[Path]:
    # Skipped directories are pruned, not walked: the virtualenv alone holds tens of thousands
    # of files.
    found = []
    for folder, dirs, files in os.walk(ROOT):
        dirs[:] = [d for d in dirs if d not in SKIPPED_DIRS]
        for name in files:
            path = Path(folder, name)
            rel = path.relative_to(ROOT).as_posix()
            if path.suffix in suffixes and not rel.startswith(SKIPPED_PREFIXES):
                found.append(path)
    yield from sorted(found)


# --- environment variables -------------------------------------------------------------------


def _dotted(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return f"{_dotted(node.value)}.{node.attr}"
    return ""


def env_helpers() -> tuple[set[str], set[str]]:
    """The helpers of config/env.py that read a variable named by their first argument, and
    those that also read NAME_FILE."""
    tree = ast.parse(ENV_MODULE.read_text(encoding="utf-8"))
    helpers, file_helpers = set(), set()
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("env"):
            helpers.add(node.name)
            if "_FILE" in ast.unparse(node):
                file_helpers.add(node.name)
    return helpers, file_helpers


DIRECT_READS = {"os.environ.get", "os.getenv", "environ.get", "getenv"}
ENVIRON = {"os.environ", "environ"}


def env_vars_read(source: str) -> set[str]:
    """Every variable name a settings source reads: through the env helpers, os.environ[...],
    os.environ.get and os.getenv, with a literal name."""
    helpers, file_helpers = env_helpers()
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and node.args:
            func = _dotted(node.func)
            first = node.args[0]
            if not (isinstance(first, ast.Constant) and isinstance(first.value, str)):
                continue
            if func in helpers or func.rpartition(".")[2] in helpers:
                names.add(first.value)
                if func.rpartition(".")[2] in file_helpers:
                    names.add(f"{first.value}_FILE")
            elif func in DIRECT_READS:
                names.add(first.value)
        elif isinstance(node, ast.Subscript) and _dotted(node.value) in ENVIRON:
            key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                names.add(key.value)
    return names


def settings_sources() -> list[Path]:
    """config/settings.py and the project modules it imports (config/env.py only passes names
    through, so its own reads are parametric and not listed)."""
    sources = [SETTINGS]
    for node in ast.walk(ast.parse(SETTINGS.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            candidate = ROOT / (node.module.replace(".", "/") + ".py")
            if candidate.is_file() and candidate != ENV_MODULE:
                sources.append(candidate)
    return sources


def readme_environment_table(readme: str) -> set[str]:
    """Variable names in the first column of the environment table."""
    section = re.split(r"^#{2,3} Environment\n", readme, maxsplit=1, flags=re.MULTILINE)[1]
    section = re.split(r"^#{1,3} ", section, maxsplit=1, flags=re.MULTILINE)[0]
    names: set[str] = set()
    for line in section.splitlines():
        if line.startswith("|") and not line.startswith("|---"):
            first_cell = line.split("|")[1]
            names |= set(re.findall(r"`([A-Z][A-Z0-9_]*)`", first_cell))
    return names


def missing_from_readme(sources: list[str], readme: str) -> set[str]:
    read = set().union(*(env_vars_read(s) for s in sources))
    return read - readme_environment_table(readme)


def test_every_setting_read_from_the_environment_is_in_the_readme_table():
    sources = [p.read_text(encoding="utf-8") for p in settings_sources()]
    read = set().union(*(env_vars_read(s) for s in sources))
    # The parser sees the settings at all (a broken parser would make the guard vacuous).
    assert {"DATABASE_URL", "GITHUB_GIT_URL", "SECRET_KEY", "SECRET_KEY_FILE"} <= read
    assert missing_from_readme(sources, CONFIGURATION.read_text(encoding="utf-8")) == set()


def test_the_environment_comparison_catches_a_missing_variable():
    planted = (
        "import os\n"
        "from config.env import envsecret, envstr\n"
        'A = envstr("QUORUM_PLANTED_SETTING", "x")\n'
        'B = envsecret("QUORUM_PLANTED_SECRET")\n'
        'C = os.environ["QUORUM_PLANTED_DIRECT"]\n'
        'D = os.getenv("QUORUM_PLANTED_GETENV")\n'
        'E = envstr("DATABASE_URL")\n'
    )
    readme = CONFIGURATION.read_text(encoding="utf-8")
    assert missing_from_readme([planted], readme) == {
        "QUORUM_PLANTED_SETTING",
        "QUORUM_PLANTED_SECRET",
        "QUORUM_PLANTED_SECRET_FILE",
        "QUORUM_PLANTED_DIRECT",
        "QUORUM_PLANTED_GETENV",
    }


def test_the_readme_table_is_read_from_its_first_column_only():
    readme = (
        "### Environment\n\n| variable | meaning |\n|---|---|\n"
        "| `LISTED` | mentions `NOT_A_NAME` in its meaning |\n\n### Next\n| `LATER` | x |\n"
    )
    assert readme_environment_table(readme) == {"LISTED"}


# --- docs/ references ----------------------------------------------------------------------------

DOCS_REF = re.compile(r"(?<![\w/.-])docs/([A-Za-z0-9_.-]+\.md)(?:#([\w-]+))?")
MD_LINK = re.compile(r"\]\((?!https?:|mailto:)([^)\s]*?)(?:#([\w-]+))?\)")


def github_anchor(heading: str) -> str:
    """GitHub's heading anchor: lowercase, punctuation except - and _ dropped, spaces → -."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def anchors_of(markdown: str) -> set[str]:
    seen: dict[str, int] = {}
    anchors: set[str] = set()
    fenced = False
    for line in markdown.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
            continue
        match = None if fenced else re.match(r"^(#{1,6})\s+(.*?)\s*#*\s*$", line)
        if match:
            base = github_anchor(match.group(2))
            count = seen.get(base, 0)
            seen[base] = count + 1
            anchors.add(base if count == 0 else f"{base}-{count}")
    return anchors


def broken_refs(path: Path, text: str, root: Path = ROOT) -> list[str]:
    """References in `text` (from file `path`) to a docs file or heading that does not exist."""
    targets: list[tuple[Path, str | None, str]] = []
    for match in DOCS_REF.finditer(text):
        targets.append((root / "docs" / match.group(1), match.group(2), match.group(0)))
    if path.suffix == ".md":
        for match in MD_LINK.finditer(text):
            target, anchor = match.group(1), match.group(2)
            if target.endswith(".md"):
                targets.append(((path.parent / target).resolve(), anchor, match.group(0)))
            elif target == "" and anchor:
                targets.append((path, anchor, match.group(0)))
    broken = []
    for file, anchor, written in targets:
        if not file.is_file():
            broken.append(f"{written}: no such file")
        elif anchor and anchor not in anchors_of(file.read_text(encoding="utf-8")):
            broken.append(f"{written}: no heading with that anchor in {file.name}")
    return broken


def citing_text(path: Path, text: str) -> str:
    """Where a file cites: a Python file's comments and docstrings (its string literals are data,
    e.g. paths in a test's scratch repository); all of a template or markdown file."""
    if path.suffix == ".py":
        return "\n".join(chunk for _, chunk in python_commentary(text))
    return text


def test_every_docs_reference_resolves_to_a_file_and_heading():
    problems = []
    checked = 0
    for path in project_files(".py", ".html", ".md"):
        text = citing_text(path, path.read_text(encoding="utf-8"))
        for problem in broken_refs(path, text):
            problems.append(f"{path.relative_to(ROOT)}: {problem}")
        checked += len(DOCS_REF.findall(text))
    assert checked > 20  # the guard looks at real references
    assert problems == []


def test_a_broken_docs_reference_is_caught(tmp_path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "rules.md").write_text(
        "# Rules\n\n## The verdict: Ship, Hold, Block\n\n```sh\n# not a heading\n```\n"
        "See [the verdict](#the-verdict-ship-hold-block) and [gone](#gone).\n",
        encoding="utf-8",
    )
    code = (
        "# docs/rules.md#the-verdict-ship-hold-block is right\n"
        "# docs/rules.md#not-a-heading is not, nor docs/missing.md\n"
    )
    assert broken_refs(tmp_path / "x.py", code, root=tmp_path) == [
        "docs/rules.md#not-a-heading: no heading with that anchor in rules.md",
        "docs/missing.md: no such file",
    ]
    rules = docs / "rules.md"
    assert broken_refs(rules, rules.read_text(encoding="utf-8"), root=tmp_path) == [
        "](#gone): no heading with that anchor in rules.md"
    ]


def test_github_anchor_rules():
    assert github_anchor("The verdict: Ship, Hold, Block") == "the-verdict-ship-hold-block"
    assert github_anchor("Node statuses and transitions") == "node-statuses-and-transitions"
    assert github_anchor("`round_state_set` and co_located") == "round_state_set-and-co_located"
    assert anchors_of("# A\n## A\n") == {"a", "a-1"}


# --- no pointers outside the repository ------------------------------------------------------

FORBIDDEN = re.compile(r"DESIGN\.md|STYLE\.md|github-api\.md|\u00a7|\bissue: ")
HTML_COMMENTS = re.compile(r"\{#.*?#\}|\{% comment %\}.*?\{% endcomment %\}|<!--.*?-->", re.S)


def python_commentary(source: str) -> Iterator[tuple[int, str]]:
    """Comments and docstrings of a Python source, with their line numbers."""
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            yield token.start[0], token.string
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            first = node.body[0] if node.body else None
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                yield first.lineno, first.value.value


def commentary(path: Path, text: str) -> Iterator[tuple[int, str]]:
    if path.suffix == ".py":
        yield from python_commentary(text)
    elif path.suffix == ".html":
        for match in HTML_COMMENTS.finditer(text):
            yield text.count("\n", 0, match.start()) + 1, match.group(0)
    else:  # markdown and other prose: all of it is commentary
        yield from enumerate(text.splitlines(), 1)


def outside_pointers(path: Path, text: str) -> list[str]:
    return [
        f"line {line}: {FORBIDDEN.search(chunk).group(0)!r}"
        for line, chunk in commentary(path, text)
        if FORBIDDEN.search(chunk)
    ]


def test_no_comment_points_at_a_design_file_or_section_outside_the_repository():
    problems = []
    for path in project_files(".py", ".html", ".md", ".js", ".css", ".yaml", ".toml"):
        rel = path.relative_to(ROOT).as_posix()
        for problem in outside_pointers(path, path.read_text(encoding="utf-8")):
            problems.append(f"{rel} {problem}")
    assert problems == []


def test_an_outside_pointer_is_caught_in_comments_only(tmp_path):
    # The names are assembled here so that a plain grep for them finds nothing in the project.
    design, style, api_notes = (f"{name}.md" for name in ("DESIGN", "STYLE", "github-api"))
    planted = tmp_path / "planted.py"
    planted.write_text(
        '"""Module docstring, see \u00a73.3."""\n'
        f"# the rules are in {design}\n"
        "def f():\n"
        '    """Decided elsewhere (issue: pipeline)."""\n'
        '    return f"GitHub issue: {1}"  # a string, not a comment\n',
        encoding="utf-8",
    )
    assert outside_pointers(planted, planted.read_text(encoding="utf-8")) == [
        f"line 2: {design!r}",
        "line 1: '\u00a7'",
        "line 4: 'issue: '",
    ]
    page = tmp_path / "page.html"
    page.write_text(
        f"<p>GitHub issue: #9</p>{{# see {style} #}}\n<!-- {api_notes} -->\n", encoding="utf-8"
    )
    assert outside_pointers(page, page.read_text(encoding="utf-8")) == [
        f"line 1: {style!r}",
        f"line 2: {api_notes!r}",
    ]
