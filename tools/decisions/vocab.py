"""The models' vocabulary and a tokenizer that splits text exactly like llama.cpp's (Python 3 stdlib).

The GGUF carries `tokenizer.ggml.model = llama` (SentencePiece-style), and llama.cpp tokenizes a
prompt in two steps, both reproduced here:
  1. partition: user-defined and control tokens are cut out of the raw text wherever they occur,
     longest first (llama_vocab::impl::tokenizer_st_partition);
  2. the text between them goes to the SPM tokenizer: spaces become U+2581, every character is a
     symbol, the adjacent pair whose concatenation is a vocabulary token with the highest score is
     merged (ties: leftmost) until none is left, and symbols that are no token fall back to bytes
     (llm_tokenizer_spm_session).
The vocabulary: <unk>, <s>, the EOS (a control token, so the server stops on it and prints nothing),
256 byte tokens, the fixed text between a prompt's placeholders (user-defined: a prompt is then a
few tokens plus the situation), printable ASCII characters, then pieces learned by byte-pair merges
over the training situations (score = -merge rank), so that unseen words split into known pieces.
The fidelity check (fidelity.py) compares this tokenizer with the server's /tokenize.
"""
import heapq
import re

SPACE = "\u2581"
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, BYTE = 1, 2, 3, 4, 6


class Vocab:
    def __init__(self, tokens, scores, types):
        self.tokens, self.scores, self.types = tokens, scores, types
        self.id = {t: i for i, t in enumerate(tokens)}
        assert len(self.id) == len(tokens), "duplicate token text"
        self.special = sorted((i for i, t in enumerate(types) if t in (CONTROL, USER_DEFINED)),
                              key=lambda i: -len(tokens[i].encode()))
        self.cache = {}

    @staticmethod
    def build(eos, constant_pieces, corpus, n_vocab):
        """Vocabulary of exactly n_vocab tokens; merges learned from `corpus` (a list of texts)."""
        tokens, scores, types = ["<unk>", "<s>", eos], [0.0, 0.0, 0.0], [UNKNOWN, CONTROL, CONTROL]
        for b in range(256):
            tokens.append(f"<0x{b:02X}>"), scores.append(0.0), types.append(BYTE)
        for p in constant_pieces:
            if p not in tokens:
                tokens.append(p), scores.append(0.0), types.append(USER_DEFINED)
        for c in [SPACE] + [chr(c) for c in range(0x21, 0x7F)]:
            tokens.append(c), scores.append(-1e6), types.append(NORMAL)
        for rank, piece in enumerate(learn_merges(corpus, n_vocab - len(tokens))):
            tokens.append(piece), scores.append(-float(rank)), types.append(NORMAL)
        while len(tokens) < n_vocab:  # the corpus ran out of pairs: unique filler keeps the size fixed
            tokens.append(f"[[unused{len(tokens)}]]"), scores.append(-1e9), types.append(CONTROL)
        return Vocab(tokens, scores, types)

    def encode(self, text):
        """Token ids of `text` as llama-server tokenizes a prompt (parse_special, no BOS, no space prefix)."""
        frags = [text]  # str = raw text, int = token id
        for tid in self.special:
            t = self.tokens[tid]
            out = []
            for f in frags:
                if isinstance(f, int):
                    out.append(f)
                    continue
                parts = f.split(t)
                for k, part in enumerate(parts):
                    if k:
                        out.append(tid)
                    if part:
                        out.append(part)
            frags = out
        ids = []
        for f in frags:
            ids += [f] if isinstance(f, int) else self.spm(f)
        return ids

    def spm(self, text):
        # No merge ever spans a U+2581 (pieces are learned within words), so per-word results concatenate.
        ids = []
        for word in re.findall(SPACE + "?[^" + SPACE + "]+|" + SPACE, text.replace(" ", SPACE)):
            if word not in self.cache:
                self.cache[word] = self.spm_word(word)
            ids += self.cache[word]
        return ids

    def spm_word(self, text):
        sym = list(text)  # symbol texts; merged-away ones become None
        nxt = list(range(1, len(sym))) + [-1]
        prv = list(range(-1, len(sym) - 1))
        heap, rev = [], {}

        def bigram(left, right):
            if left < 0 or right < 0:
                return
            t = sym[left] + sym[right]
            if t in self.id:
                heapq.heappush(heap, (-self.scores[self.id[t]], left, right, len(t)))
                rev[t] = (sym[left], sym[right])

        for i in range(1, len(sym)):
            bigram(i - 1, i)
        while heap:
            _, left, right, size = heapq.heappop(heap)
            if sym[left] is None or sym[right] is None or len(sym[left]) + len(sym[right]) != size:
                continue
            sym[left], sym[right] = sym[left] + sym[right], None
            nxt[left] = nxt[right]
            if nxt[right] >= 0:
                prv[nxt[right]] = left
            bigram(prv[left], left)
            bigram(left, nxt[left])
        out = []

        def reseg(t):
            if t in self.id:
                out.append(self.id[t])
            elif t in rev:
                reseg(rev[t][0])
                reseg(rev[t][1])
            else:
                out.extend(self.id[f"<0x{b:02X}>"] for b in t.encode())

        i = 0
        while i != -1:
            reseg(sym[i])
            i = nxt[i]
        return out

    def decode(self, ids):
        out = b""
        for i in ids:
            t, ty = self.tokens[i], self.types[i]
            if ty == BYTE:
                out += bytes([int(t[3:5], 16)])
            elif ty in (NORMAL, USER_DEFINED):
                out += t.replace(SPACE, " ").encode()
        return out.decode("utf-8", "replace")


def learn_merges(corpus, n):
    """Byte-pair merges over the words of `corpus` (each word U+2581-prefixed, letters, digits and
    punctuation apart), most frequent pair first, ties by text: deterministic. Returns merged pieces."""
    freq = {}
    for text in corpus:
        for w in re.findall(r" ?[A-Za-z]+| ?[0-9]+| ?[^ A-Za-z0-9]", text):
            w = w.replace(" ", SPACE)
            freq[w] = freq.get(w, 0) + 1
    words = [[list(w), f] for w, f in sorted(freq.items())]
    pieces, have = [], set()
    while len(pieces) < n:
        pairs = {}
        for syms, f in words:
            for a, b in zip(syms, syms[1:]):
                pairs[(a, b)] = pairs.get((a, b), 0) + f
        if not pairs:
            break
        (a, b), f = max(pairs.items(), key=lambda kv: (kv[1], kv[0]))
        if f < 2:
            break
        for w in words:
            syms, i, merged = w[0], 0, []
            while i < len(syms):
                if i + 1 < len(syms) and syms[i] == a and syms[i + 1] == b:
                    merged.append(a + b)
                    i += 2
                else:
                    merged.append(syms[i])
                    i += 1
            w[0] = merged
        if a + b not in have:
            have.add(a + b)
            pieces.append(a + b)
    return pieces
