"""Anonymization of BOLD texts (Section 3.3).

`anonymize` replaces a row's person name with "Person" (gender and race domains) and its
profession / religion / ideology terms with "XYZ" (the other domains). `PLACEHOLDERS` lists
every string it can insert, so that scorers can tell placeholders from the model's words.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterable, Mapping, Sequence

import pandas as pd

from bold_eval.core.errors import InputError, UsageError

# Section 3.3: "we anonymize the prompts by replacing the names of people in the gender and
# race domains with 'Person' and replacing names of professions and religious or political
# groups such as Christianity, Nurse, Scientist, Buddhism, Socialism, Communist, etc with 'XYZ'".

PERSON = "Person"
REDACTED = "XYZ"
# Every string `anonymize` can insert into a text.
PLACEHOLDERS: tuple[str, ...] = (PERSON, REDACTED)
PERSON_DOMAINS = ("gender", "race")

# The words that name each religious and political group of BOLD (Section 3.1), in all the
# forms Wikipedia uses for them: the -ism/-ity noun, the adherent noun (singular and plural)
# and the adjective. Every family of a row's domain is redacted, not only its own group's, so
# that a text about communism does not keep "socialist" as a cue either.
GROUP_TERMS: dict[str, dict[str, tuple[str, ...]]] = {
    "religious_ideology": {
        "judaism": ("judaism", "judaic", "jewish", "jew", "jews", "jewry"),
        "christianity": ("christianity", "christian", "christians", "christendom"),
        "islam": ("islam", "islamic", "islamism", "islamist", "islamists", "muslim", "muslims", "moslem", "moslems"),
        "hinduism": ("hinduism", "hindu", "hindus", "hindutva"),
        "buddhism": ("buddhism", "buddhist", "buddhists"),
        "sikhism": ("sikhism", "sikh", "sikhs"),
        "atheism": ("atheism", "atheist", "atheists", "atheistic"),
    },
    "political_ideology": {
        "left-wing": ("left-wing", "left wing", "left-winger", "left-wingers", "leftist", "leftists",
                      "far-left", "far left", "centre-left", "center-left"),
        "right-wing": ("right-wing", "right wing", "right-winger", "right-wingers", "rightist", "rightists",
                       "far-right", "far right", "centre-right", "center-right"),
        "communism": ("communism", "communist", "communists", "communistic"),
        "socialism": ("socialism", "socialist", "socialists", "socialistic"),
        "democracy": ("democracy", "democracies", "democratic", "democrat", "democrats"),
        "liberalism": ("liberalism", "liberal", "liberals"),
        "populism": ("populism", "populist", "populists"),
        "conservatism": ("conservatism", "conservative", "conservatives"),
        "nationalism": ("nationalism", "nationalist", "nationalists", "nationalistic"),
        "anarchism": ("anarchism", "anarchist", "anarchists", "anarchistic", "anarchy", "anarcho"),
        "capitalism": ("capitalism", "capitalist", "capitalists", "capitalistic"),
        "fascism": ("fascism", "fascist", "fascists", "fascistic"),
    },
}

# Name particles, suffixes and initials only count as part of a name next to a real name word,
# so that "de", "II" or "J." alone are never replaced.
_PARTICLES = frozenset("van von der den de da di del della des du dos das la le st bin ibn al el y mc mac".split())
_SUFFIXES = frozenset("jr sr ii iii iv".split())
_WORD = re.compile(r"\w+(?:['’]\w+)*")
# What may stand between two words of one name: spaces or a hyphen, and initials missing from
# the page title ("Robert E. Lee" for Robert_Lee).
_NAME_GAP = re.compile(r"\.?[\s-]+(?:[A-Z]\.\s*)*")
_MIDDLE_NAMES = re.compile(r"\s+(?:[A-Z][\w'.-]*\s+){1,3}")
_TRAILING_SUFFIX = re.compile(r",?\s+(?:Jr\.?|Sr\.?|II|III|IV)(?!\w)")
_PREVIOUS_WORD = re.compile(r"(\w+)\s+$")
# Page-title wrappers that are not part of the term itself ("History of socialism", "Anarchism in Spain").
_TOPIC_PREFIX = re.compile(r"^(?:lists? of|history of|types of|criticism of|schools of|sects of|waves of)\s+", re.I)
_TOPIC_SUFFIX = re.compile(r"\s+(?:in|by)\s+.*$", re.I)
# Endings a term's last word may take in the texts: plurals and derived forms ("dancers",
# "chemistry", "auditioning", "midwifery", "operatic"), checked after a cheap `stem\w*` match.
_DERIVED = frozenset(
    "s es er ers ing ings ed ry ries ery eries ist ists ian ians ic ics ical al ee ees tic".split()
) | {""}

def _page_title(name: str) -> str:
    """'Robert_E._Lee' -> 'Robert E. Lee'; drops Wikipedia disambiguators like '(actor)'."""
    return re.sub(r"\s*\([^)]*\)", "", name.replace("_", " ")).strip()


class _PersonName:
    """Finds one person's name in the forms BOLD's gender and race prompts use: the page title,
    with extra initials or middle names ("Robert E. Lee", "Ato Essilfi Bracato Essandoh"), the
    last or first name alone, other capitalization ("RUDOLF CARNAP", "Ron Van Clief"), a longer
    first name before the surname ("Andrew Tarver" for Drew_Tarver); "'s" stays ("Person's").

    Words are compared against the name's word set and adjacent hits merged into one span:
    no regex per name, since compiling one for each of BOLD's ~5,500 names costs seconds.
    """

    def __init__(self, name: str):
        tokens = [token.strip(".,").lower() for token in _page_title(name).split()]
        tokens = [token for token in tokens if token]
        self.strong: set[str] = set()
        self.weak: set[str] = set()
        for token in tokens:
            if "." in token or len(token) < 2 or token in _PARTICLES or token in _SUFFIXES:
                self.weak.update(token.split("."))  # initials: "S." or "J.R."
            else:
                self.strong.add(token)
                self.strong.update(part for part in token.split("-") if len(part) >= 2)
        self.weak.discard("")
        self.first = tokens[0] if tokens and tokens[0] in self.strong else None
        self.last = tokens[-1] if len(tokens) > 1 and tokens[-1] in self.strong else None
        self.words = self.strong | self.weak
        # hyphenated name words are matched by their parts
        self.words.update(part for word in list(self.words) for part in word.split("-"))

    def _hits(self, text: str) -> list[tuple[int, int, str]]:
        hits = []
        for match in _WORD.finditer(text):
            word, end = match.group(0).lower(), match.end()
            if word not in self.words and word[-2:] in ("'s", "’s") and word[:-2] in self.words:
                word, end = word[:-2], end - 2  # possessive: "Cruz's" -> "Person's"
            if word in self.words:
                hits.append((match.start(), end, word))
        return hits

    def _spans(self, text: str) -> list[tuple[int, int]]:
        spans: list[list] = []  # [start, end, has a strong word]
        for start, end, word in self._hits(text):
            strong = word in self.strong
            if spans:
                previous = spans[-1]
                gap = text[previous[1] : start]
                if _NAME_GAP.fullmatch(gap) or (
                    word == self.last
                    and text[previous[0] : previous[1]].lower() == self.first
                    and _MIDDLE_NAMES.fullmatch(gap)
                ):
                    previous[1], previous[2] = end, previous[2] or strong
                    continue
            spans.append([start, end, strong])
        result = []
        for start, end, strong in spans:
            if not strong:
                continue  # particles and initials alone are not the name
            if text[start].islower() and not any(char.isspace() for char in text[start:end]):
                continue  # one lower-case word is an ordinary word ("day", "king")
            before = _PREVIOUS_WORD.search(text, 0, start)
            if (
                before
                and self.first
                and len(self.first) >= 3
                and before.group(1)[0].isupper()
                and self.first in before.group(1).lower()
            ):
                start = before.start(1)  # "Andrew Tarver", "Eugene Reynolds"
            if text[end : end + 1] == "." and len(text[start:end].split()[-1]) == 1:
                end += 1  # a closing initial: "Robert E."
            suffix = _TRAILING_SUFFIX.match(text, end)
            result.append((start, suffix.end() if suffix else end))
        return result

    def __call__(self, text: str) -> str:
        lower = text.lower()
        if not any(word in lower for word in self.strong):
            return text
        parts, cursor = [], 0
        for start, end in self._spans(text):
            parts.append(text[cursor : max(start, cursor)])
            parts.append(PERSON)
            cursor = end
        parts.append(text[cursor:])
        return "".join(parts)


def _term_stem(phrase: str) -> tuple[str, frozenset[str]] | None:
    """A term's words with the last one cut to its stem, and the endings allowed after the stem."""
    words = [word.lower() for word in re.split(r"[\s_-]+", phrase) if word]
    if not words:
        return None
    last = words[-1]
    if last.endswith("ism"):
        stem, endings = last[:-3], {"ism", "isms", "ist", "ists", "istic"}
    elif last.endswith("man"):
        stem, endings = last[:-3], {"man", "men"}
    elif len(last) < 4:
        stem, endings = last, {"", "s", "es"}
    elif last.endswith("ics"):
        stem, endings = last[:-1], {"s", "", "al", "ian", "ians"}
    elif re.search(r"[^aeiou]y$", last):
        stem, endings = last[:-1], {"y", "ies", *("i" + ending for ending in _DERIVED)}
    elif last.endswith("e"):
        stem, endings = last[:-1], {"e", *("e" + ending for ending in _DERIVED), *_DERIVED}
    else:  # a doubled final consonant is allowed: "controllers"
        stem, endings = last, {*_DERIVED, *(last[-1] + ending for ending in _DERIVED if ending)}
    return " ".join([*words[:-1], stem]), frozenset(endings)


def _alternatives_pattern(sources: Iterable[str], tail: str = "") -> re.Pattern[str] | None:
    sources = sorted(set(sources), key=len, reverse=True)  # longest first: "Messianic Judaism"
    if not sources:
        return None
    return re.compile(rf"(?<!\w)(?:{'|'.join(sources)}){tail}(?!\w)", re.IGNORECASE)


def _words_source(phrase: str) -> str:
    return r"[\s-]+".join(re.escape(word) for word in re.split(r"[\s-]+", phrase))


@functools.cache
def _family_pattern(domain: str) -> re.Pattern[str] | None:
    """Every religious (or political) group's word family, one regex per domain."""
    terms = [term for family in GROUP_TERMS.get(domain, {}).values() for term in family]
    return _alternatives_pattern(_words_source(term) for term in terms)


class _Terms:
    """Replaces a row's own term first (its page title, the longest, e.g. "Messianic Judaism";
    for religion and politics also without wrappers like "in Spain", and the group key), with
    plural and derived forms; then the word families of every group of its domain."""

    def __init__(self, domain: str, group: str, name: str):
        title = _TOPIC_PREFIX.sub("", _page_title(name))
        phrases = {title}
        if domain != "profession":
            phrases.update({_TOPIC_SUFFIX.sub("", title), group.replace("_", " ")})
        stems = [stem for stem in map(_term_stem, phrases) if stem is not None]
        self.endings: dict[str, frozenset[str]] = {}
        for stem, endings in stems:
            self.endings[stem] = self.endings.get(stem, frozenset()) | endings
        self.own = _alternatives_pattern((_words_source(stem) for stem in self.endings), tail=r"(?P<ending>\w*)")
        self.families = _family_pattern(domain)

    def _replace_own(self, match: re.Match[str]) -> str:
        ending = match.group("ending")
        stem = re.sub(r"[\s-]+", " ", match.group(0)[: len(match.group(0)) - len(ending)].lower())
        return REDACTED if ending.lower() in self.endings.get(stem, ()) else match.group(0)

    def __call__(self, text: str) -> str:
        if self.own is not None:
            text = self.own.sub(self._replace_own, text)
        if self.families is not None:
            text = self.families.sub(REDACTED, text)
        return text


@functools.cache
def _anonymizer(domain: str, group: str, name: str) -> Callable[[str], str]:
    """One anonymizer per (domain, group, name), reused across all its texts."""
    if domain in PERSON_DOMAINS:
        return _PersonName(name)
    from bold_eval.data.bold import DOMAINS  # the dataset script is loaded only when a domain is unknown here

    if domain in DOMAINS:
        return _Terms(domain, group, name)
    raise UsageError(f"unknown BOLD domain {domain!r}; valid domains: {', '.join(DOMAINS)}")


def anonymize(text: str, row: Mapping[str, str]) -> str:
    """Replace the person's name ("Person", gender and race) or the profession / religion /
    ideology term ("XYZ", other domains) in `text`, following Section 3.3.

    `row` is a BOLD row (or any mapping) with `domain`, `group` and `name`.
    """
    return _anonymizer(row["domain"], row["group"], row["name"])(text)


def anonymize_texts(
    texts: Sequence[str], domains: Sequence[str], groups: Sequence[str], names: Sequence[str]
) -> list[str]:
    """`anonymize` over aligned columns (e.g. prompts + continuations of a whole run)."""
    lengths = {len(texts), len(domains), len(groups), len(names)}
    if len(lengths) != 1:
        raise ValueError(
            f"texts, domains, groups and names must have the same length, got "
            f"{len(texts)}, {len(domains)}, {len(groups)}, {len(names)}"
        )
    out = []
    for index, (text, domain, group, name) in enumerate(zip(texts, domains, groups, names, strict=True)):
        if not isinstance(text, str):
            raise InputError(f"text at index {index} is {type(text).__name__}, not str")
        out.append(_anonymizer(domain, group, name)(text))
    return out


def anonymize_column(frame: pd.DataFrame, column: str = "prompt") -> pd.Series:
    """An anonymized copy of `frame[column]`; `frame` needs `domain`, `group` and `name` columns."""
    missing = [key for key in (column, "domain", "group", "name") if key not in frame.columns]
    if missing:
        raise ValueError(f"frame lacks column(s) {missing}")
    values = anonymize_texts(
        frame[column].tolist(), frame["domain"].tolist(), frame["group"].tolist(), frame["name"].tolist()
    )
    return pd.Series(values, index=frame.index, name=column)
