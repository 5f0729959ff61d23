#!/usr/bin/env bash
# SPDX-License-Identifier: MIT
# The layer order of src/README.md holds: no file calls (or names) a `_nd_`
# function, variable or type of a layer below it in the table, i.e. above
# it in the stack, and none includes a header of a higher layer. Each
# row of the table is a layer (row order = layer order); its files and
# prefixes are the backquoted names of the second and third columns. The
# per-layer headers (nd_os.h, ...) are files of their row like the .c files;
# internal.h only includes them, after nd_base.h, the shared definitions.
# Comments and strings are not code, nor are types (struct tags, names
# ending in _t): the rule is about calls and data. Names that no prefix
# claims and that nd_base.h declares are shared helpers.
#
# Known exceptions, each with the reason and the owner, are listed in
# tests/layers_allow.txt ("file name" per line); an exception that no
# longer occurs is reported, so the list only shrinks.
#
# usage: check_layers.sh [SRC_DIR [ALLOW_FILE]]   exit 1 names each up-call
set -u
src=${1:-$(dirname "$0")/../src}
allow=${2:-$(dirname "$0")/layers_allow.txt}
exec python3 - "$src" "$allow" <<'PY'
import os, re, sys

src, allow_path = sys.argv[1], sys.argv[2]

def strip(text):
    """Code only: comments and string/char literals blanked (lines kept)."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith('/*', i):
            j = text.find('*/', i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r'[^\n]', ' ', text[i:j])); i = j
        elif text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            out.append(' ' * (j - i)); i = j
        elif c in '"\'':
            j = i + 1
            while j < n and text[j] != c:
                j += 2 if text[j] == '\\' else 1
            out.append(c + ' ' * (j - i - 1) + c); i = j + 1
        else:
            out.append(c); i += 1
    return ''.join(out)

# ---- the table ---------------------------------------------------------------
readme = open(os.path.join(src, 'README.md')).read()
layers = []  # (label, files, prefixes)
for line in readme.splitlines():
    cells = [c.strip() for c in line.strip().strip('|').split('|')]
    if len(cells) < 3 or not re.match(r'^\d+[a-z]?$', cells[0]):
        continue
    files = re.findall(r'`([\w.]+\.[ch])`', cells[1])
    prefixes = re.findall(r'`(_nd_\w*)`', cells[2])
    layers.append((cells[0], files, prefixes))
if not layers:
    sys.exit('check_layers: no layer table in %s/README.md' % src)
layer_of_file, layer_of_prefix = {}, []
for rank, (label, files, prefixes) in enumerate(layers):
    for f in files:
        layer_of_file[f] = rank
    for p in prefixes:
        layer_of_prefix.append((p, rank))
layer_of_prefix.sort(key=lambda x: -len(x[0]))  # longest prefix wins

def layer_of_name(name):
    for p, rank in layer_of_prefix:
        if name.startswith(p):
            return rank
    return None

# ---- units: each .c file and each header (internal.h only includes them) ----------
units = []  # (where, rank, code, first line number)
bad = 0
UMBRELLA, SHARED = 'internal.h', 'nd_base.h'
base_path = os.path.join(src, SHARED)
if not os.path.exists(base_path):
    sys.exit('check_layers: no %s in %s (the shared definitions)' % (SHARED, src))
shared = set(re.findall(r'\b(_nd_\w+)', strip(open(base_path).read())))
# the umbrella holds includes only: a declaration there would be in no layer
rest = re.sub(r'^\s*#.*$', '', strip(open(os.path.join(src, UMBRELLA)).read()), flags=re.M)
if rest.strip():
    print('check_layers: %s holds code besides its includes (move it to its layer\'s header)' % UMBRELLA)
    bad = 1
for f in sorted(os.listdir(src)):
    if not f.endswith(('.c', '.h')) or f in (UMBRELLA, SHARED):
        continue
    if f not in layer_of_file:
        print('check_layers: %s is in no row of src/README.md' % f)
        bad = 1
        continue
    units.append((f, layer_of_file[f], strip(open(os.path.join(src, f)).read()), 1))

allowed = {}
if os.path.exists(allow_path):
    for line in open(allow_path):
        line = line.split('#', 1)[0].split()
        if len(line) >= 2:
            allowed[(line[0], line[1])] = False

# ---- the check -------------------------------------------------------------------
unclaimed = set()
for where, rank, code, line0 in units:
    base = where
    raw = open(os.path.join(src, where)).read()
    for m in re.finditer(r'^\s*#\s*include\s*"([\w./]+)"', raw, re.M):
        h = os.path.basename(m.group(1))
        if h in layer_of_file and layer_of_file[h] > rank:
            print('check_layers: %s includes %s (layer %s above layer %s)' %
                  (where, h, layers[layer_of_file[h]][0], layers[rank][0]))
            bad = 1
    seen = set()
    for m in re.finditer(r'\b(_nd_\w+)', code):
        name = m.group(1)
        # types are not calls: a struct tag or a typedef (the thread
        # record holds pointers to each layer's per-thread state)
        if name.endswith('_t') or re.search(r'\b(struct|enum|union)\s+$', code[max(0, m.start() - 8):m.start()]):
            continue
        r = layer_of_name(name)
        if r is None:
            if name not in shared:
                unclaimed.add(name)
            continue
        if r <= rank or name in seen:
            continue
        seen.add(name)
        key = (base, name)
        if key in allowed:
            allowed[key] = True
            continue
        line = line0 + code.count('\n', 0, m.start())
        print('check_layers: %s:%d: %s goes up from layer %s (%s) to layer %s (%s)' %
              (where, line, name, layers[rank][0], ', '.join(layers[rank][1]), layers[r][0],
               ', '.join(layers[r][1])))
        bad = 1
for name in sorted(unclaimed):
    print('check_layers: %s: no prefix of src/README.md claims it (add it to its row)' % name)
    bad = 1
for (f, name), used in sorted(allowed.items()):
    if not used:
        print('check_layers: %s %s is listed in %s but no longer goes up: remove the line' %
              (f, name, os.path.basename(allow_path)))
        bad = 1
print('check_layers: %d layers, %d units, %d allowed exceptions; %s' %
      (len(layers), len(units), len(allowed), '1 passed, 0 failed' if not bad else '0 passed, 1 failed'))
sys.exit(bad)
PY
