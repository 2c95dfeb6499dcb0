#!/usr/bin/env python3
"""Documentation that cannot rot: check README.md, CHANGELOG.md and docs/*.md.

    docs_check.py links ROOT
    docs_check.py options ROOT --run-all ROOT/run_all.sh --nsearch BUILD/nsearch
                               --bench BUILD/nsearch-bench
    docs_check.py code ROOT
    docs_check.py lengths ROOT

Prints one line per problem, FILE:LINE: what is wrong, and exits 1 when there
is any; prints nothing and exits 0 when everything holds; 2 on a usage error
(or when a tool's --help cannot be run).

links: every relative link, image, reference definition ([x]: target) and HTML
  <img src>/<a href> must name an existing file or folder (relative to the
  document's folder; a leading / is the repository root), and a #fragment in
  a link to a .md file (or to the document itself) must be one of its
  headings' GitHub anchors.  Links in code blocks and code spans are not links.

options: the options are taken from the tools' own --help, so the docs follow
  the code: (a) every option of run_all.sh must be mentioned in
  docs/usage.md, of nsearch and each of its commands in docs/cli.md, of
  nsearch-bench in docs/harness.md; (b) every command line in the documents'
  code (blocks and spans) that runs one of the tools may only use options that
  tool's help lists (nsearch: those of the command used and the global ones;
  nsearch-bench: also Google Benchmark's --benchmark_*; every tool: --help).

code: every C block (```c) is an excerpt of a program under examples/, which
  the build compiles and the tests run: its lines, blank ones aside and
  indented alike, follow each other in one file (a line "..." separates
  excerpts that follow in that order; #include lines may be anywhere in it).
  So the guide's code compiles against the header and does what it says.

lengths: README.md stays a short front page (at most 250 lines); no line of
  text (outside code blocks) and no table cell is over 300 characters.

Markdown is parsed only as far as needed: fenced and indented code blocks
(indented ones relative to the enclosing list item's content), code spans
(which may run over lines), ATX headings.
"""
import argparse
import os
import re
import subprocess
import sys
import unicodedata
import urllib.parse

# An option token: "--" and a name; not "--" alone, not inside a word ("a--b").
OPTION = re.compile(r'(?<![\w-])--[A-Za-z0-9][\w-]*')
LIST_ITEM = re.compile(r'( *)([-*+]|\d{1,9}[.)])( +|$)')
FENCE = re.compile(r' *(`{3,}|~{3,})')
HEADING = re.compile(r' {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*$')
BACKTICKS = re.compile(r'`+')
# [text](target "title") and ![alt](target); the text may hold one level of [].
LINK = re.compile(r'!?\[(?:[^\[\]]|\[[^\[\]]*\])*\]\(\s*(<[^>]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)'
                  r'(?:\s+(?:"[^"]*"|\'[^\']*\'|\([^)]*\)))?\s*\)')
REFDEF = re.compile(r'^ {0,3}\[[^\]]+\]:[ \t]*(<[^>]*>|\S+)', re.M)
HTML_REF = re.compile(r'<(?:img|a)\b[^>]*?\b(?:src|href)\s*=\s*(?:"([^"]*)"|\'([^\']*)\'|([^\s>]+))', re.I)
EXTERNAL = re.compile(r'[A-Za-z][A-Za-z0-9+.-]*:')  # http:, https:, mailto:, any scheme


class Doc:
    """One document split into code lines and text paragraphs.

    code: [(lineno, text)] of the lines of code blocks, one list per block.
    paras: [(first lineno, text)] runs of consecutive text lines, joined
      with newlines (code spans and links may run over lines).
    spans: [(lineno, content)] of every code span, content's newlines kept.
    headings: [(lineno, text)] of the ATX headings (# Title).
    """

    def __init__(self, root, rel):
        self.rel = rel
        self.path = os.path.join(root, rel)
        with open(self.path, encoding='utf-8', errors='replace') as f:
            self.lines = f.read().split('\n')
        self.code, self.paras, self.headings, self.anchors = [], [], [], None
        self._split_blocks()
        self.spans = []
        for start, text in self.paras:
            for begin, end, content in code_spans(text):
                self.spans.append((start + text.count('\n', 0, begin), content))

    def _split_blocks(self):
        fence = None    # the opening fence while in a fenced block
        base = 0        # content column of the list item we are in (0: none)
        prev = 'blank'  # the previous line: blank, para, heading, code or fence
        para = []
        for n, raw in enumerate(self.lines, 1):
            line = raw.expandtabs(4)
            indent = len(line) - len(line.lstrip(' '))
            if fence:
                if re.match(r' *' + fence[0] + '{%d,} *$' % len(fence), line):
                    fence = None
                else:
                    self.code[-1].append((n, line))
                continue
            if not line.strip():
                if para:
                    self._end_para(para)
                    para = []
                if prev != 'code':   # blank lines do not end an indented code block
                    prev = 'blank'
                continue
            # 4 columns right of the list item's content: an indented code
            # block, unless it continues a paragraph (lazily indented text)
            if indent >= base + 4 and prev != 'para':
                if prev != 'code':
                    self.code.append([])
                self.code[-1].append((n, line[base + 4:]))
                prev = 'code'
                continue
            m = FENCE.match(line)
            # (a backtick fence's info string has no backtick: ```a` b``` is a code span)
            if m and not (m.group(1)[0] == '`' and '`' in line[m.end():]):
                if para:
                    self._end_para(para)
                    para = []
                fence = m.group(1)
                self.code.append([])
                prev = 'fence'
                continue
            item = LIST_ITEM.match(line)
            if item:
                base = len(item.group(0)) if item.group(3) else indent + len(item.group(2)) + 1
            elif prev in ('blank', 'code') and indent < base:
                base = 0     # a line left of the item's content after a blank: the list ended
            h = HEADING.match(line)
            if h:
                if para:
                    self._end_para(para)
                    para = []
                self.headings.append((n, h.group(2) or ''))
                self.paras.append((n, line))
                prev = 'heading'
                continue
            para.append((n, line))
            prev = 'para'
        if para:
            self._end_para(para)

    def _end_para(self, para):
        self.paras.append((para[0][0], '\n'.join(t for _, t in para)))


def code_spans(text):
    """(start, end, content) of the code spans of a paragraph (CommonMark: a
    run of n backticks up to the next run of exactly n; unmatched is text)."""
    spans, pos = [], 0
    while True:
        m = BACKTICKS.search(text, pos)
        if not m:
            return spans
        close = re.compile(r'(?<!`)`{%d}(?!`)' % len(m.group())).search(text, m.end())
        if not close:
            pos = m.end()
            continue
        spans.append((m.start(), close.end(), text[m.end():close.start()]))
        pos = close.end()


def blank_spans(text):
    """The text with its code spans blanked out, newlines (line numbers) kept."""
    out, pos = [], 0
    for begin, end, _ in code_spans(text):
        out += [text[pos:begin], re.sub(r'[^\n]', ' ', text[begin:end])]
        pos = end
    return ''.join(out + [text[pos:]])


# ---------------------------------------------------------------- links

def slug(heading):
    """GitHub's anchor of a heading: the rendered text (code spans' content,
    links' text, no emphasis markers or HTML), lowercased, every character
    but letters, marks, digits, '_' (connector punctuation), '-' and space
    removed, each space a '-'."""
    parts, pos = [], 0
    for begin, end, content in code_spans(heading):
        parts += [render(heading[pos:begin]), content.strip(' ')]
        pos = end
    text = (''.join(parts) + render(heading[pos:])).strip().lower()
    keep = ''.join(c for c in text if c in ' -' or unicodedata.category(c)[0] in 'LMN'
                   or unicodedata.category(c) == 'Pc')
    return keep.replace(' ', '-')


def render(text):
    """Markdown outside code spans as GitHub shows it, for anchors."""
    text = re.sub(r'!?\[([^\]]*)\]\([^)]*\)', r'\1', text)    # links: their text
    text = re.sub(r'<[^>]+>', '', text)                        # HTML tags
    text = re.sub(r'\*+', '', text)                            # emphasis with *
    # emphasis with _: only at a word's edge (grid_sorted keeps its _)
    return re.sub(r'(?<![^\W_])_+|_+(?![^\W_])', '', text)


def anchors(doc):
    """Every anchor of a document, duplicates numbered as github-slugger does."""
    if doc.anchors is not None:
        return doc.anchors
    seen, found = {}, set()
    for _, text in doc.headings:
        base = result = slug(text)
        while result in seen:
            seen[base] += 1
            result = '%s-%d' % (base, seen[base])
        seen[result] = 0
        found.add(result)
    for _, text in doc.paras:   # explicit HTML anchors
        found.update(m[1] for m in re.findall(r'<a\b[^>]*\b(name|id)="([^"]*)"', text))
    doc.anchors = found
    return found


def link_targets(doc):
    """(lineno, target) of every link, image, reference definition and HTML
    src/href outside code."""
    for start, text in doc.paras:
        text = blank_spans(text)
        for rx in (LINK, REFDEF, HTML_REF):
            for m in rx.finditer(text):
                target = next(g for g in m.groups() if g is not None)
                if target.startswith('<') and target.endswith('>'):
                    target = target[1:-1]
                yield start + text.count('\n', 0, m.start()), target


def check_links(root, docs):
    problems, cache = [], {d.rel: d for d in docs}
    for doc in docs:
        for n, target in link_targets(doc):
            if not target or EXTERNAL.match(target):
                continue
            path, _, fragment = target.partition('#')
            path = urllib.parse.unquote(path.split('?')[0])
            fragment = urllib.parse.unquote(fragment)
            where = '%s:%d: link %s' % (doc.rel, n, target)
            if path:
                base = root if path.startswith('/') else os.path.dirname(doc.path)
                full = os.path.normpath(os.path.join(base, path.lstrip('/')))
                rel = os.path.relpath(full, root)
                if rel.startswith('..'):
                    problems.append('%s: points outside the repository' % where)
                    continue
                if not os.path.exists(full):
                    problems.append('%s: target %s does not exist' % (where, rel))
                    continue
            else:
                full, rel = doc.path, doc.rel
            # Only Markdown documents have headings to check a fragment against.
            if fragment and full.endswith('.md') and os.path.isfile(full):
                if rel not in cache:
                    cache[rel] = Doc(root, rel)
                if fragment not in anchors(cache[rel]):
                    problems.append('%s: no heading of %s has the anchor #%s'
                                    % (where, rel, fragment))
    return problems


# ---------------------------------------------------------------- options

def run_help(argv):
    """A tool's --help; exit 2 when it cannot be had: nothing to check against."""
    try:
        r = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, timeout=60)
        why = r.returncode and 'exit status %d' % r.returncode
    except (OSError, subprocess.SubprocessError) as e:
        why = e
    if why:
        print('docs_check.py: %s: %s' % (' '.join(argv), why), file=sys.stderr)
        sys.exit(2)
    return r.stdout


def help_options(text, prog):
    """The options a help text offers: every --xxx of its usage block (the
    Usage: line and the indented lines after it) and of lines that show a
    call (starting with the program's name), and the first word of lines
    that define an option ('  --max-n N   the largest n').  Options named
    only in descriptions are left out: they are cross-references, e.g.
    'nsearch gen --workload settled' in sim's help, not sim's options."""
    found, in_usage = set(), False
    for line in text.split('\n'):
        words = line.split()
        in_usage = line.startswith('Usage:') or (in_usage and line[:1].isspace())
        if in_usage or (words and os.path.basename(words[0]) == prog):
            found.update(OPTION.findall(line))
        elif words and OPTION.fullmatch(words[0]):
            found.add(words[0])
    return {o for o in found if not o.startswith('--benchmark_')}


def tools(args):
    """{tool: {command or None: options}} from the tools' --help, and the
    document each tool's options must all appear in."""
    nsearch_help = run_help([args.nsearch, '--help'])
    m = re.search(r'^Commands:\n((?:[ \t]+\S.*\n)+)', nsearch_help, re.M)
    commands = re.findall(r'^  ([a-z][\w-]*)  ', m.group(1), re.M) if m else []
    ns = {None: help_options(nsearch_help, 'nsearch')}
    for c in commands:
        ns[c] = help_options(run_help([args.nsearch, c, '--help']), 'nsearch')
    return {
        'run_all.sh': ({None: help_options(run_help([args.run_all, '--help']), 'run_all.sh')},
                       'docs/usage.md'),
        'nsearch': (ns, 'docs/cli.md'),
        'nsearch-bench': ({None: help_options(run_help([args.bench, '--help']), 'nsearch-bench')},
                          'docs/harness.md'),
    }


def commands_in(doc):
    """Every code line or span as [(lineno, word)], shell comments dropped.
    A code block's line continues the one before when that ends with a
    backslash, or when it is indented further and starts with [, ( or -:
    a synopsis wrapped over lines ('nsearch pairs --kernel NAME ...' and
    '                  [--max-contacts C] ...' below it)."""
    for block in doc.code:
        lines = []   # [indent, words, ends with a backslash]
        for n, line in block:
            line = re.sub(r'(^|\s)#.*', '', line).rstrip()
            indent, words = len(line) - len(line.lstrip()), [(n, w) for w in line.rstrip('\\').split()]
            if lines and (lines[-1][2] or (indent > lines[-1][0] and line.strip()[:1] in ('[', '(', '-'))):
                lines[-1][1:] = [lines[-1][1] + words, line.endswith('\\')]
            else:
                lines.append([indent, words, line.endswith('\\')])
        for _, words, _ in lines:
            yield words
    for n, content in doc.spans:
        yield [(n + i, w) for i, part in enumerate(content.split('\n')) for w in part.split()]


def segments(words):
    """A line split into its shell commands (at &&, ||, ;, and | unless an
    option follows: 'nsearch sim (--n N | --input FILE)' is a synopsis),
    each without a leading '$' prompt or VAR=value assignments."""
    seg = []
    for i, (n, w) in enumerate(words):
        nxt = words[i + 1][1] if i + 1 < len(words) else ''
        if w in ('&&', '||', ';') or (w == '|' and not nxt.startswith('-')):
            yield seg
            seg = []
        else:
            seg.append((n, w))
    yield seg


def which_tool(word):
    name = os.path.basename(word)
    return name if name in ('run_all.sh', 'nsearch', 'nsearch-bench') else None


def check_options(root, docs, args):
    problems, known = [], tools(args)
    # (a) each tool's options all mentioned in its page
    for tool, (by_command, page) in known.items():
        doc = next((d for d in docs if d.rel == page), None)
        text = '\n'.join(doc.lines) if doc else ''
        mentioned = set(OPTION.findall(text))
        for command, options in by_command.items():
            for o in sorted(options - mentioned):
                problems.append('%s:1: %s (%s%s --help) is not mentioned'
                                % (page, o, tool, ' ' + command if command else ''))
    # (b) command lines in the documents use only options the help lists
    for doc in docs:
        for words in commands_in(doc):
            for seg in segments(words):
                while seg and (seg[0][1] == '$' or re.match(r'\w+=', seg[0][1])):
                    seg = seg[1:]
                tool = which_tool(seg[0][1]) if seg else None
                if not tool:
                    continue
                by_command = known[tool][0]
                allowed = by_command[None] | {'--help'}
                name = tool
                # nsearch's command: its first word that is no option
                command = next((w for _, w in seg[1:] if not w.startswith('-')), None)
                if tool == 'nsearch' and command and command in by_command:
                    allowed |= by_command[command]
                    name += ' ' + command
                elif tool == 'nsearch' and command and re.fullmatch(r'[a-z][\w-]*', command):
                    problems.append('%s:%d: nsearch has no command %s'
                                    % (doc.rel, seg[0][0], command))   # (COMMAND: a placeholder)
                for n, w in seg[1:]:
                    for o in OPTION.findall(w):
                        if o not in allowed and not (tool == 'nsearch-bench'
                                                     and o.startswith('--benchmark_')):
                            problems.append('%s:%d: %s has no option %s' % (doc.rel, n, name, o))
    return problems

C_BLOCK = re.compile(r'^```c[ \t]*\n(.*?)^```[ \t]*$', re.M | re.S)


def excerpt_at(lines, part, start):
    """The index after the first run of lines[start:] that is `part` (non-blank
    lines, each the same text under one common extra indentation), or None."""
    first = part[0]
    for i in range(start, len(lines)):
        if not lines[i].endswith(first) or lines[i][:len(lines[i]) - len(first)].strip():
            continue
        pad = lines[i][:len(lines[i]) - len(first)]
        if all(i + k < len(lines) and lines[i + k] == pad + line for k, line in enumerate(part)):
            return i + len(part)
    return None


def check_code(root, docs):
    programs = {}
    folder = os.path.join(root, 'examples')
    for dirpath, _, files in os.walk(folder):
        for f in sorted(files):
            if f.endswith(('.c', '.cpp')):
                path = os.path.join(dirpath, f)
                with open(path, encoding='utf-8') as fh:
                    text = [x.rstrip() for x in fh.read().split('\n')]
                programs[os.path.relpath(path, root)] = [x for x in text if x.strip()]
    problems = []
    for doc in docs:
        text = '\n'.join(doc.lines)
        for m in C_BLOCK.finditer(text):
            line = text.count('\n', 0, m.start()) + 1
            body = [x.rstrip() for x in m.group(1).split('\n') if x.strip()]
            includes = [x for x in body if x.startswith('#include')]
            parts, part = [], []
            for x in body:
                if x.strip() == '...':
                    parts.append(part)
                    part = []
                elif not x.startswith('#include'):
                    part.append(x)
            parts = [p for p in parts + [part] if p]
            found = False
            for lines in programs.values():
                at = 0
                for p in parts:
                    at = excerpt_at(lines, p, at)
                    if at is None:
                        break
                if at is not None and all(x in lines for x in includes):
                    found = True
                    break
            if not found:
                problems.append('%s:%d: this C block is no excerpt of a program under '
                                'examples/ (so it is not compiled)' % (doc.rel, line))
    return problems

README_LINES = 250
LONGEST = 300


def check_lengths(docs):
    problems = []
    for doc in docs:
        if doc.rel == 'README.md' and len(doc.lines) > README_LINES:
            problems.append('README.md:%d: %d lines, over %d: the reference belongs in docs/'
                            % (README_LINES + 1, len(doc.lines), README_LINES))
        code = {n for block in doc.code for n, _ in block}
        for n, line in enumerate(doc.lines, 1):
            if n in code:
                continue
            if line.lstrip().startswith('|'):
                for cell in line.strip().strip('|').split('|'):
                    if len(cell.strip()) > LONGEST:
                        problems.append('%s:%d: a table cell of %d characters, over %d'
                                        % (doc.rel, n, len(cell.strip()), LONGEST))
            if len(line) > LONGEST:
                problems.append('%s:%d: a line of %d characters, over %d'
                                % (doc.rel, n, len(line), LONGEST))
    return problems


def main():
    p = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    sub = p.add_subparsers(dest='check')
    sub.required = True
    sub.add_parser('links').add_argument('root')
    sub.add_parser('code').add_argument('root')
    sub.add_parser('lengths').add_argument('root')
    o = sub.add_parser('options')
    o.add_argument('root')
    for name in ('--run-all', '--nsearch', '--bench'):
        o.add_argument(name, required=True)
    args = p.parse_args()
    if not os.path.isdir(args.root):
        p.error('%s is not a folder' % args.root)
    docs_dir = os.path.join(args.root, 'docs')
    names = ['README.md', 'CHANGELOG.md'] + sorted(
        'docs/' + f for f in (os.listdir(docs_dir) if os.path.isdir(docs_dir) else [])
        if f.endswith('.md'))
    docs = [Doc(args.root, n) for n in names if os.path.isfile(os.path.join(args.root, n))]
    if args.check == 'links':
        problems = check_links(args.root, docs)
    elif args.check == 'code':
        problems = check_code(args.root, docs)
    elif args.check == 'lengths':
        problems = check_lengths(docs)
    else:
        problems = check_options(args.root, docs, args)
    order = {d.rel: i for i, d in enumerate(docs)}   # by document, then by line
    problems.sort(key=lambda p: (order.get(p.split(':')[0], len(order)), int(p.split(':')[1])))
    for line in problems:
        print(line)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
