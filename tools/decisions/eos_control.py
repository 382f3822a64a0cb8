#!/usr/bin/env python3
"""Marks a trained model's EOS token as a control token, in place (Python 3 standard library only).

  eos_control.py MODEL.gguf

Training needs the EOS to be a user token ("[[end]]"): llama-finetune tokenizes its text without
special tokens, so only a user token can appear in it. Serving needs it to be a control token:
llama-server prints the text of a user token it stops on ("escalate[[end]]"), never a control one.
"""
import struct
import sys

SCALAR = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
STRING, ARRAY, INT32, UINT32 = 8, 9, 5, 4
CONTROL = 3


class Reader:
    def __init__(self, data):
        self.data, self.pos = data, 0

    def take(self, fmt):
        v = struct.unpack_from("<" + fmt, self.data, self.pos)[0]
        self.pos += struct.calcsize("<" + fmt)
        return v

    def string(self):
        n = self.take("Q")
        s = self.data[self.pos:self.pos + n].decode("utf-8", "replace")
        self.pos += n
        return s

    def skip(self, vtype):
        if vtype == STRING:
            self.string()
        elif vtype == ARRAY:
            etype, n = self.take("I"), self.take("Q")
            for _ in range(n):
                self.skip(etype)
        else:
            self.pos += SCALAR[vtype]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    path = sys.argv[1]
    data = bytearray(open(path, "rb").read())
    r = Reader(data)
    if r.take("I") != 0x46554747:
        sys.exit(f"{path}: not a GGUF file")
    r.take("I")
    r.take("Q")
    n_kv = r.take("Q")
    eos, types_at = None, None
    for _ in range(n_kv):
        key, vtype = r.string(), r.take("I")
        if key == "tokenizer.ggml.eos_token_id" and vtype in (UINT32, INT32):
            eos = r.take("I")
        elif key == "tokenizer.ggml.token_type" and vtype == ARRAY:
            etype, n = r.take("I"), r.take("Q")
            if etype != INT32:
                sys.exit(f"{path}: token_type is not an int32 array")
            types_at = (r.pos, n)
            r.pos += 4 * n
        else:
            r.skip(vtype)
    if eos is None or types_at is None or eos >= types_at[1]:
        sys.exit(f"{path}: no EOS id or token types")
    struct.pack_into("<i", data, types_at[0] + 4 * eos, CONTROL)
    with open(path, "wb") as f:
        f.write(data)
    print(f"{path}: token {eos} is now a control token")


if __name__ == "__main__":
    main()
