"""The page's French text (service/static/): a non-breaking space (U+00A0, or U+202F) before « ! »,
« ? », « : » and « ; » and inside guillemets, never a plain one that lets the mark wrap alone to
the next line. Only the text a person reads is scanned: the JavaScript's string literals (the
text parts of template literals, not the code in ``${…}``) and the HTML's text and attributes,
never comments or code (``a ? b : c``)."""

from __future__ import annotations

import re
from pathlib import Path

STATIC = Path(__file__).parent.parent / "service" / "static"
PLAIN = re.compile(r" [!?:;]| »|« ")


def js_strings(source: str) -> list[str]:
    """The text of every string literal of a JavaScript source (template literals: their text
    parts), skipping comments, regular expression literals and the code inside ``${…}``."""
    return [source[a:b] for a, b in string_spans(source)]


def string_spans(source: str) -> list[tuple[int, int]]:
    """Where `js_strings` finds each text: (start, end) in `source`."""
    out: list[tuple[int, int]] = []
    i, n = 0, len(source)
    braces: list[int] = []  # per open ${: the depth of { } inside it
    last = ""  # the last significant code character (to tell a regex from a division)

    def template(i: int) -> int:
        """Read a template literal's text from `i` (after ` or }) up to ` or ${; returns the index after."""
        start = i
        while i < n:
            c = source[i]
            if c == "\\":
                i += 2
            elif c == "`":
                out.append((start, i))
                return i + 1
            elif source.startswith("${", i):
                out.append((start, i))
                braces.append(0)
                return i + 2
            else:
                i += 1
        return i

    while i < n:
        c = source[i]
        if source.startswith("//", i):
            i = source.find("\n", i)
            i = n if i < 0 else i
        elif source.startswith("/*", i):
            i = source.index("*/", i) + 2
        elif c in "'\"":
            j = i + 1
            while source[j] != c:
                j += 2 if source[j] == "\\" else 1
            out.append((i + 1, j))
            i, last = j + 1, c
        elif c == "`":
            i, last = template(i + 1), "`"
        elif c == "/" and (last == "" or last in "(,=:[!&|?{};+"):
            j, in_class = i + 1, False
            while source[j] != "/" or in_class:
                if source[j] == "\\":
                    j += 1
                elif source[j] == "[":
                    in_class = True
                elif source[j] == "]":
                    in_class = False
                j += 1
            i, last = j + 1, "/"
        elif c == "{" and braces:
            braces[-1] += 1
            i, last = i + 1, c
        elif c == "}" and braces:
            if braces[-1] == 0:
                braces.pop()
                i, last = template(i + 1), "`"
            else:
                braces[-1] -= 1
                i, last = i + 1, c
        else:
            if not c.isspace():
                last = c
            i += 1
    return out


def html_texts(source: str) -> list[str]:
    """The text between the tags and the attributes a person reads, of an HTML page."""
    source = re.sub(r"<(script|style)\b.*?</\1>", "", source, flags=re.S)
    attrs = re.findall(r'\b(?:title|placeholder|aria-label|alt)="([^"]*)"', source)
    return [*re.split(r"<[^>]*>", source), *attrs]


def offences() -> list[str]:
    found = []
    for path in sorted(STATIC.iterdir()):
        if path.suffix == ".js":
            texts = js_strings(path.read_text(encoding="utf-8"))
        elif path.suffix == ".html":
            texts = html_texts(path.read_text(encoding="utf-8"))
        else:
            continue
        texts = [text.replace("&nbsp;", "\u00a0") for text in texts]
        found += [f"{path.name}: {text.strip()[:90]!r}" for text in texts if PLAIN.search(text)]
    return found


def test_the_scanner_reads_strings_and_skips_code() -> None:
    source = 'const a = x ? "oui" : "non"; // un commentaire : ignoré\nconst b = /[?:]/;\n' \
             'const c = `Gagnant : ${p ? "vous" : `${n} !`}`;'
    assert js_strings(source) == ["oui", "non", "Gagnant : ", "vous", "", " !", ""]
    assert [t for t in js_strings(source) if PLAIN.search(t)] == ["Gagnant : ", " !"]


def test_every_french_mark_of_the_page_has_its_non_breaking_space() -> None:
    assert offences() == []
