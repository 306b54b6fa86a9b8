"""The import rewriter: every import form, and nothing that only looks like one."""

from __future__ import annotations

from memhtml.codemode.imports import rewrite_imports, tokenize


def test_static_imports_are_hoisted_onto_line_one_and_lines_are_kept() -> None:
    source = (
        'const x = 1\nimport { corpus, edges as e } from "/workspace/lib/corpus.mjs";\n'
        "import fs, * as ns from 'node:fs'\nconsole.log(x)\n"
    )
    out = rewrite_imports(source)
    first, *rest = out.split("\n")
    assert first.startswith('const __memhtml_m0 = __memhtml_import("/workspace/lib/corpus.mjs",')
    assert '["corpus", "edges"]' in first and 'const e = __memhtml_m0["edges"];' in first
    assert "const fs = __memhtml_m1.default;" in first and "const ns = __memhtml_m1;" in first
    assert first.endswith("const x = 1")
    assert rest[0].strip() == "" and rest[1].strip() == ""
    assert rest[2] == "console.log(x)"
    assert out.count("\n") == source.count("\n")


def test_side_effect_dynamic_and_meta_forms() -> None:
    out = rewrite_imports(
        'import "./x.mjs" with { type: "json" }\n'
        'async function f() { return import("node:fs") }\nconsole.log(import.meta.url, a.import)\n'
    )
    assert out.startswith('__memhtml_import("./x.mjs", []); ')
    assert '__memhtml_import_dynamic("node:fs")' in out
    assert "__memhtml_import_meta.url" in out and "a.import" in out


def test_strings_comments_templates_and_regexes_are_left_alone() -> None:
    source = (
        "const s = 'import x from \"y\"'\n"
        "// import a from 'b'\n"
        "/* import c from 'd' */\n"
        'const re = /import e from "f"/g; const half = 4 / 2 / 1\n'
        'const t = `import ${ cond ? "{" : "}" } from ${`import g from "h"`}`\n'
    )
    assert rewrite_imports(source) == source


def test_an_unreadable_import_is_left_for_quickjs_to_refuse() -> None:
    assert rewrite_imports("import { from 'x'\n") == "import { from 'x'\n"
    assert rewrite_imports("if (x) { import y from 'z' }") == "if (x) { import y from 'z' }"


def test_a_hashbang_line_is_blanked() -> None:
    out = rewrite_imports('#!/usr/bin/env node\nimport p from "node:path"\np')
    assert out.split("\n")[0].startswith("const __memhtml_m0")
    assert out.split("\n")[0].rstrip().endswith(";")


def test_tokenizer_tracks_template_expression_depth() -> None:
    kinds = [(t.kind, t.depth) for t in tokenize("a = `x${ {b: 1}.b }y`; import")]
    assert kinds[-1] == ("name", 0)
