"""A real one-page PDF written by hand, for tests that ingest PDFs (pypdf reads it; no PDF library writes it)."""

from __future__ import annotations


def pdf_bytes(lines: list[str], unicode_map: bytes = b"") -> bytes:
    """A one-page PDF with a Helvetica text layer, written by hand with a correct xref table.

    `unicode_map` is the body of a ToUnicode CMap (what text extraction maps character codes to).
    """
    shown = " ".join(f"({line}) '" for line in lines)
    content = f"BT /F1 12 Tf 72 720 Td 14 TL {shown} ET".encode("latin-1")
    to_unicode = b" /ToUnicode 6 0 R" if unicode_map else b""
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] "
        b"/Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica%s >>" % to_unicode,
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(content), content),
    ]
    if unicode_map:
        objects.append(b"<< /Length %d >>\nstream\n%s\nendstream" % (len(unicode_map), unicode_map))
    out = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(len(out))
        out += b"%d 0 obj\n%s\nendobj\n" % (number, body)
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    out += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return bytes(out)
