"""Small generated repositories, one per language, for the cohort quality test and benchmark.

Each has a util, the module using it, a test of that module, and dependents of the module
reached the way the language's projects reach their own code (ESM `.js` specifiers, a tsconfig
`paths` alias and the package's own name; a Go module with several packages; Java packages; Rust
`crate::` paths and the crate's name in an integration test). The change edits the util, the
module and the test: one cohort of three is expected, read util → module → test.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class QualityRepo:
    language: str
    base: dict[str, str]
    change: dict[str, str]  # path → new text
    util: str
    module: str
    test: str
    blast_radius: tuple[int, int]  # (definitions, files) depending on the cohort


def _edit(tree: dict[str, str], *paths: str, old: str, new: str) -> dict[str, str]:
    return {p: tree[p].replace(old, new) for p in paths}


TS = {
    "package.json": '{"name": "textkit", "exports": {".": "./dist/index.js"}}\n',
    "tsconfig.json": (
        '{"compilerOptions": {"outDir": "dist", "rootDir": "src", "baseUrl": ".",\n'
        '  "paths": {"@kit/*": ["src/*"]}}}\n'
    ),
    "src/util/strings.ts": "export function slug(s: string) {\n  return s.trim();\n}\n",
    "src/core/render.ts": (
        "import {slug} from '../util/strings.js';\n\n"
        "export function render(s: string) {\n  return slug(s);\n}\n"
    ),
    "src/index.ts": "export * from './core/render.js';\n",
    "src/cli.ts": (
        "import {render} from '@kit/core/render';\n\n"
        "export function run() {\n  return render('a');\n}\n"
    ),
    "src/api.ts": (
        "import {render} from './index.js';\n\nexport function serve() {\n  return render('b');\n}\n"
    ),
    "test/render.test.ts": (
        "import test from 'ava';\nimport {render} from 'textkit';\n\n"
        "test('renders', () => {\n  render('x');\n});\n"
    ),
}

GO = {
    "go.mod": "module example.com/textkit\n\ngo 1.22\n",
    "util/strings.go": "package util\n\nfunc Slug(s string) string {\n\treturn s\n}\n",
    "render/render.go": (
        'package render\n\nimport "example.com/textkit/util"\n\n'
        "func Render(s string) string {\n\treturn util.Slug(s)\n}\n"
    ),
    "render/render_test.go": (
        'package render\n\nimport "testing"\n\nfunc TestRender(t *testing.T) {\n\tRender("x")\n}\n'
    ),
    "cmd/cli/main.go": (
        'package main\n\nimport "example.com/textkit/render"\n\n'
        'func run() string {\n\treturn render.Render("a")\n}\n\nfunc main() {\n\trun()\n}\n'
    ),
    "api/serve.go": (
        'package api\n\nimport "example.com/textkit/render"\n\n'
        'func Serve() string {\n\treturn render.Render("b")\n}\n'
    ),
}

_JAVA = "src/main/java/com/textkit"
JAVA = {
    f"{_JAVA}/util/Strings.java": (
        "package com.textkit.util;\n\npublic class Strings {\n"
        "    public static String slug(String s) {\n        return s.trim();\n    }\n}\n"
    ),
    f"{_JAVA}/render/Renderer.java": (
        "package com.textkit.render;\n\nimport com.textkit.util.Strings;\n\n"
        "public class Renderer {\n    public static String render(String s) {\n"
        "        return Strings.slug(s);\n    }\n}\n"
    ),
    f"{_JAVA}/api/Api.java": (
        "package com.textkit.api;\n\nimport com.textkit.render.Renderer;\n\n"
        'public class Api {\n    public String serve() {\n        return Renderer.render("b");\n'
        "    }\n}\n"
    ),
    f"{_JAVA}/cli/Cli.java": (
        "package com.textkit.cli;\n\nimport com.textkit.render.Renderer;\n\n"
        'public class Cli {\n    public String run() {\n        return Renderer.render("a");\n'
        "    }\n}\n"
    ),
    "src/test/java/com/textkit/render/RendererTest.java": (
        "package com.textkit.render;\n\nclass RendererTest {\n"
        '    void renders() {\n        Renderer.render("x");\n    }\n}\n'
    ),
}

RUST = {
    "Cargo.toml": '[package]\nname = "text-kit"\nversion = "0.1.0"\n',
    "src/lib.rs": "pub mod api;\npub mod render;\npub mod util;\n",
    "src/util.rs": "pub fn slug(s: &str) -> String {\n    s.trim().to_string()\n}\n",
    "src/render.rs": (
        "use crate::util::slug;\n\npub fn render(s: &str) -> String {\n    slug(s)\n}\n"
    ),
    "src/api.rs": (
        'use crate::render::render;\n\npub fn serve() -> String {\n    render("b")\n}\n'
    ),
    "src/bin/cli.rs": ('use text_kit::render::render;\n\nfn main() {\n    render("a");\n}\n'),
    "tests/render_test.rs": (
        'use text_kit::render::render;\n\n#[test]\nfn renders() {\n    render("x");\n}\n'
    ),
}

PYTHON = {
    "textkit/__init__.py": "",
    "textkit/util.py": "def slug(s):\n    return s.strip()\n",
    "textkit/render.py": (
        "from textkit.util import slug\n\n\ndef render(s):\n    return slug(s)\n"
    ),
    "textkit/api.py": "from textkit import render\n\n\ndef serve():\n    return render.render('b')\n",
    "textkit/cli.py": "from .render import render\n\n\ndef run():\n    return render('a')\n",
    "tests/test_render.py": (
        "from textkit.render import render\n\n\ndef test_render():\n    render('x')\n"
    ),
}

REPOS = (
    QualityRepo(
        "typescript",
        TS,
        {
            **_edit(TS, "src/util/strings.ts", old="s.trim()", new="s.trim().toLowerCase()"),
            **_edit(TS, "src/core/render.ts", old="slug(s)", new="slug(s + '')"),
            **_edit(TS, "test/render.test.ts", old="render('x')", new="render('y')"),
        },
        "src/util/strings.ts",
        "src/core/render.ts",
        "test/render.test.ts",
        (2, 3),  # run, serve; cli.ts, api.ts and the index re-exporting render
    ),
    QualityRepo(
        "go",
        GO,
        {
            **_edit(GO, "util/strings.go", old="return s\n", new='return s + ""\n'),
            **_edit(GO, "render/render.go", old="util.Slug(s)", new='util.Slug(s + "")'),
            **_edit(GO, "render/render_test.go", old='Render("x")', new='Render("y")'),
        },
        "util/strings.go",
        "render/render.go",
        "render/render_test.go",
        (3, 2),  # run, main (through run), Serve
    ),
    QualityRepo(
        "java",
        JAVA,
        {
            **_edit(JAVA, f"{_JAVA}/util/Strings.java", old="s.trim()", new="s.strip()"),
            **_edit(JAVA, f"{_JAVA}/render/Renderer.java", old="slug(s)", new='slug(s + "")'),
            **_edit(
                JAVA,
                "src/test/java/com/textkit/render/RendererTest.java",
                old='"x"',
                new='"y"',
            ),
        },
        f"{_JAVA}/util/Strings.java",
        f"{_JAVA}/render/Renderer.java",
        "src/test/java/com/textkit/render/RendererTest.java",
        (2, 2),  # Api.serve, Cli.run
    ),
    QualityRepo(
        "rust",
        RUST,
        {
            **_edit(RUST, "src/util.rs", old="s.trim()", new="s.trim_end()"),
            **_edit(RUST, "src/render.rs", old="slug(s)", new="slug(s.trim())"),
            **_edit(RUST, "tests/render_test.rs", old='render("x")', new='render("y")'),
        },
        "src/util.rs",
        "src/render.rs",
        "tests/render_test.rs",
        (2, 2),  # serve, main
    ),
    QualityRepo(
        "python",
        PYTHON,
        {
            **_edit(PYTHON, "textkit/util.py", old="s.strip()", new="s.strip().lower()"),
            **_edit(PYTHON, "textkit/render.py", old="slug(s)", new="slug(s + '')"),
            **_edit(PYTHON, "tests/test_render.py", old="render('x')", new="render('y')"),
        },
        "textkit/util.py",
        "textkit/render.py",
        "tests/test_render.py",
        (2, 2),  # serve, run
    ),
)
