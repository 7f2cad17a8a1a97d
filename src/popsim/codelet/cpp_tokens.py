"""C++ tokens for reading codelet files: the tokenizer and the bracket-matching helpers
the type and declaration readers share (cpp_types.py, cpp_parse.py)."""
from __future__ import annotations

import re
from typing import List

TOKEN = re.compile(r'''(?P<s>(?:u8|[uUL])?R"(?P<d>[^()\\\s]{0,16})\(.*?\)(?P=d)"
                     |(?:u8|[uUL])?"(?:\\.|[^"\\\n])*"|(?:u8|[uUL])?'(?:\\.|[^'\\\n])*')
                     |(?P<n>\.?\d(?:[\w.]|'(?=\w)|[eEpP][+-])*)
                     |(?P<i>[A-Za-z_$]\w*)
                     |(?P<p>::|->|\.\.\.|\S)''', re.X | re.S)


def is_ident(tok: str) -> bool:
    return bool(tok) and (tok[0].isalpha() or tok[0] == "_")


def angle_close(toks: List[str], i: int) -> int:
    depth = 0
    pairs = {"(": ")", "[": "]", "{": "}"}
    while i < len(toks):
        t = toks[i]
        if t in pairs:
            i = group_close(toks, i)
        elif t == "<":
            depth += 1
        elif t == ">":
            depth -= 1
            if depth == 0:
                return i
        elif t == ";":
            break
        i += 1
    raise ValueError("unbalanced < >")


def group_close(toks: List[str], i: int) -> int:
    stack = []
    pairs = {"(": ")", "[": "]", "{": "}"}
    while i < len(toks):
        t = toks[i]
        if t in pairs:
            stack.append(pairs[t])
        elif t in (")", "]", "}"):
            if not stack or stack.pop() != t:
                raise ValueError(f"unbalanced '{t}'")
            if not stack:
                return i
        i += 1
    raise ValueError("unbalanced brackets")


def split_commas(toks: List[str]) -> List[List[str]]:
    parts, cur, depth, i = [], [], 0, 0
    while i < len(toks):
        t = toks[i]
        if t in ("(", "[", "{"):
            j = group_close(toks, i)
            cur.extend(toks[i:j + 1])
            i = j + 1
            continue
        if t == "<":
            depth += 1
        elif t == ">" and depth:
            depth -= 1
        if t == "," and depth == 0:
            parts.append(cur)
            cur = []
        else:
            cur.append(t)
        i += 1
    if cur or parts:
        parts.append(cur)
    return parts


def top_level(toks: List[str]) -> List[str]:
    """The tokens outside any ( ) or < > group."""
    out, depth = [], 0
    for t in toks:
        if t in ("(", "<", "["):
            depth += 1
        elif t in (")", ">", "]") and depth:
            depth -= 1
        elif depth == 0:
            out.append(t)
    return out


def render_tokens(toks: List[str]) -> str:
    out = ""
    for t in toks:
        if out and (is_ident(out[-1]) or out[-1].isdigit()) and (is_ident(t) or t[0].isdigit()):
            out += " "
        out += t
    return out

