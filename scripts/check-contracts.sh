#!/usr/bin/env bash
# check-contracts.sh [HEADER...]: every public function states its contract.
# With no argument, checks every header in include/nftrace/ (of the source
# tree this script is in). A function's doc is the comment block right above
# it (a group of declarations with no blank line between them shares the
# comment above the first), plus a comment on its own lines. Required:
#   int, long, ssize_t   the doc names its error codes (NF_E*), or says
#                        "return" and a value (0, -1, "negative")
#   pointer              the doc says who owns the result or when it is NULL
#                        (NULL, borrowed, static, owned, free, valid until)
#   bool                 the doc says what true/false mean (true, false,
#                        whether, returns)
#   anything else        a doc comment exists
# Prints one line per function that falls short ("FILE:LINE: NAME: ...") and
# exits 1; exits 0 when every function passes. Run by ctest as
# check_contracts (and check_contracts_selftest on headers it writes).
set -euo pipefail
cd "$(dirname "$0")/.."
if (($# == 0)); then
  set -- include/nftrace/*.h include/contract/*.h
fi
exec python3 - "$@" <<'EOF'
import re
import sys

PROTO = re.compile(
    r'^(?:NF_API\s+)?((?:(?:const|struct|enum|unsigned|signed|volatile)\s+)*'
    r'[A-Za-z_]\w*(?:\s+|\s*\*+\s*))\**\s*([A-Za-z_]\w*)\s*\(')
NOT_TYPES = {'return', 'if', 'while', 'for', 'switch', 'sizeof', 'typedef', 'define'}


def check(path):
    problems = []
    lines = open(path, encoding='utf-8').read().split('\n')
    doc = None          # the comment that applies to the next declaration
    in_comment = False
    comment = []
    depth = 0           # braces: struct/enum bodies are not declarations
    paren = 0           # inside a declaration spanning lines
    pending = None      # [name, type, line, text] of the declaration being read
    in_macro = False
    for i, line in enumerate(lines, 1):
        stripped = line.strip()
        if in_macro:     # a #define continued with backslashes
            in_macro = stripped.endswith('\\')
            continue
        if in_comment:
            comment.append(line)
            if '*/' in line:
                in_comment = False
                if pending is None:
                    doc = '\n'.join(comment)
            continue
        if pending is None and stripped.startswith('/*'):
            comment = [line]
            if '*/' not in line[line.index('/*') + 2:]:
                in_comment = True
            else:
                doc = line
            continue
        if stripped == '':
            doc = None
            continue
        if stripped == 'extern "C" {' or (stripped == '}' and lines[i - 2].strip() == '#ifdef __cplusplus'):
            continue     # the C++ guard is not a body
        if stripped.startswith('#'):
            in_macro = stripped.endswith('\\')
            continue     # macros between a comment and its declaration keep it
        code = re.sub(r'/\*.*?\*/', '', line)
        trailing = ' '.join(re.findall(r'/\*.*?\*/', line))
        if pending is not None:
            pending[3] += ' ' + trailing
            paren += code.count('(') - code.count(')')
            if paren <= 0 and ';' in code:
                problems += judge(path, pending, doc)
                pending = None
            continue
        if depth == 0:
            m = PROTO.match(code)
            if m and m.group(1).split()[0] not in NOT_TYPES and '=' not in code.split('(')[0]:
                pending = [m.group(2), code[:m.start(2)].replace('NF_API', '').strip(), i, trailing]
                paren = code.count('(') - code.count(')')
                if paren <= 0 and ';' in code:
                    problems += judge(path, pending, doc)
                    pending = None
                continue
        depth += code.count('{') - code.count('}')
        if depth == 0 and ';' in code:
            doc = None   # a struct or a variable ends the group
    return problems


COUNT = [0]
NAMES = []


def judge(path, decl, doc):
    name, rtype, line, trailing = decl
    COUNT[0] += 1
    NAMES.append(name)
    text = ((doc or '') + ' ' + trailing).strip()
    where = f'{path}:{line}: {name}'
    if not text:
        return [f'{where}: no comment states its contract']
    low = text.lower()
    if '*' in rtype or rtype.endswith('*'):
        if not re.search(r'null|borrow|static|owned|owns|free|valid until|malloc', low):
            return [f'{where}: returns a pointer; the comment says neither who owns it nor when it is NULL']
        return []
    base = rtype.replace('const', '').replace('signed', '').replace('unsigned', '').split()
    base = base[-1] if base else ''
    if base in ('int', 'long', 'ssize_t'):
        if re.search(r'nf_e[a-z]+', low):
            return []    # names its error codes
        if not re.search(r'\breturn', low):
            return [f'{where}: returns {base}; the comment does not say what it returns']
        if not re.search(r'(?<![\w.])-?[01](?![\w.])|negative', low):
            return [f'{where}: returns {base}; the comment names no return value (0, -1, NF_E*)']
        return []
    if base == 'bool':
        if not re.search(r'\btrue\b|\bfalse\b|whether|\breturn', low):
            return [f'{where}: returns bool; the comment does not say what true or false means']
    return []


bad = []
for p in sys.argv[1:]:
    bad += check(p)
if __import__("os").environ.get("NF_CONTRACTS_DEBUG"):
    print(COUNT[0], "declarations:", " ".join(NAMES))
for b in bad:
    print(b)
sys.exit(1 if bad else 0)
EOF
