"""The one rule by which the bot reads a word: a round's candidates and the other players' guesses.

``WordIndex.key(text, language)`` gives the model label a word stands for, or None:

1. the text itself when it is a label (``"crayon"`` is the wax crayon's key);
2. else its comparison form: ``vocab.normalize`` (Unicode NFKC, case folding, accents and
   punctuation dropped, spaces trimmed and collapsed, a leading French article removed: le, la,
   les, l', un, une, des, du, de la…), then a leading English article (the, a, an) removed;
3. that form looked up among the labels (English) and the vocabulary's French forms (word,
   variants, synonyms, everyday forms), the round's language first;
4. else the singular, only where the vocabulary knows it: the last word without a final ``s`` or
   ``x`` (``chats``, ``cats``, ``chapeaux`` → ``chapeau``) or, in English, ``es`` (``boxes``).

So ``"Cat"``, ``" the  cats "``, ``"CHAT"``, ``"les chats"`` and ``"Chats"`` are all ``cat``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from vocab.normalize import normalize

ENGLISH_ARTICLES = ("the", "a", "an")


def comparison_form(text: str) -> str:
    """``text`` as the bot compares it: ``vocab.normalize``, then without a leading English article."""
    words = normalize(text).split()
    if len(words) > 1 and words[0] in ENGLISH_ARTICLES:
        words = words[1:]
    return " ".join(words)


def _singulars(form: str, language: str) -> list[str]:
    out = []
    if form.endswith(("s", "x")) and len(form) > 2:
        out.append(form[:-1])
    if language == "en" and form.endswith("es") and len(form) > 3:
        out.append(form[:-2])
    return out


class WordIndex:
    """Labels and French forms by comparison form, for one model's labels."""

    def __init__(self, labels: Collection[str], french_forms: Mapping[str, str]) -> None:
        """``french_forms``: the vocabulary's normalised form → category key (``form_index``)."""
        self.labels = frozenset(labels)
        self.english: dict[str, str] = {}
        for label in sorted(self.labels):
            self.english.setdefault(comparison_form(label), label)
        self.french: dict[str, str] = {}
        for form, key in french_forms.items():
            if key in self.labels:
                self.french.setdefault(comparison_form(form), key)

    def key(self, text: str, language: str = "fr") -> str | None:
        """The label ``text`` stands for (see the module's rule), or None."""
        if text in self.labels:
            return text
        form = comparison_form(text)
        if not form:
            return None
        tables = (self.french, self.english) if language == "fr" else (self.english, self.french)
        for candidate in (form, *_singulars(form, language)):
            for table in tables:
                if candidate in table:
                    return table[candidate]
        return None
