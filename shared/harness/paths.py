"""Where the harness reads and writes, relative to the repository (one place for each)."""

import re
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
CASES_DIR = REPO_ROOT / "cases"
SHARED_DIR = REPO_ROOT / "shared"  # the gallery's own code the cases import, and the harness
GALLERY_DIR = REPO_ROOT / ".gallery"  # git-ignored: what a run leaves behind
RUNS_DIR = GALLERY_DIR / "runs"  # the last run's JSON report per case
WORK_DIR = GALLERY_DIR / "work"  # each variant's result, output and temporary files
SITE_DIR = GALLERY_DIR / "site"
SCREENSHOT_DIR = GALLERY_DIR / "site-screenshots"
MATRIX_REPORTS_DIR = GALLERY_DIR / "matrix"  # a matrix set's raw reports before `collect`
REPORTS_DIR = REPO_ROOT / "reports"  # committed: what was measured and is kept
MATRIX_DIR = REPORTS_DIR / "matrix"
CUDA_DIR = REPORTS_DIR / "cuda"


def relative(path: str | Path) -> str:
    """Library code relative to its site-packages, else ``path`` relative to the repository."""
    text = str(path)
    for marker in ("site-packages/", "dist-packages/"):
        if marker in text:
            return text.split(marker, 1)[1]
    root = f"{REPO_ROOT}/"
    return text[len(root) :] if text.startswith(root) else text


# A path's prefix up to site-packages, not the bracket or quote around the path.
_LIBRARY_PREFIX = re.compile(r"[^\s\"'(\[<=]*?/(?:site|dist)-packages/")


# A variant's temporary folder (the runner's TMPDIR for it) and the random part of the folders
# the gallery makes in it (``tempfile.mkdtemp(prefix="gallery-...")``): noise in a stored text.
_VARIANT_TMP = re.compile(rf"(?:\S*/)?{re.escape(str(WORK_DIR.relative_to(REPO_ROOT)))}"
                          r"/run-[^/\s]+/[^/\s]+/[^/\s]+/tmp(?=/|\b)")
_GALLERY_TEMPORARY = re.compile(r"\b(gallery-[a-z]+-)[a-z0-9_]{8}\b")


def relative_text(text: str) -> str:
    """``text`` (printed output, a traceback) with every path made relative as ``relative``,
    a variant's temporary folder said as ``$TMPDIR`` and the gallery's own temporary folders
    without their random part."""
    text = _LIBRARY_PREFIX.sub("", text).replace(f"{REPO_ROOT}/", "")
    return _GALLERY_TEMPORARY.sub(r"\1XXXXXXXX", _VARIANT_TMP.sub("$TMPDIR", text))
