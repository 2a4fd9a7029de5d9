"""The gallery's static site: ``build`` (no browser needed) and ``check`` (headless Chromium)."""
