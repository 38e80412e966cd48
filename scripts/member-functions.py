#!/usr/bin/env python3
"""Counts the member functions of every class and struct defined in the C++ sources under the given
directories (default: lib tools), and fails when one has more than --max (default 30).

Usage: scripts/member-functions.py [--max N] [--top K] [dir ...]

A lexical count, no compiler needed: comments, strings and preprocessor lines are dropped, each
class body is split into its member declarations, and a declaration counts as a member function
when it declares something with a parameter list (constructors, destructors, operators and
methods, declared or defined in the class; a method defined out of line is counted once, where it
is declared). Nested classes count on their own. Templates of members count as members.
"""
import argparse
import os
import re
import sys

SOURCE = re.compile(r'\.(h|hpp|cpp|cc|cu|cuh)$')


def strip(text):
    """Comments, string and character literals, and preprocessor lines removed (blanked)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('//', i):
            j = text.find('\n', i)
            i = n if j < 0 else j
        elif text.startswith('/*', i):
            j = text.find('*/', i + 2)
            i = n if j < 0 else j + 2
            out.append(' ')
        elif c == 'R' and text.startswith('R"', i):
            m = re.match(r'R"([^(]*)\(', text[i:])
            end = text.find(')' + m.group(1) + '"', i) if m else -1
            i = n if end < 0 else end + len(m.group(1)) + 2
            out.append('""')
        elif c in '"\'':
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == '\\' else 1
            out.append(c + c)
            i = j + 1
        else:
            out.append(c)
            i += 1
    lines = ''.join(out).split('\n')
    kept, cont = [], False
    for line in lines:
        if cont or line.lstrip().startswith('#'):
            cont = line.rstrip().endswith('\\')
            kept.append('')
        else:
            kept.append(line)
    return '\n'.join(kept)


def matching(text, i, open_c='{', close_c='}'):
    depth = 0
    for j in range(i, len(text)):
        if text[j] == open_c:
            depth += 1
        elif text[j] == close_c:
            depth -= 1
            if depth == 0:
                return j
    return len(text) - 1


HEAD = re.compile(r'\b(class|struct|union)\s+(?:\[\[[^\]]*\]\]\s*)?([A-Za-z_]\w*)(?:\s+final)?\s*(?::[^;{()]*)?\{')


def members(body):
    """The member declarations of a class body at its own depth, as (text, has_body) pairs, and
    the nested class bodies."""
    decls, nested, cur, i = [], [], '', 0
    while i < len(body):
        c = body[i]
        if c == '{':
            end = matching(body, i)
            head = cur.strip()
            if re.search(r'\b(class|struct|union|enum)\b[^()]*$', head) and ')' not in head:
                if not head.startswith('enum') and ' enum ' not in ' ' + head:
                    nested.append((head, body[i + 1:end]))
                cur = ''
                i = end + 1
                # `struct X {...} x;`: the declarator after the body is a data member.
                continue
            if ')' in head:  # a function body: the declaration ends here
                decls.append(head)
                cur = ''
                i = end + 1
                continue
            cur += body[i:end + 1]  # a brace initializer
            i = end + 1
            continue
        if c == ';':
            if cur.strip():
                decls.append(cur.strip())
            cur = ''
        elif c == ':' and re.search(r'\b(public|private|protected)\s*$', cur):
            cur = ''
        else:
            cur += c
        i += 1
    return decls, nested


def is_function(decl):
    d = re.sub(r'\s+', ' ', decl).strip()
    if not d or re.match(r'(using|typedef|friend|static_assert|enum|class|struct)\b', d):
        return False
    d = re.sub(r'^template ?<.*?> ?', '', d)
    d = re.sub(r'\[\[.*?\]\]', '', d)
    # Constructor initializer lists and default arguments come after the parameter list.
    eq = d.find('=')
    paren = d.find('(')
    if paren < 0:
        return False
    if 0 <= eq < paren and not re.search(r'\boperator\s*[=!<>+\-*/%&|^\[\]()]*$', d[:paren]):
        return False  # a data member initialised by a call
    name = d[:paren].rstrip()
    if re.search(r'\b(decltype|alignas|sizeof|noexcept)$', name):
        return False
    return bool(re.search(r'(~?[A-Za-z_]\w*|operator\s*\S+)$', name))


def classes(text, path, out, prefix=''):
    for m in HEAD.finditer(text):
        start = m.end() - 1
        # Only classes at this nesting level: skip those inside an earlier match's body.
        end = matching(text, start)
        name = prefix + m.group(2)
        body = text[start + 1:end]
        decls, nested = members(body)
        count = sum(1 for d in decls if is_function(d))
        out.append((count, name, path))
        for head, nbody in nested:
            nm = re.search(r'(class|struct|union)\s+([A-Za-z_]\w*)', head)
            if nm:
                sub = []
                classes(head + ' {' + nbody + '}', path, sub, name + '::')
                out.extend(sub)
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--max', type=int, default=30)
    ap.add_argument('--top', type=int, default=0, help='print the K largest classes')
    ap.add_argument('dirs', nargs='*', default=['lib', 'tools'])
    args = ap.parse_args()
    found = {}
    for d in args.dirs:
        for root, _, files in os.walk(d):
            for f in sorted(files):
                if not SOURCE.search(f):
                    continue
                path = os.path.join(root, f)
                with open(path, encoding='utf-8', errors='replace') as fh:
                    text = strip(fh.read())
                for count, name, p in classes(text, path, []):
                    key = (name, p)
                    found[key] = max(found.get(key, 0), count)
    ranked = sorted(((c, n, p) for (n, p), c in found.items()), reverse=True)
    for c, n, p in ranked[:args.top]:
        print(f'{c:4d}  {n}  ({p})')
    over = [(c, n, p) for c, n, p in ranked if c > args.max]
    for c, n, p in over:
        print(f'error: {p}: class {n} has {c} member functions (more than {args.max})', file=sys.stderr)
    print(f'{len(found)} classes, largest {ranked[0][0] if ranked else 0} member functions, '
          f'{len(over)} over {args.max}')
    return 1 if over else 0


if __name__ == '__main__':
    sys.exit(main())
