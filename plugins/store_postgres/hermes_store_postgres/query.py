"""A search query: its terms (quoted phrases and words, as the SQLite store reads them) and
what each asks of the word index (a ``tsquery``) and of the substring index (needles)."""

from __future__ import annotations

import re
from dataclasses import dataclass

from .text import UNSPACED, strip_token
from .words import phrase, words_of

_WORD = re.compile(r"[^\W_]+")
_TERM = re.compile(r'"([^"]*)"|(\S+)')
_SPACE = re.compile(r"\s")


@dataclass
class QueryTerm:
    """One term of a search query: its text, whether it was quoted, its word tokens (as the
    query reader cuts them), and whether it holds CJK or punctuation (which the substring
    index finds best)."""

    text: str
    quoted: bool
    tokens: list[str]
    special: bool

    def words(self) -> list[str]:
        """The term's words as the word index holds them (each token cut and folded as
        SQLite's tokenizer would)."""
        return [word for token in self.tokens for word in words_of(token)]

    def tsquery(self, prefix: bool = False) -> str | None:
        """The term for the word index: a phrase of its words; with ``prefix`` the last word
        may also begin a longer one (not for quoted terms, nor for words shorter than 3
        characters, 2 for CJK). ``None`` for a term without words."""
        words = self.words()
        if not words:
            return None
        return phrase(words, prefix=self.prefixed(prefix))

    def prefixed(self, prefix: bool) -> bool:
        """Whether the term's last word matches as a prefix when ``prefix`` is asked."""
        if not (prefix and self.tokens) or self.quoted:
            return False
        last = self.tokens[-1]
        return len(last) >= 3 or (len(last) >= 2 and bool(UNSPACED.search(last)))

    def marks(self, prefix: bool) -> tuple[set[str], set[str]]:
        """The words a snippet marks for this term: those matched whole, and the prefixes."""
        words = self.words()
        if words and self.prefixed(prefix):
            return set(words[:-1]), {words[-1]}
        return set(words), set()


def parse_query(query: str) -> list[QueryTerm]:
    """The terms of a search query: quoted phrases and words, in order (never a query
    language: every character is text)."""
    terms = []
    for match in _TERM.finditer(query):
        quoted = match.group(1) is not None
        text = match.group(1) if quoted else match.group(2)
        text = " ".join(text.split()) if quoted else strip_token(text)
        if not text:
            continue
        special = bool(UNSPACED.search(text)) or not _WORD.fullmatch(text)
        terms.append(QueryTerm(text, quoted, _WORD.findall(text), special))
    return terms


def needles_of(terms: list[QueryTerm]) -> list[str]:
    """The terms the substring index looks for: those of 3 characters or more, without
    spaces."""
    return [t.text for t in terms if len(t.text) >= 3 and not _SPACE.search(t.text)]
