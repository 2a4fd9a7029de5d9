"""A case's timeline as an SVG picture: the dated sweep's stacks across, variants down.

Each cell is the verdict of one variant on the stack of one date, coloured as the verdict
badges are; each column is labelled with its date and the library versions it resolved to.
Drawn from the matrix's rows (``shared.harness.matrix.Row``) at build time.
"""

from __future__ import annotations

from xml.sax.saxutils import escape

from markupsafe import Markup

from shared.harness.kinds import KINDS, kind_of
from shared.harness.libraries import VERSIONED_PACKAGES, short_name

LABEL_WIDTH, CELL_WIDTH, CELL_HEIGHT, HEADER = 190, 74, 22, 26
VERSION_LINE = 11
# Under the picture: what each label says.
LEGEND = " · ".join([*(f"{kind.label} {kind.legend}" for kind in KINDS if kind.legend),
                     "anything else: not as documented"])  # fmt: skip


def timeline_svg(rows: list, variants: list[str]) -> Markup:
    """The picture for one case's dated rows (``Row.as_of`` set), ``variants`` in case order.

    Empty markup when the case has no dated row.
    """
    dated = sorted((row for row in rows if row.as_of), key=lambda row: row.as_of)
    dates = list(dict.fromkeys(row.as_of for row in dated))
    if not dates:
        return Markup()
    cells = {(row.variant, row.as_of): row for row in dated}
    versions = {row.as_of: row.versions for row in dated}
    shown = [name for name in VERSIONED_PACKAGES if any(name in v for v in versions.values())]
    variants = [v for v in variants if any((v, d) in cells for d in dates)]
    top = HEADER + VERSION_LINE * len(shown) + 6
    width = LABEL_WIDTH + CELL_WIDTH * len(dates) + 4
    height = top + CELL_HEIGHT * len(variants) + 30
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="timeline" width="{width}" '
        f'height="{height}" viewBox="0 0 {width} {height}" role="img" '
        f'aria-label="verdict of each variant on each dated stack">',
        "<style>text{font-family:system-ui,sans-serif;font-size:11px}"
        ".v{font-size:9px;fill:#57606a}.d{font-weight:600}</style>",
    ]
    for column, date in enumerate(dates):
        x = LABEL_WIDTH + column * CELL_WIDTH + CELL_WIDTH / 2
        parts.append(f'<text class="d" x="{x}" y="14" text-anchor="middle">{date:%Y-%m-%d}</text>')
        for line, name in enumerate(shown):
            version = versions[date].get(name, "—")
            y = HEADER + VERSION_LINE * line
            parts.append(f'<text class="v" x="{x}" y="{y}" text-anchor="middle">'
                         f"{escape(short_name(name))} {escape(version)}</text>")  # fmt: skip
    for line, name in enumerate(shown):
        y = HEADER + VERSION_LINE * line
        parts.append(f'<text class="v" x="{LABEL_WIDTH - 8}" y="{y}" text-anchor="end">'
                     f"{escape(name)}</text>")  # fmt: skip
    for line, variant in enumerate(variants):
        y = top + line * CELL_HEIGHT
        parts.append(f'<text x="{LABEL_WIDTH - 8}" y="{y + 15}" text-anchor="end">'
                     f"{escape(variant)}</text>")  # fmt: skip
        for column, date in enumerate(dates):
            row = cells.get((variant, date))
            x = LABEL_WIDTH + column * CELL_WIDTH
            if row is None:
                parts.append(f'<text class="v" x="{x + CELL_WIDTH / 2}" y="{y + 15}" '
                             'text-anchor="middle">not run</text>')  # fmt: skip
                continue
            kind = kind_of(row.verdict)
            fill, ink = kind.colours.fill, kind.colours.ink
            tip = f"{variant} on {date}: {row.verdict}: {row.message}"
            parts.append(
                f'<g><title>{escape(tip)}</title><rect x="{x + 2}" y="{y + 2}" '
                f'width="{CELL_WIDTH - 4}" height="{CELL_HEIGHT - 4}" rx="3" fill="{fill}"/>'
                f'<text x="{x + CELL_WIDTH / 2}" y="{y + 15}" text-anchor="middle" '
                f'fill="{ink}">{kind.label}'
                f"{'*' if row.silent else ''}</text></g>"
            )
    legend_y = top + CELL_HEIGHT * len(variants) + 18
    parts.append(f'<text class="v" x="4" y="{legend_y}">{escape(LEGEND)}</text>')
    parts.append("</svg>")
    return Markup("".join(parts))
