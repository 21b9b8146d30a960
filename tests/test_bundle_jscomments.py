"""The bundle ships JavaScript without comments: pysite_agent/bundle/_jscomments.py.

Every page-side file, stripped, must still parse as a module (Node's own parser checks it), keep
its line count (a console's line numbers stay the source's), and lose nothing but comments:
strings, template literals and regular expressions that look like comments stay as they are.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from pysite_agent.bundle._jscomments import strip_comments

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = [ROOT / "loader.js", *sorted((ROOT / "web").rglob("*.js"))]


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("a(); // note", "a();"),
        ("/** doc */\nexport const x = 1;", "\nexport const x = 1;"),
        ("a = b\n/* two\nlines */c", "a = b\n\nc"),
        ("const re = /\\/\\/x/g; // c", "const re = /\\/\\/x/g;"),
        ("x = a / b / c; // c", "x = a / b / c;"),
        ("if (ok) return /[\"'/]/.test(v);", "if (ok) return /[\"'/]/.test(v);"),
        ("const s = '/* no */' + \"// no\";", "const s = '/* no */' + \"// no\";"),
        ("t = `a // no ${x /* yes */} b`;", "t = `a // no ${x} b`;"),
        ("t = `${`in // ${y}`} /* no */`;", "t = `${`in // ${y}`} /* no */`;"),
        ("o = {a: `}`}; // c", "o = {a: `}`};"),
        ("css = `\n.a{color:red} /* kept: CSS in a string */\n`;", None),
    ],
)
def test_comments_go_and_everything_else_stays(source: str, expected: str | None) -> None:
    assert strip_comments(source) == (source if expected is None else expected)


@pytest.mark.parametrize("source", ["a = 'open", "t = `open", "/* open", "x = (/open"])
def test_an_unterminated_token_is_an_error_not_a_half_stripped_file(source: str) -> None:
    with pytest.raises(ValueError, match="unterminated"):
        strip_comments(source)


def test_every_page_side_file_still_parses_and_keeps_its_lines() -> None:
    node = shutil.which("node")
    assert node, "Node.js is needed (.ci/setup installs it)"
    assert len(SCRIPTS) > 20
    saved = 0
    for path in SCRIPTS:
        source = path.read_text(encoding="utf-8")
        stripped = strip_comments(source)
        assert stripped.count("\n") == source.count("\n"), path
        assert strip_comments(stripped) == stripped, path
        check = subprocess.run(
            [node, "--input-type=module", "--check"],
            input=stripped,
            text=True,
            capture_output=True,
            timeout=60,
        )
        assert check.returncode == 0, f"{path.relative_to(ROOT)}: {check.stderr[-800:]}"
        saved += len(source) - len(stripped)
    assert saved > 0


def test_node_check_catches_a_broken_module() -> None:
    # The check above can fail: Node rejects a module that does not parse.
    node = shutil.which("node")
    assert node
    check = subprocess.run(
        [node, "--input-type=module", "--check"], input="a = (", text=True, capture_output=True
    )
    assert check.returncode != 0
