"""evtc_text.py — reading evtc's quoted text lines (`generated text: "..."`, `evtc tokenize`'s `text: "..."`)
back into Python strings; shared by tests/data/compare_tokenizer.py and tests/gpu/qwen3_generate.py."""


def unquote(q):
    r"""evtc's quoted text: backslash escapes for \\ \" \n \t \r and \xNN, the rest UTF-8 as it is.
    None if q is not a quoted string."""
    if not (len(q) >= 2 and q[0] == '"' and q[-1] == '"'):
        return None
    out, i, q = bytearray(), 0, q[1:-1].encode()
    while i < len(q):
        if q[i:i + 1] == b"\\":
            c = q[i + 1:i + 2]
            if c == b"x":
                out.append(int(q[i + 2:i + 4], 16))
                i += 4
                continue
            out += {b"n": b"\n", b"t": b"\t", b"r": b"\r"}.get(c, c)
            i += 2
        else:
            out += q[i:i + 1]
            i += 1
    return out.decode()
