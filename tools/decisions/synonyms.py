"""WordNet synonyms for training-text augmentation (Debian's wordnet-base, read directly).

A word of a training situation is swapped now and then for a WordNet synonym of the same part of
speech, inflected like the original, so the models meet the wordings people use beside the ones
the scenario world spells out (general English knowledge a tiny model trained from scratch lacks).
"""
import os
import re

WORDNET = "/usr/share/wordnet"
POS = {"noun": "n", "verb": "v", "adj": "a", "adv": "r"}
# Words whose synonyms would change the meaning of a situation or its slots.
KEEP = {"is", "are", "was", "be", "been", "has", "have", "had", "do", "does", "did", "not", "no", "the", "a",
        "an", "of", "to", "in", "on", "for", "and", "or", "but", "it", "its", "by", "at", "as", "with", "from",
        "this", "that", "then", "there", "than", "all", "every", "each", "one", "once", "we", "us", "our",
        "they", "their", "which", "who", "while", "since", "after", "before", "until", "so", "any", "per",
        "up", "out", "down", "off", "over", "again", "too", "very", "can", "cannot", "would", "will", "new",
        "same", "still", "more", "most", "some", "few", "other", "others", "into", "about", "because", "when"}


def _read(path):
    """{lemma: [synsets]} for one data.POS file: each synset is the tuple of its lemmas."""
    out = {}
    with open(path, encoding="latin-1") as f:
        for line in f:
            if line.startswith("  "):
                continue
            parts = line.split(" ")
            n = int(parts[3], 16)
            lemmas = [re.sub(r"\(.*\)$", "", parts[4 + 2 * i]).replace("_", " ").lower() for i in range(n)]
            syn = tuple(dict.fromkeys(lemmas))
            for l in syn:
                out.setdefault(l, []).append(syn)
    return out


class Synonyms:
    def __init__(self, root=WORDNET):
        self.by_pos = {}
        for name in POS:
            path = os.path.join(root, "data." + name)
            if os.path.exists(path):
                self.by_pos[name] = _read(path)
        if not self.by_pos:
            raise FileNotFoundError(f"no WordNet data in {root} (apt-get install wordnet-base)")

    @staticmethod
    def _forms(word):
        """(lemma, suffix) guesses for an inflected word: 'fails' -> ('fail', 's')."""
        out = [(word, "")]
        for suf, back in (("ing", ""), ("ing", "e"), ("ed", ""), ("ed", "e"), ("es", ""), ("s", "")):
            if word.endswith(suf) and len(word) > len(suf) + 2:
                out.append((word[:-len(suf)] + back, suf))
        return out

    @staticmethod
    def _inflect(lemma, suf):
        if not suf or " " in lemma:
            return lemma if not suf else None
        if suf in ("ed", "ing") and lemma.endswith("e"):
            lemma = lemma[:-1]
        return lemma + suf

    def of(self, word):
        """Synonyms of `word` (lower case, single words), inflected like it; [] for kept words."""
        w = word.lower()
        if w in KEEP or not w.isalpha() or len(w) < 3:
            return []
        seen = []
        for lemma, suf in self._forms(w):
            pos_list = ("verb",) if suf in ("ed", "ing") else self.by_pos
            for pos in pos_list:
                for syn in self.by_pos.get(pos, {}).get(lemma, []):
                    for s in syn:
                        if s == lemma or not re.fullmatch(r"[a-z][a-z -]*", s):
                            continue
                        form = self._inflect(s, suf)
                        if form and form != w and form not in seen:
                            seen.append(form)
        return seen

    def swap(self, text, rng, share):
        """`text` with about `share` of its words (placeholders and kept words aside) replaced by a
        random synonym; the rng draws the same way whatever the text, for reproducible data."""
        def one(m):
            word = m.group(0)
            if rng.random() >= share:
                return word
            options = self.of(word)
            return rng.choice(options) if options else word
        return re.sub(r"(?<![{\w])[A-Za-z]+(?![}\w])", one, text)
