"""Hand-written PDFs with exact geometry for the PDF extractor tests.

The font has ``/Ascent 1000 /Descent 0`` and every glyph 500/1000 em wide, so a line
set at size ``s`` occupies exactly ``[baseline, baseline + s]`` vertically in pdfium's
loose character boxes (which the extractor uses), and ``n`` characters at horizontal
scaling ``Tz`` occupy ``n * 0.5 * s * Tz / 100`` points.
"""

from __future__ import annotations

from dataclasses import dataclass, field

# no descenders (g j p q y , ( )) and no very wide glyphs (m w), so that glyph boxes
# stay inside the loose boxes that the font metrics give
_WORDS = (
    "revenue rose to the recorded level as the outlook started to be stable in the "
    "latest results for the fiscal total of each order list"
).split()


@dataclass
class PageSpec:
    """One page: boxes in PDF user space ``[x0, y0, x1, y1]`` (points), ``/Rotate`` in
    degrees, and text lines ``(x, baseline_y, text, size, tz)``."""

    mediabox: tuple[float, float, float, float] = (0, 0, 612, 792)
    cropbox: tuple[float, float, float, float] | None = None
    rotate: int = 0
    lines: list[tuple[float, float, str, float, float]] = field(default_factory=list)


def filler(n_chars: int, seed: int = 0) -> str:
    """Deterministic text of exactly ``n_chars`` characters, no space at either end."""
    out: list[str] = []
    i = seed
    while len(" ".join(out)) < n_chars:
        out.append(_WORDS[i % len(_WORDS)])
        i += 1
    text = " ".join(out)[:n_chars]
    return text[:-1] + "l"  # a narrow glyph at the line end


def region_lines(x0: float, y0: float, x1: float, y1: float, size: float = 10.0,
                 chars: int = 40) -> list[tuple[float, float, str, float, float]]:
    """Lines that exactly fill the user-space region ``[x0, x1] × [y0, y1]``: the height
    must be a multiple of ``size``; ``Tz`` stretches ``chars`` characters to the width."""
    n_lines = round((y1 - y0) / size)
    assert abs(n_lines * size - (y1 - y0)) < 1e-9, "region height must be a multiple of size"
    tz = 100.0 * (x1 - x0) / (chars * 0.5 * size)
    return [
        (x0, y1 - (k + 1) * size, filler(chars, seed=k * 3), size, tz)
        for k in range(n_lines)
    ]


def _esc(text: str) -> str:
    return text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def build_pdf(pages: list[PageSpec]) -> bytes:
    """Serialise ``pages`` into a complete PDF (with a correct xref table)."""
    objs: list[bytes] = []

    def add(body: str | bytes) -> int:
        objs.append(body.encode("latin-1") if isinstance(body, str) else body)
        return len(objs)

    catalog = add("")  # placeholder, 1
    pages_obj = add("")  # placeholder, 2
    desc = add(
        "<< /Type /FontDescriptor /FontName /CitewellTest /Flags 32 /Ascent 1000 "
        "/Descent -1 /CapHeight 700 /ItalicAngle 0 /StemV 80 /FontBBox [0 0 500 1000] >>"
    )
    widths = " ".join(["500"] * 95)
    font = add(
        "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /FirstChar 32 /LastChar 126 "
        f"/Widths [{widths}] /FontDescriptor {desc} 0 R /Encoding /WinAnsiEncoding >>"
    )
    kids: list[int] = []
    for spec in pages:
        ops: list[str] = []
        for x, y, text, size, tz in spec.lines:
            ops.append(f"BT /F1 {size:g} Tf {tz:.6f} Tz 1 0 0 1 {x:g} {y:g} Tm ({_esc(text)}) Tj ET")
        stream = "\n".join(ops).encode("latin-1")
        content = add(b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream")
        extra = ""
        if spec.cropbox is not None:
            extra += " /CropBox [%s]" % " ".join(f"{v:g}" for v in spec.cropbox)
        if spec.rotate:
            extra += f" /Rotate {spec.rotate}"
        mb = " ".join(f"{v:g}" for v in spec.mediabox)
        kids.append(add(
            f"<< /Type /Page /Parent {pages_obj} 0 R /MediaBox [{mb}]{extra} "
            f"/Resources << /Font << /F1 {font} 0 R >> >> /Contents {content} 0 R >>"
        ))
    objs[catalog - 1] = f"<< /Type /Catalog /Pages {pages_obj} 0 R >>".encode()
    objs[pages_obj - 1] = (
        f"<< /Type /Pages /Kids [{' '.join(f'{k} 0 R' for k in kids)}] /Count {len(kids)} >>".encode()
    )
    out = bytearray(b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n")
    offsets = []
    for i, body in enumerate(objs, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    for off in offsets:
        out += b"%010d 00000 n \n" % off
    out += b"trailer\n<< /Size %d /Root %d 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, catalog, xref)
    return bytes(out)
