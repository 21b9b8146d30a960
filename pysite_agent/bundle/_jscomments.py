"""JavaScript comments out of the bundle's copies of ``loader.js`` and ``web/``.

The source files explain themselves in comments; a visitor's browser does not need them. The
bundle writes each ``.js`` file with its comments replaced by nothing, except that a comment's
line breaks stay, so a line number in a browser's console is the line number in the source.
Nothing else changes: strings, template literals (with their ``${...}`` parts), regular
expression literals and white space outside comments are copied as they are.

The scanner follows the lexical grammar of ECMAScript 2024 (section 12) as far as comments
need: a ``/`` starts a regular expression where an expression may start (after an operator,
an opening bracket, a comma, a semicolon, or a keyword such as ``return``), and is division
elsewhere (after a name, a number, a closing bracket or a string). ``strip_comments`` raises
``ValueError`` for an unterminated string, template, regular expression or comment, so a file
it cannot read is never shipped half-stripped.
"""

from __future__ import annotations

__all__ = ["strip_comments"]

# Keywords after which a `/` starts a regular expression (an expression follows them).
_REGEX_AFTER_WORDS = frozenset(
    "return typeof instanceof in of new delete void throw case do else await yield".split()
)
# Punctuators after which a `/` starts a regular expression. `)` and `]` end an expression
# (division follows); `}` is taken as the end of a block (a statement, so a regex may follow).
_REGEX_AFTER_PUNCT = frozenset("(,=:[!&|?{};+-*%<>~^}")


def strip_comments(source: str) -> str:
    """``source`` (JavaScript) without its comments; their line breaks are kept.

    Raises ValueError (with the 1-based line) for an unterminated token or comment.
    """
    out: list[str] = []
    i, n = 0, len(source)
    # A stack of open template literals: each entry is the brace depth of the `${` part
    # it is in (the scanner is in code while the stack's top has depth > 0).
    templates: list[int] = []
    last = ""  # the last significant code token: a punctuator char, or "w" + word, or "v"

    def line_of(pos: int) -> int:
        return source.count("\n", 0, pos) + 1

    def scan_template(start: int) -> tuple[int, str]:
        """From just after a backtick (or a `}` closing `${`), to the template's end or `${`.

        Returns the index after it and the token it leaves as the last one: "v" (the
        template ended: a value) or "{" (a `${` part began: an expression follows).
        """
        j = start
        while j < n:
            c = source[j]
            if c == "\\":
                j += 2
                continue
            if c == "`":
                templates.pop()
                return j + 1, "v"
            if c == "$" and j + 1 < n and source[j + 1] == "{":
                templates[-1] = 1
                return j + 2, "{"
            j += 1
        raise ValueError(f"line {line_of(start)}: unterminated template literal")

    def drop_line_end_blanks() -> None:
        """The spaces before a comment on its line go with it (single-char code chunks only)."""
        while out and out[-1] in (" ", "\t"):
            out.pop()

    while i < n:
        c = source[i]
        nxt = source[i + 1] if i + 1 < n else ""
        if c == "/" and nxt == "/":
            drop_line_end_blanks()
            end = source.find("\n", i)
            i = n if end < 0 else end  # the line break itself stays
            continue
        if c == "/" and nxt == "*":
            end = source.find("*/", i + 2)
            if end < 0:
                raise ValueError(f"line {line_of(i)}: unterminated comment")
            drop_line_end_blanks()
            out.append("\n" * source.count("\n", i, end))
            i = end + 2
            continue
        if c in "'\"":
            j = i + 1
            while j < n and source[j] != c:
                if source[j] == "\n":
                    raise ValueError(f"line {line_of(i)}: unterminated string")
                j += 2 if source[j] == "\\" else 1
            if j >= n:
                raise ValueError(f"line {line_of(i)}: unterminated string")
            out.append(source[i : j + 1])
            i, last = j + 1, "v"
            continue
        if c == "`":
            templates.append(0)
            j, last = scan_template(i + 1)
            out.append(source[i:j])
            i = j
            continue
        if templates and templates[-1] > 0 and c in "{}":
            if c == "{":
                templates[-1] += 1
            else:
                templates[-1] -= 1
                if templates[-1] == 0:  # back in the template's text
                    j, last = scan_template(i + 1)
                    out.append(source[i:j])
                    i = j
                    continue
            out.append(c)
            i, last = i + 1, c
            continue
        if c == "/":
            regex = (
                last == ""
                or last in _REGEX_AFTER_PUNCT
                or (last.startswith("w") and last[1:] in _REGEX_AFTER_WORDS)
            )
            if regex:
                j, in_class = i + 1, False
                while j < n:
                    ch = source[j]
                    if ch == "\n":
                        raise ValueError(f"line {line_of(i)}: unterminated regular expression")
                    if ch == "\\":
                        j += 2
                        continue
                    if ch == "[":
                        in_class = True
                    elif ch == "]":
                        in_class = False
                    elif ch == "/" and not in_class:
                        break
                    j += 1
                else:
                    raise ValueError(f"line {line_of(i)}: unterminated regular expression")
                j += 1
                while j < n and (source[j].isalnum() or source[j] in "_$"):
                    j += 1  # flags
                out.append(source[i:j])
                i, last = j, "v"
                continue
            out.append(c)
            i, last = i + 1, c
            continue
        if c.isalnum() or c in "_$" or ord(c) > 127:
            j = i
            while j < n and (source[j].isalnum() or source[j] in "_$" or ord(source[j]) > 127):
                j += 1
            word = source[i:j]
            out.append(word)
            # A number ends an expression like a name does; `.5` style numbers start with ".",
            # which is handled as a punctuator below and then this branch.
            i, last = j, "w" + word
            continue
        if not c.isspace():
            last = c
            # `)` and `]` end an expression: division follows them.
            if c in ")]":
                last = "v"
        out.append(c)
        i += 1
    if templates:
        raise ValueError("unterminated template literal at the end of the file")
    return "".join(out)
