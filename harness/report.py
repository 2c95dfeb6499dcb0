"""Text helpers the result scripts share (standard library only): aligned or
Markdown tables, and strings for gnuplot's enhanced text."""


def table(rows, markdown=False):
    """rows[0] is the header; cells are printed with str()."""
    rows = [[str(x) for x in r] for r in rows]
    if markdown:
        out = ["| " + " | ".join(rows[0]) + " |", "|" + "|".join("---" for _ in rows[0]) + "|"]
        out += ["| " + " | ".join(r) + " |" for r in rows[1:]]
        return "\n".join(out)
    widths = [max(len(r[c]) for r in rows) for c in range(len(rows[0]))]
    return "\n".join("  ".join(x.ljust(widths[c]) for c, x in enumerate(r)).rstrip()
                     for r in rows)


def gp_text(x):
    """A gnuplot string literal whose _ shows literally in enhanced text."""
    return '"' + x.replace("\\", "").replace('"', "'").replace("_", "\\\\_") + '"'
